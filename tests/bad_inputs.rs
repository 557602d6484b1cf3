//! The bad-input catalogue: each malformed or hostile input has one exact outcome, a clear
//! rejection, an unchanged admission, or an injection with a warning naming the problem.
//! Nothing may panic (the module would trap).

mod common;

use common::namespace;
use linkerd_injector_policy::wire;
use serde_json::{Value, json};

#[derive(Debug)]
enum Expect {
    /// `accepted: false` and the message starts with this.
    Rejected(&'static str),
    /// Accepted with no mutation.
    Unchanged,
    /// Accepted with a proxy and a warning starting with this.
    InjectedWarning(&'static str),
    /// Accepted with a proxy.
    Injected,
    /// Accepted, not injected, annotated with this skip reason.
    SkippedBecause(&'static str),
}
use Expect::*;

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "shop", "annotations": {"linkerd.io/inject": "enabled"}},
        "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]}})
}

fn settings() -> Value {
    json!({"identityTrustAnchorsPEM": "PEM"})
}

fn request(kind: &str, op: &str, object: Value) -> Value {
    json!({"uid": "u", "kind": {"group": "", "version": "v1", "kind": kind}, "operation": op, "namespace": "shop", "object": object})
}

fn payload(request: Value, settings: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"request": request, "settings": settings})).unwrap()
}

fn pod_with(f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut p = pod();
    f(&mut p);
    payload(request("Pod", "CREATE", p), settings())
}

fn annotated(key: &str, value: &str) -> Vec<u8> {
    pod_with(|p| p["metadata"]["annotations"][key] = json!(value))
}

fn with_settings(s: Value) -> Vec<u8> {
    payload(request("Pod", "CREATE", pod()), s)
}

fn nested(depth: usize) -> Vec<u8> {
    let mut s = String::from(
        r#"{"request":{"kind":{"kind":"Pod"},"operation":"CREATE","namespace":"shop","object":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a","x":"#,
    );
    s.push_str(&"[".repeat(depth));
    s.push_str(&"]".repeat(depth));
    s.push_str("}]}}}}");
    s.into_bytes()
}

fn catalogue() -> Vec<(&'static str, Vec<u8>, Expect)> {
    let big_env: Vec<Value> = (0..20_000)
        .map(|i| json!({"name": format!("VAR_{i}"), "value": "x".repeat(60)}))
        .collect();
    vec![
        (
            "not json",
            b"hello".to_vec(),
            Rejected("validate payload: not a valid request: expected value"),
        ),
        (
            "empty payload",
            Vec::new(),
            Rejected("validate payload: not a valid request: EOF"),
        ),
        (
            "truncated json",
            payload(request("Pod", "CREATE", pod()), settings())[..50].to_vec(),
            Rejected("validate payload: not a valid request: EOF"),
        ),
        (
            "array payload",
            b"[]".to_vec(),
            Rejected("validate payload: must be a JSON object with \"request\" and \"settings\""),
        ),
        (
            "missing request",
            b"{\"settings\":{}}".to_vec(),
            Rejected("validate payload: missing \"request\""),
        ),
        (
            "request null",
            b"{\"request\":null}".to_vec(),
            Rejected("request: must be an AdmissionRequest object"),
        ),
        (
            "non-UTF-8 bytes",
            vec![b'{', 0xff, 0xfe, b'}'],
            Rejected("validate payload: not a valid request"),
        ),
        (
            "10,000-deep nesting",
            nested(10_000),
            Rejected("validate payload: not a valid request: recursion limit exceeded"),
        ),
        (
            "settings not object",
            with_settings(json!("x")),
            Rejected("settings: must be an object, got string"),
        ),
        (
            "settings bool type",
            with_settings(json!({"cniEnabled": "yes"})),
            Rejected("settings.cniEnabled: invalid type: string \"yes\", expected a boolean"),
        ),
        (
            "settings proxy type",
            with_settings(json!({"proxy": 5})),
            Rejected("settings.proxy: must be an object, got number"),
        ),
        (
            "settings ports type",
            with_settings(json!({"proxy": {"ports": []}})),
            Rejected("settings.proxy.ports: must be an object, got array"),
        ),
        (
            "settings env type",
            with_settings(json!({"proxy": {"additionalEnv": {}}})),
            Rejected("settings.proxy.additionalEnv: invalid type: map, expected a sequence"),
        ),
        (
            "settings port 0",
            with_settings(json!({"proxy": {"ports": {"admin": 0}}})),
            Rejected("settings.proxy.ports.admin: must be 1-65535, got 0"),
        ),
        (
            "settings port 65536",
            with_settings(json!({"proxy": {"ports": {"outbound": 65536}}})),
            Rejected("settings.proxy.ports.outbound: must be 1-65535, got 65536"),
        ),
        (
            "settings reversed range",
            with_settings(json!({"proxyInit": {"ignoreInboundPorts": "10-1"}})),
            Rejected("settings.proxyInit.ignoreInboundPorts: \"10-1\""),
        ),
        (
            "settings bad cidr",
            with_settings(json!({"clusterNetworks": "10.0.0.0/8,300.0.0.0/8"})),
            Rejected("settings.clusterNetworks: entry 1 \"300.0.0.0/8\""),
        ),
        (
            "settings bad quantity",
            with_settings(json!({"proxy": {"resources": {"cpu": {"limit": "one"}}}})),
            Rejected("settings.proxy.resources.cpu.limit:"),
        ),
        (
            "settings unknown policy key",
            with_settings(json!({"policy": {"bogus": 1}})),
            Rejected("settings.policy.bogus: unknown field `bogus`"),
        ),
        (
            "unknown kind",
            payload(
                request("ConfigMap", "CREATE", json!({"metadata": {}})),
                settings(),
            ),
            Unchanged,
        ),
        (
            "DELETE without object",
            payload(request("Pod", "DELETE", Value::Null), settings()),
            Unchanged,
        ),
        (
            "UPDATE",
            payload(request("Pod", "UPDATE", pod()), settings()),
            Unchanged,
        ),
        (
            "CONNECT",
            payload(request("Pod", "CONNECT", Value::Null), settings()),
            Unchanged,
        ),
        (
            "missing kind",
            payload(json!({"operation": "CREATE", "object": pod()}), settings()),
            Unchanged,
        ),
        (
            "CREATE without object",
            payload(request("Pod", "CREATE", Value::Null), settings()),
            Rejected("request.object: a Pod CREATE must carry the object"),
        ),
        (
            "object is an array",
            payload(request("Pod", "CREATE", json!([1])), settings()),
            Rejected("request.object: a Pod CREATE must carry the object"),
        ),
        (
            "missing namespace",
            payload(
                json!({"kind": {"kind": "Pod"}, "operation": "CREATE", "object": {"metadata": {}, "spec": {"containers": []}}}),
                settings(),
            ),
            Rejected("request.namespace: missing; a namespaced Pod needs one"),
        ),
        (
            "annotations not an object",
            pod_with(|p| p["metadata"]["annotations"] = json!(["a"])),
            Rejected("object.metadata.annotations: must be an object of strings"),
        ),
        (
            "labels not an object",
            pod_with(|p| p["metadata"]["labels"] = json!(1)),
            Rejected("object.metadata.labels: must be an object of strings"),
        ),
        (
            "missing spec",
            pod_with(|p| {
                p.as_object_mut().unwrap().remove("spec");
            }),
            Rejected("object.spec: must be an object"),
        ),
        (
            "containers not an array",
            pod_with(|p| p["spec"]["containers"] = json!({"name": "a"})),
            Rejected("object.spec.containers: must be an array"),
        ),
        (
            "container not an object",
            pod_with(|p| p["spec"]["containers"] = json!([1])),
            Rejected("object.spec.containers[0]: must be an object"),
        ),
        (
            "volumes not an array",
            pod_with(|p| p["spec"]["volumes"] = json!("v")),
            Rejected("object.spec.volumes: must be an array"),
        ),
        (
            "duplicate containers",
            pod_with(|p| p["spec"]["containers"] = json!([{"name": "a"}, {"name": "a"}])),
            Rejected("object.spec.containers[1].name: duplicate container name \"a\""),
        ),
        (
            "service annotations not an object",
            payload(
                request("Service", "CREATE", json!({"metadata": {"annotations": 3}})),
                settings(),
            ),
            Rejected("object.metadata.annotations: must be an object of strings"),
        ),
        (
            "service ports not an array",
            payload(
                request(
                    "Service",
                    "CREATE",
                    json!({"metadata": {}, "spec": {"ports": "3306"}}),
                ),
                settings(),
            ),
            Unchanged,
        ),
        (
            "invalid inject value",
            annotated("linkerd.io/inject", "ENABLED"),
            SkippedBecause("invalid value for annotation \"linkerd.io/inject\" at workload"),
        ),
        (
            "ownerReferences not an array",
            pod_with(|p| p["metadata"]["ownerReferences"] = json!("rs")),
            Injected,
        ),
        (
            "control port 0",
            annotated("config.linkerd.io/control-port", "0"),
            InjectedWarning("annotation config.linkerd.io/control-port: invalid value \"0\""),
        ),
        (
            "admin port 65536",
            annotated("config.linkerd.io/admin-port", "65536"),
            InjectedWarning("annotation config.linkerd.io/admin-port: invalid value \"65536\""),
        ),
        (
            "inbound port text",
            annotated("config.linkerd.io/inbound-port", "http"),
            InjectedWarning("annotation config.linkerd.io/inbound-port"),
        ),
        (
            "outbound port negative",
            annotated("config.linkerd.io/outbound-port", "-1"),
            InjectedWarning("annotation config.linkerd.io/outbound-port"),
        ),
        (
            "cpu request quantity",
            annotated("config.linkerd.io/proxy-cpu-request", "1 core"),
            InjectedWarning("annotation config.linkerd.io/proxy-cpu-request"),
        ),
        (
            "cpu limit quantity",
            annotated("config.linkerd.io/proxy-cpu-limit", "1.2.3"),
            InjectedWarning("annotation config.linkerd.io/proxy-cpu-limit"),
        ),
        (
            "memory quantity",
            annotated("config.linkerd.io/proxy-memory-request", "64MB"),
            InjectedWarning("annotation config.linkerd.io/proxy-memory-request"),
        ),
        (
            "ephemeral quantity",
            annotated("config.linkerd.io/proxy-ephemeral-storage-limit", "-"),
            Injected,
        ),
        (
            "cpu ratio 1.5",
            annotated("config.linkerd.io/proxy-cpu-ratio-limit", "1.5"),
            InjectedWarning("annotation config.linkerd.io/proxy-cpu-ratio-limit"),
        ),
        (
            "cpu ratio NaN",
            annotated("config.linkerd.io/proxy-cpu-ratio-limit", "NaN"),
            InjectedWarning("annotation config.linkerd.io/proxy-cpu-ratio-limit"),
        ),
        (
            "uid text",
            annotated("config.linkerd.io/proxy-uid", "root"),
            InjectedWarning("annotation config.linkerd.io/proxy-uid"),
        ),
        (
            "uid 0",
            annotated("config.linkerd.io/proxy-uid", "0"),
            Rejected("annotation config.linkerd.io/proxy-uid: the proxy may not run as uid 0"),
        ),
        (
            "gid huge",
            annotated("config.linkerd.io/proxy-gid", "99999999999999999999"),
            InjectedWarning("annotation config.linkerd.io/proxy-gid"),
        ),
        (
            "bool annotation",
            annotated("config.linkerd.io/enable-external-profiles", "maybe"),
            InjectedWarning("annotation config.linkerd.io/enable-external-profiles"),
        ),
        (
            "enabled/disabled annotation",
            annotated("config.linkerd.io/proxy-await", "on"),
            InjectedWarning("annotation config.linkerd.io/proxy-await"),
        ),
        (
            "duration without unit",
            annotated("config.linkerd.io/proxy-outbound-connect-timeout", "1000"),
            InjectedWarning("annotation config.linkerd.io/proxy-outbound-connect-timeout"),
        ),
        (
            "duration garbage",
            annotated("config.linkerd.io/shutdown-grace-period", "soon"),
            InjectedWarning("annotation config.linkerd.io/shutdown-grace-period"),
        ),
        (
            "inbound policy",
            annotated("config.linkerd.io/default-inbound-policy", "allow"),
            InjectedWarning("annotation config.linkerd.io/default-inbound-policy"),
        ),
        (
            "log http headers",
            annotated("config.linkerd.io/proxy-log-http-headers", "on"),
            Rejected(
                "annotation config.linkerd.io/proxy-log-http-headers: must be \"insecure\" or \"off\", got \"on\"",
            ),
        ),
        (
            "close wait without root",
            annotated("config.linkerd.io/close-wait-timeout", "1m"),
            Rejected("annotation config.linkerd.io/close-wait-timeout: requires proxyInit.runAsRoot"),
        ),
        (
            "additional env not json",
            annotated("config.linkerd.io/proxy-additional-env", "[{"),
            InjectedWarning("annotation config.linkerd.io/proxy-additional-env on the pod"),
        ),
        (
            "wait before exit negative",
            annotated("config.alpha.linkerd.io/proxy-wait-before-exit-seconds", "-5"),
            InjectedWarning("annotation config.alpha.linkerd.io/proxy-wait-before-exit-seconds"),
        ),
        (
            "native sidecar garbage",
            annotated("config.linkerd.io/proxy-enable-native-sidecar", "sometimes"),
            InjectedWarning("annotation config.linkerd.io/proxy-enable-native-sidecar"),
        ),
        (
            "opaque ports garbage",
            annotated("config.linkerd.io/opaque-ports", "a,,99999,5-1,80"),
            Injected,
        ),
        (
            "huge annotation value",
            annotated("config.linkerd.io/proxy-log-level", &"x".repeat(1 << 20)),
            Injected,
        ),
        (
            "1.5 MB object",
            pod_with(|p| p["spec"]["containers"][0]["env"] = json!(big_env)),
            Injected,
        ),
        (
            "no trust anchors",
            payload(request("Pod", "CREATE", pod()), json!({})),
            Rejected("could not read the trust anchors from ConfigMap linkerd/linkerd-identity-trust-roots"),
        ),
    ]
}

#[test]
fn every_bad_input_has_its_exact_outcome() {
    let cluster = common::cluster(vec![namespace("shop", json!({}))]);
    let cases = catalogue();
    for (name, bytes, expect) in &cases {
        let answer: Value = serde_json::from_slice(&wire::validate(bytes, &cluster))
            .unwrap_or_else(|e| panic!("{name}: the answer is not JSON: {e}"));
        let accepted = answer["accepted"].as_bool().unwrap();
        let message = answer["message"].as_str().unwrap_or("");
        let mutated = &answer["mutated_object"];
        let injected = mutated.pointer("/spec/initContainers/1/name") == Some(&json!("linkerd-proxy"));
        let warnings: Vec<&str> = answer["warnings"]
            .as_array()
            .map(|w| w.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match expect {
            Rejected(prefix) => {
                assert!(!accepted, "{name}: accepted");
                assert!(
                    message.starts_with(prefix),
                    "{name}: message {message:?} does not start with {prefix:?}"
                );
            }
            Unchanged => assert!(accepted && mutated.is_null(), "{name}: {answer}"),
            Injected => assert!(accepted && injected, "{name}: not injected: {message}"),
            InjectedWarning(prefix) => {
                assert!(accepted && injected, "{name}: not injected: {message}");
                assert!(
                    warnings.iter().any(|w| w.starts_with(prefix)),
                    "{name}: warnings {warnings:?}"
                );
            }
            SkippedBecause(reason) => {
                assert!(accepted && !injected, "{name}");
                assert_eq!(
                    mutated["metadata"]["annotations"]["linkerd.io/injection-skipped"],
                    json!(reason),
                    "{name}"
                );
            }
        }
    }
    println!("bad-input catalogue: {} cases", cases.len());
    assert!(cases.len() >= 40);
}
