//! The machine a run measured on: CPU, cores, load and compiler.

use std::process::Command;

/// The 1, 5 and 15 minute load averages.
pub fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let rustc = Command::new("rustc")
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    format!(
        "{cores} cores ({cpu}), load average at start {}; {rustc}",
        load_average()
    )
}

/// Seconds since `BENCH_STARTED` (set by `make bench`), the whole run's time.
pub fn since_bench_started() -> Option<u64> {
    let started = std::env::var("BENCH_STARTED").ok()?.parse::<u64>().ok()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(started);
    Some(now.saturating_sub(started))
}
