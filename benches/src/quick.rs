//! `--quick`: the calibration row, the first four scenarios, the core on the typical pod and the
//! requested rollouts, printed instead of a report, for comparing two builds quickly.

use crate::args::Args;
use crate::measure::Setup;
use crate::measure::admission::measure_pair;
use crate::measure::native::measure_core;
use crate::measure::rollout::run_rollout;

pub fn run(a: &Args) {
    let s = Setup::new(a);
    s.calibrate(a);
    for sc in &s.scenarios[..4] {
        let r = measure_pair(&s.engines, sc, a.budget, 25, 4000);
        println!(
            "{:<10} n={:<5} ours p50 {:.3} ms p99 {:.3} ms | floor p50 {:.3} ms p99 {:.3} ms | ours/floor p50 {:.2}",
            sc.id,
            r.n,
            r.ours.p50_ms,
            r.ours.p99_ms,
            r.floor.p50_ms,
            r.floor.p99_ms,
            r.ratio_p50()
        );
    }
    let c = measure_core(&s.engines, &s.world.objects, s.typical(), a.budget);
    println!(
        "core typical: native p50 {:.3} ms, wasm p50 {:.3} ms, wasm/native {:.2}, same output {}",
        c.native.p50_ms,
        c.wasm.p50_ms,
        c.wasm_over_native(),
        c.identical
    );
    for &n in &a.replicas {
        let r = run_rollout(a, "ours", &a.policy, n, a.workers);
        match (&r.report, &r.error) {
            (Some(rep), _) => println!(
                "rollout {n} x{}: {}/{} injected, {:.0}/s, p99 {:.2} ms, max {:.2} ms, peak RSS {:.1} MiB",
                a.workers,
                rep.injected,
                rep.replicas,
                rep.throughput_per_s,
                rep.latency.p99_ms,
                rep.latency.max_ms,
                r.max_rss_kib as f64 / 1024.0
            ),
            (None, err) => println!("rollout {n}: {err:?}"),
        }
    }
}
