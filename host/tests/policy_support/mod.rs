//! Running the compiled policy module (`../policy.wasm`) through the engine the way
//! policy-server does: module compiled once per test binary, a fresh instance per evaluation,
//! settings validated first, Kubernetes lookups allowed only for the `contextAwareResources` of
//! `policy.yaml`. Used by `conformance_module.rs`, `owner_faults.rs` and `examples.rs`
//! (together with `common`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kubewarden_engine::hostcalls::cluster::ClusterState;
use kubewarden_engine::hostcalls::fault::{FaultPlan, FaultRule};
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::hostcalls::replay::ReplaySession;
use kubewarden_engine::protocol::metadata::Metadata;
use kubewarden_engine::protocol::request::{AdmissionRequest, PolicySettings};
use kubewarden_engine::protocol::response::{AdmissionResponse, PatchType};
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use kubewarden_engine::runtime::engine::{Engine, EngineConfig, Policy};
use serde_json::{Value, json};

use crate::common::{policy_wasm_path, policy_yaml_path};

// Linkerd's fixtures and the comparisons, exactly as the native suite uses them.
#[path = "../../../tests/common/fixtures.rs"]
mod fixtures;
#[allow(unused_imports)]
pub use fixtures::*;

struct Loaded {
    // the engine owns the epoch ticker the policy's deadlines rely on
    _engine: Engine,
    policy: Policy,
}

/// The policy module, compiled once per test binary, under policy-server's defaults (2 s
/// deadline, 1 s epoch ticks).
pub fn policy() -> &'static Policy {
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    &LOADED
        .get_or_init(|| {
            let engine = Engine::new(EngineConfig::default()).expect("engine");
            let policy = engine
                .load_policy_file(&policy_wasm_path())
                .expect("policy.wasm compiles");
            Loaded {
                _engine: engine,
                policy,
            }
        })
        .policy
}

/// The policy's metadata (`policy.yaml`).
pub fn metadata() -> Metadata {
    Metadata::from_file(&policy_yaml_path()).expect("policy.yaml")
}

/// A host serving lookups from `state` with `faults`, the allow-list of `policy.yaml`, and the
/// guest's log records captured.
pub fn cluster_host(state: ClusterState, faults: FaultPlan) -> Arc<HostContext> {
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(state, faults)));
    Arc::new(HostContext::new(
        "policy.wasm",
        metadata().context_aware_resources,
        lookups,
        LogSink::capture(),
    ))
}

/// A host answering from a kwctl replay session.
pub fn replay_host(session: ReplaySession) -> Arc<HostContext> {
    Arc::new(HostContext::new(
        "policy.wasm",
        metadata().context_aware_resources,
        Lookups::new(LookupSource::Replay(session)),
        LogSink::capture(),
    ))
}

/// Replay exchanges not consumed yet.
pub fn replay_leftovers(host: &HostContext) -> usize {
    match host.lookups().source() {
        LookupSource::Replay(session) => session.leftovers(),
        LookupSource::Cluster(_) => 0,
    }
}

/// Fault rules in the CLI's syntax.
pub fn faults(rules: &[&str]) -> FaultPlan {
    rules.iter().fold(FaultPlan::new(), |plan, rule| {
        plan.with_rule(FaultRule::parse(rule).unwrap_or_else(|e| panic!("{rule}: {e}")))
    })
}

/// Cluster state from YAML/JSON text.
pub fn cluster(text: &str) -> ClusterState {
    let mut state = ClusterState::new();
    state
        .load_str(text, Path::new("inline.yaml"))
        .expect("cluster state");
    state
}

pub fn settings(v: Value) -> PolicySettings {
    PolicySettings::from_value(&v).expect("settings are an object")
}

/// `validate_settings` in a fresh instance, as policy-server does when it loads a policy.
pub fn settings_verdict(host: &Arc<HostContext>, s: &PolicySettings) -> (bool, Option<String>) {
    let mut instance = policy().instantiate(host).expect("instance");
    assert_eq!(instance.protocol_version().expect("protocol_version"), "v1");
    let v = instance.validate_settings(s);
    (v.valid, v.message)
}

/// Validates the settings (they must be valid), then evaluates `request` in a fresh instance.
pub fn evaluate(
    host: &Arc<HostContext>,
    request: &AdmissionRequest,
    s: &PolicySettings,
) -> AdmissionResponse {
    let (valid, message) = settings_verdict(host, s);
    assert!(valid, "settings rejected: {message:?}");
    policy()
        .evaluate(host, request, s)
        .expect("evaluation reaches a response")
}

/// A CREATE AdmissionRequest for a Pod or a Service.
pub fn create_request(kind: &str, namespace: &str, uid: &str, object: Value) -> AdmissionRequest {
    let resource = match kind {
        "Pod" => "pods",
        "Service" => "services",
        other => panic!("no resource for kind {other}"),
    };
    serde_json::from_value(json!({
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": kind},
        "resource": {"group": "", "version": "v1", "resource": resource},
        "requestKind": {"group": "", "version": "v1", "kind": kind},
        "requestResource": {"group": "", "version": "v1", "resource": resource},
        "namespace": namespace,
        "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
            "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": object,
        "dryRun": false,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    }))
    .expect("AdmissionRequest")
}

/// The response's JSON patch (base64 JSONPatch), decoded; `None` when there is no patch.
pub fn decoded_patch(response: &AdmissionResponse) -> Option<json_patch::Patch> {
    let patch = response.patch.as_ref()?;
    assert_eq!(response.patch_type, Some(PatchType::JsonPatch), "patchType");
    let bytes = STANDARD.decode(patch).expect("patch is base64");
    Some(serde_json::from_slice(&bytes).expect("patch is a JSON patch"))
}

/// The request's object with the response's patch applied (the object itself without a patch).
pub fn patched(object: &Value, response: &AdmissionResponse) -> Value {
    let mut out = object.clone();
    if let Some(patch) = decoded_patch(response) {
        json_patch::patch(&mut out, &patch).expect("the response's patch applies to the object");
    }
    out
}

/// The `linkerd.io/proxy-<kind>` labels of a pod.
pub fn owner_labels(pod: &Value) -> BTreeMap<String, String> {
    pod.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("linkerd.io/proxy-"))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// Names of a pod's containers and init containers.
pub fn container_names(pod: &Value) -> Vec<String> {
    ["initContainers", "containers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}
