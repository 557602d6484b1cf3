//! The modules measured: their sizes before and after `wasm-opt -Oz`, compile time and
//! instantiation time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use injector_host::linkerd::rollout::LatencySummary;
use kubewarden_engine::{Engine, HostContext, Policy};

use crate::format::ms;

pub const WASM_OPT_FLAGS: &[&str] = &[
    "-Oz",
    "--enable-bulk-memory",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    // the module uses WebAssembly SIMD (.cargo/config.toml)
    "--enable-simd",
];

pub const OURS: &str = "policy.wasm (ours)";
pub const FLOOR: &str = "floor";
pub const OURS_OZ: &str = "policy.wasm (ours), wasm-opt -Oz";
const FLOOR_OZ: &str = "floor, wasm-opt -Oz";

pub struct Module {
    pub name: &'static str,
    pub path: PathBuf,
    pub bytes: usize,
}

/// The modules, ours first, and what wasm-opt made of them.
pub struct Modules {
    pub list: Vec<Module>,
    /// `wasm-opt --version`, or "not installed".
    pub opt_version: String,
    /// Why there is no optimised copy of ours.
    pub opt_error: Option<String>,
}

impl Modules {
    pub fn get(&self, name: &str) -> Option<&Module> {
        self.list.iter().find(|m| m.name == name)
    }
}

/// Compile and instantiation times per module name.
pub struct ModuleTimes {
    pub compile_ms: BTreeMap<&'static str, f64>,
    pub instantiate: BTreeMap<&'static str, LatencySummary>,
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

fn module(name: &'static str, path: &Path) -> Module {
    Module {
        name,
        path: path.to_owned(),
        bytes: std::fs::metadata(path).map(|m| m.len() as usize).unwrap_or(0),
    }
}

/// Ours and the floor, and their `-Oz` copies (written to `work_dir`) where wasm-opt runs.
pub fn measure_sizes(policy: &Path, floor: &Path, work_dir: &Path) -> Modules {
    let ours_oz = work_dir.join("policy.Oz.wasm");
    let floor_oz = work_dir.join("floor.Oz.wasm");
    let opt_ours = wasm_opt(policy, &ours_oz);
    let opt_floor = wasm_opt(floor, &floor_oz);
    let mut list = vec![module(OURS, policy), module(FLOOR, floor)];
    if opt_ours.is_ok() {
        list.push(module(OURS_OZ, &ours_oz));
    }
    if opt_floor.is_ok() {
        list.push(module(FLOOR_OZ, &floor_oz));
    }
    Modules {
        list,
        opt_version: wasm_opt_version(),
        opt_error: opt_ours.err(),
    }
}

/// Every module compiled once, with the time each took.
pub fn compile(
    engine: &Engine,
    modules: &Modules,
) -> (BTreeMap<&'static str, Policy>, BTreeMap<&'static str, f64>) {
    let (mut policies, mut compile_ms) = (BTreeMap::new(), BTreeMap::new());
    for m in &modules.list {
        let bytes = std::fs::read(&m.path).unwrap_or_else(|e| panic!("{}: {e}", m.path.display()));
        let t0 = Instant::now();
        let p = engine.load_policy(m.name, &bytes).expect("load policy");
        compile_ms.insert(m.name, ms(t0.elapsed()));
        policies.insert(m.name, p);
    }
    (policies, compile_ms)
}

/// 400 instantiations of every module, in alternating order.
pub fn measure_instantiation(
    modules: &Modules,
    policies: &BTreeMap<&'static str, Policy>,
    host: &Arc<HostContext>,
) -> BTreeMap<&'static str, LatencySummary> {
    eprintln!("bench: instantiation");
    let mut times: BTreeMap<&'static str, Vec<Duration>> = BTreeMap::new();
    let names: Vec<&'static str> = modules.list.iter().map(|m| m.name).collect();
    for i in 0..400 {
        let order: Vec<&'static str> = if i % 2 == 0 {
            names.clone()
        } else {
            names.iter().rev().copied().collect()
        };
        for name in order {
            let t0 = Instant::now();
            let x = policies[name].instantiate(host).expect("instantiate");
            times.entry(name).or_default().push(t0.elapsed());
            drop(x);
        }
    }
    times
        .into_iter()
        .map(|(name, d)| (name, LatencySummary::from_durations(&d)))
        .collect()
}
