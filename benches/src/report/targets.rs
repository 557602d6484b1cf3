//! The "Targets" table: each target of the design, what this run measured, met or missed.

use std::fmt::{self, Write as _};

use crate::format::{kib, us, yes};
use crate::measure::Measurements;
use crate::measure::admission::PairResult;
use crate::measure::modules::{OURS, OURS_OZ};
use crate::measure::rollout::Rollout;
use crate::stats::fit;

pub fn write_targets(w: &mut String, m: &Measurements) -> fmt::Result {
    writeln!(w, "## Targets\n")?;
    writeln!(w, "| target | measured | |")?;
    writeln!(w, "|---|---|---|")?;
    write_typical(w, m)?;
    write_sizes(w, m)?;
    write_linear(w, &m.series)?;
    write_rollout(w, &m.rollouts)?;
    write_module_size(w, m)?;
    write_duration(w, m)?;
    writeln!(
        w,
        "\nA **MISSED** row is a target not met on this machine in this run; the notes at the end (\"What bounds the ratio to the floor\") say what bounds it. The floor's own figures are next to ours where the engine's fixed cost is most of the budget.\n"
    )
}

/// The typical pod: ratio to the floor, p99, the core's wasm/native ratio.
fn write_typical(w: &mut String, m: &Measurements) -> fmt::Result {
    let typ = &m.admissions[0];
    let ratio = typ.ratio_p50();
    writeln!(
        w,
        "| typical injected pod: ours/floor ≤ 2.0 at p50 | {:.2} ({} / {}) | {} |",
        ratio,
        us(typ.ours.p50_ms),
        us(typ.floor.p50_ms),
        yes(ratio <= 2.0)
    )?;
    writeln!(
        w,
        "| typical pod: p99 per admission < 1 ms | {} (p50 {}, n = {}); the floor's own p99 {} | {} |",
        us(typ.ours.p99_ms),
        us(typ.ours.p50_ms),
        typ.n,
        us(typ.floor.p99_ms),
        yes(typ.ours.p99_ms < 1.0)
    )?;
    let core = &m.cores[0];
    let wn = core.wasm_over_native();
    writeln!(
        w,
        "| core on the typical pod: wasm/native ≤ 2.5 (p50) | {:.2} ({} / {}) | {} |",
        wn,
        us(core.wasm.p50_ms),
        us(core.native.p50_ms),
        yes(wn <= 2.5)
    )
}

fn admission<'a>(m: &'a Measurements, id: &str) -> &'a PairResult {
    m.admissions
        .iter()
        .find(|r| r.scenario.id == id)
        .unwrap_or_else(|| panic!("no admission measured for {id}"))
}

/// The large pods' latency, and the 1 MB pod's peak memory.
fn write_sizes(w: &mut String, m: &Measurements) -> fmt::Result {
    for id in ["env1500", "pod64k"] {
        let r = admission(m, id);
        writeln!(
            w,
            "| {} ({}) < 10 ms | p99 {} (p50 {}); floor p99 {} (p50 {}) | {} |",
            r.scenario.label,
            kib(r.scenario.object_bytes),
            us(r.ours.p99_ms),
            us(r.ours.p50_ms),
            us(r.floor.p99_ms),
            us(r.floor.p50_ms),
            yes(r.ours.p99_ms < 10.0)
        )?;
    }
    let big = admission(m, "pod1m");
    writeln!(
        w,
        "| 1 MB pod ({}) < 100 ms | p99 {} (p50 {}) | {} |",
        kib(big.scenario.object_bytes),
        us(big.ours.p99_ms),
        us(big.ours.p50_ms),
        yes(big.ours.p99_ms < 100.0)
    )?;
    if let Some(p) = m.memory.iter().find(|p| p.scenario.id == "pod1m") {
        writeln!(
            w,
            "| 1 MB pod: peak linear memory bounded (stated) | {} = {:.1} × the object (floor {}) | **stated** |",
            kib(p.ours),
            p.ours as f64 / p.scenario.object_bytes as f64,
            kib(p.floor)
        )?;
    }
    Ok(())
}

fn per_kib(r: &PairResult) -> f64 {
    r.ours.p50_ms / (r.scenario.object_bytes as f64 / 1024.0)
}

/// Time against pod size: the fit, and the cost per KiB at 64 KiB against 1 MiB.
fn write_linear(w: &mut String, series: &[PairResult]) -> fmt::Result {
    let pts: Vec<(f64, f64)> = series
        .iter()
        .map(|r| (r.scenario.object_bytes as f64 / 1024.0, r.ours.p50_ms))
        .collect();
    let f = fit(&pts);
    let per_kb_small = series.get(2).map(per_kib).unwrap_or(0.0);
    let per_kb_big = series.last().map(per_kib).unwrap_or(0.0);
    let linear = f.r2 >= 0.98 && per_kb_big <= 1.5 * per_kb_small;
    writeln!(
        w,
        "| time grows linearly with pod size | p50 ≈ {} + {:.1} µs/KiB, R² = {:.4}; {:.1} µs/KiB at 64 KiB vs {:.1} µs/KiB at 1 MiB | {} |",
        us(f.intercept.max(0.0)),
        f.slope * 1e3,
        f.r2,
        per_kb_small * 1e3,
        per_kb_big * 1e3,
        yes(linear)
    )
}

/// The 1,000-replica rollout: all injected, deadlines, throughput.
fn write_rollout(w: &mut String, rollouts: &[Rollout]) -> fmt::Result {
    let r1000 = rollouts.iter().find(|r| r.replicas == 1000 && r.report.is_some());
    let Some((r, rep)) = r1000.and_then(|r| r.report.as_ref().map(|rep| (r, rep))) else {
        let why = rollouts
            .iter()
            .find(|r| r.replicas == 1000)
            .and_then(|r| r.error.clone())
            .unwrap_or_else(|| "not requested".into());
        return writeln!(w, "| 1,000-replica rollout | not run: {why} | **MISSED** |");
    };
    let deadline = rep.policy_deadline.map(|d| d.exceeded == 0).unwrap_or(true);
    let far = rep.webhook_timeout.max_fraction < 0.1;
    writeln!(
        w,
        "| 1,000-replica rollout, {} workers: 1000/1000 injected | {}/{} injected, {} skipped, {} rejected, {} errors | {} |",
        r.workers,
        rep.injected,
        rep.replicas,
        rep.skipped,
        rep.rejected,
        rep.errors,
        yes(rep.injected == rep.replicas)
    )?;
    writeln!(
        w,
        "| … every admission below the 2 s deadline and far below the 10 s webhook timeout | slowest {} = {:.3} % of 10 s; {} over 2 s | {} |",
        us(rep.latency.max_ms),
        rep.webhook_timeout.max_fraction * 100.0,
        rep.policy_deadline.map(|d| d.exceeded).unwrap_or(0),
        yes(deadline && far)
    )?;
    writeln!(
        w,
        "| … throughput ≥ 1,000 admissions/s | {:.0} admissions/s | {} |",
        rep.throughput_per_s,
        yes(rep.throughput_per_s >= 1000.0)
    )
}

fn write_module_size(w: &mut String, m: &Measurements) -> fmt::Result {
    let Some(ours) = m.modules.get(OURS) else {
        return Ok(());
    };
    match m.modules.get(OURS_OZ) {
        Some(oz) => writeln!(
            w,
            "| module < 1 MiB after optimisation | {} after `wasm-opt -Oz` ({} bytes); {} before ({} bytes) | {} |",
            kib(oz.bytes),
            oz.bytes,
            kib(ours.bytes),
            ours.bytes,
            yes(oz.bytes < 1024 * 1024)
        ),
        None => writeln!(
            w,
            "| module < 1 MiB after optimisation | {} before optimisation; wasm-opt: {} | {} |",
            kib(ours.bytes),
            m.modules.opt_error.clone().unwrap_or_default(),
            yes(ours.bytes < 1024 * 1024)
        ),
    }
}

/// How long `make bench` took, when it said when it started.
fn write_duration(w: &mut String, m: &Measurements) -> fmt::Result {
    let Some(secs) = m.since_bench_started else {
        return Ok(());
    };
    writeln!(
        w,
        "| `make bench` regenerates this file in < 10 min | {} min {} s (builds included; this report's measurements {:.0} s) | {} |",
        secs / 60,
        secs % 60,
        m.measured.as_secs_f64(),
        yes(secs < 600)
    )
}
