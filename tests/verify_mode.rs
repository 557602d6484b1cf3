//! Verify mode: the decision as a validating policy that never mutates.

mod common;

use common::namespace;
use linkerd_injector_policy::cluster::MemoryCluster;
use linkerd_injector_policy::decide::SkipReason;
use linkerd_injector_policy::outcome::Verdict;
use linkerd_injector_policy::settings::Settings;
use serde_json::{Value, json};

fn verify(pod: &Value, ns_annotations: Value) -> linkerd_injector_policy::outcome::Outcome {
    let s = Settings::from_value(json!({"policy": {"mode": "verify"}})).unwrap();
    let c = MemoryCluster::new(vec![namespace("shop", ns_annotations)]);
    let out = common::admit("Pod", pod, "shop", &s, &c);
    assert_eq!(out.mutated, None, "verify mode never mutates");
    assert_eq!(c.lookups().len(), 1, "only the namespace is read");
    out
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
    let c = MemoryCluster::new(vec![]);
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
