//! The "Growth with pod size" section: the size series, ours and the floor, and their fits.

use std::fmt::{self, Write as _};

use crate::format::{kib, us};
use crate::measure::admission::PairResult;
use crate::stats::{Fit, fit};

fn kib_of(r: &PairResult) -> f64 {
    r.scenario.object_bytes as f64 / 1024.0
}

fn fit_of(series: &[PairResult], p50: impl Fn(&PairResult) -> f64) -> Fit {
    let pts: Vec<(f64, f64)> = series.iter().map(|r| (kib_of(r), p50(r))).collect();
    fit(&pts)
}

pub fn write_growth(w: &mut String, series: &[PairResult]) -> fmt::Result {
    writeln!(w, "## Growth with pod size\n")?;
    writeln!(
        w,
        "A Deployment pod grown with env vars (~70 bytes each) to the given size; ours and the floor interleaved.\n"
    )?;
    writeln!(
        w,
        "| object | n | ours p50 | ours p99 | ours µs/KiB | floor p50 | floor µs/KiB | ours/floor p50 |"
    )?;
    writeln!(w, "|---|---|---|---|---|---|---|---|")?;
    for r in series {
        let k = kib_of(r);
        writeln!(
            w,
            "| {} | {} | {} | {} | {:.1} | {} | {:.1} | {:.2} |",
            kib(r.scenario.object_bytes),
            r.n,
            us(r.ours.p50_ms),
            us(r.ours.p99_ms),
            r.ours.p50_ms * 1e3 / k,
            us(r.floor.p50_ms),
            r.floor.p50_ms * 1e3 / k,
            r.ratio_p50()
        )?;
    }
    let ours = fit_of(series, |r| r.ours.p50_ms);
    let floor = fit_of(series, |r| r.floor.p50_ms);
    writeln!(
        w,
        "\nLeast squares over the series: ours p50 ≈ {} + {:.2} µs/KiB (R² = {:.4}); floor ≈ {} + {:.2} µs/KiB (R² = {:.4}).\n",
        us(ours.intercept.max(0.0)),
        ours.slope * 1e3,
        ours.r2,
        us(floor.intercept.max(0.0)),
        floor.slope * 1e3,
        floor.r2
    )
}
