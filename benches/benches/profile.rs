//! A loop to run under callgrind (instruction counts are repeatable where wall time is not):
//!
//! ```text
//! cargo bench -p injector-benches --profile host --bench profile --no-run     # prints the binary's path
//! valgrind --tool=callgrind --toggle-collect='*measured*' BIN MODE SCENARIO N
//! ```
//! MODE: `native` (core `wire::validate`, cluster in memory), `native-floor`, `engine` /
//! `engine-floor` (a full admission through the engine: fresh instance, validate, diff),
//! `guest` / `guest-floor` (the `validate` guest call only; instantiation outside `measured`),
//! `instantiate` / `instantiate-floor`; `dump` prints the guest's answer (compare two builds);
//! `payload` / `objects` print the scenario's `validate` payload / cluster objects.
//! SCENARIO: typical, bare, skipped, service, containers20, env1500, pod64k, pod1m.
//! SETTINGS=<settings YAML> sends that document instead of empty settings. `perf`, `perf-epoch`:
//! fresh instances with wasmtime's perf map (`benches/callgrind-functions.sh`), `JITDUMP=1` a
//! jitdump file as well.
//! Divide the counted instructions by N. `benches/callgrind.sh` runs the usual set.

use std::hint::black_box;
use std::sync::Arc;

use injector_benches::world::{self, Scenario, World};
use kubewarden_engine::protocol::metadata::Metadata;
use kubewarden_engine::{Engine, EngineConfig, HostContext, Policy, PolicySettings};
use linkerd_injector_policy::cluster::MemoryCluster;

#[inline(never)]
fn measured_native(payload: &[u8], cluster: &MemoryCluster) -> Vec<u8> {
    linkerd_injector_policy::wire::validate(payload, cluster)
}

#[inline(never)]
fn measured_native_floor(payload: &[u8]) -> Vec<u8> {
    floor_policy::validate(payload).expect("floor")
}

#[inline(never)]
fn measured_engine(p: &Policy, host: &Arc<HostContext>, s: &Scenario, settings: &PolicySettings) {
    black_box(p.evaluate(host, &s.request, settings).expect("evaluate"));
}

#[inline(never)]
fn measured_guest(i: &kubewarden_engine::Instance, payload: &[u8]) -> Vec<u8> {
    i.call("validate", payload).expect("validate")
}

#[inline(never)]
fn measured_instantiate(p: &Policy, host: &Arc<HostContext>) -> kubewarden_engine::Instance {
    p.instantiate(host).expect("instantiate")
}

fn main() {
    std::env::set_current_dir(injector_benches::repo_root()).expect("the repository root");
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mode = args.first().map(String::as_str).unwrap_or("native");
    let id = args.get(1).map(String::as_str).unwrap_or("typical");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let policy_path = std::env::var("POLICY").unwrap_or_else(|_| "policy.wasm".into());
    let floor_path =
        std::env::var("FLOOR").unwrap_or_else(|_| "target/wasm32-wasip1/release/floor_policy.wasm".into());

    let mut world = World::new();
    let s = match id {
        "typical" => world.typical(),
        "bare" => world.bare(),
        "skipped" => world.skipped(),
        "service" => world.service(),
        "containers20" => world.containers20(),
        "env1500" => world.env("env1500", "1,500 env vars", 1500),
        "pod64k" => world.sized("pod64k", "64 KB pod", 64 * 1024),
        "pod1m" => world.sized("pod1m", "1 MB pod", 1024 * 1024),
        other => panic!("unknown scenario {other}"),
    };
    // SETTINGS=deploy/settings/defaults.yaml profiles with a shipped settings document
    let (settings, s) = match std::env::var("SETTINGS") {
        Ok(path) => {
            let text = std::fs::read_to_string(&path).expect("SETTINGS file");
            let doc: serde_json::Value = serde_yaml_ng::from_str(&text).expect("SETTINGS is YAML");
            let settings = PolicySettings::from_value(&doc).expect("SETTINGS is a mapping");
            let payload = world::payload(&s.request, &settings);
            (settings, Scenario { payload, ..s })
        }
        Err(_) => (world::settings(), s),
    };
    match mode {
        // the `validate` payload / the cluster objects, for tools outside this workspace
        "payload" => {
            use std::io::Write;
            std::io::stdout().write_all(&s.payload).expect("stdout");
        }
        "objects" => {
            println!("{}", serde_json::Value::Array(world.objects.clone()));
        }
        "native" => {
            for _ in 0..n {
                let cluster = MemoryCluster::new(world.objects.clone());
                black_box(measured_native(&s.payload, &cluster));
            }
        }
        "native-floor" => {
            for _ in 0..n {
                black_box(measured_native_floor(&s.payload));
            }
        }
        "perf" | "perf-floor" | "perf-epoch" | "pooling" | "pooling-floor" => {
            custom_engine(mode, &world, &s, n)
        }
        _ => {
            let engine = Engine::new(EngineConfig::default()).expect("engine");
            let floor = mode.ends_with("-floor");
            let path = if floor { &floor_path } else { &policy_path };
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let p = engine.load_policy(path, &bytes).expect("load");
            let md = Metadata::from_file("policy.yaml".as_ref()).expect("policy.yaml");
            let host = world.host("profile", md.context_aware_resources);
            // warm the lookup cache
            black_box(p.evaluate(&host, &s.request, &settings).expect("evaluate"));
            match mode.trim_end_matches("-floor") {
                "engine" => {
                    for _ in 0..n {
                        measured_engine(&p, &host, &s, &settings);
                    }
                }
                "guest" => {
                    for _ in 0..n {
                        let i = p.instantiate(&host).expect("instantiate");
                        black_box(measured_guest(&i, &s.payload));
                    }
                }
                "dump" => {
                    // the guest's answer, to check that a change keeps the output identical
                    let i = p.instantiate(&host).expect("instantiate");
                    let out = i.call("validate", &s.payload).expect("validate");
                    use std::io::Write;
                    std::io::stdout().write_all(&out).expect("stdout");
                }
                "instantiate" => {
                    for _ in 0..n {
                        black_box(measured_instantiate(&p, &host));
                    }
                }
                other => panic!("unknown mode {other}"),
            }
        }
    }
}

/// A wasmtime engine of our own (not `kubewarden_engine::Engine`), for what the host does not offer:
/// * `perf`: the JIT code registered in `/tmp/perf-PID.map`, so `perf record` / `perf report`
///   name the module's functions (build the module with `CARGO_PROFILE_RELEASE_STRIP=false`
///   to keep its name section); runs `validate` on fresh instances N times.
/// * `perf-epoch`: `perf` with epoch interruption on, as policy-server runs a module (a deadline
///   never reached): the code then checks the epoch at every function entry and loop head, so a
///   function's count shows what its loops cost there.
/// * `pooling`: instantiation and a full guest call with wasmtime's pooling allocator against
///   the default on-demand allocator, wall-clock, interleaved (a candidate engine setting).
fn custom_engine(mode: &str, world: &World, s: &Scenario, n: usize) {
    use wasmtime_provider::wasmtime;
    use wasmtime_provider::{EpochDeadlines, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};
    let floor = mode.ends_with("-floor");
    let path = if floor {
        std::env::var("FLOOR").unwrap_or_else(|_| "target/wasm32-wasip1/release/floor_policy.wasm".into())
    } else {
        std::env::var("POLICY").unwrap_or_else(|_| "policy.wasm".into())
    };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let md = Metadata::from_file("policy.yaml".as_ref()).expect("policy.yaml");
    let host = world.host("profile", md.context_aware_resources);
    let epoch = mode == "perf-epoch";
    let pre = |configure: &dyn Fn(&mut wasmtime::Config)| -> WasmtimeEngineProviderPre {
        let mut cfg = wasmtime::Config::default();
        configure(&mut cfg);
        cfg.epoch_interruption(epoch);
        let engine = wasmtime::Engine::new(&cfg).expect("engine");
        let module = wasmtime::Module::new(&engine, &bytes).expect("module");
        WasmtimeEngineProviderBuilder::new()
            .engine(engine)
            .module(module)
            .build_pre()
            .expect("pre")
    };
    // no ticker runs, so the epoch stays 0 and this deadline is never reached
    let deadlines = epoch.then_some(EpochDeadlines {
        wapc_init: 1 << 32,
        wapc_func: 1 << 32,
    });
    let instance = |p: &WasmtimeEngineProviderPre| {
        let provider = p.rehydrate(deadlines).expect("rehydrate");
        wapc::WapcHost::new(Box::new(provider), Some(host.callback())).expect("wapc host")
    };
    if mode.starts_with("perf") {
        let p = pre(&|c| {
            c.profiler(if std::env::var_os("JITDUMP").is_some() {
                wasmtime::ProfilingStrategy::JitDump
            } else {
                wasmtime::ProfilingStrategy::PerfMap
            });
        });
        for _ in 0..n {
            let h = instance(&p);
            black_box(h.call("validate", &s.payload).expect("validate"));
        }
        return;
    }
    let default = pre(&|_| {});
    let pooling = pre(&|c| {
        c.allocation_strategy(wasmtime::InstanceAllocationStrategy::pooling());
    });
    let (mut d_inst, mut p_inst, mut d_all, mut p_all) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        for which in if i % 2 == 0 { [0, 1] } else { [1, 0] } {
            let (p, inst, all) = if which == 0 {
                (&default, &mut d_inst, &mut d_all)
            } else {
                (&pooling, &mut p_inst, &mut p_all)
            };
            let t0 = std::time::Instant::now();
            let h = instance(p);
            let t1 = std::time::Instant::now();
            black_box(h.call("validate", &s.payload).expect("validate"));
            drop(h);
            inst.push(t1 - t0);
            all.push(t0.elapsed());
        }
    }
    let p50 = |v: &mut Vec<std::time::Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e6
    };
    println!(
        "{path}: instantiate p50 {:.0} µs (default) vs {:.0} µs (pooling); instantiate + validate + drop p50 {:.0} µs vs {:.0} µs",
        p50(&mut d_inst),
        p50(&mut p_inst),
        p50(&mut d_all),
        p50(&mut p_all)
    );
}
