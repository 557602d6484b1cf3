//! Windows pods are never injected (linkerd2#2882): Linkerd's proxy and init images are Linux
//! images. `spec.os.name: windows` or a `kubernetes.io/os: windows` node selector skips the pod
//! with a reason stated as Linkerd states its own; verify mode counts it as exempt.

mod common;

use common::namespace;
use linkerd_injector_policy::decide::{Decision, DecisionInput, SkipReason, decide};
use linkerd_injector_policy::outcome::{Outcome, Verdict};
use linkerd_injector_policy::settings::Settings;
use rstest::rstest;
use serde_json::{Value, json};

fn windows_by_os() -> Value {
    json!({"os": {"name": "windows"}, "containers": [{"name": "app", "image": "mcr.microsoft.com/windows/servercore:ltsc2022"}]})
}

fn windows_by_selector() -> Value {
    json!({"nodeSelector": {"kubernetes.io/os": "windows"}, "containers": [{"name": "app", "image": "iis"}]})
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "iis", "namespace": "shop"}, "spec": spec})
}

fn settings(policy: Value) -> Settings {
    Settings::from_value(json!({"identityTrustAnchorsPEM": "PEM", "policy": policy})).unwrap()
}

fn admit(kind: &str, object: &Value, policy: Value) -> Outcome {
    let c = common::cluster(vec![namespace("shop", json!({"linkerd.io/inject": "enabled"}))]);
    common::admit(kind, object, "shop", &settings(policy), &c)
}

#[test]
fn the_reason_is_stated_as_linkerds_are() {
    assert_eq!(
        (SkipReason::Windows.to_string(), SkipReason::Windows.code()),
        ("pod runs on Windows".to_string(), "windows_pod")
    );
}

#[rstest]
#[case::os_name(windows_by_os(), vec![SkipReason::Windows])]
#[case::node_selector(windows_by_selector(), vec![SkipReason::Windows])]
#[case::both(json!({"os": {"name": "windows"}, "nodeSelector": {"kubernetes.io/os": "windows"},
    "containers": [{"name": "a"}]}), vec![SkipReason::Windows])]
#[case::with_host_network(json!({"hostNetwork": true, "os": {"name": "windows"}, "containers": [{"name": "a"}]}),
    vec![SkipReason::HostNetwork, SkipReason::Windows])]
#[case::linux_os(json!({"os": {"name": "linux"}, "containers": [{"name": "a"}]}), vec![])]
#[case::linux_selector(json!({"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "a"}]}), vec![])]
#[case::other_selector_key(json!({"nodeSelector": {"os": "windows"}, "containers": [{"name": "a"}]}), vec![])]
// Node affinity may allow both systems; only the scheduler knows which one the pod gets.
#[case::affinity_is_not_read(json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]}}},
    "containers": [{"name": "a"}]}), vec![])]
#[case::os_not_an_object(json!({"os": "windows", "containers": [{"name": "a"}]}), vec![])]
fn windows_is_read_from_the_os_and_the_node_selector(#[case] spec: Value, #[case] expected: Vec<SkipReason>) {
    let got = decide(DecisionInput {
        spec: &spec,
        pod_inject: Some("enabled"),
        ns_inject: None,
        token_projection: Some(true),
    });
    let want = match expected.is_empty() {
        true => Decision::Inject {
            ingress: false,
            at: linkerd_injector_policy::decide::AnnotationAt::Workload,
        },
        false => Decision::Skip(expected),
    };
    assert_eq!(got, want);
}

/// The mutating policy: the pod asked for a proxy (its namespace did), so it gets Linkerd's
/// three signs of a skip and nothing else.
#[rstest]
#[case::os_name(windows_by_os())]
#[case::node_selector(windows_by_selector())]
fn a_windows_pod_is_skipped_with_the_reason(#[case] spec: Value) {
    let input = pod(spec);
    let out = admit("Pod", &input, json!({}));
    assert_eq!(out.verdict, Verdict::Skipped(vec![SkipReason::Windows]));
    let mut expected = input.clone();
    expected["metadata"]["annotations"] = json!({"linkerd.io/injection-skipped": "pod runs on Windows"});
    assert_eq!(out.mutated, Some(expected));
    assert_eq!(
        out.warnings,
        ["Linkerd sidecar proxy injection skipped: pod runs on Windows"]
    );
    assert_eq!(
        out.audit_annotations,
        [(
            "injection".to_string(),
            "skipped: pod runs on Windows".to_string()
        )]
        .into()
    );
}

#[test]
fn reasons_are_listed_together() {
    let out = admit(
        "Pod",
        &pod(json!({"hostNetwork": true, "os": {"name": "windows"}, "containers": [{"name": "a"}]})),
        json!({}),
    );
    assert_eq!(
        out.audit_annotations["injection"],
        "skipped: hostNetwork is enabled, pod runs on Windows"
    );
}

/// A workload's template is decided as its pods are (manual injection, `injector-host inject`).
#[test]
fn a_windows_deployment_template_is_skipped() {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "iis", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "iis"}},
            "template": {"metadata": {"labels": {"app": "iis"}}, "spec": windows_by_selector()}}});
    let out = admit("Deployment", &deployment, json!({}));
    assert_eq!(out.verdict, Verdict::Skipped(vec![SkipReason::Windows]));
    let mutated = out.mutated.expect("the skip annotation");
    assert_eq!(
        mutated["spec"]["template"]["metadata"]["annotations"],
        json!({"linkerd.io/injection-skipped": "pod runs on Windows"})
    );
    assert_eq!(mutated["spec"]["template"]["spec"], windows_by_selector());
}

#[rstest]
#[case::os_name(windows_by_os())]
#[case::node_selector(windows_by_selector())]
fn verify_mode_counts_a_windows_pod_as_exempt(#[case] spec: Value) {
    let out = admit("Pod", &pod(spec), json!({"mode": "verify"}));
    assert_eq!(out.verdict, Verdict::Skipped(vec![SkipReason::Windows]));
    assert_eq!(out.mutated, None);
    assert_eq!(out.warnings, Vec::<String>::new());
    assert_eq!(out.audit_annotations["verify"], "exempt: pod runs on Windows");
}
