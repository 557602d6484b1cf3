//! BENCHMARKS.md written from the measurements, one function per section, in the file's order.
//! Nothing here measures or reads a file: the static texts come in `Texts`.

mod admission;
mod calibration;
mod growth;
mod header;
mod memory;
mod modules;
mod native;
mod rollouts;
mod targets;

use std::fmt::{self, Write as _};

use crate::measure::Measurements;

pub use calibration::table as calibration_table;

/// What the report says about how it was made.
pub struct Run<'a> {
    /// The command that regenerates the report (`make bench`).
    pub command: &'a str,
    pub workers: usize,
}

/// The report's static parts, read by the caller.
pub struct Texts {
    /// benches/notes.md, appended at the end.
    pub notes: Option<String>,
    /// benches/policy-server.md, the figures the calibration row compares with.
    pub policy_server: Option<String>,
    /// benches/kubewarden/RESULTS.md, the last `make bench-kubewarden` run, after them.
    pub kubewarden: Option<String>,
}

pub fn write_report(run: &Run, m: &Measurements, texts: &Texts) -> String {
    let mut md = String::new();
    // writing to a String cannot fail
    let _ = write_sections(&mut md, run, m, texts);
    md
}

fn write_sections(w: &mut String, run: &Run, m: &Measurements, texts: &Texts) -> fmt::Result {
    header::write_header(w, run.command, &m.machine, &m.load_end)?;
    targets::write_targets(w, m)?;
    calibration::write_calibration(w, run.workers, &m.calibration, texts.policy_server.as_deref())?;
    if let Some(results) = &texts.kubewarden {
        w.push_str(&calibration::nested(results));
        w.push('\n');
    }
    admission::write_admissions(w, &m.admissions, m.oz.as_ref())?;
    admission::write_phases(w, &m.phases_ours, &m.phases_floor)?;
    growth::write_growth(w, &m.series)?;
    native::write_native(w, &m.cores, &m.admissions[0], &m.criterion)?;
    memory::write_memory(w, &m.memory)?;
    modules::write_modules(w, m)?;
    rollouts::write_rollouts(w, run.workers, m)?;
    if let Some(notes) = &texts.notes {
        writeln!(w, "{}", notes.trim_end())?;
    }
    Ok(())
}

/// The figures `--json` writes: the typical pod and the core's wasm/native ratio.
pub fn json_summary(m: &Measurements) -> serde_json::Value {
    let typ = &m.admissions[0];
    serde_json::json!({
        "typical": {
            "ours_p50_ms": typ.ours.p50_ms,
            "ours_p99_ms": typ.ours.p99_ms,
            "floor_p50_ms": typ.floor.p50_ms,
            "ratio_p50": typ.ratio_p50(),
        },
        "wasm_native": m.cores[0].wasm_over_native(),
    })
}
