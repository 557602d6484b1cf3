//! The benchmarks' code (crate `injector-benches`): the requests and cluster state every
//! benchmark runs on (`world`), and the report of the `engine` bench, measured (`measure`) and
//! then written as BENCHMARKS.md (`report`). The bench targets are in `benches/benches/`;
//! `make bench` (benches/bench.sh) runs them.

pub mod args;
pub mod format;
pub mod measure;
pub mod quick;
pub mod report;
pub mod stats;
pub mod world;

use std::path::Path;

/// The repository root, which every default path of the benchmarks is relative to (cargo runs a
/// bench binary in its package's directory, `benches/`).
pub fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}
