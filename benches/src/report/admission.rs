//! The per-admission section: ours and the floor on every request, and where one admission's
//! time goes.

use std::fmt::{self, Write as _};
use std::time::Duration;

use injector_host::linkerd::rollout::LatencySummary;

use crate::format::{kib, us};
use crate::measure::admission::PairResult;
use crate::measure::phases::{PHASE_SAMPLES, Phases};

fn write_row(w: &mut String, r: &PairResult, label: &str) -> fmt::Result {
    writeln!(
        w,
        "| {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {} | {} |",
        label,
        kib(r.scenario.object_bytes),
        r.n,
        us(r.ours.p50_ms),
        us(r.ours.p99_ms),
        us(r.floor.p50_ms),
        us(r.floor.p99_ms),
        r.ratio_p50(),
        r.ours.p99_ms / r.floor.p99_ms,
        r.ours_result,
        r.floor_result
    )
}

pub fn write_admissions(w: &mut String, admissions: &[PairResult], oz: Option<&PairResult>) -> fmt::Result {
    writeln!(
        w,
        "## Per admission through the engine (fresh instance per request)\n"
    )?;
    writeln!(
        w,
        "| request | object | n | ours p50 | ours p99 | floor p50 | floor p99 | ours/floor p50 | ours/floor p99 | ours: result | floor: result |"
    )?;
    writeln!(w, "|---|---|---|---|---|---|---|---|---|---|---|")?;
    for r in admissions {
        write_row(w, r, &r.scenario.label)?;
    }
    if let Some(r) = oz {
        write_row(w, r, "typical pod, module after `wasm-opt -Oz`")?;
    }
    writeln!(w)
}

fn p50(d: &[Duration]) -> String {
    us(LatencySummary::from_durations(d).p50_ms)
}

pub fn write_phases(w: &mut String, ours: &Phases, floor: &Phases) -> fmt::Result {
    writeln!(
        w,
        "### Where one admission's time goes (typical pod, n = {PHASE_SAMPLES} each, p50)\n"
    )?;
    writeln!(w, "| step | ours | floor |")?;
    writeln!(w, "|---|---|---|")?;
    for (label, o, f) in [
        (
            "serialise `{request, settings}` (host)",
            &ours.payload,
            &floor.payload,
        ),
        (
            "instantiate (fresh instance, `wapc_init`)",
            &ours.instantiate,
            &floor.instantiate,
        ),
        ("guest `validate` (incl. host lookups)", &ours.guest, &floor.guest),
        (
            "response: parse, `json_patch::diff`, base64 (host)",
            &ours.response,
            &floor.response,
        ),
    ] {
        writeln!(w, "| {label} | {} | {} |", p50(o), p50(f))?;
    }
    writeln!(w)
}
