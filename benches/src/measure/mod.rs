//! The measurements of the benchmark report, each returned as plain data for `report` to write:
//! the setup they share (modules, engine, scenarios) and `measure_all`, which runs them in order.

pub mod admission;
pub mod calibration;
pub mod criterion;
pub mod machine;
pub mod memory;
pub mod modules;
pub mod native;
pub mod phases;
pub mod rollout;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use injector_host::linkerd::rollout::LatencySummary;
use kubewarden_engine::protocol::metadata::Metadata;
use kubewarden_engine::{Engine, EngineConfig, Policy};

use crate::args::Args;
use crate::world::{self, Scenario, World};
use admission::{Engines, PairResult};
use criterion::CriterionRow;
use memory::PeakMemory;
use modules::{Modules, OURS_OZ};
use native::CoreResult;
use phases::Phases;
use rollout::Rollout;

/// Where the `-Oz` copies of the modules go.
const WORK_DIR: &str = "target/bench";

/// What every measurement runs on: the compiled modules, one engine, the scenarios and a host
/// whose cluster holds every scenario's objects.
pub struct Setup {
    pub machine: String,
    pub engine: Engine,
    pub modules: Modules,
    pub policies: BTreeMap<&'static str, Policy>,
    pub compile_ms: BTreeMap<&'static str, f64>,
    pub metadata: Metadata,
    pub world: World,
    /// typical, bare, skipped, service, containers20, env1500, pod64k, pod1m.
    pub scenarios: Vec<Scenario>,
    /// Pods of 4 KB to 1 MB.
    pub series: Vec<Scenario>,
    pub engines: Engines,
}

impl Setup {
    pub fn new(a: &Args) -> Self {
        std::fs::create_dir_all(WORK_DIR).expect(WORK_DIR);
        let machine = machine::machine();
        eprintln!("bench: {machine}");
        let modules = modules::measure_sizes(&a.policy, &a.floor, Path::new(WORK_DIR));
        // policy-server's defaults: 2 s deadline, epoch interruption on
        let engine = Engine::new(EngineConfig::default()).expect("engine");
        let (policies, compile_ms) = modules::compile(&engine, &modules);
        let metadata = Metadata::from_file(&a.metadata).expect("policy metadata");
        let mut world = World::new();
        let scenarios = world.scenarios();
        let series = world.series();
        let engines = Engines {
            ours: policies[modules::OURS].clone(),
            floor: policies[modules::FLOOR].clone(),
            host: world.host("bench", metadata.context_aware_resources.clone()),
            settings: world::settings(),
        };
        check_settings(&engines);
        Self {
            machine,
            engine,
            modules,
            policies,
            compile_ms,
            metadata,
            world,
            scenarios,
            series,
            engines,
        }
    }

    pub fn typical(&self) -> &Scenario {
        self.scenario("typical")
    }

    pub fn scenario(&self, id: &str) -> &Scenario {
        self.scenarios
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no scenario {id}"))
    }

    fn scenarios_of(&self, ids: &[&str]) -> Vec<&Scenario> {
        ids.iter().map(|id| self.scenario(id)).collect()
    }

    /// The calibration row (its own host, so its lookups are not counted with the others').
    pub fn calibrate(&self, a: &Args) -> Vec<calibration::Row> {
        eprintln!(
            "bench: calibration (throughput through the engine, {} workers)",
            a.workers
        );
        let candidates =
            calibration::candidates(&self.engine, &self.engines, &a.trivial, &a.shipped_settings);
        let host = self
            .world
            .host("calibration", self.metadata.context_aware_resources.clone());
        let (n, rounds) = (calibration::ADMISSIONS, calibration::ROUNDS);
        let rows = calibration::measure(&candidates, &host, self.typical(), a.workers, n, rounds);
        eprint!("{}", crate::report::calibration_table(&rows));
        rows
    }
}

/// Both modules accept the settings every measurement uses.
fn check_settings(e: &Engines) {
    for (name, p) in [("ours", &e.ours), ("floor", &e.floor)] {
        let mut i = p.instantiate(&e.host).expect("instantiate");
        let v = i.validate_settings(&e.settings);
        assert!(v.valid, "{name}: settings not valid: {:?}", v.message);
    }
}

/// Everything the report shows, measured.
pub struct Measurements {
    pub machine: String,
    /// Load average when the measurements ended.
    pub load_end: String,
    /// This report's measurements, from the start of the setup.
    pub measured: Duration,
    /// The whole `make bench` run (builds included), when `BENCH_STARTED` says when it began.
    pub since_bench_started: Option<u64>,
    pub modules: Modules,
    pub compile_ms: BTreeMap<&'static str, f64>,
    pub instantiate: BTreeMap<&'static str, LatencySummary>,
    pub calibration: Vec<calibration::Row>,
    /// One per scenario, in the setup's order (the typical pod first).
    pub admissions: Vec<PairResult>,
    pub series: Vec<PairResult>,
    /// The typical pod through the `-Oz` copy of ours, if wasm-opt ran.
    pub oz: Option<PairResult>,
    /// typical, env1500, pod64k.
    pub cores: Vec<CoreResult>,
    pub phases_ours: Phases,
    pub phases_floor: Phases,
    pub memory: Vec<PeakMemory>,
    /// Lookups of the in-process measurements: made, served from the cache.
    pub lookups_made: u64,
    pub lookups_cached: u64,
    pub rollouts: Vec<Rollout>,
    pub floor_rollout: Rollout,
    pub criterion: Vec<CriterionRow>,
}

/// The typical pod through the `-Oz` copy of ours, against the floor.
fn measure_oz(s: &Setup, budget: Duration) -> Option<PairResult> {
    let oz = s.policies.get(OURS_OZ)?;
    let e = Engines {
        ours: oz.clone(),
        floor: s.engines.floor.clone(),
        host: s.engines.host.clone(),
        settings: s.engines.settings.clone(),
    };
    Some(admission::measure_pair(&e, s.typical(), budget / 2, 25, 4000))
}

pub fn measure_all(a: &Args) -> Measurements {
    let started = Instant::now();
    let s = Setup::new(a);
    let calibration = s.calibrate(a);
    let e = &s.engines;
    let admissions = admission::measure_admissions(e, &s.scenarios, a.budget);
    let series = admission::measure_series(e, &s.series, a.budget);
    let oz = measure_oz(&s, a.budget);
    let core_ids = ["typical", "env1500", "pod64k"];
    let cores = native::measure_cores(e, &s.world.objects, &s.scenarios_of(&core_ids), a.budget);
    let (phases_ours, phases_floor) = phases::measure_phases(e, s.typical());
    let instantiate = modules::measure_instantiation(&s.modules, &s.policies, &e.host);
    let memory_ids = ["typical", "env1500", "pod64k", "pod1m"];
    let memory = memory::measure_memory(e, &s.scenarios_of(&memory_ids));
    let lookups = e.host.stats();
    let (rollouts, floor_rollout) = rollout::measure_rollouts(a);
    let criterion = criterion::read_medians(&a.criterion, &s.scenarios);
    Measurements {
        machine: s.machine,
        load_end: machine::load_average(),
        measured: started.elapsed(),
        since_bench_started: machine::since_bench_started(),
        modules: s.modules,
        compile_ms: s.compile_ms,
        instantiate,
        calibration,
        admissions,
        series,
        oz,
        cores,
        phases_ours,
        phases_floor,
        memory,
        lookups_made: lookups.made,
        lookups_cached: lookups.cached,
        rollouts,
        floor_rollout,
        criterion,
    }
}
