//! Nothing outside the mesh fails because of the mesh's config: the control plane's values are
//! read only for the admissions whose answer depends on them, and an unusable `linkerd-config`
//! rejects only pods that get a proxy. Host calls per admission as exact sequences; answers
//! under both `policy.linkerdConfigFailure` choices.

mod common;

use common::{linkerd_config, namespace};
use linkerd_injector_policy::cluster::{Call, LookupError, MemoryCluster};
use linkerd_injector_policy::outcome::{Outcome, Verdict};
use linkerd_injector_policy::settings::Settings;
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};

const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const NS: &str = "get Namespace shop";
const LIST: &str = "list ConfigMaps in namespace linkerd";
const OPAQUE: &str = "config.linkerd.io/opaque-ports";

fn pod(annotations: Value, ports: &[u16]) -> Value {
    let ports: Vec<Value> = ports.iter().map(|p| json!({"containerPort": p})).collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "shop", "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "nginx", "ports": ports,
            "volumeMounts": [{"name": "token", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}]}})
}

fn service(annotations: Value, ports: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "db", "namespace": "shop", "annotations": annotations},
        "spec": {"ports": ports}})
}

fn settings(policy: Value) -> Settings {
    Settings::from_value(json!({"identityTrustAnchorsPEM": PEM, "policy": policy})).expect("valid settings")
}

fn described(c: &MemoryCluster) -> Vec<String> {
    c.calls().iter().map(Call::describe).collect()
}

fn admit(kind: &str, object: &Value, s: &Settings, c: &MemoryCluster) -> Outcome {
    common::admit(kind, object, "shop", s, c)
}

/// The host calls of one admission, in order, in a cluster with a usable `linkerd-config`.
#[rstest]
#[case::no_ports_not_asked("Pod", pod(json!({}), &[]), json!({}), &[NS])]
#[case::ports_not_asked("Pod", pod(json!({}), &[8080]), json!({}), &[NS, LIST])]
#[case::pod_sets_opaque_ports("Pod", pod(json!({OPAQUE: "8080"}), &[8080]), json!({}), &[NS])]
#[case::namespace_sets_opaque_ports("Pod", pod(json!({}), &[8080]), json!({OPAQUE: "9000"}), &[NS])]
#[case::disabled_in_enabled_namespace("Pod", pod(json!({"linkerd.io/inject": "disabled"}), &[]),
    json!({"linkerd.io/inject": "enabled"}), &[NS])]
#[case::invalid_namespace_value("Pod", pod(json!({"linkerd.io/inject": "enabled"}), &[]),
    json!({"linkerd.io/inject": "yes"}), &[NS])]
#[case::asks_for_a_proxy("Pod", pod(json!({"linkerd.io/inject": "enabled"}), &[]), json!({}), &[NS, LIST])]
#[case::namespace_asks("Pod", pod(json!({}), &[]), json!({"linkerd.io/inject": "ingress"}), &[NS, LIST])]
#[case::service_with_ports("Service", service(json!({}), json!([{"port": 80, "targetPort": 8080}])), json!({}),
    &[NS, LIST])]
#[case::service_named_targets_only("Service", service(json!({}), json!([{"port": 80, "targetPort": "http"}])),
    json!({}), &[NS])]
#[case::service_namespace_sets_opaque_ports("Service", service(json!({}), json!([{"port": 3306}])),
    json!({OPAQUE: "3306"}), &[NS])]
#[case::service_sets_opaque_ports("Service", service(json!({OPAQUE: "3306"}), json!([{"port": 3306}])), json!({}),
    &[])]
fn host_calls_per_admission(
    #[case] kind: &str,
    #[case] object: Value,
    #[case] ns_annotations: Value,
    #[case] calls: &[&str],
) {
    let c = common::cluster(vec![namespace("shop", ns_annotations)]);
    let out = admit(kind, &object, &settings(json!({})), &c);
    assert!(!out.is_rejected(), "{:?}", out.verdict);
    assert_eq!(described(&c), calls);
}

/// Every way `linkerd-config` can be unusable, with the reason its message starts with.
fn unusable() -> Vec<(&'static str, MemoryCluster, String)> {
    let at = "ConfigMap linkerd/linkerd-config";
    let ns = || namespace("shop", json!({}));
    let failed =
        LookupError::Failed("lookup of ConfigMaps in namespace linkerd failed: connection refused".into());
    let key_less = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "linkerd-config", "namespace": "linkerd"}, "data": {"global": "x"}});
    vec![
        (
            "missing",
            MemoryCluster::new(vec![ns()]),
            format!("{at} not found: is Linkerd's control plane installed there?"),
        ),
        (
            "failing",
            MemoryCluster::new(vec![ns()]).fail("ConfigMap", failed),
            format!(
                "could not read {at}: lookup of ConfigMaps in namespace linkerd failed: connection refused"
            ),
        ),
        (
            "malformed",
            MemoryCluster::new(vec![ns(), linkerd_config("proxy:\n  logLevel: [unclosed\n")]),
            format!("{at}, key \"values\": not YAML: "),
        ),
        (
            "key-less",
            MemoryCluster::new(vec![ns(), key_less]),
            format!("{at} has no data key \"values\""),
        ),
        (
            "invalid opaque ports",
            MemoryCluster::new(vec![
                ns(),
                linkerd_config("proxy:\n  opaquePorts: \"3306,no way\"\n"),
            ]),
            format!(
                "{at}, key \"values\", under this policy's settings: settings.proxy.opaquePorts: \"no way\" is neither a port, a range \"lo-hi\" nor a port name"
            ),
        ),
    ]
}

const LEFT_OUT: &str = "; admitted without the default config.linkerd.io/opaque-ports annotation (proxy.opaquePorts) (an unusable linkerd-config rejects only pods that get a proxy)";
const SETTINGS_ALONE: &str =
    "; the Linkerd values in effect are this policy's settings alone (policy.linkerdConfigFailure: settings)";

/// A pod with no port a default list could name reads no ConfigMap: unchanged, no warning,
/// whatever the ConfigMap's state and the failure choice.
#[rstest]
fn a_pod_without_ports_never_reads_linkerd_config(#[values("reject", "settings")] failure: &str) {
    for (case, c, _) in unusable() {
        let out = admit(
            "Pod",
            &pod(json!({}), &[]),
            &settings(json!({"linkerdConfigFailure": failure})),
            &c,
        );
        let expected = Outcome {
            verdict: out.verdict.clone(),
            mutated: None,
            warnings: vec![],
            audit_annotations: out.audit_annotations.clone(),
        };
        assert!(
            matches!(out.verdict, Verdict::Skipped(_)),
            "{case}: {:?}",
            out.verdict
        );
        assert_eq!(out, expected, "{case}");
        assert!(!out.audit_annotations.contains_key("values"), "{case}");
        assert_eq!(described(&c), [NS], "{case}");
    }
}

/// A pod that asked for no proxy but exposes a port the default list may name: under `reject`
/// it is admitted without the default annotation and with a warning; under `settings` it gets
/// the settings' default list (3306 is in Linkerd's) and the usual fallback warning.
#[rstest]
#[case::pod("Pod", pod(json!({}), &[3306]))]
#[case::pod_disabled("Pod", pod(json!({"linkerd.io/inject": "disabled"}), &[3306]))]
#[case::service("Service", service(json!({}), json!([{"port": 3306}])))]
fn an_unusable_linkerd_config_only_leaves_out_the_default_annotation(
    #[case] kind: &str,
    #[case] object: Value,
) {
    for (case, c, reason) in unusable() {
        let out = admit(
            kind,
            &object,
            &settings(json!({"linkerdConfigFailure": "reject"})),
            &c,
        );
        assert!(!out.is_rejected(), "{case}: {:?}", out.verdict);
        assert_eq!(out.mutated, None, "{case}");
        let [warning] = out.warnings.as_slice() else {
            panic!("{case}: one warning, got {:?}", out.warnings)
        };
        assert!(warning.starts_with(&reason), "{case}: {warning}");
        assert!(warning.ends_with(LEFT_OUT), "{case}: {warning}");
        assert_eq!(
            out.audit_annotations["values"], "not used: linkerd-config unusable",
            "{case}"
        );
        assert_eq!(described(&c), [NS, LIST], "{case}");
    }
    for (case, c, reason) in unusable() {
        let out = admit(
            kind,
            &object,
            &settings(json!({"linkerdConfigFailure": "settings"})),
            &c,
        );
        let mutated = out
            .mutated
            .as_ref()
            .expect("annotated from the settings' defaults");
        assert_eq!(mutated["metadata"]["annotations"][OPAQUE], "3306", "{case}");
        let [warning] = out.warnings.as_slice() else {
            panic!("{case}: one warning, got {:?}", out.warnings)
        };
        assert!(
            warning.starts_with(&reason) && warning.ends_with(SETTINGS_ALONE),
            "{case}: {warning}"
        );
        assert_eq!(
            out.audit_annotations["values"], "settings only: linkerd-config unusable",
            "{case}"
        );
    }
}

/// A pod that asks for a proxy needs the values: `reject` refuses it with the reason, `settings`
/// injects it from the settings alone.
#[rstest]
fn a_pod_that_asks_for_a_proxy_needs_the_values(#[values("reject", "settings")] failure: &str) {
    let asks = pod(json!({"linkerd.io/inject": "enabled"}), &[8080]);
    for (case, c, reason) in unusable() {
        let out = admit(
            "Pod",
            &asks,
            &settings(json!({"linkerdConfigFailure": failure})),
            &c,
        );
        match (failure, &out.verdict) {
            ("reject", Verdict::Rejected(message)) => {
                assert!(message.starts_with(&reason), "{case}: {message}")
            }
            ("settings", Verdict::Injected { .. }) => {
                assert!(
                    out.warnings
                        .iter()
                        .any(|w| w.starts_with(&reason) && w.ends_with(SETTINGS_ALONE))
                )
            }
            (_, verdict) => panic!("{case} under {failure}: {verdict:?}"),
        }
    }
}

/// The token-projection reason needs the values; a pod its annotations already skip is not
/// given it, so its reasons are the same whatever `linkerd-config` says.
#[test]
fn skip_reasons_of_a_pod_that_did_not_ask_need_no_values() {
    let mut no_token = pod(json!({"linkerd.io/inject": "enable"}), &[]);
    no_token["spec"]["automountServiceAccountToken"] = json!(false);
    no_token["spec"]["containers"][0]["volumeMounts"] = json!([]);
    let projection_off = linkerd_config("identity:\n  serviceAccountTokenProjection: false\n");
    let c = MemoryCluster::new(vec![namespace("shop", json!({})), projection_off]);
    let out = admit("Pod", &no_token, &settings(json!({})), &c);
    assert_eq!(
        out.audit_annotations["injection"],
        "skipped: invalid value for annotation \"linkerd.io/inject\" at workload"
    );
    assert_eq!(described(&c), [NS]);

    no_token["metadata"]["annotations"]["linkerd.io/inject"] = json!("enabled");
    let c = MemoryCluster::new(vec![
        namespace("shop", json!({})),
        linkerd_config("identity:\n  serviceAccountTokenProjection: false\n"),
    ]);
    let out = admit("Pod", &no_token, &settings(json!({})), &c);
    assert_eq!(
        out.audit_annotations["injection"],
        "skipped: automountServiceAccountToken set to \"false\", with Values.identity.serviceAccountTokenProjection set to \"false\""
    );
    assert_eq!(described(&c), [NS, LIST]);
}

/// A pod outside the mesh and a Service read the values whole, as a pod that gets a proxy does,
/// so one rule says whether `linkerd-config` is usable: a mistake anywhere in it (an invalid
/// value, or YAML that does not parse, even after `proxy.opaquePorts`) leaves out the default
/// annotation with a warning, and refuses the pods that get a proxy.
#[rstest]
#[case::pod("Pod", pod(json!({}), &[3306]))]
#[case::service("Service", service(json!({}), json!([{"port": 3306}])))]
fn a_mistake_anywhere_in_linkerd_config_leaves_out_the_default_annotation(
    #[case] kind: &str,
    #[case] object: Value,
    #[values(
        ("proxy:\n  opaquePorts: \"3306,6379\"\n  ports:\n    admin: 0\n",
            ", under this policy's settings: settings.proxy.ports.admin: must be 1-65535, got 0"),
        ("proxy:\n  opaquePorts: \"3306,6379\"\nwebhook:\n  labels: [unclosed\n",
            ": not YAML: did not find expected ',' or ']' at line 5 column 1, while parsing a flow sequence at line 4 column 11"),
    )]
    mistake: (&str, &str),
) {
    let (values, reason) = mistake;
    let broken = || MemoryCluster::new(vec![namespace("shop", json!({})), linkerd_config(values)]);
    let c = broken();
    let out = admit(kind, &object, &settings(json!({})), &c);
    assert!(!out.is_rejected(), "{:?}", out.verdict);
    assert_eq!(out.mutated, None);
    assert_eq!(
        out.warnings,
        [format!(
            "ConfigMap linkerd/linkerd-config, key \"values\"{reason}; admitted without the default config.linkerd.io/opaque-ports annotation (proxy.opaquePorts) (an unusable linkerd-config rejects only pods that get a proxy)"
        )]
    );
    assert_eq!(
        out.audit_annotations.get("values").map(String::as_str),
        Some("not used: linkerd-config unusable")
    );
    assert_eq!(described(&c), [NS, LIST]);

    let asks = pod(json!({"linkerd.io/inject": "enabled"}), &[3306]);
    let out = admit("Pod", &asks, &settings(json!({})), &broken());
    assert_eq!(
        out.verdict,
        Verdict::Rejected(format!(
            "ConfigMap linkerd/linkerd-config, key \"values\"{reason}"
        ))
    );
}

/// Settings that set `proxy.opaquePorts` decide the default annotation alone: no ConfigMap is
/// read for an object outside the mesh, whatever its state.
#[test]
fn settings_that_set_the_opaque_ports_read_no_config_map() {
    let c = MemoryCluster::new(vec![namespace("shop", json!({}))]);
    let s = Settings::from_value(json!({"identityTrustAnchorsPEM": PEM, "proxy": {"opaquePorts": "8080"}}))
        .unwrap();
    let out = admit("Pod", &pod(json!({}), &[8080]), &s, &c);
    assert_eq!(
        out.mutated.expect("annotated")["metadata"]["annotations"][OPAQUE],
        "8080"
    );
    assert_eq!(out.warnings, Vec::<String>::new());
    assert_eq!(described(&c), [NS]);
}
