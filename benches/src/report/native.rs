//! The section on the core natively and in wasm, with the criterion medians when they exist.

use std::fmt::{self, Write as _};

use crate::format::us;
use crate::measure::admission::PairResult;
use crate::measure::criterion::CriterionRow;
use crate::measure::native::CoreResult;

/// `cores[0]` and `typical` are the typical pod's.
pub fn write_native(
    w: &mut String,
    cores: &[CoreResult],
    typical: &PairResult,
    criterion: &[CriterionRow],
) -> fmt::Result {
    writeln!(w, "## The core natively and in wasm\n")?;
    writeln!(
        w,
        "`linkerd_injector_policy::wire::validate` called natively (host profile, cluster in a `MemoryCluster`) against the guest call `validate` of a fresh instance (instantiation not timed; lookups through the engine), on the engine's exact payload bytes; the floor's `validate` the same way. Interleaved.\n"
    )?;
    writeln!(
        w,
        "| request | n | native p50 | wasm p50 | wasm p99 | wasm/native p50 | floor native p50 | floor wasm p50 | floor wasm/native | same answer (JSON equal) |"
    )?;
    writeln!(w, "|---|---|---|---|---|---|---|---|---|---|")?;
    for c in cores {
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {:.2} | {} | {} | {:.2} | {} |",
            c.scenario.label,
            c.n,
            us(c.native.p50_ms),
            us(c.wasm.p50_ms),
            us(c.wasm.p99_ms),
            c.wasm_over_native(),
            us(c.floor_native.p50_ms),
            us(c.floor_wasm.p50_ms),
            c.floor_wasm.p50_ms / c.floor_native.p50_ms,
            if c.identical { "yes" } else { "no" }
        )?;
    }
    let core = &cores[0];
    writeln!(
        w,
        "\nFull admission through the engine / native core, typical pod: {:.2} (p50 {} / {}).\n",
        typical.ours.p50_ms / core.native.p50_ms,
        us(typical.ours.p50_ms),
        us(core.native.p50_ms)
    )?;
    write_criterion(w, criterion)
}

fn write_criterion(w: &mut String, rows: &[CriterionRow]) -> fmt::Result {
    if !rows.iter().any(|r| r.core.is_some() || r.floor.is_some()) {
        return Ok(());
    }
    writeln!(
        w,
        "Criterion medians (`cargo bench -p injector-benches --profile host --bench core`, same run of `make bench`, native):\n"
    )?;
    writeln!(w, "| request | core `wire::validate` | floor `validate` |")?;
    writeln!(w, "|---|---|---|")?;
    let fmt = |x: Option<f64>| x.map(us).unwrap_or_else(|| "–".into());
    for r in rows {
        writeln!(w, "| {} | {} | {} |", r.label, fmt(r.core), fmt(r.floor))?;
    }
    writeln!(w)
}
