//! The rollout machinery, with the test guest (no real policy needed).

mod common;

use std::sync::Arc;

use common::*;
use injector_host::linkerd::rollout::{RolloutOptions, Workload, run_rollout};
use kubewarden_engine::hostcalls::cluster::ClusterState;
use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use serde_json::json;

fn rollout_host() -> Arc<HostContext> {
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(
        ClusterState::new(),
        FaultPlan::new(),
    )));
    Arc::new(HostContext::new(
        "t",
        resources(&[("v1", "Namespace"), ("apps/v1", "ReplicaSet")]),
        lookups,
        LogSink::Discard,
    ))
}

fn opts(replicas: usize, workers: usize, s: serde_json::Value) -> RolloutOptions {
    RolloutOptions {
        replicas,
        workers,
        settings: settings(s),
        progress: false,
        ..Default::default()
    }
}

#[test]
fn counts_injected_and_shares_the_lookup_cache() {
    let engine = engine();
    let policy = guest(&engine);
    let host = rollout_host();
    let proxied = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "linkerd-proxy"}, {"name": "nginx"}]}});
    let s = json!({
        // a pod counts as injected when the module says so (its `injection` audit annotation)
        "response": {"accepted": true, "mutated_object": proxied,
            "audit_annotations": {"injection": "injected"}},
        "host_calls": [get_resource("v1", "Namespace", "rollout", None, false)]
    });
    let report = run_rollout(&policy, &host, &Workload::default_nginx(60), &opts(60, 3, s)).unwrap();
    assert_eq!(
        (report.injected, report.skipped, report.rejected, report.errors),
        (60, 0, 0, 0),
        "{report:?}"
    );
    let ns = report.lookups.by_resource["v1/Namespace"];
    assert_eq!(ns.made + ns.cached, 60);
    assert!(ns.made >= 1);
    assert!(report.replica_set.starts_with("nginx-"));
    assert_eq!(report.replica_set, format!("nginx-{}", report.pod_template_hash));
    assert!(report.latency.max_ms >= report.latency.p50_ms);
    assert!(report.to_string().contains("injected       60"), "{}", report);
}

#[test]
fn rollout_objects_are_in_the_cluster_state() {
    let engine = engine();
    let policy = guest(&engine);
    let host = rollout_host();
    // the guest looks up the ReplicaSet named in the pod's ownerReferences: known only after the
    // rollout computed it, so look up the Deployment's namespace and a missing RS instead
    let s = json!({"host_calls": [
        get_resource("v1", "Namespace", "rollout", None, false),
        get_resource("apps/v1", "ReplicaSet", "missing", Some("rollout"), false)
    ]});
    let report = run_rollout(&policy, &host, &Workload::default_nginx(5), &opts(5, 2, s)).unwrap();
    assert_eq!((report.skipped, report.injected), (5, 0));
    let stats = &report.lookups.by_resource;
    assert_eq!(stats["v1/Namespace"].failed, 0);
    assert_eq!(
        stats["apps/v1/ReplicaSet"].failed,
        stats["apps/v1/ReplicaSet"].made
    );
}

#[test]
fn rejections_errors_and_invalid_settings() {
    let engine = engine_with_deadline(100);
    let policy = guest(&engine);
    let report = run_rollout(
        &policy,
        &rollout_host(),
        &Workload::default_nginx(4),
        &opts(4, 2, json!({"fail": "boom"})),
    )
    .unwrap();
    assert_eq!(report.rejected, 4);
    assert_eq!(
        report.failure_samples["rejected: internal server error: Guest call failure: boom"],
        4
    );
    let report = run_rollout(
        &policy,
        &rollout_host(),
        &Workload::default_nginx(2),
        &opts(2, 2, json!({"spin": true})),
    )
    .unwrap();
    assert_eq!((report.rejected, report.deadline_exceeded), (2, 2));
    let err = run_rollout(
        &policy,
        &rollout_host(),
        &Workload::default_nginx(2),
        &opts(2, 2, json!({"invalid": "nope"})),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "Provided settings are not valid: nope");
}

#[test]
fn cli_rollout_prints_json() {
    let module = tempfile::Builder::new().suffix(".wasm").tempfile().unwrap();
    std::fs::write(module.path(), test_guest_wasm()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_injector-host"))
        .args(["rollout", "--replicas", "12", "--workers", "3", "--json"])
        .arg(module.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["skipped"], 12);
    assert_eq!(report["replicas"], 12);
    assert_eq!(report["policy_deadline"]["limit_ms"], 2000.0);
    assert_eq!(report["webhook_timeout"]["limit_ms"], 10000.0);
}

#[test]
fn manifest_gives_deployment_namespace_and_more() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.yaml");
    std::fs::write(
        &path,
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: emojivoto, annotations: {linkerd.io/inject: enabled}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: emojivoto}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {config.linkerd.io/proxy-cpu-request: 100m}}
    spec: {containers: [{name: web, image: buoyantio/emojivoto-web:v11}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: extra, namespace: emojivoto}
"#,
    )
    .unwrap();
    let w = Workload::from_manifest(&path).unwrap();
    assert_eq!(
        w.namespace["metadata"]["annotations"]["linkerd.io/inject"],
        "enabled"
    );
    assert_eq!(w.others.len(), 1);
    let engine = engine();
    let policy = guest(&engine);
    let host = rollout_host();
    let s = json!({"echo": true, "response": {"accepted": false}});
    let report = run_rollout(&policy, &host, &w, &opts(3, 1, s)).unwrap();
    assert_eq!(report.rejected, 3);
    assert_eq!(report.deployment, "web");
    assert_eq!(report.namespace, "emojivoto");
    let (payload, n) = report.failure_samples.iter().next().unwrap();
    assert_eq!(*n, 1, "each echo is a different pod");
    let payload: serde_json::Value =
        serde_json::from_str(payload.strip_prefix("rejected: ").unwrap()).unwrap();
    let pod = &payload["request"]["object"];
    assert_eq!(
        pod["metadata"]["annotations"]["config.linkerd.io/proxy-cpu-request"],
        "100m"
    );
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(payload["request"]["operation"], "CREATE");
}
