//! The "Modules" section: sizes, compile and instantiation times.

use std::fmt::{self, Write as _};

use crate::format::{kib, us};
use crate::measure::Measurements;
use crate::measure::modules::WASM_OPT_FLAGS;

pub fn write_modules(w: &mut String, m: &Measurements) -> fmt::Result {
    writeln!(w, "## Modules\n")?;
    writeln!(
        w,
        "wasm-opt: `wasm-opt {}` ({}).\n",
        WASM_OPT_FLAGS.join(" "),
        m.modules.opt_version
    )?;
    writeln!(
        w,
        "| module | size | compile (once) | instantiate p50 | instantiate p99 |"
    )?;
    writeln!(w, "|---|---|---|---|---|")?;
    for module in &m.modules.list {
        let compile = m.compile_ms.get(module.name).copied().unwrap_or(f64::NAN);
        let (p50, p99) = m
            .instantiate
            .get(module.name)
            .map(|s| (s.p50_ms, s.p99_ms))
            .unwrap_or((f64::NAN, f64::NAN));
        writeln!(
            w,
            "| {} | {} ({} bytes) | {} | {} | {} |",
            module.name,
            kib(module.bytes),
            module.bytes,
            us(compile),
            us(p50),
            us(p99)
        )?;
    }
    if let Some(err) = &m.modules.opt_error {
        writeln!(w, "\nwasm-opt: {err}")?;
    }
    writeln!(w)
}
