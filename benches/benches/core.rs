//! Criterion: the policy core called natively (no wasm), `wire::validate` on the engine's exact
//! payload bytes, with the cluster in memory; and the floor policy's `validate`, natively.
//!
//! `cargo bench -p injector-benches --profile host --bench core` (the `host` profile: opt-level 3, like the engine).
//! `make bench` runs it briefly and BENCHMARKS.md quotes the medians next to the side-by-side
//! numbers of the `engine` bench.

use criterion::{Criterion, criterion_group, criterion_main};
use injector_benches::world::World;
use linkerd_injector_policy::cluster::MemoryCluster;
use std::hint::black_box;

fn native(c: &mut Criterion) {
    let mut world = World::new();
    let scenarios = vec![
        world.typical(),
        world.bare(),
        world.skipped(),
        world.service(),
        world.containers20(),
        world.env("env1500", "1,500 env vars", 1500),
        world.sized("pod64k", "64 KB pod", 64 * 1024),
    ];
    let objects = world.objects.clone();
    let mut group = c.benchmark_group("native");
    for s in &scenarios {
        group.bench_function(format!("core/{}", s.id), |b| {
            // `_ref`: the cluster (which holds every scenario's objects) is built and dropped
            // outside the timed routine.
            b.iter_batched_ref(
                || MemoryCluster::new(objects.clone()),
                |cluster| {
                    black_box(linkerd_injector_policy::wire::validate(
                        black_box(&s.payload),
                        cluster,
                    ))
                },
                criterion::BatchSize::SmallInput,
            )
        });
        group.bench_function(format!("floor/{}", s.id), |b| {
            b.iter(|| black_box(floor_policy::validate(black_box(&s.payload))))
        });
    }
    group.finish();
}

criterion_group!(benches, native);
criterion_main!(benches);
