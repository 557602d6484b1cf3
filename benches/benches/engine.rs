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
//! `cargo bench --profile host --bench engine -- --out BENCHMARKS.md`
//! Options: `--policy policy.wasm --floor FLOOR.wasm --trivial TRIVIAL.wasm --shipped-settings deploy/settings/defaults.yaml --host-bin target/host/injector-host
//! --metadata policy.yaml --budget-ms 1200 --replicas 100,1000,10000 --workers 2
//! --criterion target/criterion --notes benches/notes.md --command "make bench"`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use injector_benches::calibration::{self, Candidate};
use injector_benches::world::{self, Scenario, World};
use injector_host::metadata::PolicyMetadata;
use injector_host::rollout::{LatencySummary, Outcome as PodOutcome, RolloutReport, classify};
use injector_host::{
    AdmissionResponse, Engine, EngineConfig, HostContext, Policy, Settings, ValidationResponse,
};
use linkerd_injector_policy::cluster::MemoryCluster;

const WASM_OPT_FLAGS: &[&str] = &[
    "-Oz",
    "--enable-bulk-memory",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
];

struct Args {
    policy: PathBuf,
    floor: PathBuf,
    trivial: PathBuf,
    shipped_settings: PathBuf,
    host_bin: PathBuf,
    metadata: PathBuf,
    out: Option<PathBuf>,
    json: Option<PathBuf>,
    budget: Duration,
    replicas: Vec<usize>,
    workers: usize,
    criterion: PathBuf,
    notes: PathBuf,
    command: String,
    /// Only the typical pod, the skipped pod, the Service, the core on the typical pod and one
    /// rollout, printed (no report): for comparing builds quickly.
    quick: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        policy: "policy.wasm".into(),
        floor: "target/wasm32-wasip1/release/floor_policy.wasm".into(),
        trivial: "target/wasm32-wasip1/release/trivial_policy.wasm".into(),
        shipped_settings: "deploy/settings/defaults.yaml".into(),
        host_bin: "target/host/injector-host".into(),
        metadata: "policy.yaml".into(),
        out: None,
        json: None,
        budget: Duration::from_millis(1200),
        replicas: vec![100, 1000, 10000],
        workers: 2,
        criterion: "target/criterion".into(),
        notes: "benches/notes.md".into(),
        command: "make bench".into(),
        quick: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--bench" => {}
            "--policy" => a.policy = val().into(),
            "--floor" => a.floor = val().into(),
            "--trivial" => a.trivial = val().into(),
            "--shipped-settings" => a.shipped_settings = val().into(),
            "--host-bin" => a.host_bin = val().into(),
            "--metadata" => a.metadata = val().into(),
            "--out" => a.out = Some(val().into()),
            "--json" => a.json = Some(val().into()),
            "--budget-ms" => a.budget = Duration::from_millis(val().parse().expect("--budget-ms")),
            "--replicas" => {
                a.replicas = val()
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse().expect("--replicas"))
                    .collect()
            }
            "--workers" => a.workers = val().parse().expect("--workers"),
            "--criterion" => a.criterion = val().into(),
            "--notes" => a.notes = val().into(),
            "--command" => a.command = val(),
            "--quick" => a.quick = true,
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

// ---------------------------------------------------------------------------------------------
// small helpers

fn us(d: f64) -> String {
    // d in milliseconds
    if d >= 10.0 {
        format!("{d:.1} ms")
    } else if d >= 1.0 {
        format!("{d:.2} ms")
    } else {
        format!("{:.0} µs", d * 1e3)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn kib(bytes: usize) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.2} MiB", bytes as f64 / 1024.0 / 1024.0)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

fn summary(d: &[Duration]) -> LatencySummary {
    LatencySummary::from_durations(d)
}

fn yes(ok: bool) -> &'static str {
    if ok { "**met**" } else { "**MISSED**" }
}

/// Iteration count for a time budget, from a first estimate of one iteration.
fn iterations(budget: Duration, one: Duration, min: usize, max: usize) -> usize {
    let one = one.max(Duration::from_micros(1));
    ((budget.as_secs_f64() / one.as_secs_f64()) as usize).clamp(min, max)
}

// ---------------------------------------------------------------------------------------------
// engine measurements

struct Engines {
    ours: Policy,
    floor: Policy,
    host: Arc<HostContext>,
    settings: Settings,
}

fn evaluate(
    p: &Policy,
    host: &Arc<HostContext>,
    s: &Scenario,
    settings: &Settings,
) -> (Duration, AdmissionResponse) {
    let t0 = Instant::now();
    let r = p.evaluate(host, &s.request, settings).expect("evaluate");
    (t0.elapsed(), r)
}

fn describe(s: &Scenario, r: &AdmissionResponse) -> String {
    if !r.allowed {
        return format!("rejected: {}", r.message());
    }
    let pod = s.request.object.clone().unwrap_or_default();
    if s.request.kind.kind == "Pod" {
        match classify(&pod, r) {
            PodOutcome::Injected => "injected".into(),
            PodOutcome::Skipped if r.patch.is_some() => "skipped (annotated)".into(),
            PodOutcome::Skipped => "unchanged".into(),
            PodOutcome::Rejected(m) | PodOutcome::Error(m) => format!("error: {m}"),
        }
    } else if r.patch.is_some() {
        "annotated".into()
    } else {
        "unchanged".into()
    }
}

struct PairResult {
    scenario: Scenario,
    n: usize,
    ours: LatencySummary,
    floor: LatencySummary,
    ours_result: String,
    floor_result: String,
}

impl PairResult {
    fn ratio_p50(&self) -> f64 {
        self.ours.p50_ms / self.floor.p50_ms
    }
}

/// Ours and the floor on the same request, interleaved (alternating which goes first); at least
/// `min` samples of each, whatever the budget.
fn pair(e: &Engines, s: &Scenario, budget: Duration, min: usize, max: usize) -> PairResult {
    let (_, ro) = evaluate(&e.ours, &e.host, s, &e.settings);
    let (_, rf) = evaluate(&e.floor, &e.host, s, &e.settings);
    let mut est = Duration::ZERO;
    for _ in 0..3 {
        est += evaluate(&e.ours, &e.host, s, &e.settings).0;
        est += evaluate(&e.floor, &e.host, s, &e.settings).0;
    }
    let n = iterations(budget, est / 3, min, max);
    let (mut o, mut f) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        if i % 2 == 0 {
            o.push(evaluate(&e.ours, &e.host, s, &e.settings).0);
            f.push(evaluate(&e.floor, &e.host, s, &e.settings).0);
        } else {
            f.push(evaluate(&e.floor, &e.host, s, &e.settings).0);
            o.push(evaluate(&e.ours, &e.host, s, &e.settings).0);
        }
    }
    PairResult {
        scenario: s.clone(),
        n,
        ours: summary(&o),
        floor: summary(&f),
        ours_result: describe(s, &ro),
        floor_result: describe(s, &rf),
    }
}

/// The guest call alone (fresh instance made outside the timing).
fn guest_call(p: &Policy, host: &Arc<HostContext>, payload: &[u8]) -> (Duration, Vec<u8>) {
    let instance = p.instantiate(host).expect("instantiate");
    let t0 = Instant::now();
    let out = instance.call("validate", payload).expect("validate");
    (t0.elapsed(), out)
}

fn native_call(objects: &[serde_json::Value], payload: &[u8]) -> (Duration, Vec<u8>) {
    let cluster = MemoryCluster::new(objects.to_vec());
    let t0 = Instant::now();
    let out = linkerd_injector_policy::wire::validate(payload, &cluster);
    (t0.elapsed(), out)
}

fn floor_native(payload: &[u8]) -> Duration {
    let t0 = Instant::now();
    let out = floor_policy::validate(payload).expect("floor");
    let d = t0.elapsed();
    std::hint::black_box(out);
    d
}

struct CoreResult {
    scenario: Scenario,
    n: usize,
    native: LatencySummary,
    wasm: LatencySummary,
    floor_native: LatencySummary,
    floor_wasm: LatencySummary,
    identical: bool,
}

fn core(e: &Engines, objects: &[serde_json::Value], s: &Scenario, budget: Duration) -> CoreResult {
    let (_, native_out) = native_call(objects, &s.payload);
    let (_, wasm_out) = guest_call(&e.ours, &e.host, &s.payload);
    let identical = native_out == wasm_out;
    let mut est = Duration::ZERO;
    for _ in 0..3 {
        est += native_call(objects, &s.payload).0 + guest_call(&e.ours, &e.host, &s.payload).0;
        est += floor_native(&s.payload) + guest_call(&e.floor, &e.host, &s.payload).0;
    }
    let n = iterations(budget, est / 3, 25, 3000);
    let (mut nat, mut wasm, mut fnat, mut fwasm) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        if i % 2 == 0 {
            nat.push(native_call(objects, &s.payload).0);
            wasm.push(guest_call(&e.ours, &e.host, &s.payload).0);
            fnat.push(floor_native(&s.payload));
            fwasm.push(guest_call(&e.floor, &e.host, &s.payload).0);
        } else {
            fwasm.push(guest_call(&e.floor, &e.host, &s.payload).0);
            fnat.push(floor_native(&s.payload));
            wasm.push(guest_call(&e.ours, &e.host, &s.payload).0);
            nat.push(native_call(objects, &s.payload).0);
        }
    }
    CoreResult {
        scenario: s.clone(),
        n,
        native: summary(&nat),
        wasm: summary(&wasm),
        floor_native: summary(&fnat),
        floor_wasm: summary(&fwasm),
        identical,
    }
}

/// One admission split in the engine's steps (as `Instance::validate` does them).
#[derive(Default)]
struct Phases {
    payload: Vec<Duration>,
    instantiate: Vec<Duration>,
    guest: Vec<Duration>,
    response: Vec<Duration>,
}

fn phases_once(p: &Policy, e: &Engines, s: &Scenario, ph: &mut Phases) {
    let t0 = Instant::now();
    let payload = serde_json::to_vec(&serde_json::json!({"request": &s.request, "settings": &e.settings}))
        .expect("payload");
    let t1 = Instant::now();
    let instance = p.instantiate(&e.host).expect("instantiate");
    let t2 = Instant::now();
    let out = instance.call("validate", &payload).expect("validate");
    let t3 = Instant::now();
    let resp: ValidationResponse = serde_json::from_slice(&out).expect("response");
    let r = AdmissionResponse::from_validation_response(&s.request.uid, s.request.object.as_ref(), &resp)
        .expect("admission response");
    let t4 = Instant::now();
    std::hint::black_box(r);
    drop(instance);
    ph.payload.push(t1 - t0);
    ph.instantiate.push(t2 - t1);
    ph.guest.push(t3 - t2);
    ph.response.push(t4 - t3);
}

fn phases(e: &Engines, s: &Scenario, n: usize) -> (Phases, Phases) {
    let (mut o, mut f) = (Phases::default(), Phases::default());
    for i in 0..n {
        if i % 2 == 0 {
            phases_once(&e.ours, e, s, &mut o);
            phases_once(&e.floor, e, s, &mut f);
        } else {
            phases_once(&e.floor, e, s, &mut f);
            phases_once(&e.ours, e, s, &mut o);
        }
    }
    (o, f)
}

// ---------------------------------------------------------------------------------------------
// modules

struct Module {
    name: &'static str,
    path: PathBuf,
    bytes: usize,
}

fn wasm_opt(input: &Path, output: &Path) -> Result<(), String> {
    let status = Command::new("wasm-opt")
        .args(WASM_OPT_FLAGS)
        .arg(input)
        .arg("-o")
        .arg(output)
        .status()
        .map_err(|e| format!("wasm-opt not available ({e}); `apt-get install -y binaryen`"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("wasm-opt failed: {status}"))
    }
}

fn wasm_opt_version() -> String {
    Command::new("wasm-opt")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "not installed".into())
}

// ---------------------------------------------------------------------------------------------
// rollouts (subprocess, for the engine's own peak memory)

struct Rollout {
    replicas: usize,
    workers: usize,
    module: &'static str,
    report: Option<RolloutReport>,
    max_rss_kib: i64,
    error: Option<String>,
}

/// `__rollout ARGS...`: this binary acting as `injector-host rollout ARGS...` (same library
/// code as the binary's `main`), used when the `injector-host` binary has not been built.
fn rollout_cli(args: &[String]) -> ! {
    use clap::Parser;
    let cli = injector_host::cli::Cli::parse_from(
        std::iter::once("injector-host".to_owned()).chain(args.iter().cloned()),
    );
    match injector_host::cli::execute(&cli) {
        Ok(out) => {
            println!("{}", out.stdout.trim_end());
            std::process::exit(i32::from(out.failure.is_some()))
        }
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::exit(1)
        }
    }
}

fn rollout(a: &Args, module_name: &'static str, module: &Path, replicas: usize, workers: usize) -> Rollout {
    let mut cmd = if a.host_bin.exists() {
        Command::new(&a.host_bin)
    } else {
        let mut c = Command::new(std::env::current_exe().expect("current exe"));
        c.arg("__rollout");
        c
    };
    cmd.args([
        "rollout",
        "--replicas",
        &replicas.to_string(),
        "--workers",
        &workers.to_string(),
    ])
    .args(["--json", "--quiet-policy-logs", "--metadata-path"])
    .arg(&a.metadata)
    .arg(module)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut out = Rollout {
        replicas,
        workers,
        module: module_name,
        report: None,
        max_rss_kib: 0,
        error: None,
    };
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(format!("cannot run the engine: {e}"));
            return out;
        }
    };
    // read stdout/stderr on threads, reap with wait4 for the child's own peak RSS
    let pid = child.id() as libc::pid_t;
    let mut child = child;
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let th_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut so, &mut s);
        s
    });
    let th_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut se, &mut s);
        s
    });
    let mut status: libc::c_int = 0;
    // SAFETY: plain wait4 on our own child; rusage is a POD struct filled by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let stdout = th_out.join().unwrap_or_default();
    let stderr = th_err.join().unwrap_or_default();
    if rc != pid {
        out.error = Some("wait4 failed".into());
        return out;
    }
    out.max_rss_kib = usage.ru_maxrss;
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        out.error = Some(format!("exit status {status}: {}", stderr.trim()));
        return out;
    }
    match serde_json::from_str::<RolloutReport>(&stdout) {
        Ok(r) => out.report = Some(r),
        Err(e) => out.error = Some(format!("cannot read the report: {e}")),
    }
    drop(child); // already reaped by wait4 (dropping a Child neither waits nor kills)
    out
}

// ---------------------------------------------------------------------------------------------
// criterion medians (from `cargo bench --bench core`, if it ran)

fn criterion_median_ms(dir: &Path, id: &str) -> Option<f64> {
    let path = dir
        .join("native")
        .join(id.replace('/', "_"))
        .join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    v.pointer("/median/point_estimate")?.as_f64().map(|ns| ns / 1e6)
}

// ---------------------------------------------------------------------------------------------
// linear fit of the size series

fn fit(points: &[(f64, f64)]) -> (f64, f64, f64) {
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_tot: f64 = points.iter().map(|(_, y)| (y - my).powi(2)).sum();
    let ss_res: f64 = points
        .iter()
        .map(|(x, y)| (y - (intercept + slope * x)).powi(2))
        .sum();
    (intercept, slope, 1.0 - ss_res / ss_tot)
}

fn machine() -> String {
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
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let rustc = Command::new("rustc")
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    format!(
        "{cores} cores ({cpu}), load average at start {}; {rustc}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    )
}

/// The shipped settings file (`deploy/settings/*.yaml`, YAML) as settings.
fn shipped_settings(path: &Path) -> Settings {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: serde_json::Value =
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Settings::from_value(&value).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The calibration candidates, measured on the typical pod in one run (see benches/calibration).
fn calibrate(
    a: &Args,
    engine: &Engine,
    e: &Engines,
    world: &World,
    typical: &Scenario,
    md: &PolicyMetadata,
) -> Vec<calibration::Row> {
    let trivial_bytes = std::fs::read(&a.trivial)
        .unwrap_or_else(|err| panic!("{}: {err} (make trivial-policy builds it)", a.trivial.display()));
    let trivial = engine
        .load_policy("trivial", &trivial_bytes)
        .expect("trivial policy");
    let with_lookup = Settings::from_value(&serde_json::json!({"lookup": true})).expect("settings");
    let shipped = a.shipped_settings.display().to_string();
    let candidates = [
        Candidate {
            name: "trivial mutating policy".into(),
            policy: trivial.clone(),
            settings: Settings::default(),
        },
        Candidate {
            name: "trivial + 1 cached Namespace lookup".into(),
            policy: trivial,
            settings: with_lookup,
        },
        Candidate {
            name: "ours, empty settings".into(),
            policy: e.ours.clone(),
            settings: e.settings.clone(),
        },
        Candidate {
            name: format!("ours, `{shipped}`"),
            policy: e.ours.clone(),
            settings: shipped_settings(&a.shipped_settings),
        },
        Candidate {
            name: "floor (echo)".into(),
            policy: e.floor.clone(),
            settings: Settings::default(),
        },
    ];
    let host = world.host("calibration", md.context_aware_resources.clone());
    calibration::measure(&candidates, &host, typical, a.workers, 2000, 3)
}

fn write_calibration(w: &mut String, a: &Args, table: &str) {
    let _ = writeln!(
        w,
        "## Calibration: ours against a trivial mutating policy in the same engine\n"
    );
    let _ = writeln!(
        w,
        "The typical pod, {} admissions per round on {} worker threads sharing one host, 3 interleaved rounds, every policy in the same run. Host calls take policy-server's path (a callback thread reached over a channel; every cached answer cloned, masked and serialised per call). The trivial policy is `benches/trivial-policy` (SDK types, adds one label; with `lookup: true` one cached Namespace `get_resource` first). Compare the `/ trivial` column with the same ratios measured in Kubewarden's policy-server (below, from `benches/policy-server.md`).\n",
        2000, a.workers
    );
    w.push_str(table);
    let reference = std::fs::read_to_string("benches/policy-server.md").unwrap_or_else(|_| {
        "(benches/policy-server.md is missing: no policy-server figures to compare with)\n".into()
    });
    let _ = writeln!(w, "\n### The same policies in Kubewarden's policy-server\n");
    w.push_str(&reference);
    w.push('\n');
}

fn main() {
    std::env::set_current_dir(injector_benches::repo_root()).expect("the repository root");
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().map(String::as_str) == Some("__rollout") {
        rollout_cli(&raw[1..]);
    }
    let a = parse_args();
    let started = Instant::now();
    let target_dir = PathBuf::from("target/bench");
    std::fs::create_dir_all(&target_dir).expect("target/bench");
    let machine = machine();
    eprintln!("bench: {machine}");

    // ---- modules and sizes
    let opt_version = wasm_opt_version();
    let ours_oz = target_dir.join("policy.Oz.wasm");
    let floor_oz = target_dir.join("floor.Oz.wasm");
    let opt_ours = wasm_opt(&a.policy, &ours_oz);
    let opt_floor = wasm_opt(&a.floor, &floor_oz);
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len() as usize).unwrap_or(0);
    let mut modules = vec![
        Module {
            name: "policy.wasm (ours)",
            path: a.policy.clone(),
            bytes: size(&a.policy),
        },
        Module {
            name: "floor",
            path: a.floor.clone(),
            bytes: size(&a.floor),
        },
    ];
    if opt_ours.is_ok() {
        modules.push(Module {
            name: "policy.wasm (ours), wasm-opt -Oz",
            path: ours_oz.clone(),
            bytes: size(&ours_oz),
        });
    }
    if opt_floor.is_ok() {
        modules.push(Module {
            name: "floor, wasm-opt -Oz",
            path: floor_oz.clone(),
            bytes: size(&floor_oz),
        });
    }

    // ---- engine (policy-server's defaults: 2 s deadline, epoch interruption on)
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let mut compile_ms = BTreeMap::new();
    let mut policies = BTreeMap::new();
    for m in &modules {
        let bytes = std::fs::read(&m.path).unwrap_or_else(|e| panic!("{}: {e}", m.path.display()));
        let t0 = Instant::now();
        let p = engine.load_policy(m.name, &bytes).expect("load policy");
        compile_ms.insert(m.name, ms(t0.elapsed()));
        policies.insert(m.name, p);
    }
    let md = PolicyMetadata::from_file(&a.metadata).expect("policy metadata");
    let mut world = World::new();
    let typical = world.typical();
    let scenarios = [
        typical.clone(),
        world.bare(),
        world.skipped(),
        world.service(),
        world.containers20(),
        world.env("env1500", "1,500 env vars", 1500),
        world.sized("pod64k", "64 KB pod", 64 * 1024),
        world.sized("pod1m", "1 MB pod", 1024 * 1024),
    ];
    let series: Vec<Scenario> = [4usize, 16, 64, 256, 1024]
        .iter()
        .map(|k| world.sized(&format!("series{k}k"), &format!("{k} KB"), k * 1024))
        .collect();
    let host = world.host("bench", md.context_aware_resources.clone());
    let e = Engines {
        ours: policies["policy.wasm (ours)"].clone(),
        floor: policies["floor"].clone(),
        host: host.clone(),
        settings: world::settings(),
    };
    for (name, p) in [("ours", &e.ours), ("floor", &e.floor)] {
        let mut i = p.instantiate(&host).expect("instantiate");
        let v = i.validate_settings(&e.settings);
        assert!(v.valid, "{name}: settings not valid: {:?}", v.message);
    }

    // ---- calibration: trivial, trivial + lookup, ours (empty and shipped settings), floor
    eprintln!(
        "bench: calibration (throughput through the engine, {} workers)",
        a.workers
    );
    let calibration_rows = calibrate(&a, &engine, &e, &world, &typical, &md);
    let calibration_md = calibration::table(&calibration_rows, "trivial mutating policy");
    eprint!("{calibration_md}");

    if a.quick {
        for s in &scenarios[..4] {
            let r = pair(&e, s, a.budget, 25, 4000);
            println!(
                "{:<10} n={:<5} ours p50 {:.3} ms p99 {:.3} ms | floor p50 {:.3} ms p99 {:.3} ms | ours/floor p50 {:.2}",
                s.id,
                r.n,
                r.ours.p50_ms,
                r.ours.p99_ms,
                r.floor.p50_ms,
                r.floor.p99_ms,
                r.ratio_p50()
            );
        }
        let c = core(&e, &world.objects, &typical, a.budget);
        println!(
            "core typical: native p50 {:.3} ms, wasm p50 {:.3} ms, wasm/native {:.2}, same output {}",
            c.native.p50_ms,
            c.wasm.p50_ms,
            c.wasm.p50_ms / c.native.p50_ms,
            c.identical
        );
        for &n in &a.replicas {
            let r = rollout(&a, "ours", &a.policy, n, a.workers);
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
        return;
    }

    // ---- per admission, ours vs floor
    eprintln!("bench: per-admission, ours vs floor");
    let admissions: Vec<PairResult> = scenarios
        .iter()
        .map(|s| {
            let r = pair(&e, s, a.budget, 25, 4000);
            eprintln!(
                "  {:<10} n={:<5} ours p50 {:.3} ms p99 {:.3} ms | floor p50 {:.3} ms p99 {:.3} ms | x{:.2}",
                s.id,
                r.n,
                r.ours.p50_ms,
                r.ours.p99_ms,
                r.floor.p50_ms,
                r.floor.p99_ms,
                r.ratio_p50()
            );
            r
        })
        .collect();
    eprintln!("bench: size series");
    let series_results: Vec<PairResult> = series
        .iter()
        .map(|s| {
            // 60 samples at least: at 256 KiB and 1 MiB the budget alone gives 25, and one
            // noisy p50 there decided the linear fit's R².
            let r = pair(&e, s, a.budget / 2, 60, 2000);
            eprintln!(
                "  {:<10} n={:<5} ours p50 {:.3} ms | floor p50 {:.3} ms",
                s.id, r.n, r.ours.p50_ms, r.floor.p50_ms
            );
            r
        })
        .collect();

    // ---- the wasm-opt'd module on the typical pod
    let oz_pair = policies.get("policy.wasm (ours), wasm-opt -Oz").map(|oz| {
        let e2 = Engines {
            ours: oz.clone(),
            floor: e.floor.clone(),
            host: host.clone(),
            settings: e.settings.clone(),
        };
        pair(&e2, &typical, a.budget / 2, 25, 4000)
    });

    // ---- native core vs wasm guest call
    eprintln!("bench: native vs wasm");
    let cores: Vec<CoreResult> = [&scenarios[0], &scenarios[5], &scenarios[6]]
        .into_iter()
        .map(|s| {
            let r = core(&e, &world.objects, s, a.budget);
            eprintln!(
                "  {:<10} n={:<5} native p50 {:.3} ms | wasm p50 {:.3} ms | x{:.2} identical={}",
                s.id,
                r.n,
                r.native.p50_ms,
                r.wasm.p50_ms,
                r.wasm.p50_ms / r.native.p50_ms,
                r.identical
            );
            r
        })
        .collect();

    // ---- phases of one admission
    let (ph_ours, ph_floor) = phases(&e, &typical, 600);

    // ---- instantiation
    eprintln!("bench: instantiation");
    let mut inst: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    for i in 0..400 {
        let names: Vec<&str> = modules.iter().map(|m| m.name).collect();
        let order: Vec<&str> = if i % 2 == 0 {
            names
        } else {
            names.into_iter().rev().collect()
        };
        for name in order {
            let t0 = Instant::now();
            let x = policies[name].instantiate(&host).expect("instantiate");
            inst.entry(name).or_default().push(t0.elapsed());
            drop(x);
        }
    }

    // ---- peak linear memory (bisection over memory caps, see host/src/memory.rs)
    eprintln!("bench: linear memory");
    let memory: Vec<(&Scenario, usize, usize)> = [&scenarios[0], &scenarios[5], &scenarios[6], &scenarios[7]]
        .into_iter()
        .map(|s| {
            let peak = |p: &Policy| {
                injector_host::memory::peak_linear_memory(p, &host, &s.request, &e.settings)
                    .expect("peak memory")
            };
            (s, peak(&e.ours), peak(&e.floor))
        })
        .collect();

    let lookups_in_process = host.stats();

    // ---- rollouts
    eprintln!("bench: rollouts");
    let mut rollouts = Vec::new();
    for &n in &a.replicas {
        let r = rollout(&a, "ours", &a.policy, n, a.workers);
        eprintln!(
            "  ours {n}: {:?}",
            r.report
                .as_ref()
                .map(|r| (r.injected, r.throughput_per_s, r.latency.p99_ms))
                .or(None)
        );
        if let Some(err) = &r.error {
            eprintln!("  error: {err}");
        }
        rollouts.push(r);
    }
    let floor_rollout = rollout(&a, "floor", &a.floor, 1000, a.workers);

    // ---- criterion
    let crit: Vec<(String, Option<f64>, Option<f64>)> = scenarios
        .iter()
        .filter(|s| s.id != "pod1m")
        .map(|s| {
            (
                s.label.clone(),
                criterion_median_ms(&a.criterion, &format!("core/{}", s.id)),
                criterion_median_ms(&a.criterion, &format!("floor/{}", s.id)),
            )
        })
        .collect();

    // ---------------------------------------------------------------------------------------------
    // report
    let mut md = String::new();
    let w = &mut md;
    let _ = writeln!(w, "# Benchmarks\n");
    let _ = writeln!(
        w,
        "Generated by `{}` (benches/bench.sh → `cargo bench --profile host --bench core` and `cargo bench --profile host --bench engine -- --out BENCHMARKS.md`). Do not edit by hand: rerun it.\n",
        a.command
    );
    let load_end = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load_end = load_end.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let _ = writeln!(
        w,
        "* Machine: {machine}; load average at the end {load_end} (a load above 2 on 2 cores means other processes competed for the CPU: wall-clock figures are then inflated, ratios less so)."
    );
    let _ = writeln!(
        w,
        "* Engine: `injector-host` library, optimised (`host` profile), wasmtime with policy-server's defaults (2 s deadline, epoch interruption on); one compiled module per policy, a **fresh instance per request** (`Policy::evaluate` = instantiate + `validate` + JSON-patch diff + base64)."
    );
    let _ = writeln!(
        w,
        "* Floor: `benches/floor-policy`, same SDK (kubewarden-policy-sdk 0.17.3, no default features), same release profile: parses `{{\"request\",\"settings\"}}` with the SDK's `ValidationRequest` and returns `mutated_object` = `request.object` unchanged (empty diff, no patch)."
    );
    let _ = writeln!(
        w,
        "* Ours and the floor run on the same requests in the same process, **interleaved** (alternating which goes first); every ratio below comes from one such side-by-side run. Settings: empty (policy defaults, trust anchors from Linkerd's ConfigMap); lookups served by the engine's 5 s cache from an in-memory cluster (the same Namespace / ReplicaSet / ConfigMap a real cluster would answer)."
    );
    let _ = writeln!(
        w,
        "* Time is wall-clock on a shared 2-core machine where other builds may run: expect noise in p99; instruction counts (callgrind) are the repeatable measure for comparing changes (see the notes at the end).\n"
    );

    // headline
    let typ = &admissions[0];
    let core_typ = &cores[0];
    let r1000 = rollouts.iter().find(|r| r.replicas == 1000 && r.report.is_some());
    let ours_mod = &modules[0];
    let ours_oz_mod = modules
        .iter()
        .find(|m| m.name == "policy.wasm (ours), wasm-opt -Oz");
    let _ = writeln!(w, "## Targets\n");
    let _ = writeln!(w, "| target | measured | |");
    let _ = writeln!(w, "|---|---|---|");
    let ratio = typ.ratio_p50();
    let _ = writeln!(
        w,
        "| typical injected pod: ours/floor ≤ 2.0 at p50 | {:.2} ({} / {}) | {} |",
        ratio,
        us(typ.ours.p50_ms),
        us(typ.floor.p50_ms),
        yes(ratio <= 2.0)
    );
    let _ = writeln!(
        w,
        "| typical pod: p99 per admission < 1 ms | {} (p50 {}, n = {}); the floor's own p99 {} | {} |",
        us(typ.ours.p99_ms),
        us(typ.ours.p50_ms),
        typ.n,
        us(typ.floor.p99_ms),
        yes(typ.ours.p99_ms < 1.0)
    );
    let wn = core_typ.wasm.p50_ms / core_typ.native.p50_ms;
    let _ = writeln!(
        w,
        "| core on the typical pod: wasm/native ≤ 2.5 (p50) | {:.2} ({} / {}) | {} |",
        wn,
        us(core_typ.wasm.p50_ms),
        us(core_typ.native.p50_ms),
        yes(wn <= 2.5)
    );
    for id in ["env1500", "pod64k"] {
        let r = admissions.iter().find(|r| r.scenario.id == id).expect(id);
        let _ = writeln!(
            w,
            "| {} ({}) < 10 ms | p99 {} (p50 {}); floor p99 {} (p50 {}) | {} |",
            r.scenario.label,
            kib(r.scenario.object_bytes),
            us(r.ours.p99_ms),
            us(r.ours.p50_ms),
            us(r.floor.p99_ms),
            us(r.floor.p50_ms),
            yes(r.ours.p99_ms < 10.0)
        );
    }
    let big = admissions
        .iter()
        .find(|r| r.scenario.id == "pod1m")
        .expect("pod1m");
    let _ = writeln!(
        w,
        "| 1 MB pod ({}) < 100 ms | p99 {} (p50 {}) | {} |",
        kib(big.scenario.object_bytes),
        us(big.ours.p99_ms),
        us(big.ours.p50_ms),
        yes(big.ours.p99_ms < 100.0)
    );
    if let Some((s, ours, floor)) = memory.iter().find(|(s, ..)| s.id == "pod1m") {
        let _ = writeln!(
            w,
            "| 1 MB pod: peak linear memory bounded (stated) | {} = {:.1} × the object (floor {}) | **stated** |",
            kib(*ours),
            *ours as f64 / s.object_bytes as f64,
            kib(*floor)
        );
    }
    let pts: Vec<(f64, f64)> = series_results
        .iter()
        .map(|r| (r.scenario.object_bytes as f64 / 1024.0, r.ours.p50_ms))
        .collect();
    let (icpt, slope, r2) = fit(&pts);
    let per_kb_small = series_results
        .get(2)
        .map(|r| r.ours.p50_ms / (r.scenario.object_bytes as f64 / 1024.0))
        .unwrap_or(0.0);
    let per_kb_big = series_results
        .last()
        .map(|r| r.ours.p50_ms / (r.scenario.object_bytes as f64 / 1024.0))
        .unwrap_or(0.0);
    let linear = r2 >= 0.98 && per_kb_big <= 1.5 * per_kb_small;
    let _ = writeln!(
        w,
        "| time grows linearly with pod size | p50 ≈ {} + {:.1} µs/KiB, R² = {:.4}; {:.1} µs/KiB at 64 KiB vs {:.1} µs/KiB at 1 MiB | {} |",
        us(icpt.max(0.0)),
        slope * 1e3,
        r2,
        per_kb_small * 1e3,
        per_kb_big * 1e3,
        yes(linear)
    );
    match r1000.and_then(|r| r.report.as_ref().map(|rep| (r, rep))) {
        Some((r, rep)) => {
            let all = rep.injected == rep.replicas;
            let dl = rep.policy_deadline.map(|d| d.exceeded == 0).unwrap_or(true);
            let far = rep.webhook_timeout.max_fraction < 0.1;
            let tp = rep.throughput_per_s >= 1000.0;
            let _ = writeln!(
                w,
                "| 1,000-replica rollout, {} workers: 1000/1000 injected | {}/{} injected, {} skipped, {} rejected, {} errors | {} |",
                r.workers,
                rep.injected,
                rep.replicas,
                rep.skipped,
                rep.rejected,
                rep.errors,
                yes(all)
            );
            let _ = writeln!(
                w,
                "| … every admission below the 2 s deadline and far below the 10 s webhook timeout | slowest {} = {:.3} % of 10 s; {} over 2 s | {} |",
                us(rep.latency.max_ms),
                rep.webhook_timeout.max_fraction * 100.0,
                rep.policy_deadline.map(|d| d.exceeded).unwrap_or(0),
                yes(dl && far)
            );
            let _ = writeln!(
                w,
                "| … throughput ≥ 1,000 admissions/s | {:.0} admissions/s | {} |",
                rep.throughput_per_s,
                yes(tp)
            );
        }
        None => {
            let _ = writeln!(
                w,
                "| 1,000-replica rollout | not run: {} | **MISSED** |",
                rollouts
                    .iter()
                    .find(|r| r.replicas == 1000)
                    .and_then(|r| r.error.clone())
                    .unwrap_or_else(|| "not requested".into())
            );
        }
    }
    match ours_oz_mod {
        Some(m) => {
            let _ = writeln!(
                w,
                "| module < 1 MiB after optimisation | {} after `wasm-opt -Oz` ({} bytes); {} before ({} bytes) | {} |",
                kib(m.bytes),
                m.bytes,
                kib(ours_mod.bytes),
                ours_mod.bytes,
                yes(m.bytes < 1024 * 1024)
            );
        }
        None => {
            let _ = writeln!(
                w,
                "| module < 1 MiB after optimisation | {} before optimisation; wasm-opt: {} | {} |",
                kib(ours_mod.bytes),
                opt_ours.as_ref().err().cloned().unwrap_or_default(),
                yes(ours_mod.bytes < 1024 * 1024)
            );
        }
    }
    let total_started = std::env::var("BENCH_STARTED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    if let Some(t) = total_started {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(t);
        let secs = now.saturating_sub(t);
        let _ = writeln!(
            w,
            "| `make bench` regenerates this file in < 10 min | {} min {} s (builds included; this report's measurements {:.0} s) | {} |",
            secs / 60,
            secs % 60,
            started.elapsed().as_secs_f64(),
            yes(secs < 600)
        );
    }
    let _ = writeln!(
        w,
        "\nA **MISSED** row is a target not met on this machine in this run; the notes at the end (\"What bounds the ratio to the floor\") say what bounds it. The floor's own figures are next to ours where the engine's fixed cost is most of the budget.\n"
    );

    write_calibration(w, &a, &calibration_md);

    // per admission
    let _ = writeln!(
        w,
        "## Per admission through the engine (fresh instance per request)\n"
    );
    let _ = writeln!(
        w,
        "| request | object | n | ours p50 | ours p99 | floor p50 | floor p99 | ours/floor p50 | ours/floor p99 | ours: result | floor: result |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|---|---|---|---|---|");
    let row = |w: &mut String, r: &PairResult, label: &str| {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {} | {} |",
            label,
            kib(r.scenario.object_bytes),
            r.n,
            us(r.ours.p50_ms),
            us(r.ours.p99_ms),
            us(r.floor.p50_ms),
            us(r.floor.p99_ms),
            r.ratio_p50(),
            r.ours.p99_ms / r.floor.p99_ms,
            r.ours_result,
            r.floor_result
        );
    };
    for r in &admissions {
        row(w, r, &r.scenario.label);
    }
    if let Some(r) = &oz_pair {
        row(w, r, "typical pod, module after `wasm-opt -Oz`");
    }
    let _ = writeln!(w);

    let _ = writeln!(
        w,
        "### Where one admission's time goes (typical pod, n = 600 each, p50)\n"
    );
    let _ = writeln!(w, "| step | ours | floor |");
    let _ = writeln!(w, "|---|---|---|");
    for (label, o, f) in [
        (
            "serialise `{request, settings}` (host)",
            &ph_ours.payload,
            &ph_floor.payload,
        ),
        (
            "instantiate (fresh instance, `wapc_init`)",
            &ph_ours.instantiate,
            &ph_floor.instantiate,
        ),
        (
            "guest `validate` (incl. host lookups)",
            &ph_ours.guest,
            &ph_floor.guest,
        ),
        (
            "response: parse, `json_patch::diff`, base64 (host)",
            &ph_ours.response,
            &ph_floor.response,
        ),
    ] {
        let _ = writeln!(
            w,
            "| {label} | {} | {} |",
            us(summary(o).p50_ms),
            us(summary(f).p50_ms)
        );
    }
    let _ = writeln!(w);

    // size series
    let _ = writeln!(w, "## Growth with pod size\n");
    let _ = writeln!(
        w,
        "A Deployment pod grown with env vars (~70 bytes each) to the given size; ours and the floor interleaved.\n"
    );
    let _ = writeln!(
        w,
        "| object | n | ours p50 | ours p99 | ours µs/KiB | floor p50 | floor µs/KiB | ours/floor p50 |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|---|---|");
    for r in &series_results {
        let k = r.scenario.object_bytes as f64 / 1024.0;
        let _ = writeln!(
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
        );
    }
    let fpts: Vec<(f64, f64)> = series_results
        .iter()
        .map(|r| (r.scenario.object_bytes as f64 / 1024.0, r.floor.p50_ms))
        .collect();
    let (ficpt, fslope, fr2) = fit(&fpts);
    let _ = writeln!(
        w,
        "\nLeast squares over the series: ours p50 ≈ {} + {:.2} µs/KiB (R² = {:.4}); floor ≈ {} + {:.2} µs/KiB (R² = {:.4}).\n",
        us(icpt.max(0.0)),
        slope * 1e3,
        r2,
        us(ficpt.max(0.0)),
        fslope * 1e3,
        fr2
    );

    // native vs wasm
    let _ = writeln!(w, "## The core natively and in wasm\n");
    let _ = writeln!(
        w,
        "`linkerd_injector_policy::wire::validate` called natively (host profile, cluster in a `MemoryCluster`) against the guest call `validate` of a fresh instance (instantiation not timed; lookups through the engine), on the engine's exact payload bytes; the floor's `validate` the same way. Interleaved.\n"
    );
    let _ = writeln!(
        w,
        "| request | n | native p50 | wasm p50 | wasm p99 | wasm/native p50 | floor native p50 | floor wasm p50 | floor wasm/native | same output bytes |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|---|---|---|---|");
    for c in &cores {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {:.2} | {} | {} | {:.2} | {} |",
            c.scenario.label,
            c.n,
            us(c.native.p50_ms),
            us(c.wasm.p50_ms),
            us(c.wasm.p99_ms),
            c.wasm.p50_ms / c.native.p50_ms,
            us(c.floor_native.p50_ms),
            us(c.floor_wasm.p50_ms),
            c.floor_wasm.p50_ms / c.floor_native.p50_ms,
            if c.identical { "yes" } else { "no" }
        );
    }
    let _ = writeln!(
        w,
        "\nFull admission through the engine / native core, typical pod: {:.2} (p50 {} / {}).\n",
        typ.ours.p50_ms / core_typ.native.p50_ms,
        us(typ.ours.p50_ms),
        us(core_typ.native.p50_ms)
    );
    if crit.iter().any(|(_, a, b)| a.is_some() || b.is_some()) {
        let _ = writeln!(
            w,
            "Criterion medians (`cargo bench --profile host --bench core`, same run of `make bench`, native):\n"
        );
        let _ = writeln!(w, "| request | core `wire::validate` | floor `validate` |");
        let _ = writeln!(w, "|---|---|---|");
        for (label, c, f) in &crit {
            let fmt = |x: &Option<f64>| x.map(us).unwrap_or_else(|| "–".into());
            let _ = writeln!(w, "| {label} | {} | {} |", fmt(c), fmt(f));
        }
        let _ = writeln!(w);
    }

    // linear memory
    let _ = writeln!(w, "## Peak linear memory of one admission\n");
    let _ = writeln!(
        w,
        "The smallest memory cap (`EngineConfig::max_memory`, in 64 KiB wasm pages) under which the admission still gets its uncapped answer; linear memory only grows, so this is the instance's peak, initial memory (data and the 1 MiB stack) included. Found by bisection (`injector_host::memory::peak_linear_memory`); deterministic, not a timing.\n"
    );
    let _ = writeln!(
        w,
        "| request | object | ours | ours / object | floor | ours / floor |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|");
    for (s, ours, floor) in &memory {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {:.1} | {} | {:.2} |",
            s.label,
            kib(s.object_bytes),
            kib(*ours),
            *ours as f64 / s.object_bytes as f64,
            kib(*floor),
            *ours as f64 / *floor as f64
        );
    }
    let _ = writeln!(w);

    // modules
    let _ = writeln!(w, "## Modules\n");
    let _ = writeln!(
        w,
        "wasm-opt: `wasm-opt {}` ({opt_version}).\n",
        WASM_OPT_FLAGS.join(" ")
    );
    let _ = writeln!(
        w,
        "| module | size | compile (once) | instantiate p50 | instantiate p99 |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|");
    for m in &modules {
        let s = summary(&inst[m.name]);
        let _ = writeln!(
            w,
            "| {} | {} ({} bytes) | {} | {} | {} |",
            m.name,
            kib(m.bytes),
            m.bytes,
            us(compile_ms[m.name]),
            us(s.p50_ms),
            us(s.p99_ms)
        );
    }
    if let Err(err) = &opt_ours {
        let _ = writeln!(w, "\nwasm-opt: {err}");
    }
    let _ = writeln!(w);

    // rollouts
    let _ = writeln!(
        w,
        "## Rollouts (`injector-host rollout --replicas N --workers {} --json`)\n",
        a.workers
    );
    let _ = writeln!(
        w,
        "The rollout of linkerd2#3358 through the `injector-host` binary: a Deployment's ReplicaSet creates N pods, each pod CREATE is one admission (fresh instance) on W worker threads sharing one engine and its 5 s lookup cache. Peak memory is the engine process's maximum RSS (`wait4`).\n"
    );
    let _ = writeln!(
        w,
        "| module | replicas | workers | injected | wall | throughput | p50 | p99 | max | Namespace lookups made / cached | ReplicaSet (owner) lookups made / cached | ConfigMap lookups made / cached | cache windows (5 s) | peak RSS |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rollouts.iter().chain(std::iter::once(&floor_rollout)) {
        match &r.report {
            Some(rep) => {
                let by = |k: &str| {
                    rep.lookups
                        .by_resource
                        .get(k)
                        .map(|s| format!("{} / {}", s.made, s.cached))
                        .unwrap_or_else(|| "0 / 0".into())
                };
                let windows = (rep.wall_time_ms / 5000.0).ceil().max(1.0);
                let _ = writeln!(
                    w,
                    "| {} | {} | {} | {}/{} | {:.2} s | {:.0}/s | {} | {} | {} | {} | {} | {} | {} | {:.1} MiB |",
                    r.module,
                    rep.replicas,
                    rep.workers,
                    rep.injected,
                    rep.replicas,
                    rep.wall_time_ms / 1e3,
                    rep.throughput_per_s,
                    us(rep.latency.p50_ms),
                    us(rep.latency.p99_ms),
                    us(rep.latency.max_ms),
                    by("v1/Namespace"),
                    by("apps/v1/ReplicaSet"),
                    by("v1/ConfigMap"),
                    windows,
                    r.max_rss_kib as f64 / 1024.0
                );
            }
            None => {
                let _ = writeln!(
                    w,
                    "| {} | {} | {} | error: {} | | | | | | | | | | |",
                    r.module,
                    r.replicas,
                    r.workers,
                    r.error.clone().unwrap_or_default().replace('|', "/")
                );
            }
        }
    }
    let _ = writeln!(
        w,
        "\nLookups made = cache misses that reached the cluster; the owner (ReplicaSet) is looked up about once per cache window, not once per pod. The floor makes no lookups and adds no proxy (its row shows the engine's own cost for the same pods).\n"
    );
    let _ = writeln!(
        w,
        "In-process benchmarks above made {} lookups and served {} from the cache.\n",
        lookups_in_process.made, lookups_in_process.cached
    );

    // notes
    if let Ok(notes) = std::fs::read_to_string(&a.notes) {
        let _ = writeln!(w, "{}", notes.trim_end());
    }

    match &a.out {
        Some(p) => {
            std::fs::write(p, &md).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            eprintln!(
                "bench: wrote {} in {:.0} s",
                p.display(),
                started.elapsed().as_secs_f64()
            );
        }
        None => print!("{md}"),
    }
    if let Some(p) = &a.json {
        let j = serde_json::json!({
            "typical": {"ours_p50_ms": typ.ours.p50_ms, "ours_p99_ms": typ.ours.p99_ms, "floor_p50_ms": typ.floor.p50_ms, "ratio_p50": ratio},
            "wasm_native": wn,
        });
        let _ = std::fs::write(p, serde_json::to_vec_pretty(&j).unwrap_or_default());
    }
}
