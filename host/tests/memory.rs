//! Linear memory of the real policy module: the peak for a 1 MB pod is bounded, and a cap below
//! it ends in a clean 500 for that request, never in a crash of the engine.

mod common;

use std::sync::Arc;

use common::*;
use injector_host::linkerd::rollout::{PodAdmission, Rng, classify, pod_create_request};
use kubewarden_engine::runtime::callback::HostContext;
use kubewarden_engine::runtime::engine::{Engine, EngineConfig, EngineError, Policy};
use kubewarden_engine::runtime::memory::{WASM_PAGE, peak_linear_memory};
use kubewarden_engine::{AdmissionRequest, AdmissionResponse};
use serde_json::{Value, json};

const MIB: usize = 1024 * 1024;

/// The rollout's nginx pod with env vars added to its container until the object is `bytes` long.
fn world(bytes: usize) -> (Arc<HostContext>, AdmissionRequest) {
    let host = policy_host();
    let rs = add_nginx_replica_set(&host);
    let mut req = pod_create_request(&rs, &mut Rng::new(7)).expect("a pod of the ReplicaSet");
    let object = req.object.as_mut().expect("object");
    // each entry serialises to 60 bytes with its comma
    let env: Vec<Value> = (0..bytes / 60)
        .map(|i| json!({"name": format!("VAR_{i:07}"), "value": format!("value-{i:020}")}))
        .collect();
    object["spec"]["containers"][0]["env"] = Value::Array(env);
    (host, req)
}

fn policy(max_memory: Option<usize>) -> Policy {
    let config = EngineConfig::default();
    let config = match max_memory {
        Some(bytes) => config.with_max_memory(bytes),
        None => config,
    };
    Engine::new(config)
        .unwrap()
        .load_policy_file(&policy_wasm_path())
        .expect("policy.wasm compiles")
}

fn object_len(req: &AdmissionRequest) -> usize {
    serde_json::to_vec(req.object.as_ref().unwrap()).unwrap().len()
}

fn injected(req: &AdmissionRequest, resp: &AdmissionResponse) -> bool {
    classify(req.object.as_ref().unwrap(), resp) == PodAdmission::Injected
}

#[test]
fn peak_linear_memory_of_a_1_mb_pod_is_bounded() {
    let (host, req) = world(MIB);
    assert!(
        (MIB..MIB + 4096).contains(&object_len(&req)),
        "{}",
        object_len(&req)
    );
    let settings = settings(json!({}));
    let policy = policy(None);
    let (_, small) = world(2 * 1024);
    let typical = peak_linear_memory(&policy, &host, &small, &settings).unwrap();
    let peak = peak_linear_memory(&policy, &host, &req, &settings).unwrap();
    println!(
        "peak linear memory: typical pod {} KiB, 1 MB pod ({} bytes) {} KiB",
        typical / 1024,
        object_len(&req),
        peak / 1024
    );
    assert_eq!(peak % WASM_PAGE, 0);
    // The guest holds the payload, the parsed request and the serialised answer at once: a few
    // times the object, never unbounded.
    assert!(peak > 2 * MIB && peak <= 20 * MIB, "peak {peak} bytes");
    assert!(typical < peak, "typical {typical}, 1 MB {peak}");

    // With the cap at the peak the pod is injected; one page less and that request alone fails.
    let at_peak = policy.with_max_memory(Some(peak)).unwrap();
    let resp = at_peak.evaluate(&host, &req, &settings).unwrap();
    assert!(injected(&req, &resp), "{}", serde_json::to_string(&resp).unwrap());
    let below = policy.with_max_memory(Some(peak - WASM_PAGE)).unwrap();
    let resp = below.evaluate(&host, &req, &settings).unwrap();
    assert!(!resp.allowed);
    assert_eq!(resp.patch, None);
    let status = resp.status.as_ref().expect("status");
    assert_eq!(status.code, Some(500));
    assert!(
        status
            .message
            .as_deref()
            .unwrap_or("")
            .starts_with("internal server error: Guest call failure: "),
        "{status:?}"
    );
    // The same capped policy still admits small pods: every request gets a fresh instance.
    let resp = below.evaluate(&host, &small, &settings).unwrap();
    assert!(
        injected(&small, &resp),
        "{}",
        serde_json::to_string(&resp).unwrap()
    );
}

#[test]
fn a_cap_below_the_initial_memory_fails_instantiation_with_the_module_name() {
    let (host, req) = world(2 * 1024);
    let policy = policy(Some(WASM_PAGE));
    assert_eq!(policy.max_memory(), Some(WASM_PAGE));
    let err = policy.evaluate(&host, &req, &settings(json!({}))).unwrap_err();
    assert!(matches!(err, EngineError::Instantiate { .. }), "{err:?}");
    assert!(err.to_string().starts_with("cannot instantiate module "), "{err}");
    assert!(err.to_string().contains("policy.wasm"), "{err}");
}

/// `kwctl bench` runs every `validate` of a benchmark in one instance. The module's allocator
/// (talc) gives back what a call allocated, so one instance serves many
/// admissions within the memory one admission needs; an allocator that kept what was freed
/// would reach the cap within a few calls and answer 500.
#[test]
fn one_instance_serves_many_admissions_within_one_admissions_peak() {
    let (host, req) = world(2 * 1024);
    let settings = settings(json!({}));
    let policy = policy(None);
    let peak = peak_linear_memory(&policy, &host, &req, &settings).unwrap();
    let mut instance = policy
        .with_max_memory(Some(peak))
        .unwrap()
        .instantiate(&host)
        .unwrap();
    let first = instance.validate(&req, &settings).unwrap();
    assert!(
        injected(&req, &first),
        "{}",
        serde_json::to_string(&first).unwrap()
    );
    for call in 2..=300 {
        let resp = instance.validate(&req, &settings).unwrap();
        assert_eq!(resp, first, "call {call} in the same instance");
    }
}
