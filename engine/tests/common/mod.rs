//! Shared helpers for the engine's integration tests: the test guest (`engine/test-guest`), engines,
//! hosts over a cluster state, requests and host calls. `injector-host`'s tests use them too
//! (host/tests/common/mod.rs includes this file), so paths here are relative to the workspace,
//! not to the crate that compiles them.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kubewarden_engine::hostcalls::cache::Clock;
use kubewarden_engine::hostcalls::cluster::ClusterState;
use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::protocol::metadata::ContextAwareResource;
use kubewarden_engine::protocol::request::{AdmissionRequest, PolicySettings};
use kubewarden_engine::protocol::response::AdmissionResponse;
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use kubewarden_engine::runtime::engine::{Engine, EngineConfig, Policy};
use serde_json::{Value, json};

/// The directory of the crate whose test includes this file (`engine/` or `host/`).
pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace root: both crates sit one level below it.
pub fn workspace_dir() -> PathBuf {
    manifest_dir().join("..")
}

/// A file of `engine/tests/data/` (replay sessions of the test guest's lookups).
pub fn engine_test_data(name: &str) -> PathBuf {
    workspace_dir().join("engine/tests/data").join(name)
}

/// Builds `engine/test-guest` for wasm32-wasip1 once per test binary and returns the module bytes.
pub fn test_guest_wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        let guest = workspace_dir().join("engine/test-guest");
        let target_dir = workspace_dir().join("target/test-guest");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "--locked",
                "--release",
                "--target",
                "wasm32-wasip1",
                "--manifest-path",
            ])
            .arg(guest.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target_dir)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .status()
            .expect("cannot run cargo to build engine/test-guest");
        assert!(
            status.success(),
            "building engine/test-guest for wasm32-wasip1 failed (is the wasm32-wasip1 target installed?)"
        );
        let path = target_dir.join("wasm32-wasip1/release/kubewarden_engine_test_guest.wasm");
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    })
}

pub fn engine() -> Engine {
    Engine::new(EngineConfig::without_deadline()).expect("engine")
}

/// Deadline with fast ticks, for interruption tests.
pub fn engine_with_deadline(deadline_ms: u64) -> Engine {
    Engine::new(EngineConfig::with_deadline(
        Duration::from_millis(deadline_ms),
        Duration::from_millis(10),
    ))
    .expect("engine")
}

pub fn guest(engine: &Engine) -> Policy {
    engine
        .load_policy("test-guest", test_guest_wasm())
        .expect("test guest compiles")
}

pub fn resources(list: &[(&str, &str)]) -> BTreeSet<ContextAwareResource> {
    list.iter()
        .map(|(a, k)| ContextAwareResource::new(*a, *k))
        .collect()
}

pub fn state(yaml: &str) -> ClusterState {
    let mut s = ClusterState::new();
    s.load_str(yaml, Path::new("inline.yaml")).expect("cluster state");
    s
}

pub fn host_with(
    allow: &[(&str, &str)],
    cluster: ClusterState,
    faults: FaultPlan,
    ttl: Duration,
) -> Arc<HostContext> {
    host_with_clock(allow, cluster, faults, ttl, Clock::System)
}

/// A host whose cache reads the time from `clock`.
pub fn host_with_clock(
    allow: &[(&str, &str)],
    cluster: ClusterState,
    faults: FaultPlan,
    ttl: Duration,
    clock: Clock,
) -> Arc<HostContext> {
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::with_clock(
        cluster, faults, ttl, clock,
    )));
    Arc::new(HostContext::new(
        "test",
        resources(allow),
        lookups,
        LogSink::capture(),
    ))
}

pub fn host(allow: &[(&str, &str)], cluster: ClusterState) -> Arc<HostContext> {
    host_with(allow, cluster, FaultPlan::new(), Duration::from_secs(5))
}

/// A pod CREATE request for `object`.
pub fn pod_request(object: Value) -> AdmissionRequest {
    serde_json::from_value(json!({
        "uid": "req-1",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": "emojivoto",
        "operation": "CREATE",
        "userInfo": {"username": "kubernetes-admin"},
        "object": object
    }))
    .expect("request")
}

pub fn settings(v: Value) -> PolicySettings {
    PolicySettings::from_value(&v).expect("settings")
}

/// Runs the test guest once with these settings.
pub fn run_guest(policy: &Policy, host: &Arc<HostContext>, s: Value) -> AdmissionResponse {
    let req = pod_request(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}));
    policy.evaluate(host, &req, &settings(s)).expect("evaluation")
}

/// Makes host calls through the test guest and returns one line per call (`ok:..`/`err:..`).
pub fn host_calls(policy: &Policy, host: &Arc<HostContext>, calls: Value) -> Vec<String> {
    let resp = run_guest(policy, host, json!({"host_calls": calls}));
    assert!(resp.allowed, "{resp:?}");
    resp.warnings.unwrap_or_default()
}

pub fn get_resource(
    api_version: &str,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    disable_cache: bool,
) -> Value {
    json!({"binding": "kubewarden", "namespace": "kubernetes", "operation": "get_resource",
        "payload": {"api_version": api_version, "kind": kind, "name": name, "namespace": namespace,
                    "disable_cache": disable_cache, "field_masks": null}})
}

pub fn ok_json(line: &str) -> Value {
    let body = line
        .strip_prefix("ok:")
        .unwrap_or_else(|| panic!("expected ok:, got {line}"));
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

pub const CLUSTER: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: emojivoto
  annotations: {linkerd.io/inject: enabled}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d8f
  namespace: emojivoto
  labels: {app: web}
  managedFields: [{manager: kube-controller-manager}]
  ownerReferences:
  - {apiVersion: apps/v1, kind: Deployment, name: web, uid: "1111", controller: true}
spec:
  replicas: 3
  template: {metadata: {labels: {app: web}}}
status: {replicas: 3}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: db-1, namespace: emojivoto, labels: {app: db}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: other, namespace: kube-system, labels: {app: web}}
---
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
metadata: {name: alice-get-pods}
spec:
  user: alice
  resourceAttributes: {namespace: emojivoto, resource: pods, verb: get}
status: {allowed: true, reason: "RBAC: allowed by RoleBinding"}
"#;
