//! The calibration row of `make bench`: throughput through the engine of a trivial mutating
//! policy, the same with one cached Namespace lookup, this policy (empty and shipped settings)
//! and the floor, measured in one run, in interleaved rounds, on the same worker count, so the
//! ratios can be set against the same ratios measured in policy-server
//! (`benches/policy-server.md`). Host calls per admission are counted, not timed.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use injector_host::{HostContext, Policy, Settings};

use crate::world::Scenario;

/// One policy of the row: a module and the settings it runs with.
pub struct Candidate {
    pub name: String,
    pub policy: Policy,
    pub settings: Settings,
}

/// What one candidate measured.
pub struct Row {
    pub name: String,
    /// Admissions per second, one figure per round.
    pub per_s: Vec<f64>,
    /// `get_resource`/list/`can_i` calls per admission (made + served from cache).
    pub host_calls: f64,
    /// The first admission's outcome (allowed, patched or not).
    pub result: String,
}

impl Row {
    pub fn median(&self) -> f64 {
        let mut v = self.per_s.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    }
}

/// Runs `rounds` rounds; in each, every candidate evaluates `admissions` requests on `workers`
/// threads sharing one host (as policy-server's workers share its callback handler and cache).
pub fn measure(
    candidates: &[Candidate],
    host: &Arc<HostContext>,
    scenario: &Scenario,
    workers: usize,
    admissions: usize,
    rounds: usize,
) -> Vec<Row> {
    let mut rows: Vec<Row> = candidates
        .iter()
        .map(|c| first_admission(c, host, scenario))
        .collect();
    for round in 0..rounds {
        // alternate the order so drift in machine load falls on every candidate alike
        let order: Vec<usize> = if round % 2 == 0 {
            (0..candidates.len()).collect()
        } else {
            (0..candidates.len()).rev().collect()
        };
        for i in order {
            let (per_s, _) = throughput(&candidates[i], host, scenario, workers, admissions);
            rows[i].per_s.push(per_s);
        }
    }
    rows
}

/// The outcome and host calls of one admission, as the row's starting point.
fn first_admission(c: &Candidate, host: &Arc<HostContext>, s: &Scenario) -> Row {
    let before = calls(host);
    let response = c
        .policy
        .evaluate(host, &s.request, &c.settings)
        .expect("evaluate");
    let host_calls = (calls(host) - before) as f64;
    let result = match (response.allowed, response.patch.is_some()) {
        (true, true) => "allowed, patched".to_owned(),
        (true, false) => "allowed".to_owned(),
        (false, _) => format!("rejected: {}", response.message()),
    };
    Row {
        name: c.name.clone(),
        per_s: Vec::new(),
        host_calls,
        result,
    }
}

fn calls(host: &HostContext) -> u64 {
    let s = host.stats();
    s.made + s.cached + s.lists
}

/// Admissions per second of `admissions` evaluations spread over `workers` threads.
fn throughput(
    c: &Candidate,
    host: &Arc<HostContext>,
    s: &Scenario,
    workers: usize,
    admissions: usize,
) -> (f64, u64) {
    let per_worker = admissions.div_ceil(workers.max(1));
    let before = calls(host);
    let t0 = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| {
                for _ in 0..per_worker {
                    c.policy
                        .evaluate(host, &s.request, &c.settings)
                        .expect("evaluate");
                }
            });
        }
    });
    let done = per_worker * workers.max(1);
    (done as f64 / t0.elapsed().as_secs_f64(), calls(host) - before)
}

/// The markdown table; `reference` names the row the ratios are taken against.
pub fn table(rows: &[Row], reference: &str) -> String {
    let base = rows
        .iter()
        .find(|r| r.name == reference)
        .map(Row::median)
        .unwrap_or(f64::NAN);
    let mut md = String::new();
    md.push_str(
        "| policy | admissions/s per round | median | / trivial | host calls per admission | outcome |\n",
    );
    md.push_str("|---|---|---|---|---|---|\n");
    for r in rows {
        let rounds: Vec<String> = r.per_s.iter().map(|v| format!("{v:.0}")).collect();
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {:.2} | {} | {} |",
            r.name,
            rounds.join(", "),
            r.median(),
            r.median() / base,
            r.host_calls,
            r.result
        );
    }
    md
}
