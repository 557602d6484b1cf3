//! The benchmarks' shared code (crate `injector-benches`): the requests and cluster state every
//! benchmark runs on, and the calibration row of the report. The benchmarks themselves are the
//! targets in `benches/benches/`; `make bench` (benches/bench.sh) runs them.

pub mod calibration;
pub mod world;

use std::path::Path;

/// The repository root, which every default path of the benchmarks is relative to (cargo runs a
/// bench binary in its package's directory, `benches/`).
pub fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}
