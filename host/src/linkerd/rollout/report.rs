//! What a rollout came to: [`RolloutReport`] (serialised as the `--json` output and read by the
//! benchmarks), its latency percentiles ([`LatencySummary`]) and how close admissions came to the
//! webhook timeout and the policy deadline ([`LimitReport`]); `Display` is the human summary.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use kubewarden_engine::hostcalls::lookup::LookupStats;

/// Per-admission latency, milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

impl LatencySummary {
    pub fn from_durations(durations: &[Duration]) -> Self {
        if durations.is_empty() {
            return Self::default();
        }
        let mut ms: Vec<f64> = durations.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        // nearest rank: the smallest latency at or above the share q of admissions
        let pick = |q: f64| ms[((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
        Self {
            p50_ms: pick(0.50),
            p95_ms: pick(0.95),
            p99_ms: pick(0.99),
            max_ms: ms[ms.len() - 1],
            mean_ms: ms.iter().sum::<f64>() / ms.len() as f64,
        }
    }
}

/// How close admissions came to a limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LimitReport {
    pub limit_ms: f64,
    /// Admissions that took at least 80 % of the limit.
    pub near: usize,
    /// Admissions that took the limit or longer.
    pub exceeded: usize,
    /// Slowest admission as a share of the limit (1.0 = the limit).
    pub max_fraction: f64,
}

impl LimitReport {
    pub(super) fn new(limit: Duration, durations: &[Duration]) -> Self {
        let limit_ms = limit.as_secs_f64() * 1e3;
        let near = durations
            .iter()
            .filter(|d| d.as_secs_f64() * 1e3 >= 0.8 * limit_ms)
            .count();
        let exceeded = durations.iter().filter(|d| **d >= limit).count();
        let max = durations
            .iter()
            .max()
            .map(|d| d.as_secs_f64() * 1e3)
            .unwrap_or(0.0);
        Self {
            limit_ms,
            near,
            exceeded,
            max_fraction: if limit_ms > 0.0 { max / limit_ms } else { 0.0 },
        }
    }

    /// `  <name> 10.0 s: <verdict> (slowest: 1.2% of it)`, a line of the summary.
    fn line(&self, name: &str) -> String {
        let verdict = if self.exceeded > 0 {
            format!("{} admissions exceeded it", self.exceeded)
        } else if self.near > 0 {
            format!("{} admissions came near it (>= 80%)", self.near)
        } else {
            "no admission came near it".to_owned()
        };
        format!(
            "  {name} {:.1} s: {verdict} (slowest: {:.1}% of it)",
            self.limit_ms / 1e3,
            self.max_fraction * 100.0
        )
    }
}

/// What happened to the pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RolloutReport {
    pub deployment: String,
    pub namespace: String,
    pub replica_set: String,
    pub pod_template_hash: String,
    pub replicas: usize,
    pub workers: usize,
    /// Allowed with a patch that adds a `linkerd-proxy` container.
    pub injected: usize,
    /// Allowed without a proxy.
    pub skipped: usize,
    /// `allowed: false` (includes guest errors and deadline interruptions).
    pub rejected: usize,
    /// Of the rejected: interrupted by the policy deadline.
    pub deadline_exceeded: usize,
    /// Engine failures (instantiation, patch that cannot be decoded or applied).
    pub errors: usize,
    pub lookups: LookupStats,
    pub latency: LatencySummary,
    pub wall_time_ms: f64,
    pub throughput_per_s: f64,
    pub webhook_timeout: LimitReport,
    pub policy_deadline: Option<LimitReport>,
    /// A few rejection / error messages, with counts.
    pub failure_samples: BTreeMap<String, usize>,
}

/// The human summary, one line per count, every line ending in a newline.
impl fmt::Display for RolloutReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "rollout of Deployment {}/{}: {} replicas via ReplicaSet {} (pod-template-hash {}), {} workers",
            self.namespace,
            self.deployment,
            self.replicas,
            self.replica_set,
            self.pod_template_hash,
            self.workers
        )?;
        writeln!(f, "  injected  {:>7}", self.injected)?;
        writeln!(f, "  skipped   {:>7}", self.skipped)?;
        writeln!(
            f,
            "  rejected  {:>7}  (policy deadline exceeded: {})",
            self.rejected, self.deadline_exceeded
        )?;
        writeln!(f, "  errors    {:>7}", self.errors)?;
        self.fmt_lookups(f)?;
        self.fmt_timing(f)?;
        for (m, n) in &self.failure_samples {
            writeln!(f, "  {n} x {m}")?;
        }
        Ok(())
    }
}

impl RolloutReport {
    fn fmt_lookups(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = &self.lookups;
        writeln!(
            f,
            "  lookups made {} (failed {}), served from cache {}, lists {}",
            l.made, l.failed, l.cached, l.lists
        )?;
        for (resource, r) in &l.by_resource {
            writeln!(
                f,
                "    {resource:<32} made {:>6}  cached {:>6}  failed {:>6}",
                r.made, r.cached, r.failed
            )?;
        }
        Ok(())
    }

    fn fmt_timing(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = &self.latency;
        writeln!(
            f,
            "  latency per admission: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms
        )?;
        writeln!(
            f,
            "  throughput: {:.1} admissions/s (wall time {:.2} s)",
            self.throughput_per_s,
            self.wall_time_ms / 1e3
        )?;
        writeln!(f, "{}", self.webhook_timeout.line("webhook timeout"))?;
        if let Some(d) = &self.policy_deadline {
            writeln!(f, "{}", d.line("policy deadline"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let d: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = LatencySummary::from_durations(&d);
        assert_eq!(
            (
                l.p50_ms.round(),
                l.p95_ms.round(),
                l.p99_ms.round(),
                l.max_ms.round()
            ),
            (50.0, 95.0, 99.0, 100.0)
        );
    }

    #[test]
    fn the_summary_names_every_count_and_limit() {
        let d: Vec<Duration> = [1, 9, 10].into_iter().map(Duration::from_secs).collect();
        let report = RolloutReport {
            deployment: "web".into(),
            namespace: "shop".into(),
            replica_set: "web-abc".into(),
            pod_template_hash: "abc".into(),
            replicas: 3,
            workers: 2,
            injected: 2,
            rejected: 1,
            deadline_exceeded: 1,
            latency: LatencySummary::from_durations(&d),
            wall_time_ms: 2000.0,
            throughput_per_s: 1.5,
            webhook_timeout: LimitReport::new(Duration::from_secs(10), &d),
            policy_deadline: Some(LimitReport::new(Duration::from_secs(20), &d)),
            failure_samples: BTreeMap::from([("rejected: late".to_owned(), 1)]),
            ..Default::default()
        };
        assert_eq!(
            report.to_string(),
            "rollout of Deployment shop/web: 3 replicas via ReplicaSet web-abc (pod-template-hash abc), 2 workers\n\
             \x20 injected        2\n\
             \x20 skipped         0\n\
             \x20 rejected        1  (policy deadline exceeded: 1)\n\
             \x20 errors          0\n\
             \x20 lookups made 0 (failed 0), served from cache 0, lists 0\n\
             \x20 latency per admission: p50 9000.00 ms, p95 10000.00 ms, p99 10000.00 ms, max 10000.00 ms\n\
             \x20 throughput: 1.5 admissions/s (wall time 2.00 s)\n\
             \x20 webhook timeout 10.0 s: 1 admissions exceeded it (slowest: 100.0% of it)\n\
             \x20 policy deadline 20.0 s: no admission came near it (slowest: 50.0% of it)\n\
             \x20 1 x rejected: late\n"
        );
    }
}
