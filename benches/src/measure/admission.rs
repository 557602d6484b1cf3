//! Per admission through the engine (`Policy::evaluate`: fresh instance, `validate`, diff): ours
//! and the floor on the same request, interleaved.

use std::sync::Arc;
use std::time::{Duration, Instant};

use injector_host::linkerd::rollout::{LatencySummary, PodAdmission as PodOutcome, classify};
use kubewarden_engine::{AdmissionResponse, HostContext, Policy, PolicySettings};

use crate::stats::iterations;
use crate::world::Scenario;

/// The two modules compared, the host they share and the settings they run with.
pub struct Engines {
    pub ours: Policy,
    pub floor: Policy,
    pub host: Arc<HostContext>,
    pub settings: PolicySettings,
}

/// Ours and the floor on one request.
pub struct PairResult {
    pub scenario: Scenario,
    pub n: usize,
    pub ours: LatencySummary,
    pub floor: LatencySummary,
    pub ours_result: String,
    pub floor_result: String,
}

impl PairResult {
    pub fn ratio_p50(&self) -> f64 {
        self.ours.p50_ms / self.floor.p50_ms
    }
}

fn evaluate(e: &Engines, p: &Policy, s: &Scenario) -> (Duration, AdmissionResponse) {
    let t0 = Instant::now();
    let r = p.evaluate(&e.host, &s.request, &e.settings).expect("evaluate");
    (t0.elapsed(), r)
}

/// What the engine made of the request, for the tables' result columns.
fn describe(s: &Scenario, r: &AdmissionResponse) -> String {
    if !r.allowed {
        return format!("rejected: {}", r.message());
    }
    if s.request.kind.kind != "Pod" {
        return if r.patch.is_some() {
            "annotated"
        } else {
            "unchanged"
        }
        .into();
    }
    let pod = s.request.object.clone().unwrap_or_default();
    match classify(&pod, r) {
        PodOutcome::Injected => "injected".into(),
        PodOutcome::Skipped if r.patch.is_some() => "skipped (annotated)".into(),
        PodOutcome::Skipped => "unchanged".into(),
        PodOutcome::Rejected(m) | PodOutcome::Error(m) => format!("error: {m}"),
    }
}

/// Ours and the floor on the same request, interleaved (alternating which goes first); at least
/// `min` samples of each, whatever the budget.
pub fn measure_pair(e: &Engines, s: &Scenario, budget: Duration, min: usize, max: usize) -> PairResult {
    let (_, ro) = evaluate(e, &e.ours, s);
    let (_, rf) = evaluate(e, &e.floor, s);
    let mut est = Duration::ZERO;
    for _ in 0..3 {
        est += evaluate(e, &e.ours, s).0 + evaluate(e, &e.floor, s).0;
    }
    let n = iterations(budget, est / 3, min, max);
    let (mut o, mut f) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        if i % 2 == 0 {
            o.push(evaluate(e, &e.ours, s).0);
            f.push(evaluate(e, &e.floor, s).0);
        } else {
            f.push(evaluate(e, &e.floor, s).0);
            o.push(evaluate(e, &e.ours, s).0);
        }
    }
    PairResult {
        scenario: s.clone(),
        n,
        ours: LatencySummary::from_durations(&o),
        floor: LatencySummary::from_durations(&f),
        ours_result: describe(s, &ro),
        floor_result: describe(s, &rf),
    }
}

/// Every scenario of the per-admission table.
pub fn measure_admissions(e: &Engines, scenarios: &[Scenario], budget: Duration) -> Vec<PairResult> {
    eprintln!("bench: per-admission, ours vs floor");
    scenarios
        .iter()
        .map(|s| {
            let r = measure_pair(e, s, budget, 25, 4000);
            eprintln!(
                "  {:<10} n={:<5} ours p50 {:.3} ms p99 {:.3} ms | floor p50 {:.3} ms p99 {:.3} ms | x{:.2}",
                s.id,
                r.n,
                r.ours.p50_ms,
                r.ours.p99_ms,
                r.floor.p50_ms,
                r.floor.p99_ms,
                r.ratio_p50()
            );
            r
        })
        .collect()
}

/// The pods of growing size.
pub fn measure_series(e: &Engines, series: &[Scenario], budget: Duration) -> Vec<PairResult> {
    eprintln!("bench: size series");
    series
        .iter()
        .map(|s| {
            // 60 samples at least: at 256 KiB and 1 MiB the budget alone gives 25, and one
            // noisy p50 there decided the linear fit's R².
            let r = measure_pair(e, s, budget / 2, 60, 2000);
            eprintln!(
                "  {:<10} n={:<5} ours p50 {:.3} ms | floor p50 {:.3} ms",
                s.id, r.n, r.ours.p50_ms, r.floor.p50_ms
            );
            r
        })
        .collect()
}
