//! The whole admission path: skips and their annotation, lookup failures, trust anchors from
//! the ConfigMap, other kinds and operations, placements, env order, idempotence, determinism.

mod common;

use common::*;
use linkerd_injector_policy::admit::{self, Request};
use linkerd_injector_policy::cluster::Call;
use linkerd_injector_policy::cluster::{LookupError, MemoryCluster};
use linkerd_injector_policy::decide::SkipReason;
use linkerd_injector_policy::outcome::Verdict;
use linkerd_injector_policy::settings::Settings;
use linkerd_injector_policy::wire;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn settings(extra: Value) -> Settings {
    let mut base =
        json!({"identityTrustAnchorsPEM": "PEM", "linkerdVersion": "v1", "policy": {"createdBy": "test"}});
    merge(&mut base, extra);
    Settings::from_value(base).unwrap()
}

fn pod(annotations: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "shop", "annotations": annotations, "creationTimestamp": null},
        "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 8080}, {"containerPort": 3306}],
            "volumeMounts": [{"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]}]}
    })
}

fn cluster(ns_annotations: Value) -> MemoryCluster {
    common::cluster(vec![namespace("shop", ns_annotations)])
}

fn run(object: &Value, s: &Settings, c: &MemoryCluster) -> linkerd_injector_policy::outcome::Outcome {
    admit("Pod", object, "shop", s, c)
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

#[test]
fn skipped_pod_that_asked_gets_the_reasons() {
    let mut p = pod(json!({"linkerd.io/inject": "enabled"}));
    p["spec"]["hostNetwork"] = json!(true);
    let out = run(&p, &settings(json!({})), &cluster(json!({})));
    assert_eq!(out.verdict, Verdict::Skipped(vec![SkipReason::HostNetwork]));
    let m = out.mutated.unwrap();
    assert_eq!(
        m["metadata"]["annotations"]["linkerd.io/injection-skipped"],
        json!("hostNetwork is enabled")
    );
    assert_eq!(
        m["metadata"]["annotations"]["config.linkerd.io/opaque-ports"],
        json!("3306")
    );
    assert_eq!(
        out.warnings,
        vec!["Linkerd sidecar proxy injection skipped: hostNetwork is enabled".to_string()]
    );
    assert_eq!(
        out.audit_annotations["injection"],
        "skipped: hostNetwork is enabled"
    );
}

#[test]
fn skipped_pod_that_did_not_ask_only_gets_opaque_ports() {
    let out = run(&pod(json!({})), &settings(json!({})), &cluster(json!({})));
    assert_eq!(out.verdict, Verdict::Skipped(vec![SkipReason::EnableAbsent]));
    let m = out.mutated.unwrap();
    assert_eq!(
        m["metadata"]["annotations"],
        json!({"config.linkerd.io/opaque-ports": "3306"})
    );
    assert!(out.warnings.is_empty());
}

#[test]
fn namespace_opaque_ports_are_copied_verbatim_to_skipped_pods() {
    let out = run(
        &pod(json!({})),
        &settings(json!({})),
        &cluster(json!({"config.linkerd.io/opaque-ports": "a-b"})),
    );
    assert_eq!(
        out.mutated.unwrap()["metadata"]["annotations"]["config.linkerd.io/opaque-ports"],
        json!("a-b")
    );
}

#[test]
fn namespace_lookup_failure_rejects_as_transient() {
    let c = common::cluster(vec![]).fail(
        "Namespace",
        LookupError::Failed("lookup of Namespace shop failed: timeout".into()),
    );
    let out = run(
        &pod(json!({"linkerd.io/inject": "enabled"})),
        &settings(json!({})),
        &c,
    );
    assert_eq!(
        out.verdict,
        Verdict::Rejected(
            "could not read Namespace shop to decide on proxy injection: lookup of Namespace shop failed: timeout (usually transient; the API server will retry)".into()
        )
    );
    let missing = run(&pod(json!({})), &settings(json!({})), &common::cluster(vec![]));
    assert!(missing.is_rejected());
}

#[test]
fn namespace_lookup_failure_can_skip() {
    let c = common::cluster(vec![]);
    let out = run(
        &pod(json!({"linkerd.io/inject": "enabled"})),
        &settings(json!({"policy": {"namespaceLookupFailure": "skip"}})),
        &c,
    );
    assert_eq!(out.verdict, Verdict::NotApplicable);
    assert_eq!(out.mutated, None);
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].ends_with("admitted without a proxy (policy.namespaceLookupFailure: skip)"),
        "{}",
        out.warnings[0]
    );
}

#[test]
fn trust_anchors_from_the_configmap() {
    let bundle = "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "linkerd-identity-trust-roots", "namespace": "linkerd"}, "data": {"ca-bundle.crt": bundle}});
    let c = common::cluster(vec![
        namespace("shop", json!({"linkerd.io/inject": "enabled"})),
        cm,
    ]);
    let s = Settings::from_value(json!({})).unwrap();
    let out = run(&pod(json!({})), &s, &c);
    let m = out.mutated.expect("injected");
    let proxy = &m["spec"]["initContainers"][1];
    let env = proxy["env"].as_array().unwrap();
    let anchors = env
        .iter()
        .find(|e| e["name"] == "LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS")
        .unwrap();
    assert_eq!(
        anchors["value"],
        json!("-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n")
    );
    let expected_sha = linkerd_injector_policy::trust::sha256_hex(bundle);
    assert_eq!(
        m["metadata"]["annotations"]["linkerd.io/trust-root-sha256"],
        json!(expected_sha)
    );
    let calls: Vec<String> = c.calls().iter().map(Call::describe).collect();
    assert_eq!(
        calls,
        ["get Namespace shop", "list ConfigMaps in namespace linkerd"],
        "one list serves linkerd-config and the trust roots"
    );
}

#[test]
fn missing_configmap_rejects_only_pods_being_injected() {
    let c = cluster(json!({"linkerd.io/inject": "enabled"}));
    let s = Settings::from_value(json!({})).unwrap();
    let out = run(&pod(json!({})), &s, &c);
    assert_eq!(
        out.verdict,
        Verdict::Rejected("could not read the trust anchors from ConfigMap linkerd/linkerd-identity-trust-roots: ConfigMap linkerd/linkerd-identity-trust-roots not found (usually transient; the API server will retry)".into())
    );
    let skipped = run(&pod(json!({"linkerd.io/inject": "disabled"})), &s, &c);
    assert!(!skipped.is_rejected());
}

#[rstest::rstest]
#[case::update("UPDATE")]
#[case::delete("DELETE")]
#[case::connect("CONNECT")]
fn other_operations_are_untouched(#[case] op: &str) {
    let p = pod(json!({"linkerd.io/inject": "enabled"}));
    let req = Request {
        kind: "Pod",
        operation: op,
        namespace: "shop",
        object: &p,
    };
    let c = cluster(json!({}));
    let out = admit::admit(&req, &settings(json!({})), &c);
    assert_eq!((out.verdict, out.mutated), (Verdict::NotApplicable, None));
    assert!(c.lookups().is_empty());
}

#[test]
fn unknown_kinds_are_untouched() {
    let cm = json!({"kind": "ConfigMap", "metadata": {"name": "x"}});
    let out = admit(
        "ConfigMap",
        &cm,
        "shop",
        &settings(json!({})),
        &cluster(json!({})),
    );
    assert_eq!((out.verdict, out.mutated), (Verdict::NotApplicable, None));
}

#[test]
fn native_sidecar_placement_is_the_default() {
    let mut p = pod(json!({"linkerd.io/inject": "enabled"}));
    p["spec"]["initContainers"] = json!([{"name": "vault-agent", "image": "vault"}]);
    let m = run(&p, &settings(json!({})), &cluster(json!({})))
        .mutated
        .unwrap();
    assert_eq!(
        names(&m["spec"]["initContainers"]),
        vec!["linkerd-init", "linkerd-proxy", "vault-agent"]
    );
    assert_eq!(names(&m["spec"]["containers"]), vec!["app"]);
    assert_eq!(
        names(&m["spec"]["volumes"]),
        vec![
            "linkerd-proxy-init-xtables-lock",
            "linkerd-identity-end-entity",
            "linkerd-identity-token"
        ]
    );
    let proxy = &m["spec"]["initContainers"][1];
    assert_eq!(proxy["restartPolicy"], json!("Always"));
    assert!(proxy.get("lifecycle").is_none());
    assert_eq!(proxy["startupProbe"]["failureThreshold"], json!(120));
    // The service-account token mount is copied to the proxy and linkerd-init.
    let sa = json!({"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access-abcde", "readOnly": true});
    assert_eq!(proxy["volumeMounts"][2], sa);
    assert_eq!(m["spec"]["initContainers"][0]["volumeMounts"][1], sa);
}

#[test]
fn non_native_with_await_puts_the_proxy_first() {
    let p = pod(
        json!({"linkerd.io/inject": "enabled", "config.linkerd.io/proxy-enable-native-sidecar": "false",
        "config.alpha.linkerd.io/proxy-wait-before-exit-seconds": "15"}),
    );
    let mut with_init = p.clone();
    with_init["spec"]["initContainers"] = json!([{"name": "vault-agent"}]);
    let m = run(&with_init, &settings(json!({})), &cluster(json!({})))
        .mutated
        .unwrap();
    assert_eq!(names(&m["spec"]["containers"]), vec!["linkerd-proxy", "app"]);
    assert_eq!(
        names(&m["spec"]["initContainers"]),
        vec!["vault-agent", "linkerd-init"]
    );
    let proxy = &m["spec"]["containers"][0];
    assert_eq!(
        proxy["lifecycle"],
        json!({"postStart": {"exec": {"command": ["/usr/lib/linkerd/linkerd-await", "--timeout=2m", "--port=4191"]}},
               "preStop": {"exec": {"command": ["/bin/sleep", "15"]}}})
    );
    assert!(proxy.get("restartPolicy").is_none() && proxy.get("startupProbe").is_none());
}

#[test]
fn non_native_without_await_appends_the_proxy() {
    let p = pod(
        json!({"linkerd.io/inject": "enabled", "config.linkerd.io/proxy-enable-native-sidecar": "false",
        "config.linkerd.io/proxy-await": "disabled", "config.linkerd.io/enable-debug-sidecar": "true"}),
    );
    let m = run(&p, &settings(json!({})), &cluster(json!({})))
        .mutated
        .unwrap();
    assert_eq!(
        names(&m["spec"]["containers"]),
        vec!["app", "linkerd-debug", "linkerd-proxy"]
    );
    assert!(m["spec"]["containers"][2].get("lifecycle").is_none());
}

#[test]
fn cni_mode_adds_the_network_validator() {
    let p = pod(json!({"linkerd.io/inject": "enabled"}));
    let m = run(&p, &settings(json!({"cniEnabled": true})), &cluster(json!({})))
        .mutated
        .unwrap();
    assert_eq!(
        names(&m["spec"]["initContainers"]),
        vec!["linkerd-network-validator", "linkerd-proxy"]
    );
    assert_eq!(
        names(&m["spec"]["volumes"]),
        vec!["linkerd-identity-end-entity", "linkerd-identity-token"]
    );
    assert_eq!(
        m["spec"]["initContainers"][0]["args"],
        json!([
            "--log-format",
            "plain",
            "--log-level",
            "debug",
            "--connect-addr",
            "1.1.1.1:20001",
            "--listen-addr",
            "0.0.0.0:4140",
            "--timeout",
            "10s"
        ])
    );
}

#[test]
fn init_args_follow_linkerd() {
    let p = pod(
        json!({"linkerd.io/inject": "enabled", "config.linkerd.io/skip-subnets": "10.1.0.0/16",
        "config.linkerd.io/proxy-gid": "3000"}),
    );
    let s = settings(
        json!({"proxyInit": {"iptablesMode": "legacy", "logLevel": "debug", "logFormat": "json"}, "disableIPv6": false}),
    );
    let m = run(&p, &s, &cluster(json!({}))).mutated.unwrap();
    assert_eq!(
        m["spec"]["initContainers"][0]["args"],
        json!([
            "--incoming-proxy-port",
            "4143",
            "--outgoing-proxy-port",
            "4140",
            "--proxy-uid",
            "2102",
            "--proxy-gid",
            "3000",
            "--inbound-ports-to-ignore",
            "4190,4191,4567,4568",
            "--outbound-ports-to-ignore",
            "4567,4568",
            "--log-format",
            "json",
            "--log-level",
            "debug",
            "--subnets-to-ignore",
            "10.1.0.0/16"
        ])
    );
}

const ENV_ORDER: &[&str] = &[
    "_pod_name",
    "_pod_ns",
    "_pod_uid",
    "_pod_ip",
    "_pod_nodeName",
    "_pod_containerName",
    "LINKERD2_PROXY_CORES",
    "LINKERD2_PROXY_CORES_MIN",
    "LINKERD2_PROXY_CORES_MAX",
    "LINKERD2_PROXY_CORES_MAX_RATIO",
    "LINKERD2_PROXY_INBOUND_PORTS_REQUIRE_IDENTITY",
    "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED",
    "LINKERD2_PROXY_LOG",
    "LINKERD2_PROXY_LOG_FORMAT",
    "LINKERD2_PROXY_DESTINATION_SVC_ADDR",
    "LINKERD2_PROXY_DESTINATION_PROFILE_NETWORKS",
    "LINKERD2_PROXY_POLICY_SVC_ADDR",
    "LINKERD2_PROXY_POLICY_WORKLOAD",
    "LINKERD2_PROXY_INBOUND_DEFAULT_POLICY",
    "LINKERD2_PROXY_POLICY_CLUSTER_NETWORKS",
    "LINKERD2_PROXY_CONTROL_STREAM_INITIAL_TIMEOUT",
    "LINKERD2_PROXY_CONTROL_STREAM_IDLE_TIMEOUT",
    "LINKERD2_PROXY_CONTROL_STREAM_LIFETIME",
    "LINKERD2_PROXY_INBOUND_CONNECT_TIMEOUT",
    "LINKERD2_PROXY_OUTBOUND_CONNECT_TIMEOUT",
    "LINKERD2_PROXY_OUTBOUND_DISCOVERY_IDLE_TIMEOUT",
    "LINKERD2_PROXY_INBOUND_DISCOVERY_IDLE_TIMEOUT",
    "LINKERD2_PROXY_OUTBOUND_DETECT_TIMEOUT",
    "LINKERD2_PROXY_INBOUND_DETECT_TIMEOUT",
    "LINKERD2_PROXY_CONTROL_LISTEN_ADDR",
    "LINKERD2_PROXY_ADMIN_LISTEN_ADDR",
    "LINKERD2_PROXY_OUTBOUND_LISTEN_ADDR",
    "LINKERD2_PROXY_OUTBOUND_LISTEN_ADDRS",
    "LINKERD2_PROXY_INBOUND_LISTEN_ADDR",
    "LINKERD2_PROXY_INBOUND_IPS",
    "LINKERD2_PROXY_INBOUND_PORTS",
    "LINKERD2_PROXY_INBOUND_GATEWAY_SUFFIXES",
    "LINKERD2_PROXY_INGRESS_MODE",
    "LINKERD2_PROXY_DESTINATION_PROFILE_SUFFIXES",
    "LINKERD2_PROXY_INBOUND_ACCEPT_KEEPALIVE",
    "LINKERD2_PROXY_OUTBOUND_CONNECT_KEEPALIVE",
    "LINKERD2_PROXY_INBOUND_ACCEPT_USER_TIMEOUT",
    "LINKERD2_PROXY_OUTBOUND_CONNECT_USER_TIMEOUT",
    "LINKERD2_PROXY_OUTBOUND_METRICS_HOSTNAME_LABELS",
    "LINKERD2_PROXY_TRACE_ATTRIBUTES_PATH",
    "LINKERD2_PROXY_TRACE_ANNOTATIONS_PATH",
    "LINKERD2_PROXY_TRACE_PROTOCOL",
    "LINKERD2_PROXY_TRACE_SERVICE_NAME",
    "LINKERD2_PROXY_TRACE_COLLECTOR_SVC_ADDR",
    "LINKERD2_PROXY_TRACE_COLLECTOR_SVC_NAME",
    "LINKERD2_PROXY_TRACE_EXTRA_ATTRIBUTES",
    "LINKERD2_PROXY_INBOUND_SERVER_HTTP2_KEEP_ALIVE_INTERVAL",
    "LINKERD2_PROXY_INBOUND_SERVER_HTTP2_KEEP_ALIVE_TIMEOUT",
    "LINKERD2_PROXY_OUTBOUND_SERVER_HTTP2_KEEP_ALIVE_INTERVAL",
    "LINKERD2_PROXY_OUTBOUND_SERVER_HTTP2_KEEP_ALIVE_TIMEOUT",
    "LINKERD2_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION",
    "LINKERD2_PROXY_DESTINATION_CONTEXT",
    "_pod_sa",
    "_l5d_ns",
    "_l5d_trustdomain",
    "LINKERD2_PROXY_IDENTITY_DIR",
    "LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS",
    "LINKERD2_PROXY_IDENTITY_TOKEN_FILE",
    "LINKERD2_PROXY_IDENTITY_SVC_ADDR",
    "LINKERD2_PROXY_IDENTITY_LOCAL_NAME",
    "LINKERD2_PROXY_IDENTITY_SVC_NAME",
    "LINKERD2_PROXY_DESTINATION_SVC_NAME",
    "LINKERD2_PROXY_POLICY_SVC_NAME",
    "LINKERD2_PROXY_ACCESS_LOG",
    "LINKERD2_PROXY_SHUTDOWN_GRACE_PERIOD",
    "EXTRA_ONE",
    "EXPERIMENTAL_ONE",
];

#[test]
fn every_env_var_in_linkerds_order() {
    let p = pod(json!({
        "linkerd.io/inject": "ingress",
        "config.linkerd.io/proxy-cpu-limit": "2", "config.linkerd.io/proxy-cpu-ratio-limit": "0.5",
        "config.linkerd.io/proxy-require-identity-inbound-ports": "8080",
        "config.linkerd.io/proxy-disable-outbound-protocol-detect-timeout": "true",
        "config.linkerd.io/proxy-disable-inbound-protocol-detect-timeout": "true",
        "config.linkerd.io/enable-gateway": "true", "config.linkerd.io/access-log": "apache",
        "config.linkerd.io/shutdown-grace-period": "30s",
        "config.linkerd.io/proxy-additional-env": "[{\"name\":\"EXTRA_ONE\",\"value\":\"1\"}]",
        "resource.opentelemetry.io/team": "shop"
    }));
    let s = settings(json!({"proxy": {
        "experimentalEnv": [{"name": "EXPERIMENTAL_ONE", "value": "x"}],
        "tracing": {"enabled": true, "collector": {"endpoint": "collector.tracing:4317",
            "meshIdentity": {"serviceAccountName": "collector", "namespace": "tracing"}}}}}));
    let m = run(&p, &s, &cluster(json!({}))).mutated.unwrap();
    let proxy = &m["spec"]["initContainers"][1];
    let env: Vec<&str> = proxy["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(env, ENV_ORDER);
    let get = |n: &str| {
        proxy["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == n)
            .unwrap()["value"]
            .clone()
    };
    assert_eq!(get("LINKERD2_PROXY_CORES"), json!("1"));
    assert_eq!(get("LINKERD2_PROXY_CORES_MAX"), json!("2"));
    assert_eq!(get("LINKERD2_PROXY_CORES_MAX_RATIO"), json!("0.5"));
    assert_eq!(get("LINKERD2_PROXY_INGRESS_MODE"), json!("true"));
    assert_eq!(get("LINKERD2_PROXY_SHUTDOWN_GRACE_PERIOD"), json!("30000ms"));
    assert_eq!(
        get("LINKERD2_PROXY_TRACE_COLLECTOR_SVC_NAME"),
        json!("collector.tracing.serviceaccount.identity.linkerd.cluster.local")
    );
    assert_eq!(
        get("LINKERD2_PROXY_TRACE_EXTRA_ATTRIBUTES"),
        json!(
            "k8s.container.name=$(_pod_containerName)\nk8s.pod.ip=$(_pod_ip)\nk8s.pod.uid=$(_pod_uid)\nteam=shop\n"
        )
    );
    assert_eq!(
        names(&m["spec"]["volumes"]),
        vec![
            "linkerd-proxy-init-xtables-lock",
            "linkerd-identity-end-entity",
            "linkerd-podinfo",
            "linkerd-identity-token"
        ]
    );
}

#[test]
fn workload_templates_are_injected_with_the_workload_as_owner() {
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"template": {"metadata": {"annotations": {"linkerd.io/inject": "enabled"}},
            "spec": {"containers": [{"name": "app"}]}}}});
    let out = admit(
        "Deployment",
        &deploy,
        "shop",
        &settings(json!({})),
        &cluster(json!({})),
    );
    let m = out.mutated.unwrap();
    let t = &m["spec"]["template"];
    assert_eq!(
        t["metadata"]["labels"]["linkerd.io/proxy-deployment"],
        json!("web")
    );
    assert_eq!(t["metadata"]["labels"]["linkerd.io/workload-ns"], json!("shop"));
    assert_eq!(
        names(&t["spec"]["initContainers"]),
        vec!["linkerd-init", "linkerd-proxy"]
    );
    assert!(
        m["metadata"].get("annotations").is_none(),
        "the Deployment's own metadata is untouched"
    );

    let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "backup"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "job"}]}}}}}});
    let out = admit(
        "CronJob",
        &cron,
        "shop",
        &settings(json!({})),
        &cluster(json!({"linkerd.io/inject": "enabled"})),
    );
    let t = &out.mutated.unwrap()["spec"]["jobTemplate"]["spec"]["template"];
    assert_eq!(
        t["metadata"]["annotations"]["linkerd.io/inject"],
        json!("enabled"),
        "template metadata created"
    );
    assert!(t["metadata"]["labels"].get("linkerd.io/proxy-cronjob").is_none());
}

#[test]
fn injecting_an_injected_pod_changes_nothing() {
    let s = settings(json!({}));
    for ns in [
        json!({"linkerd.io/inject": "enabled", "config.linkerd.io/opaque-ports": "9"}),
        json!({}),
    ] {
        let c = cluster(ns);
        let first = run(&pod(json!({"linkerd.io/inject": "enabled"})), &s, &c)
            .mutated
            .unwrap();
        let second = run(&first, &s, &c);
        assert_eq!(second.verdict, Verdict::Skipped(vec![SkipReason::SidecarExists]));
        assert_eq!(second.mutated, None);
        assert!(second.warnings.is_empty());
    }
}

#[test]
fn malformed_shapes_are_rejected_naming_the_field() {
    let s = settings(json!({}));
    let c = cluster(json!({"linkerd.io/inject": "enabled"}));
    for (object, message) in [
        (
            json!({"metadata": {"annotations": "x"}, "spec": {}}),
            "object.metadata.annotations: must be an object of strings",
        ),
        (
            json!({"metadata": {}, "spec": []}),
            "object.spec: must be an object",
        ),
        (
            json!({"metadata": {}, "spec": {"containers": {}}}),
            "object.spec.containers: must be an array",
        ),
        (json!("pod"), "object: must be an object"),
    ] {
        assert_eq!(run(&object, &s, &c).verdict, Verdict::Rejected(message.into()));
    }
}

fn payload(object: Value, op: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "request": {"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": op,
            "namespace": "shop", "object": object},
        "settings": {"identityTrustAnchorsPEM": "PEM"}
    }))
    .unwrap()
}

#[test]
fn wire_output_is_deterministic_and_complete() {
    let c = cluster(json!({"linkerd.io/inject": "enabled"}));
    let a = wire::validate(&payload(pod(json!({})), "CREATE"), &c);
    let b = wire::validate(&payload(pod(json!({})), "CREATE"), &c);
    // the same answer, and the mutated object byte for byte; the audit annotations are the
    // SDK's HashMap, in no fixed order (the engine sorts them into its answer)
    let r: Value = serde_json::from_slice(&a).unwrap();
    assert_eq!(r, serde_json::from_slice::<Value>(&b).unwrap());
    assert_eq!(mutated_bytes(&a), mutated_bytes(&b));
    assert!(mutated_bytes(&a).is_some());
    assert_eq!(r["accepted"], json!(true));
    assert_eq!(r["audit_annotations"]["injection"], json!("injected"));
    assert!(
        r["mutated_object"]["metadata"].get("creationTimestamp").is_some(),
        "null fields are kept"
    );
    // the SDK's field order, in the bytes themselves (a parsed `Value` would sort its keys)
    let text = String::from_utf8(a).unwrap();
    let at = |key: &str| {
        text.find(&format!("\"{key}\":"))
            .unwrap_or_else(|| panic!("{key} missing"))
    };
    let fields = [
        "accepted",
        "message",
        "code",
        "mutated_object",
        "audit_annotations",
        "warnings",
    ];
    assert!(text.starts_with("{\"accepted\":"), "{text}");
    assert!(fields.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
    assert_eq!(r.as_object().unwrap().len(), fields.len());
}

#[test]
fn wire_rejects_malformed_payloads() {
    let c = cluster(json!({}));
    for (bytes, prefix) in [
        (b"not json".to_vec(), "validate payload: not a valid request:"),
        (
            b"{\"settings\":{}}".to_vec(),
            "validate payload: missing \"request\"",
        ),
        (
            b"{\"request\":1}".to_vec(),
            "request: must be an AdmissionRequest object",
        ),
        (
            b"{\"request\":{},\"settings\":{\"proxy\":{\"uid\":\"x\"}}}".to_vec(),
            "settings.proxy.uid: invalid type",
        ),
        (
            payload(Value::Null, "CREATE"),
            "request.object: a Pod CREATE must carry the object",
        ),
    ] {
        let r: Value = serde_json::from_slice(&wire::validate(&bytes, &c)).unwrap();
        assert_eq!(r["accepted"], json!(false));
        let msg = r["message"].as_str().unwrap();
        assert!(msg.starts_with(prefix), "{msg}");
    }
    let deleted: Value =
        serde_json::from_slice(&wire::validate(&payload(Value::Null, "DELETE"), &c)).unwrap();
    assert_eq!(deleted["accepted"], json!(true));
}

#[test]
fn pods_that_opted_out_are_not_annotated() {
    let out = run(
        &pod(json!({"linkerd.io/inject": "disabled"})),
        &settings(json!({})),
        &cluster(json!({"linkerd.io/inject": "enabled"})),
    );
    assert_eq!(
        out.verdict,
        Verdict::Skipped(vec![SkipReason::DisabledAnnotation])
    );
    let m = out.mutated.unwrap();
    assert!(
        m["metadata"]["annotations"]
            .get("linkerd.io/injection-skipped")
            .is_none()
    );
    assert!(out.warnings.is_empty());
}
