//! Owner resolution: every path, including lookup errors, with the lookups it makes.

use linkerd_injector_policy::cluster::{LookupError, MemoryCluster};
use linkerd_injector_policy::owner::{Owner, Resolution, resolve};
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
    let got = resolve(&meta, "shop", &cluster);
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
    assert_eq!(resolve(&meta, "shop", &cluster).owner, owner("pod", "p"));
    assert!(cluster.lookups().is_empty());
}

#[test]
fn error_then_uncached_lookup_succeeds() {
    let rs = object("ReplicaSet", "web-7d9c6b5f4", Some(("Deployment", "web")));
    let cluster = MemoryCluster::new(vec![rs]).fail("ReplicaSet", failed());
    let got = resolve(
        &pod_meta(Some("ReplicaSet"), "web-7d9c6b5f4", None),
        "shop",
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
    let got = resolve(&pod_meta(Some("Job"), "backup-2901", None), "shop", &cluster);
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
