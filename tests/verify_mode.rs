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

// === policy.staleProxy: reject (the audit policy) ===

/// A meshed pod of `owner` (an ownerReference, or none) running `version`, in a cluster whose
/// control plane injects edge-26.8.3, holding `objects` too; the answer and the host calls.
fn stale_answer(
    meta: Value,
    version: &str,
    policy: Value,
    objects: Vec<Value>,
) -> (linkerd_injector_policy::outcome::Outcome, Vec<String>) {
    let s = Settings::from_value(json!({ "policy": policy })).unwrap();
    let mut all = vec![namespace("shop", json!({"linkerd.io/inject": "enabled"}))];
    all.extend(objects);
    let c = common::cluster(all);
    let mut p =
        json!({"metadata": meta, "spec": {"containers": [{"name": "linkerd-proxy"}, {"name": "app"}]}});
    p["metadata"]["annotations"] = json!({"linkerd.io/proxy-version": version});
    let out = common::admit("Pod", &p, "shop", &s, &c);
    let calls = c.calls().iter().map(|c| c.describe()).collect();
    (out, calls)
}

fn reject() -> Value {
    json!({"mode": "verify", "staleProxy": "reject"})
}

fn owned_by(kind: &str, name: &str) -> Value {
    json!({"name": "web-768bf89858-x2x9q", "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": name,
        "uid": "u", "controller": true}]})
}

fn deployment_pod() -> Value {
    let mut meta = owned_by("ReplicaSet", "web-768bf89858");
    meta["labels"] = json!({"app": "web", "pod-template-hash": "768bf89858"});
    meta
}

const STALE: &str =
    "pod's Linkerd proxy is stale: it runs edge-26.5.1, the control plane injects edge-26.8.3; ";

/// The message names both versions and says how to restart the workload the pod belongs to,
/// found as the injector finds the `linkerd.io/proxy-<kind>` owner (a lookup only where the
/// naming rule does not answer).
#[rstest::rstest]
#[case::deployment(deployment_pod(), vec![],
    "restart Deployment shop/web to update it (kubectl rollout restart deployment/web -n shop)", &[NS, LIST])]
#[case::statefulset(owned_by("StatefulSet", "db"), vec![],
    "restart StatefulSet shop/db to update it (kubectl rollout restart statefulset/db -n shop)", &[NS, LIST])]
#[case::daemonset(owned_by("DaemonSet", "agent"), vec![],
    "restart DaemonSet shop/agent to update it (kubectl rollout restart daemonset/agent -n shop)", &[NS, LIST])]
#[case::bare_replica_set(owned_by("ReplicaSet", "cache"),
    vec![json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "cache", "namespace": "shop"}})],
    "delete pod shop/web-768bf89858-x2x9q to update it; its owner, ReplicaSet shop/cache, starts a new one \
     (kubectl delete pod web-768bf89858-x2x9q -n shop)", &[NS, LIST, "get ReplicaSet shop/cache"])]
#[case::cron_job(owned_by("Job", "nightly-29500000"),
    vec![json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "nightly-29500000", "namespace": "shop",
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "c"}]}})],
    "delete pod shop/web-768bf89858-x2x9q to update it; its owner, CronJob shop/nightly, starts a new one \
     (kubectl delete pod web-768bf89858-x2x9q -n shop)", &[NS, LIST, "get Job shop/nightly-29500000"])]
#[case::bare_pod(json!({"name": "debug"}), vec![],
    "recreate pod shop/debug to update it (it has no owner to start a new one)", &[NS, LIST])]
#[case::no_name_yet(json!({"generateName": "debug-"}), vec![], "recreate the pod to update it", &[NS, LIST])]
fn a_stale_proxy_is_rejected_naming_the_workload(
    #[case] meta: Value,
    #[case] objects: Vec<Value>,
    #[case] advice: &str,
    #[case] calls: &[&str],
) {
    let (out, made) = stale_answer(meta, "edge-26.5.1", reject(), objects);
    assert_eq!(out.verdict, Verdict::Rejected(format!("{STALE}{advice}")));
    assert_eq!(out.mutated, None);
    assert_eq!(out.warnings, Vec::<String>::new());
    assert_eq!(
        out.audit_annotations["verify"],
        "meshed, stale proxy: edge-26.5.1 (control plane edge-26.8.3)"
    );
    assert_eq!(made, calls);
}

/// Only a stale proxy is refused, and the owner is looked up for nothing else.
#[test]
fn a_current_proxy_passes_under_reject() {
    let objects = vec![
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "cache", "namespace": "shop"}}),
    ];
    let (out, made) = stale_answer(owned_by("ReplicaSet", "cache"), "edge-26.8.3", reject(), objects);
    assert_eq!(out.verdict, Verdict::Skipped(vec![SkipReason::SidecarExists]));
    assert_eq!(out.warnings, Vec::<String>::new());
    assert_eq!(
        out.audit_annotations["verify"],
        "exempt: pod has a sidecar injected already"
    );
    assert_eq!(made, [NS, LIST], "no owner lookup for a current proxy");
}

/// `warn`, the default, answers exactly as before the setting existed.
#[rstest::rstest]
#[case::default(json!({"mode": "verify"}))]
#[case::explicit(json!({"mode": "verify", "staleProxy": "warn"}))]
fn warn_admits_a_stale_proxy_with_a_warning(#[case] policy: Value) {
    let (out, made) = stale_answer(deployment_pod(), "edge-26.5.1", policy, vec![]);
    assert_eq!(out.verdict, Verdict::Skipped(vec![SkipReason::SidecarExists]));
    assert_eq!(
        out.warnings,
        [
            "pod's Linkerd proxy is version edge-26.5.1, but the control plane injects edge-26.8.3: restart its workload to update the proxy"
        ]
    );
    assert_eq!(
        out.audit_annotations["verify"],
        "meshed, stale proxy: edge-26.5.1 (control plane edge-26.8.3)"
    );
    assert_eq!(made, [NS, LIST]);
}

/// The mutating policy never refuses a pod for its proxy's version, whatever the setting.
#[test]
fn the_setting_changes_nothing_in_mutate_mode() {
    let (out, _) = stale_answer(
        deployment_pod(),
        "edge-26.5.1",
        json!({"staleProxy": "reject"}),
        vec![],
    );
    assert_eq!(out.verdict, Verdict::Skipped(vec![SkipReason::SidecarExists]));
}

#[test]
fn stale_proxy_is_validated() {
    let err = Settings::from_value(json!({"policy": {"staleProxy": "fail"}}))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "settings.policy.staleProxy: unknown variant `fail`, expected `warn` or `reject`"
    );
}
