//! The core natively (`wire::validate`, cluster in memory) against the guest call `validate` of
//! a fresh instance, and the floor the same way, interleaved on the engine's exact payload bytes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use injector_host::linkerd::rollout::LatencySummary;
use kubewarden_engine::{HostContext, Policy};
use linkerd_injector_policy::cluster::MemoryCluster;

use super::admission::Engines;
use crate::stats::iterations;
use crate::world::Scenario;

pub struct CoreResult {
    pub scenario: Scenario,
    pub n: usize,
    pub native: LatencySummary,
    pub wasm: LatencySummary,
    pub floor_native: LatencySummary,
    pub floor_wasm: LatencySummary,
    /// The native core and the guest gave the same answer: equal JSON, whatever the key order
    /// (the module's serde_json sorts keys; this native build, sharing the host's
    /// `preserve_order`, keeps insertion order; policy-evaluator sorts before its diff).
    pub identical: bool,
}

fn same_answer(a: &[u8], b: &[u8]) -> bool {
    let parse = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes);
    matches!((parse(a), parse(b)), (Ok(x), Ok(y)) if x == y)
}

impl CoreResult {
    pub fn wasm_over_native(&self) -> f64 {
        self.wasm.p50_ms / self.native.p50_ms
    }
}

/// The guest call alone (fresh instance made outside the timing).
fn guest_call(p: &Policy, host: &Arc<HostContext>, payload: &[u8]) -> (Duration, Vec<u8>) {
    let instance = p.instantiate(host).expect("instantiate");
    let t0 = Instant::now();
    let out = instance.call("validate", payload).expect("validate");
    (t0.elapsed(), out)
}

fn native_call(objects: &[serde_json::Value], payload: &[u8]) -> (Duration, Vec<u8>) {
    let cluster = MemoryCluster::new(objects.to_vec());
    let t0 = Instant::now();
    let out = linkerd_injector_policy::wire::validate(payload, &cluster);
    (t0.elapsed(), out)
}

fn floor_native(payload: &[u8]) -> Duration {
    let t0 = Instant::now();
    let out = floor_policy::validate(payload).expect("floor");
    let d = t0.elapsed();
    std::hint::black_box(out);
    d
}

/// The four calls in one order or the other.
#[derive(Default)]
struct Samples {
    native: Vec<Duration>,
    wasm: Vec<Duration>,
    floor_native: Vec<Duration>,
    floor_wasm: Vec<Duration>,
}

impl Samples {
    fn round(&mut self, e: &Engines, objects: &[serde_json::Value], payload: &[u8], forward: bool) {
        if forward {
            self.native.push(native_call(objects, payload).0);
            self.wasm.push(guest_call(&e.ours, &e.host, payload).0);
            self.floor_native.push(floor_native(payload));
            self.floor_wasm.push(guest_call(&e.floor, &e.host, payload).0);
        } else {
            self.floor_wasm.push(guest_call(&e.floor, &e.host, payload).0);
            self.floor_native.push(floor_native(payload));
            self.wasm.push(guest_call(&e.ours, &e.host, payload).0);
            self.native.push(native_call(objects, payload).0);
        }
    }
}

pub fn measure_core(
    e: &Engines,
    objects: &[serde_json::Value],
    s: &Scenario,
    budget: Duration,
) -> CoreResult {
    let (_, native_out) = native_call(objects, &s.payload);
    let (_, wasm_out) = guest_call(&e.ours, &e.host, &s.payload);
    let mut est = Duration::ZERO;
    for _ in 0..3 {
        est += native_call(objects, &s.payload).0 + guest_call(&e.ours, &e.host, &s.payload).0;
        est += floor_native(&s.payload) + guest_call(&e.floor, &e.host, &s.payload).0;
    }
    let n = iterations(budget, est / 3, 25, 3000);
    let mut samples = Samples::default();
    for i in 0..n {
        samples.round(e, objects, &s.payload, i % 2 == 0);
    }
    CoreResult {
        scenario: s.clone(),
        n,
        native: LatencySummary::from_durations(&samples.native),
        wasm: LatencySummary::from_durations(&samples.wasm),
        floor_native: LatencySummary::from_durations(&samples.floor_native),
        floor_wasm: LatencySummary::from_durations(&samples.floor_wasm),
        identical: same_answer(&native_out, &wasm_out),
    }
}

/// The rows of the native-against-wasm table.
pub fn measure_cores(
    e: &Engines,
    objects: &[serde_json::Value],
    scenarios: &[&Scenario],
    budget: Duration,
) -> Vec<CoreResult> {
    eprintln!("bench: native vs wasm");
    scenarios
        .iter()
        .map(|s| {
            let r = measure_core(e, objects, s, budget);
            eprintln!(
                "  {:<10} n={:<5} native p50 {:.3} ms | wasm p50 {:.3} ms | x{:.2} identical={}",
                s.id,
                r.n,
                r.native.p50_ms,
                r.wasm.p50_ms,
                r.wasm_over_native(),
                r.identical
            );
            r
        })
        .collect()
}
