//! Linkerd's decision table (spec §a): every pod × namespace `linkerd.io/inject` combination,
//! and the other skip reasons with their exact texts.

use linkerd_injector_policy::decide::{
    AnnotationAt::{Namespace as Ns, Workload as Wl},
    Decision::{self, Inject, Skip},
    DecisionInput, SkipReason, decide, inject_annotation,
};
use rstest::rstest;
use serde_json::{Value, json};

fn plain_spec() -> Value {
    json!({"containers": [{"name": "app", "image": "nginx",
        "volumeMounts": [{"name": "kube-api-access-x", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}]})
}

fn run(pod: Option<&str>, ns: Option<&str>) -> Decision {
    decide(DecisionInput {
        spec: &plain_spec(),
        pod_inject: pod,
        ns_inject: ns,
        token_projection: Some(true),
    })
}

const ABSENT: SkipReason = SkipReason::EnableAbsent;
const DISABLED: SkipReason = SkipReason::DisabledAnnotation;

#[rstest]
#[case::ns_none_pod_none(None, None, Skip(vec![ABSENT]))]
#[case::ns_none_pod_enabled(None, Some("enabled"), Inject { ingress: false, at: Wl })]
#[case::ns_none_pod_ingress(None, Some("ingress"), Inject { ingress: true, at: Wl })]
#[case::ns_none_pod_disabled(None, Some("disabled"), Skip(vec![ABSENT]))]
#[case::ns_enabled_pod_none(Some("enabled"), None, Inject { ingress: false, at: Ns })]
#[case::ns_enabled_pod_enabled(Some("enabled"), Some("enabled"), Inject { ingress: false, at: Ns })]
#[case::ns_enabled_pod_ingress(Some("enabled"), Some("ingress"), Inject { ingress: true, at: Ns })]
#[case::ns_enabled_pod_disabled(Some("enabled"), Some("disabled"), Skip(vec![DISABLED]))]
#[case::ns_ingress_pod_none(Some("ingress"), None, Inject { ingress: true, at: Ns })]
#[case::ns_ingress_pod_enabled(Some("ingress"), Some("enabled"), Inject { ingress: false, at: Ns })]
#[case::ns_ingress_pod_ingress(Some("ingress"), Some("ingress"), Inject { ingress: true, at: Ns })]
#[case::ns_ingress_pod_disabled(Some("ingress"), Some("disabled"), Skip(vec![DISABLED]))]
#[case::ns_disabled_pod_none(Some("disabled"), None, Skip(vec![ABSENT]))]
#[case::ns_disabled_pod_enabled(Some("disabled"), Some("enabled"), Inject { ingress: false, at: Wl })]
#[case::ns_disabled_pod_ingress(Some("disabled"), Some("ingress"), Inject { ingress: true, at: Wl })]
#[case::ns_disabled_pod_disabled(Some("disabled"), Some("disabled"), Skip(vec![ABSENT]))]
#[case::empty_values_are_absent(Some(""), Some(""), Skip(vec![ABSENT]))]
#[case::invalid_ns_beats_enabled_pod(Some("Enabled"), Some("enabled"), Skip(vec![SkipReason::InvalidAtNamespace]))]
#[case::invalid_pod(Some("enabled"), Some("yes"), Skip(vec![SkipReason::InvalidAtWorkload]))]
#[case::invalid_pod_unannotated_ns(None, Some("true"), Skip(vec![SkipReason::InvalidAtWorkload]))]
fn inject_annotation_precedence(
    #[case] ns: Option<&str>,
    #[case] pod: Option<&str>,
    #[case] expected: Decision,
) {
    assert_eq!(run(pod, ns), expected);
}

#[rstest]
#[case::host_network(json!({"hostNetwork": true, "containers": [{"name": "a"}]}), vec![SkipReason::HostNetwork])]
#[case::linkerd_proxy_by_name(json!({"containers": [{"name": "linkerd-proxy", "image": "x"}]}), vec![SkipReason::SidecarExists])]
#[case::linkerd_proxy_native(json!({"initContainers": [{"name": "linkerd-proxy"}], "containers": [{"name": "a"}]}), vec![SkipReason::SidecarExists])]
#[case::linkerd_proxy_by_image(json!({"containers": [{"name": "p", "image": "cr.l5d.io/linkerd/proxy:edge-1"}]}), vec![SkipReason::SidecarExists])]
#[case::istio_proxy(json!({"containers": [{"name": "istio-proxy"}]}), vec![SkipReason::SidecarExists])]
#[case::istio_image(json!({"containers": [{"name": "x", "image": "gcr.io/istio-release/proxyv2:1.0"}]}), vec![SkipReason::SidecarExists])]
#[case::linkerd_init(json!({"initContainers": [{"name": "linkerd-init"}], "containers": [{"name": "a"}]}), vec![SkipReason::SidecarExists])]
#[case::istio_init_image(json!({"initContainers": [{"name": "i", "image": "gcr.io/istio-release/proxy_init:1"}], "containers": [{"name": "a"}]}), vec![SkipReason::SidecarExists])]
#[case::validator_is_not_a_sidecar(json!({"initContainers": [{"name": "linkerd-network-validator"}], "containers": [{"name": "a"}]}), vec![])]
#[case::all_together(json!({"hostNetwork": true, "containers": [{"name": "istio-proxy"}]}), vec![SkipReason::HostNetwork, SkipReason::SidecarExists])]
fn other_skip_reasons(#[case] spec: Value, #[case] expected: Vec<SkipReason>) {
    let got = decide(DecisionInput {
        spec: &spec,
        pod_inject: Some("enabled"),
        ns_inject: None,
        token_projection: Some(true),
    });
    let want = if expected.is_empty() {
        Inject {
            ingress: false,
            at: Wl,
        }
    } else {
        Skip(expected)
    };
    assert_eq!(got, want);
}

#[rstest]
#[case::automount_false(json!({"automountServiceAccountToken": false, "containers": [{"name": "a",
    "volumeMounts": [{"name": "t", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}]}), Some(false), true)]
#[case::no_token_mount(json!({"containers": [{"name": "a"}]}), Some(false), true)]
#[case::mount_present(plain_spec(), Some(false), false)]
#[case::projection_on(json!({"automountServiceAccountToken": false, "containers": [{"name": "a"}]}), Some(true), false)]
#[case::values_not_read(json!({"automountServiceAccountToken": false, "containers": [{"name": "a"}]}), None, false)]
fn service_account_token_rule(#[case] spec: Value, #[case] projection: Option<bool>, #[case] skipped: bool) {
    let got = decide(DecisionInput {
        spec: &spec,
        pod_inject: Some("enabled"),
        ns_inject: None,
        token_projection: projection,
    });
    assert_eq!(
        got == Skip(vec![SkipReason::AutomountDisabled]),
        skipped,
        "{got:?}"
    );
}

#[test]
fn reason_texts_are_linkerds() {
    let texts: Vec<(String, &str)> = [
        SkipReason::HostNetwork,
        SkipReason::SidecarExists,
        SkipReason::UnsupportedResource,
        SkipReason::InvalidAtNamespace,
        SkipReason::InvalidAtWorkload,
        SkipReason::DisabledAnnotation,
        SkipReason::EnableAbsent,
        SkipReason::AutomountDisabled,
    ]
    .iter()
    .map(|r| (r.to_string(), r.code()))
    .collect();
    assert_eq!(
        texts,
        vec![
            ("hostNetwork is enabled".into(), "host_network_enabled"),
            ("pod has a sidecar injected already".into(), "sidecar_already_exists"),
            ("this resource kind is unsupported".into(), "unsupported_resource"),
            ("invalid value for annotation \"linkerd.io/inject\" at namespace".into(), "invalid_inject_annotation_at_ns"),
            ("invalid value for annotation \"linkerd.io/inject\" at workload".into(), "invalid_inject_annotation_at_workload"),
            ("pod has the annotation \"linkerd.io/inject:disabled\"".into(), "injection_disable_annotation_present"),
            ("neither the namespace nor the pod have the annotation \"linkerd.io/inject:enabled\"".into(), "injection_enable_annotation_absent"),
            ("automountServiceAccountToken set to \"false\", with Values.identity.serviceAccountTokenProjection set to \"false\"".into(),
             "disabled_automount_service_account_token_account"),
        ]
    );
}

#[test]
fn inject_annotation_alone() {
    assert_eq!(inject_annotation(Some("enabled"), None), Ok((false, Wl)));
    assert_eq!(inject_annotation(None, Some("ingress")), Ok((true, Ns)));
}
