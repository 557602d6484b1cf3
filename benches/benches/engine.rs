//! The benchmark report: everything in BENCHMARKS.md, measured side by side in one run.
//!
//! * per admission through the engine (`Policy::evaluate`: fresh instance, `validate`, diff),
//!   the injector module and the floor module interleaved on the same requests;
//! * the same core called natively (`wire::validate`, cluster in memory) against the guest call
//!   `validate` of a fresh instance, interleaved, on the engine's exact payload bytes;
//! * where the time of one admission goes (payload, instantiation, guest, response);
//! * module sizes before and after `wasm-opt -Oz`, compile and instantiation times;
//! * rollouts through the `injector-host` binary (throughput, latency, lookups, peak memory).
//!
//! Run by `make bench` (benches/bench.sh):
//! `cargo bench -p injector-benches --profile host --bench engine -- --out BENCHMARKS.md`
//! Options (paths relative to the repository root): `--policy policy.wasm --floor FLOOR.wasm
//! --trivial TRIVIAL.wasm --shipped-settings deploy/settings/defaults.yaml
//! --host-bin target/host/injector-host --metadata policy.yaml --budget-ms 1200
//! --replicas 100,1000,10000 --workers 2 --criterion target/criterion --notes benches/notes.md
//! --policy-server benches/policy-server.md --command "make bench" [--json FILE] [--quick]`.
//!
//! The measurements are in `injector_benches::measure`, the writing of the report in
//! `injector_benches::report`.

use injector_benches::args::Args;
use injector_benches::measure::{self, rollout};
use injector_benches::report::{self, Run, Texts};

fn main() {
    std::env::set_current_dir(injector_benches::repo_root()).expect("the repository root");
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().map(String::as_str) == Some("__rollout") {
        rollout::rollout_cli(&raw[1..]);
    }
    let a = Args::parse(raw);
    if a.quick {
        injector_benches::quick::run(&a);
        return;
    }
    let m = measure::measure_all(&a);
    let texts = Texts {
        notes: std::fs::read_to_string(&a.notes).ok(),
        policy_server: std::fs::read_to_string(&a.policy_server).ok(),
        kubewarden: std::fs::read_to_string(&a.kubewarden).ok(),
    };
    let run = Run {
        command: &a.command,
        workers: a.workers,
    };
    let md = report::write_report(&run, &m, &texts);
    match &a.out {
        Some(p) => {
            std::fs::write(p, &md).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            eprintln!(
                "bench: wrote {} in {:.0} s",
                p.display(),
                m.measured.as_secs_f64()
            );
        }
        None => print!("{md}"),
    }
    if let Some(p) = &a.json {
        let j = report::json_summary(&m);
        let _ = std::fs::write(p, serde_json::to_vec_pretty(&j).unwrap_or_default());
    }
}
