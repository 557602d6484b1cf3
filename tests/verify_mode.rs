//! Verify mode: the decision as a validating policy that never mutates.

mod common;

use common::namespace;
use linkerd_injector_policy::decide::SkipReason;
use linkerd_injector_policy::outcome::Verdict;
use linkerd_injector_policy::settings::Settings;
use serde_json::{Value, json};

fn verify(pod: &Value, ns_annotations: Value) -> linkerd_injector_policy::outcome::Outcome {
    verify_with_calls(pod, ns_annotations).0
}

/// The answer, and the host calls it took.
fn verify_with_calls(
    pod: &Value,
    ns_annotations: Value,
) -> (linkerd_injector_policy::outcome::Outcome, Vec<String>) {
    let s = Settings::from_value(json!({"policy": {"mode": "verify"}})).unwrap();
    let c = common::cluster(vec![namespace("shop", ns_annotations)]);
    let out = common::admit("Pod", pod, "shop", &s, &c);
    assert_eq!(out.mutated, None, "verify mode never mutates");
    let calls: Vec<String> = c.calls().iter().map(|c| c.describe()).collect();
    (out, calls)
}

const NS: &str = "get Namespace shop";
const LIST: &str = "list ConfigMaps in namespace linkerd";

/// The namespace, then Linkerd's values only when the answer depends on them: a pod that asks
/// for a proxy (the token rule, the stale-proxy report), or one that runs a proxy unasked (the
/// stale-proxy report).
#[rstest::rstest]
#[case::asked_by_namespace(json!({}), json!([{"name": "app"}]), json!({"linkerd.io/inject": "enabled"}), &[NS, LIST])]
#[case::asked_by_pod(json!({"linkerd.io/inject": "enabled"}), json!([{"name": "app"}]), json!({}), &[NS, LIST])]
#[case::not_asked(json!({}), json!([{"name": "app"}]), json!({}), &[NS])]
#[case::disabled(json!({"linkerd.io/inject": "disabled"}), json!([{"name": "app"}]),
    json!({"linkerd.io/inject": "enabled"}), &[NS])]
#[case::proxy_unasked(json!({}), json!([{"name": "linkerd-proxy"}, {"name": "app"}]), json!({}), &[NS, LIST])]
fn host_calls(
    #[case] annotations: Value,
    #[case] containers: Value,
    #[case] ns: Value,
    #[case] calls: &[&str],
) {
    assert_eq!(verify_with_calls(&pod(annotations, containers), ns).1, calls);
}

/// A pod that runs a proxy its annotations did not ask for passes even when `linkerd-config`
/// is missing: only the stale-proxy report is left out, and the warning says so.
#[test]
fn an_unusable_linkerd_config_leaves_out_only_the_stale_proxy_report() {
    let s = Settings::from_value(json!({"policy": {"mode": "verify"}})).unwrap();
    let c = linkerd_injector_policy::cluster::MemoryCluster::new(vec![namespace("shop", json!({}))]);
    let mut meshed = pod(json!({}), json!([{"name": "linkerd-proxy"}, {"name": "app"}]));
    meshed["metadata"]["annotations"]["linkerd.io/proxy-version"] = json!("edge-20.1.1");
    let out = common::admit("Pod", &meshed, "shop", &s, &c);
    assert!(!out.is_rejected(), "{:?}", out.verdict);
    assert_eq!(
        out.warnings,
        [
            "ConfigMap linkerd/linkerd-config not found: is Linkerd's control plane installed there? (policy.controlPlaneNamespace, policy.linkerdConfigMap; policy.valuesFrom: settings reads no ConfigMap); admitted without the stale-proxy check (proxy.image.version, linkerdVersion) (an unusable linkerd-config rejects only pods that get a proxy)"
        ]
    );
}

fn pod(annotations: Value, containers: Value) -> Value {
    json!({"metadata": {"name": "p", "annotations": annotations}, "spec": {"containers": containers}})
}

#[test]
fn unmeshed_pod_in_an_enabled_namespace_is_rejected() {
    let out = verify(
        &pod(json!({}), json!([{"name": "app"}])),
        json!({"linkerd.io/inject": "enabled"}),
    );
    assert_eq!(
        out.verdict,
        Verdict::Rejected(
            "pod is not meshed: linkerd.io/inject on namespace shop requires the Linkerd proxy, but the pod has no linkerd-proxy container (injection was skipped or failed; check the injector policy)".into()
        )
    );
    assert_eq!(out.audit_annotations["verify"], "not meshed");
    let own = verify(
        &pod(json!({"linkerd.io/inject": "enabled"}), json!([{"name": "app"}])),
        json!({}),
    );
    assert!(matches!(own.verdict, Verdict::Rejected(m) if m.contains("linkerd.io/inject on the pod")));
}

#[test]
fn meshed_pods_pass() {
    let native = json!({"metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "linkerd-init"}, {"name": "linkerd-proxy"}], "containers": [{"name": "app"}]}});
    let out = verify(&native, json!({"linkerd.io/inject": "enabled"}));
    assert!(!out.is_rejected());
    assert_eq!(
        out.audit_annotations["verify"],
        "exempt: pod has a sidecar injected already"
    );
    let sidecar = pod(json!({}), json!([{"name": "linkerd-proxy"}, {"name": "app"}]));
    assert!(!verify(&sidecar, json!({"linkerd.io/inject": "enabled"})).is_rejected());
}

#[test]
fn exempt_pods_pass_with_the_reason() {
    let out = verify(&pod(json!({}), json!([{"name": "app"}])), json!({}));
    assert_eq!(out.verdict, Verdict::Skipped(vec![SkipReason::EnableAbsent]));
    assert_eq!(
        out.audit_annotations["verify"],
        "exempt: neither the namespace nor the pod have the annotation \"linkerd.io/inject:enabled\""
    );
    let mut host = pod(json!({}), json!([{"name": "app"}]));
    host["spec"]["hostNetwork"] = json!(true);
    assert!(!verify(&host, json!({"linkerd.io/inject": "enabled"})).is_rejected());
    let disabled = pod(json!({"linkerd.io/inject": "disabled"}), json!([{"name": "app"}]));
    assert!(!verify(&disabled, json!({"linkerd.io/inject": "enabled"})).is_rejected());
}

#[test]
fn verify_mode_ignores_services_and_workloads() {
    let s = Settings::from_value(json!({"policy": {"mode": "verify"}})).unwrap();
    let c = common::cluster(vec![]);
    let svc = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 3306}]}});
    let out = common::admit("Service", &svc, "shop", &s, &c);
    assert_eq!((out.verdict, out.mutated), (Verdict::NotApplicable, None));
    assert!(c.lookups().is_empty());
}

#[test]
fn mode_is_validated() {
    let err = Settings::from_value(json!({"policy": {"mode": "audit"}}))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "settings.policy.mode: unknown variant `audit`, expected `mutate` or `verify`"
    );
}

/// A meshed pod in verify mode, with the control plane's values from `linkerd-config`.
fn verify_against(
    pod_annotations: Value,
    values: &str,
    settings: Value,
) -> linkerd_injector_policy::outcome::Outcome {
    let s = Settings::from_value(settings).unwrap();
    let c = linkerd_injector_policy::cluster::MemoryCluster::new(vec![
        namespace("shop", json!({"linkerd.io/inject": "enabled"})),
        common::linkerd_config(values),
    ]);
    let meshed = pod(
        pod_annotations,
        json!([{"name": "linkerd-proxy"}, {"name": "app"}]),
    );
    common::admit("Pod", &meshed, "shop", &s, &c)
}

#[rstest::rstest]
#[case::same_version(json!({"linkerd.io/proxy-version": "edge-26.8.3"}), "linkerdVersion: edge-26.8.3\n", json!({}), None)]
#[case::older_proxy(json!({"linkerd.io/proxy-version": "edge-26.5.1"}), "linkerdVersion: edge-26.8.3\n", json!({}),
    Some(("edge-26.5.1", "edge-26.8.3")))]
#[case::control_plane_upgraded(json!({"linkerd.io/proxy-version": "edge-26.8.3"}), "linkerdVersion: edge-26.9.1\n", json!({}),
    Some(("edge-26.8.3", "edge-26.9.1")))]
#[case::pinned_proxy_image_counts(json!({"linkerd.io/proxy-version": "edge-26.8.3"}),
    "linkerdVersion: edge-26.8.3\nproxy:\n  image:\n    version: edge-26.8.2\n", json!({}), Some(("edge-26.8.3", "edge-26.8.2")))]
#[case::settings_override_the_cluster(json!({"linkerd.io/proxy-version": "edge-26.5.1"}), "linkerdVersion: edge-26.8.3\n",
    json!({"linkerdVersion": "edge-26.5.1"}), None)]
#[case::pod_chose_its_version(json!({"linkerd.io/proxy-version": "edge-26.5.1", "config.linkerd.io/proxy-version": "edge-26.5.1"}),
    "linkerdVersion: edge-26.8.3\n", json!({}), None)]
#[case::no_version_annotation(json!({}), "linkerdVersion: edge-26.8.3\n", json!({}), None)]
fn stale_proxies_are_reported_not_refused(
    #[case] pod_annotations: Value,
    #[case] values: &str,
    #[case] mut settings: Value,
    #[case] stale: Option<(&str, &str)>,
) {
    settings["policy"] = json!({"mode": "verify"});
    let out = verify_against(pod_annotations, values, settings);
    assert_eq!(
        out.verdict,
        Verdict::Skipped(vec![SkipReason::SidecarExists]),
        "a meshed pod is admitted"
    );
    assert_eq!(out.mutated, None);
    match stale {
        None => {
            assert_eq!(
                out.audit_annotations["verify"],
                "exempt: pod has a sidecar injected already"
            );
            assert_eq!(out.warnings, Vec::<String>::new());
        }
        Some((running, current)) => {
            assert_eq!(
                out.audit_annotations["verify"],
                format!("meshed, stale proxy: {running} (control plane {current})")
            );
            assert_eq!(
                out.warnings,
                vec![format!(
                    "pod's Linkerd proxy is version {running}, but the control plane injects {current}: restart its workload to update the proxy"
                )]
            );
        }
    }
}
