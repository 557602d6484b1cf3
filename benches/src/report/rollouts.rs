//! The "Rollouts" section: one row per rollout through the `injector-host` binary, and the
//! lookups the in-process measurements made.

use std::fmt::{self, Write as _};

use injector_host::linkerd::rollout::RolloutReport;

use crate::format::us;
use crate::measure::Measurements;
use crate::measure::rollout::Rollout;

pub fn write_rollouts(w: &mut String, workers: usize, m: &Measurements) -> fmt::Result {
    writeln!(
        w,
        "## Rollouts (`injector-host rollout --replicas N --workers {workers} --json`)\n"
    )?;
    writeln!(
        w,
        "The rollout of linkerd2#3358 through the `injector-host` binary: a Deployment's ReplicaSet creates N pods, each pod CREATE is one admission (fresh instance) on W worker threads sharing one engine and its 5 s lookup cache. Peak memory is the engine process's maximum RSS (`wait4`).\n"
    )?;
    writeln!(
        w,
        "| module | replicas | workers | injected | wall | throughput | p50 | p99 | max | Namespace lookups made / cached | ReplicaSet (owner) lookups made / cached | ConfigMap lookups made / cached | ConfigMap lists | cache windows (5 s) | peak RSS |"
    )?;
    writeln!(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")?;
    for r in m.rollouts.iter().chain(std::iter::once(&m.floor_rollout)) {
        match &r.report {
            Some(rep) => write_row(w, r, rep)?,
            None => writeln!(
                w,
                "| {} | {} | {} | error: {} | | | | | | | | | | | |",
                r.module,
                r.replicas,
                r.workers,
                r.error.clone().unwrap_or_default().replace('|', "/")
            )?,
        }
    }
    writeln!(
        w,
        "\nLookups made = cache misses that reached the cluster; the owner (ReplicaSet) is looked up about once per cache window, not once per pod. ConfigMap lists = `list_resources_by_namespace` calls (`policy.configMapLookup: list`, the default: one per pod reads `linkerd-config` and the trust roots; policy-server serves them from a watch-backed reflector, this engine from its cluster state, uncached). The floor makes no lookups and adds no proxy (its row shows the engine's own cost for the same pods).\n"
    )?;
    writeln!(
        w,
        "In-process benchmarks above made {} lookups and served {} from the cache.\n",
        m.lookups_made, m.lookups_cached
    )
}

fn write_row(w: &mut String, r: &Rollout, rep: &RolloutReport) -> fmt::Result {
    let by = |k: &str| {
        rep.lookups
            .by_resource
            .get(k)
            .map(|s| format!("{} / {}", s.made, s.cached))
            .unwrap_or_else(|| "0 / 0".into())
    };
    let windows = (rep.wall_time_ms / 5000.0).ceil().max(1.0);
    writeln!(
        w,
        "| {} | {} | {} | {}/{} | {:.2} s | {:.0}/s | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} MiB |",
        r.module,
        rep.replicas,
        rep.workers,
        rep.injected,
        rep.replicas,
        rep.wall_time_ms / 1e3,
        rep.throughput_per_s,
        us(rep.latency.p50_ms),
        us(rep.latency.p99_ms),
        us(rep.latency.max_ms),
        by("v1/Namespace"),
        by("apps/v1/ReplicaSet"),
        by("v1/ConfigMap"),
        rep.lookups.lists,
        windows,
        r.max_rss_kib as f64 / 1024.0
    )
}
