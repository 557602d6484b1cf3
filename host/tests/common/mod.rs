//! Shared helpers for the host's integration tests: the engine's (engine/tests/common/mod.rs,
//! the test guest, engines, hosts, requests, host calls) and the real policy module's.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use kubewarden_engine::hostcalls::cluster::ClusterState;
use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use serde_json::{Value, json};

#[path = "../../../engine/tests/common/mod.rs"]
mod engine_common;
pub use engine_common::*;

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

/// A host for the real policy: its declared context-aware resources, Linkerd's control plane
/// (namespace and trust-root ConfigMap) in the cluster state, guest logs dropped.
pub fn policy_host() -> Arc<HostContext> {
    let md =
        kubewarden_engine::protocol::metadata::Metadata::from_file(&policy_yaml_path()).expect("policy.yaml");
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
