//! Shared helpers for the host's integration tests.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use injector_host::hostcalls::cluster::ClusterState;
use injector_host::hostcalls::fault::FaultPlan;
use injector_host::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use injector_host::protocol::metadata::ContextAwareResource;
use injector_host::protocol::request::{AdmissionRequest, PolicySettings};
use injector_host::protocol::response::AdmissionResponse;
use injector_host::runtime::callback::{HostContext, LogSink};
use injector_host::runtime::engine::{Engine, EngineConfig, Policy};
use serde_json::{Value, json};

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Builds `host/test-guest` for wasm32-wasip1 once per test binary and returns the module bytes.
pub fn test_guest_wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        let guest = manifest_dir().join("test-guest");
        let target_dir = manifest_dir().join("../target/test-guest");
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
            .expect("cannot run cargo to build host/test-guest");
        assert!(
            status.success(),
            "building host/test-guest for wasm32-wasip1 failed (is the wasm32-wasip1 target installed?)"
        );
        let path = target_dir.join("wasm32-wasip1/release/injector_host_test_guest.wasm");
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    })
}

/// The real policy module: `$INJECTOR_POLICY_WASM`, else `../policy.wasm` relative to the host
/// crate.
pub fn policy_wasm_path() -> PathBuf {
    let path = std::env::var_os("INJECTOR_POLICY_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("../policy.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run `make policy.wasm` first",
        path.display()
    );
    path
}

/// The real policy's metadata file.
pub fn policy_yaml_path() -> PathBuf {
    manifest_dir().join("../policy.yaml")
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
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::with_ttl(
        cluster, faults, ttl,
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

/// A host for the real policy: its declared context-aware resources, Linkerd's control plane
/// (namespace and trust-root ConfigMap) in the cluster state, guest logs dropped.
pub fn policy_host() -> Arc<HostContext> {
    let md = injector_host::protocol::metadata::PolicyMetadata::from_file(&policy_yaml_path())
        .expect("policy.yaml");
    let mut state = ClusterState::new();
    for o in injector_host::linkerd::rollout::default_control_plane() {
        state.insert(o).unwrap();
    }
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(state, FaultPlan::new())));
    Arc::new(HostContext::new(
        "policy.wasm",
        md.context_aware_resources,
        lookups,
        LogSink::Discard,
    ))
}

/// Adds the rollout's nginx Deployment, its injected namespace and one ReplicaSet to `host`'s
/// cluster state and returns the ReplicaSet (the owner of the pods to admit).
pub fn add_nginx_replica_set(host: &HostContext) -> Value {
    let workload = injector_host::linkerd::rollout::Workload::default_nginx(1);
    let mut deployment = workload.deployment.clone();
    deployment["metadata"]["uid"] = json!("0d5f8a52-0000-4000-8000-000000000001");
    let (rs, _) =
        injector_host::linkerd::rollout::replica_set_for(&deployment, "0d5f8a52-0000-4000-8000-000000000002")
            .unwrap();
    for o in [workload.namespace, deployment, rs.clone()] {
        host.lookups().insert_object(o).unwrap();
    }
    rs
}
