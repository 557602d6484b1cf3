//! The calibration row of `make bench`: throughput through the engine of a trivial mutating
//! policy, the same with one cached Namespace lookup and with the injected pod's two host calls,
//! this policy (empty and shipped settings) and the floor, measured in one run, in interleaved
//! rounds, on the same worker count, so the ratios can be set against the same ratios measured in
//! policy-server (`benches/policy-server.md`). Host calls per admission are counted, not timed.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use kubewarden_engine::{Engine, HostContext, Policy, PolicySettings};

use super::admission::Engines;
use crate::world::Scenario;

/// Admissions per round and candidate.
pub const ADMISSIONS: usize = 2000;
/// Interleaved rounds.
pub const ROUNDS: usize = 3;
/// The row the ratios are taken against.
pub const REFERENCE: &str = "trivial mutating policy";

/// One policy of the row: a module and the settings it runs with.
pub struct Candidate {
    pub name: String,
    pub policy: Policy,
    pub settings: PolicySettings,
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
            let per_s = throughput(&candidates[i], host, scenario, workers, admissions);
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
) -> f64 {
    let per_worker = admissions.div_ceil(workers.max(1));
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
    done as f64 / t0.elapsed().as_secs_f64()
}

/// The shipped settings file (`deploy/settings/*.yaml`, YAML) as settings.
fn shipped_settings(path: &Path) -> PolicySettings {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: serde_json::Value =
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    PolicySettings::from_value(&value).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The row's policies: trivial, trivial + lookup, trivial + ours' host calls, ours (empty and
/// shipped settings), floor.
pub fn candidates(engine: &Engine, e: &Engines, trivial: &Path, shipped: &Path) -> Vec<Candidate> {
    let trivial_bytes = std::fs::read(trivial)
        .unwrap_or_else(|err| panic!("{}: {err} (make trivial-policy builds it)", trivial.display()));
    let trivial = engine
        .load_policy("trivial", &trivial_bytes)
        .expect("trivial policy");
    let with_lookup = PolicySettings::from_value(&serde_json::json!({"lookup": true})).expect("settings");
    // The injected pod's own host calls: the Namespace, then the control plane's ConfigMaps.
    let with_ours_calls =
        PolicySettings::from_value(&serde_json::json!({"lookup": true, "listConfigMaps": "linkerd"}))
            .expect("settings");
    let candidate = |name: &str, policy: &Policy, settings: PolicySettings| Candidate {
        name: name.to_owned(),
        policy: policy.clone(),
        settings,
    };
    vec![
        candidate(REFERENCE, &trivial, PolicySettings::default()),
        candidate("trivial + 1 cached Namespace lookup", &trivial, with_lookup),
        candidate(
            "trivial + ours' host calls (Namespace, ConfigMap list)",
            &trivial,
            with_ours_calls,
        ),
        candidate("ours, empty settings", &e.ours, e.settings.clone()),
        candidate(
            &format!("ours, `{}`", shipped.display()),
            &e.ours,
            shipped_settings(shipped),
        ),
        candidate("floor (echo)", &e.floor, PolicySettings::default()),
    ]
}
