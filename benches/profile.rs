//! A loop to run under callgrind (instruction counts are repeatable where wall time is not):
//!
//! ```text
//! cargo bench --profile host --bench profile --no-run     # prints the binary's path
//! valgrind --tool=callgrind --toggle-collect='*measured*' BIN MODE SCENARIO N
//! ```
//! MODE: `native` (core `wire::validate`, cluster in memory), `native-floor`, `engine` /
//! `engine-floor` (a full admission through the engine: fresh instance, validate, diff),
//! `guest` / `guest-floor` (the `validate` guest call only; instantiation outside `measured`),
//! `instantiate` / `instantiate-floor`.
//! SCENARIO: typical, bare, skipped, service, containers20, env1500, pod64k, pod1m.
//! Divide the counted instructions by N. `benches/callgrind.sh` runs the usual set.

mod common;

use std::hint::black_box;
use std::sync::Arc;

use common::{Scenario, World};
use injector_host::lookup::{ClusterLookup, Lookups};
use injector_host::metadata::PolicyMetadata;
use injector_host::{
    ClusterState, Engine, EngineConfig, FaultPlan, HostContext, LogSink, LookupSource, Policy, Settings,
};
use linkerd_injector_policy::cluster::MemoryCluster;

#[inline(never)]
fn measured_native(payload: &[u8], cluster: &MemoryCluster) -> Vec<u8> {
    linkerd_injector_policy::wire::validate(payload, cluster)
}

#[inline(never)]
fn measured_native_floor(payload: &[u8]) -> Vec<u8> {
    floor_policy::validate(payload).expect("floor")
}

#[inline(never)]
fn measured_engine(p: &Policy, host: &Arc<HostContext>, s: &Scenario, settings: &Settings) {
    black_box(p.evaluate(host, &s.request, settings).expect("evaluate"));
}

#[inline(never)]
fn measured_guest(i: &injector_host::Instance, payload: &[u8]) -> Vec<u8> {
    i.call("validate", payload).expect("validate")
}

#[inline(never)]
fn measured_instantiate(p: &Policy, host: &Arc<HostContext>) -> injector_host::Instance {
    p.instantiate(host).expect("instantiate")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mode = args.first().map(String::as_str).unwrap_or("native");
    let id = args.get(1).map(String::as_str).unwrap_or("typical");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let policy_path = std::env::var("POLICY").unwrap_or_else(|_| "policy.wasm".into());
    let floor_path =
        std::env::var("FLOOR").unwrap_or_else(|_| "target/wasm32-wasip1/release/floor_policy.wasm".into());

    let mut world = World::new();
    let s = match id {
        "typical" => world.typical(),
        "bare" => world.bare(),
        "skipped" => world.skipped(),
        "service" => world.service(),
        "containers20" => world.containers20(),
        "env1500" => world.env("env1500", "1,500 env vars", 1500),
        "pod64k" => world.sized("pod64k", "64 KB pod", 64 * 1024),
        "pod1m" => world.sized("pod1m", "1 MB pod", 1024 * 1024),
        other => panic!("unknown scenario {other}"),
    };
    let settings = common::settings();
    match mode {
        "native" => {
            for _ in 0..n {
                let cluster = MemoryCluster::new(world.objects.clone());
                black_box(measured_native(&s.payload, &cluster));
            }
        }
        "native-floor" => {
            for _ in 0..n {
                black_box(measured_native_floor(&s.payload));
            }
        }
        _ => {
            let engine = Engine::new(EngineConfig::default()).expect("engine");
            let floor = mode.ends_with("-floor");
            let path = if floor { &floor_path } else { &policy_path };
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let p = engine.load_policy(path, &bytes).expect("load");
            let md = PolicyMetadata::from_file("policy.yaml".as_ref()).expect("policy.yaml");
            let mut state = ClusterState::new();
            for o in &world.objects {
                state.insert(o.clone()).expect("object");
            }
            let host = Arc::new(HostContext::new(
                "profile",
                md.context_aware_resources,
                Lookups::new(LookupSource::Cluster(ClusterLookup::new(state, FaultPlan::new()))),
                LogSink::Discard,
            ));
            // warm the lookup cache
            black_box(p.evaluate(&host, &s.request, &settings).expect("evaluate"));
            match mode.trim_end_matches("-floor") {
                "engine" => {
                    for _ in 0..n {
                        measured_engine(&p, &host, &s, &settings);
                    }
                }
                "guest" => {
                    for _ in 0..n {
                        let i = p.instantiate(&host).expect("instantiate");
                        black_box(measured_guest(&i, &s.payload));
                    }
                }
                "instantiate" => {
                    for _ in 0..n {
                        black_box(measured_instantiate(&p, &host));
                    }
                }
                other => panic!("unknown mode {other}"),
            }
        }
    }
}
