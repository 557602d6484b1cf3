//! The calibration section: ours against a trivial mutating policy in the same engine, next to
//! the same policies measured in Kubewarden's policy-server.

use std::fmt::{self, Write as _};

use crate::measure::calibration::{ADMISSIONS, REFERENCE, ROUNDS, Row};

/// The markdown table; the `/ trivial` column divides by the reference row's median.
pub fn table(rows: &[Row]) -> String {
    let base = rows
        .iter()
        .find(|r| r.name == REFERENCE)
        .map(Row::median)
        .unwrap_or(f64::NAN);
    let mut md = String::new();
    md.push_str(
        "| policy | admissions/s per round | median | / trivial | host calls per admission | outcome |\n",
    );
    md.push_str("|---|---|---|---|---|---|\n");
    for r in rows {
        let rounds: Vec<String> = r.per_s.iter().map(|v| format!("{v:.0}")).collect();
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {:.2} | {} | {} |",
            r.name,
            rounds.join(", "),
            r.median(),
            r.median() / base,
            r.host_calls,
            r.result
        );
    }
    md
}

pub fn write_calibration(
    w: &mut String,
    workers: usize,
    rows: &[Row],
    policy_server: Option<&str>,
) -> fmt::Result {
    writeln!(
        w,
        "## Calibration: ours against a trivial mutating policy in the same engine\n"
    )?;
    writeln!(
        w,
        "The typical pod, {ADMISSIONS} admissions per round on {workers} worker threads sharing one host, {ROUNDS} interleaved rounds, every policy in the same run. Host calls take policy-server's path (a callback thread reached over a channel; every cached answer cloned, masked and serialised per call). The trivial policy is `benches/trivial-policy` (SDK types, adds one label; with `lookup: true` one cached Namespace `get_resource` first, and with `listConfigMaps: linkerd` also the list of the control plane's ConfigMaps: the injected pod's two host calls around a trivial policy's work, the most any policy making them can reach). Compare the `/ trivial` column with the same ratios measured in Kubewarden's policy-server (below, from `benches/policy-server.md`).\n"
    )?;
    w.push_str(&table(rows));
    writeln!(w, "\n### The same policies in Kubewarden's policy-server\n")?;
    w.push_str(
        policy_server
            .unwrap_or("(benches/policy-server.md is missing: no policy-server figures to compare with)\n"),
    );
    w.push('\n');
    Ok(())
}

/// A Markdown document one heading level deeper, to sit under this section's headings (lines in
/// fenced code blocks are left as they are).
pub fn nested(markdown: &str) -> String {
    let mut fenced = false;
    let mut out = String::with_capacity(markdown.len() + 64);
    for line in markdown.lines() {
        fenced ^= line.starts_with("```");
        if !fenced && line.starts_with('#') {
            out.push('#');
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
