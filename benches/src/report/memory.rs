//! The "Peak linear memory of one admission" section.

use std::fmt::{self, Write as _};

use crate::format::kib;
use crate::measure::memory::PeakMemory;

pub fn write_memory(w: &mut String, rows: &[PeakMemory]) -> fmt::Result {
    writeln!(w, "## Peak linear memory of one admission\n")?;
    writeln!(
        w,
        "The smallest memory cap (`EngineConfig::max_memory`, in 64 KiB wasm pages) under which the admission still gets its uncapped answer; linear memory only grows, so this is the instance's peak, initial memory (data and the 1 MiB stack) included. Found by bisection (`kubewarden_engine::runtime::memory::peak_linear_memory`); deterministic, not a timing.\n"
    )?;
    writeln!(
        w,
        "| request | object | ours | ours / object | floor | ours / floor |"
    )?;
    writeln!(w, "|---|---|---|---|---|---|")?;
    for p in rows {
        let s = &p.scenario;
        writeln!(
            w,
            "| {} | {} | {} | {:.1} | {} | {:.2} |",
            s.label,
            kib(s.object_bytes),
            kib(p.ours),
            p.ours as f64 / s.object_bytes as f64,
            kib(p.floor),
            p.ours as f64 / p.floor as f64
        )?;
    }
    writeln!(w)
}
