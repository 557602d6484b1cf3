//! Owner resolution: every path, including lookup errors, with the lookups it makes, under
//! both `policy.ownerResolution` values.

use linkerd_injector_policy::cluster::{LookupError, MemoryCluster};
use linkerd_injector_policy::owner::{Owner, Resolution, resolve};
use linkerd_injector_policy::settings::OwnerResolution::{self, Lookup, TemplateHash};
use rstest::rstest;
use serde_json::{Value, json};

fn pod_meta(owner_kind: Option<&str>, owner_name: &str, hash: Option<&str>) -> Value {
    let mut meta = json!({"name": "", "generateName": "web-7d9c6b5f4-", "labels": {"app": "web"}});
    if let Some(kind) = owner_kind {
        meta["ownerReferences"] =
            json!([{"apiVersion": "apps/v1", "kind": kind, "name": owner_name, "controller": true}]);
    }
    if let Some(h) = hash {
        meta["labels"]["pod-template-hash"] = json!(h);
    }
    meta
}

fn object(kind: &str, name: &str, parent: Option<(&str, &str)>) -> Value {
    let api = if kind == "Job" { "batch/v1" } else { "apps/v1" };
    let mut o = json!({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "shop"}});
    if let Some((k, n)) = parent {
        o["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": k, "name": n}]);
    }
    o
}

fn owner(kind: &str, name: &str) -> Owner {
    Owner {
        kind: kind.into(),
        name: name.into(),
    }
}

fn failed() -> LookupError {
    LookupError::Failed("lookup of ReplicaSet shop/web-7d9c6b5f4 failed: connection refused".into())
}

#[rstest]
#[case::bare_pod(pod_meta(None, "", None), vec![], owner("pod", ""), 0)]
#[case::statefulset_needs_no_lookup(pod_meta(Some("StatefulSet"), "db", None), vec![], owner("statefulset", "db"), 0)]
#[case::daemonset(pod_meta(Some("DaemonSet"), "agent", None), vec![], owner("daemonset", "agent"), 0)]
#[case::custom_kind(pod_meta(Some("Rollout"), "canary", None), vec![], owner("rollout", "canary"), 0)]
#[case::replicaset_of_deployment(pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", Some("7d9c6b5f4")),
    vec![object("ReplicaSet", "web-7d9c6b5f4", Some(("Deployment", "web")))], owner("deployment", "web"), 1)]
#[case::replicaset_of_rollout_keeps_rs(pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", None),
    vec![object("ReplicaSet", "web-7d9c6b5f4", Some(("Rollout", "web")))], owner("replicaset", "web-7d9c6b5f4"), 1)]
#[case::orphan_replicaset(pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", None),
    vec![object("ReplicaSet", "web-7d9c6b5f4", None)], owner("replicaset", "web-7d9c6b5f4"), 1)]
#[case::job_of_cronjob(pod_meta(Some("Job"), "backup-2901", None),
    vec![object("Job", "backup-2901", Some(("CronJob", "backup")))], owner("cronjob", "backup"), 1)]
#[case::plain_job(pod_meta(Some("Job"), "migrate", None), vec![object("Job", "migrate", None)], owner("job", "migrate"), 1)]
fn resolves_through_lookups(
    #[case] meta: Value,
    #[case] objects: Vec<Value>,
    #[case] expected: Owner,
    #[case] lookups: usize,
) {
    let cluster = MemoryCluster::new(objects);
    let got = resolve(&meta, "shop", Lookup, &cluster);
    assert_eq!(got.owner, expected);
    assert!(!got.resolution.is_fallback());
    assert_eq!(cluster.lookups().len(), lookups);
    assert!(
        cluster
            .lookups()
            .iter()
            .all(|l| !l.disable_cache && l.field_masks == ["metadata.name", "metadata.ownerReferences"])
    );
}

#[test]
fn two_owner_references_mean_the_pod_itself() {
    let mut meta = pod_meta(Some("ReplicaSet"), "a", None);
    meta["name"] = json!("p");
    meta["ownerReferences"]
        .as_array_mut()
        .unwrap()
        .push(json!({"kind": "Job", "name": "b"}));
    let cluster = MemoryCluster::new(vec![]);
    assert_eq!(resolve(&meta, "shop", Lookup, &cluster).owner, owner("pod", "p"));
    assert!(cluster.lookups().is_empty());
}

#[test]
fn error_then_uncached_lookup_succeeds() {
    let rs = object("ReplicaSet", "web-7d9c6b5f4", Some(("Deployment", "web")));
    let cluster = MemoryCluster::new(vec![rs]).fail("ReplicaSet", failed());
    let got = resolve(
        &pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", None),
        "shop",
        Lookup,
        &cluster,
    );
    assert_eq!(got.owner, owner("deployment", "web"));
    assert!(matches!(got.resolution, Resolution::Uncached { .. }));
    let flags: Vec<bool> = cluster.lookups().iter().map(|l| l.disable_cache).collect();
    assert_eq!(flags, vec![false, true]);
}

#[test]
fn two_errors_fall_back_to_the_template_hash_rule() {
    let cluster = MemoryCluster::new(vec![])
        .fail("ReplicaSet", failed())
        .fail("ReplicaSet", failed());
    let got = resolve(
        &pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", Some("7d9c6b5f4")),
        "shop",
        Lookup,
        &cluster,
    );
    assert_eq!(got.owner, owner("deployment", "web"));
    assert_eq!(got.resolution, Resolution::TemplateHash { error: failed() });
    assert_eq!(cluster.lookups().len(), 2);
}

#[test]
fn not_found_is_not_retried() {
    let cluster = MemoryCluster::new(vec![]);
    let got = resolve(
        &pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", Some("7d9c6b5f4")),
        "shop",
        Lookup,
        &cluster,
    );
    assert_eq!(got.owner, owner("deployment", "web"));
    assert!(matches!(
        got.resolution,
        Resolution::TemplateHash {
            error: LookupError::NotFound(_)
        }
    ));
    assert_eq!(cluster.lookups().len(), 1, "an authoritative not-found is final");
}

#[test]
fn hash_mismatch_falls_back_to_linkerds_replicaset_label() {
    let cluster = MemoryCluster::new(vec![])
        .fail("ReplicaSet", failed())
        .fail("ReplicaSet", failed());
    let got = resolve(
        &pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", Some("other")),
        "shop",
        Lookup,
        &cluster,
    );
    assert_eq!(got.owner, owner("replicaset", "web-7d9c6b5f4"));
    assert!(matches!(got.resolution, Resolution::Fallback { .. }));
}

#[test]
fn failed_job_lookup_keeps_the_job() {
    let err = LookupError::Failed("timeout".into());
    let cluster = MemoryCluster::new(vec![])
        .fail("Job", err.clone())
        .fail("Job", err.clone());
    let got = resolve(
        &pod_meta(Some("Job"), "backup-2901", None),
        "shop",
        Lookup,
        &cluster,
    );
    assert_eq!(got.owner, owner("job", "backup-2901"));
    assert_eq!(got.resolution, Resolution::Fallback { error: err });
}

#[rstest]
#[case::deployment("deployment", Some("linkerd.io/proxy-deployment"))]
#[case::replicaset("replicaset", Some("linkerd.io/proxy-replicaset"))]
#[case::rc("replicationcontroller", Some("linkerd.io/proxy-replicationcontroller"))]
#[case::job("job", Some("linkerd.io/proxy-job"))]
#[case::daemonset("daemonset", Some("linkerd.io/proxy-daemonset"))]
#[case::statefulset("statefulset", Some("linkerd.io/proxy-statefulset"))]
#[case::cronjob_has_no_label("cronjob", None)]
#[case::pod_has_no_label("pod", None)]
#[case::custom_has_no_label("rollout", None)]
fn owner_labels(#[case] kind: &str, #[case] key: Option<&str>) {
    assert_eq!(owner(kind, "x").label().map(|(k, _)| k), key.map(String::from));
}

// ---------------------------------------------------------------------------------------------
// `policy.ownerResolution`

fn labelled(mut meta: Value, key: &str, value: &str) -> Value {
    meta["labels"][key] = json!(value);
    meta
}

fn web_rs() -> Value {
    object("ReplicaSet", "web-7d9c6b5f4", Some(("Deployment", "web")))
}

#[test]
fn template_hash_names_the_deployment_without_a_lookup() {
    let cluster = MemoryCluster::new(vec![web_rs()]);
    let meta = pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", Some("7d9c6b5f4"));
    let got = resolve(&meta, "shop", TemplateHash, &cluster);
    assert_eq!(got.owner, owner("deployment", "web"));
    assert_eq!(got.resolution, Resolution::TemplateHashRule);
    assert!(
        !got.resolution.is_fallback(),
        "no warning: the rule is not a fallback"
    );
    assert_eq!(got.resolution.describe(), "pod-template-hash naming rule");
    assert_eq!(cluster.lookups(), vec![]);
}

#[test]
fn template_hash_is_the_default() {
    assert_eq!(OwnerResolution::default(), TemplateHash);
}

/// Pods the naming rule does not apply to: under `templateHash` they are looked up, with the
/// same lookups and the same answer as under `lookup`.
#[rstest]
#[case::argo_rollout(
    labelled(pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", None), "rollouts-pod-template-hash", "7d9c6b5f4"),
    vec![object("ReplicaSet", "web-7d9c6b5f4", Some(("Rollout", "web")))], owner("replicaset", "web-7d9c6b5f4"))]
#[case::bare_replicaset_pods_lack_the_label(pod_meta(Some("ReplicaSet"), "web", None),
    vec![object("ReplicaSet", "web", None)], owner("replicaset", "web"))]
#[case::name_does_not_end_in_the_hash(pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", Some("5f4d9c6b7")),
    vec![web_rs()], owner("deployment", "web"))]
#[case::name_is_only_the_hash(pod_meta(Some("ReplicaSet"), "7d9c6b5f4", Some("7d9c6b5f4")),
    vec![object("ReplicaSet", "7d9c6b5f4", None)], owner("replicaset", "7d9c6b5f4"))]
#[case::no_dash_before_the_hash(pod_meta(Some("ReplicaSet"), "web7d9c6b5f4", Some("7d9c6b5f4")),
    vec![object("ReplicaSet", "web7d9c6b5f4", None)], owner("replicaset", "web7d9c6b5f4"))]
#[case::empty_hash_label(pod_meta(Some("ReplicaSet"), "web-", Some("")),
    vec![object("ReplicaSet", "web-", None)], owner("replicaset", "web-"))]
#[case::job_of_cronjob(pod_meta(Some("Job"), "backup-2901", Some("2901")),
    vec![object("Job", "backup-2901", Some(("CronJob", "backup")))], owner("cronjob", "backup"))]
fn template_hash_falls_back_to_the_lookup_exactly(
    #[case] meta: Value,
    #[case] objects: Vec<Value>,
    #[case] expected: Owner,
) {
    let scenarios: [(&str, Vec<LookupError>); 4] = [
        ("found", vec![]),
        ("error then found", vec![failed()]),
        ("two errors", vec![failed(), failed()]),
        ("not found", vec![LookupError::NotFound("x".into())]),
    ];
    for (what, failures) in scenarios {
        let run = |how| {
            let mut cluster = MemoryCluster::new(objects.clone());
            for f in &failures {
                let kind = if meta["ownerReferences"][0]["kind"] == "Job" {
                    "Job"
                } else {
                    "ReplicaSet"
                };
                cluster = cluster.fail(kind, f.clone());
            }
            let got = resolve(&meta, "shop", how, &cluster);
            (got, cluster.lookups())
        };
        let (by_hash, by_lookup) = (run(TemplateHash), run(Lookup));
        assert_eq!(by_hash, by_lookup, "{what}");
        assert!(!by_hash.1.is_empty(), "{what}: the rule must not apply");
        if failures.is_empty() {
            assert_eq!(by_hash.0.owner, expected, "{what}");
            assert_eq!(by_hash.0.resolution, Resolution::Cached, "{what}");
        }
    }
}

/// The one case where the two settings answer differently: a ReplicaSet with a Deployment's
/// name and hash that the Deployment does not own (`kubectl delete --cascade=orphan`, or made by
/// hand). Linkerd (and `lookup`) label the pod with the ReplicaSet; `templateHash` with the
/// Deployment it was named after.
#[rstest]
#[case::orphaned(object("ReplicaSet", "web-7d9c6b5f4", None))]
#[case::owned_by_something_else(object("ReplicaSet", "web-7d9c6b5f4", Some(("Rollout", "web"))))]
fn orphaned_replicaset_is_where_the_settings_differ(#[case] rs: Value) {
    let meta = pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", Some("7d9c6b5f4"));
    let cluster = MemoryCluster::new(vec![rs.clone()]);
    let got = resolve(&meta, "shop", Lookup, &cluster);
    assert_eq!(
        (got.owner, got.resolution),
        (owner("replicaset", "web-7d9c6b5f4"), Resolution::Cached)
    );
    assert_eq!(cluster.lookups().len(), 1);

    let cluster = MemoryCluster::new(vec![rs]);
    let got = resolve(&meta, "shop", TemplateHash, &cluster);
    assert_eq!(
        (got.owner, got.resolution),
        (owner("deployment", "web"), Resolution::TemplateHashRule)
    );
    assert_eq!(cluster.lookups().len(), 0);
}

/// Lookup failures cannot reach a pod the rule resolves: no lookup is made.
#[test]
fn template_hash_pod_is_immune_to_owner_lookup_faults() {
    let cluster = MemoryCluster::new(vec![])
        .fail("ReplicaSet", failed())
        .fail("ReplicaSet", failed());
    let meta = pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", Some("7d9c6b5f4"));
    let got = resolve(&meta, "shop", TemplateHash, &cluster);
    assert_eq!(got.resolution, Resolution::TemplateHashRule);
    assert_eq!(cluster.lookups(), vec![]);
}
