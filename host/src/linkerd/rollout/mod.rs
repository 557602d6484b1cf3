//! The rollout of linkerd2#3358, played against the engine: the Deployment controller makes a
//! ReplicaSet `<deploy>-<pod-template-hash>`, the ReplicaSet controller asks for N pods, and
//! every pod CREATE AdmissionRequest (as the API server builds it after defaulting and the
//! ServiceAccount admission plugin) goes through the policy on W worker threads. Each evaluation
//! is a fresh instance of the shared pre-compiled module; all workers share one host context,
//! so the `get_resource` cache is shared like in policy-server.
//!
//! The files, by concern: `workload.rs` (the Deployment, its Namespace and the default Linkerd
//! control plane), `tally.rs` (what each admission came to, the shared counts and the progress
//! bar), `report.rs` (the report and its summary); this one holds the options and the run itself.

mod report;
mod tally;
mod workload;

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thiserror::Error;

use crate::commands::common::CommandError;

// The paths the benchmarks and tests import (`injector_host::rollout::...`): the controllers'
// side of a rollout is used with it, so it is re-exported here.
pub use super::controllers::{
    Rng, SAFE_ALPHABET, ShapeError, fnv32a, pod_create_request, pod_template_hash, replica_set_for,
    safe_encode,
};
pub use report::{LatencySummary, LimitReport, RolloutReport};
pub use tally::{PodAdmission, classify};
pub use workload::{DEFAULT_LINKERD_VALUES, DUMMY_TRUST_BUNDLE, Workload, default_control_plane};

use kubewarden_engine::protocol::request::{AdmissionRequest, PolicySettings};
use kubewarden_engine::protocol::response::{DEADLINE_MESSAGE, SettingsRejected};
use kubewarden_engine::runtime::callback::HostContext;
use kubewarden_engine::runtime::engine::{EngineError, Policy};
use tally::Tally;

/// Why `rollout` failed: the steps every command shares, or the rollout's own.
#[derive(Debug, Error)]
pub enum RolloutError {
    #[error(transparent)]
    Setup(#[from] CommandError),
    #[error("cannot read manifest {path}: {source}")]
    ReadManifest {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse manifest {path}: {source}")]
    ParseManifest {
        path: String,
        #[source]
        source: serde_yaml_ng::Error,
    },
    #[error("manifest {0} has no apps/v1 Deployment")]
    NoDeployment(String),
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error("cannot add {what} to the cluster state: {message}")]
    ClusterState { what: String, message: String },
    #[error("cannot instantiate the policy to validate its settings: {0}")]
    Instantiate(#[source] EngineError),
    #[error(transparent)]
    InvalidSettings(#[from] SettingsRejected),
    #[error("replicas must be at least 1 and workers at least 1")]
    Counts,
}

/// Options of a rollout.
#[derive(Debug, Clone)]
pub struct RolloutOptions {
    pub replicas: usize,
    pub workers: usize,
    pub settings: PolicySettings,
    /// The API server's webhook timeout (10 s by default).
    pub webhook_timeout: Duration,
    /// The engine's policy deadline, for the report.
    pub policy_deadline: Option<Duration>,
    pub seed: u64,
    /// Draw a progress bar on stderr if it is a terminal.
    pub progress: bool,
}

impl Default for RolloutOptions {
    fn default() -> Self {
        Self {
            replicas: 1000,
            workers: 4,
            settings: PolicySettings::default(),
            webhook_timeout: Duration::from_secs(10),
            policy_deadline: Some(Duration::from_secs(2)),
            seed: 3358,
            progress: true,
        }
    }
}

/// The objects the rollout adds to the cluster state, and the ReplicaSet's pod-template-hash.
struct Objects {
    replica_set: Value,
    hash: String,
}

/// Runs the rollout. The host context must serve lookups from a cluster state: the Namespace,
/// Deployment, ReplicaSet and other workload objects are added to it.
pub fn run_rollout(
    policy: &Policy,
    host: &Arc<HostContext>,
    workload: &Workload,
    opts: &RolloutOptions,
) -> Result<RolloutReport, RolloutError> {
    if opts.replicas == 0 || opts.workers == 0 {
        return Err(RolloutError::Counts);
    }
    let mut rng = Rng::new(opts.seed);
    let objects = add_objects(host, workload, opts.replicas, &mut rng)?;
    validate_settings(policy, host, &opts.settings)?;
    let requests = (0..opts.replicas)
        .map(|_| pod_create_request(&objects.replica_set, &mut rng))
        .collect::<Result<Vec<_>, _>>()?;
    let tally = Tally::default();
    let started = Instant::now();
    let latencies = admit_all(policy, host, &requests, opts, &tally);
    Ok(make_report(
        workload,
        opts,
        objects,
        host,
        tally,
        &latencies,
        started.elapsed(),
    ))
}

/// Adds the Namespace, the Deployment (with a uid and the replica count), its ReplicaSet and the
/// manifest's other objects to the cluster state.
fn add_objects(
    host: &HostContext,
    workload: &Workload,
    replicas: usize,
    rng: &mut Rng,
) -> Result<Objects, RolloutError> {
    let mut deployment = workload.deployment.clone();
    if let Some(meta) = deployment.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("uid").or_insert_with(|| json!(rng.uuid()));
    }
    if let Some(spec) = deployment.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("replicas".into(), json!(replicas));
    }
    let (replica_set, hash) = replica_set_for(&deployment, &rng.uuid())?;
    let mut namespace = workload.namespace.clone();
    if let Some(meta) = namespace.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("uid").or_insert_with(|| json!(rng.uuid()));
    }
    let ours = [
        ("the Namespace", &namespace),
        ("the Deployment", &deployment),
        ("the ReplicaSet", &replica_set),
    ];
    let others = workload.others.iter().map(|o| ("an object of the manifest", o));
    for (what, obj) in ours.into_iter().chain(others) {
        host.lookups()
            .insert_object(obj.clone())
            .map_err(|message| RolloutError::ClusterState {
                what: what.into(),
                message,
            })?;
    }
    Ok(Objects { replica_set, hash })
}

/// Validates the settings once, as policy-server does when it loads the policy.
fn validate_settings(
    policy: &Policy,
    host: &Arc<HostContext>,
    settings: &PolicySettings,
) -> Result<(), RolloutError> {
    let mut instance = policy.instantiate(host).map_err(RolloutError::Instantiate)?;
    SettingsRejected::check(instance.validate_settings(settings)).map_err(RolloutError::InvalidSettings)
}

/// Sends every request through the policy on the workers (and draws progress); returns each
/// admission's latency.
fn admit_all(
    policy: &Policy,
    host: &Arc<HostContext>,
    requests: &[AdmissionRequest],
    opts: &RolloutOptions,
    tally: &Tally,
) -> Vec<Duration> {
    let next = AtomicUsize::new(0);
    let finished = AtomicBool::new(false);
    let latencies = Mutex::new(Vec::with_capacity(requests.len()));
    std::thread::scope(|scope| {
        if opts.progress && std::io::stderr().is_terminal() {
            scope.spawn(|| {
                while !finished.load(Ordering::Relaxed) {
                    tally.draw_progress(requests.len());
                    std::thread::sleep(Duration::from_millis(100));
                }
                tally.draw_progress(requests.len());
                eprintln!();
            });
        }
        let workers: Vec<_> = (0..opts.workers.min(requests.len()))
            .map(|_| {
                scope.spawn(|| {
                    let local = work(policy, host, requests, &opts.settings, &next, tally);
                    latencies
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend(local);
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        finished.store(true, Ordering::Relaxed);
    });
    latencies.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// One worker: takes the next request until none is left.
fn work(
    policy: &Policy,
    host: &Arc<HostContext>,
    requests: &[AdmissionRequest],
    settings: &PolicySettings,
    next: &AtomicUsize,
    tally: &Tally,
) -> Vec<Duration> {
    let mut latencies = Vec::new();
    while let Some(request) = requests.get(next.fetch_add(1, Ordering::Relaxed)) {
        let t0 = Instant::now();
        let result = policy.evaluate(host, request, settings);
        latencies.push(t0.elapsed());
        let pod = request.object.as_ref().unwrap_or(&Value::Null);
        let outcome = match result {
            Ok(resp) => {
                if !resp.allowed && resp.message() == DEADLINE_MESSAGE {
                    tally.count_deadline_exceeded();
                }
                classify(pod, &resp)
            }
            Err(e) => PodAdmission::Error(e.to_string()),
        };
        tally.count(&outcome);
    }
    latencies
}

/// The report of a finished run: the counts, the latencies and the host's lookup counters.
fn make_report(
    workload: &Workload,
    opts: &RolloutOptions,
    objects: Objects,
    host: &HostContext,
    tally: Tally,
    latencies: &[Duration],
    wall: Duration,
) -> RolloutReport {
    let counts = tally.into_counts();
    RolloutReport {
        deployment: workload.name().to_owned(),
        namespace: workload.namespace_name().to_owned(),
        replica_set: objects
            .replica_set
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        pod_template_hash: objects.hash,
        replicas: opts.replicas,
        workers: opts.workers,
        injected: counts.injected,
        skipped: counts.skipped,
        rejected: counts.rejected,
        deadline_exceeded: counts.deadline_exceeded,
        errors: counts.errors,
        lookups: host.stats(),
        latency: LatencySummary::from_durations(latencies),
        wall_time_ms: wall.as_secs_f64() * 1e3,
        throughput_per_s: if wall.is_zero() {
            0.0
        } else {
            latencies.len() as f64 / wall.as_secs_f64()
        },
        webhook_timeout: LimitReport::new(opts.webhook_timeout, latencies),
        policy_deadline: opts.policy_deadline.map(|d| LimitReport::new(d, latencies)),
        failure_samples: counts.samples,
    }
}
