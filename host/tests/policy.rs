//! The real policy module (`../policy.wasm`, built by `make policy.wasm`) under this engine.

mod common;

use common::*;
use injector_host::linkerd::rollout::{
    PodAdmission, Rng, RolloutOptions, Workload, classify, pod_create_request, run_rollout,
};
use kubewarden_engine::protocol::metadata::Metadata;
use kubewarden_engine::runtime::engine::{Engine, EngineConfig};
use serde_json::json;

#[test]
fn declares_its_context_aware_resources() {
    let md = Metadata::from_file(&policy_yaml_path()).expect("policy.yaml");
    assert!(
        md.context_aware_resources
            .contains(&kubewarden_engine::ContextAwareResource::new(
                "apps/v1",
                "ReplicaSet"
            ))
    );
    assert!(
        md.context_aware_resources
            .contains(&kubewarden_engine::ContextAwareResource::new("v1", "Namespace"))
    );
}

#[test]
fn injects_a_replica_set_pod_in_an_injected_namespace() {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let policy = engine
        .load_policy_file(&policy_wasm_path())
        .expect("policy.wasm compiles");
    let host = policy_host();
    let rs = add_nginx_replica_set(&host);
    let mut inst = policy.instantiate(&host).unwrap();
    assert_eq!(inst.protocol_version().unwrap(), "v1");
    let v = inst.validate_settings(&settings(json!({})));
    assert!(v.valid, "default settings must be valid: {v:?}");
    let req = pod_create_request(&rs, &mut Rng::new(7)).expect("a pod of the ReplicaSet");
    let resp = inst.validate(&req, &settings(json!({}))).unwrap();
    assert_eq!(
        classify(req.object.as_ref().unwrap(), &resp),
        PodAdmission::Injected,
        "{}",
        serde_json::to_string(&resp).unwrap()
    );
}

#[test]
fn rollout_of_1000_replicas_injects_every_pod() {
    let engine = Engine::new(EngineConfig::default()).unwrap();
    let policy = engine
        .load_policy_file(&policy_wasm_path())
        .expect("policy.wasm compiles");
    let host = policy_host();
    let opts = RolloutOptions {
        replicas: 1000,
        workers: 4,
        progress: false,
        ..Default::default()
    };
    let report = run_rollout(&policy, &host, &Workload::default_nginx(1000), &opts).unwrap();
    assert_eq!(
        (report.injected, report.skipped, report.rejected, report.errors),
        (1000, 0, 0, 0),
        "{}",
        report
    );
    assert!(report.lookups.made >= 1, "{:?}", report.lookups);
    assert!(
        report.lookups.cached >= 1,
        "the shared cache serves repeated lookups: {:?}",
        report.lookups
    );
    assert_eq!(report.lookups.failed, 0, "{:?}", report.lookups);
}
