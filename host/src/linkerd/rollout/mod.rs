//! The rollout of linkerd2#3358, played against the engine: the Deployment controller makes a
//! ReplicaSet `<deploy>-<pod-template-hash>`, the ReplicaSet controller asks for N pods, and
//! every pod CREATE AdmissionRequest (as the API server builds it after defaulting and the
//! ServiceAccount admission plugin) goes through the policy on W worker threads. Each evaluation
//! is a fresh instance of the shared pre-compiled module; all workers share one host context,
//! so the `get_resource` cache is shared like in policy-server.

use linkerd_injector_policy::annotations::CONTROL_PLANE_NS_LABEL;
use linkerd_injector_policy::control_plane::VALUES_KEY;
use linkerd_injector_policy::settings::PolicyOptions;
use linkerd_injector_policy::trust::BUNDLE_KEY;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use thiserror::Error;

use super::answer::{self, Injection};
pub use super::controllers::{
    Rng, SAFE_ALPHABET, ShapeError, fnv32a, pod_create_request, pod_template_hash, replica_set_for,
    safe_encode,
};
use crate::hostcalls::lookup::LookupStats;
use crate::protocol::request::{AdmissionRequest, PolicySettings};
use crate::protocol::response::{AdmissionResponse, DEADLINE_MESSAGE};
use crate::runtime::callback::HostContext;
use crate::runtime::engine::{EngineError, Policy};

#[derive(Debug, Error)]
pub enum RolloutError {
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
    #[error("Provided settings are not valid: {0}")]
    InvalidSettings(String),
    #[error("replicas must be at least 1 and workers at least 1")]
    Counts,
}

/// A dummy trust bundle for the default control plane (not a real certificate).
pub const DUMMY_TRUST_BUNDLE: &str = "-----BEGIN CERTIFICATE-----\nMIIBwDCCAWagAwIBAgIQZ3Rlc3QtdHJ1c3QtYW5jaG9yMAoGCCqGSM49BAMCMCkx\nJzAlBgNVBAMTHmlkZW50aXR5LmxpbmtlcmQuY2x1c3Rlci5sb2NhbDAeFw0yNjAx\n-----END CERTIFICATE-----\n";

/// The Helm values of a default `linkerd install` at edge-26.8.3 (key `values` of
/// `linkerd-config`; where it comes from is in the file).
pub const DEFAULT_LINKERD_VALUES: &str = include_str!("../../data/linkerd-config-values.yaml");

/// The objects of a Linkerd control plane the injector reads: Namespace `linkerd`, the
/// ConfigMap `linkerd/linkerd-identity-trust-roots` (`ca-bundle.crt`) and the ConfigMap
/// `linkerd/linkerd-config` (`values`).
/// The names are the policy's defaults (`policy.controlPlaneNamespace`, `policy.linkerdConfigMap`,
/// `policy.trustAnchorsConfigMap`), taken from the core so the two never differ.
pub fn default_control_plane() -> Vec<Value> {
    let policy = PolicyOptions::default();
    let ns = policy.control_plane_namespace.as_str();
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"linkerd.io/is-control-plane": "true", "kubernetes.io/metadata.name": ns}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": policy.trust_anchors_config_map, "namespace": ns},
            "data": {BUNDLE_KEY: DUMMY_TRUST_BUNDLE}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": policy.linkerd_config_map, "namespace": ns,
                "labels": {"linkerd.io/control-plane-component": "controller", CONTROL_PLANE_NS_LABEL: ns}},
            "data": {VALUES_KEY: DEFAULT_LINKERD_VALUES}}),
    ]
}

/// The Deployment, its Namespace and other objects of the rollout.
#[derive(Debug, Clone)]
pub struct Workload {
    pub deployment: Value,
    pub namespace: Value,
    pub others: Vec<Value>,
}

impl Workload {
    /// An nginx Deployment in namespace `rollout`, annotated `linkerd.io/inject: enabled`.
    pub fn default_nginx(replicas: usize) -> Self {
        Self {
            deployment: json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "nginx", "namespace": "rollout", "labels": {"app": "nginx"}, "generation": 1},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": "nginx"}},
                    "template": {
                        "metadata": {"labels": {"app": "nginx"}},
                        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
                    }
                }
            }),
            namespace: json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "rollout", "annotations": {"linkerd.io/inject": "enabled"}, "labels": {"kubernetes.io/metadata.name": "rollout"}}
            }),
            others: Vec::new(),
        }
    }

    /// Reads a manifest with a Deployment (the first one) and, ideally, its Namespace; other
    /// objects go into the cluster state as they are. A missing Namespace is made up without
    /// annotations.
    pub fn from_manifest(path: &Path) -> Result<Self, RolloutError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| RolloutError::ReadManifest {
            path: p.clone(),
            source,
        })?;
        let mut docs = Vec::new();
        for de in serde_yaml_ng::Deserializer::from_str(&text) {
            let doc = Value::deserialize(de).map_err(|source| RolloutError::ParseManifest {
                path: p.clone(),
                source,
            })?;
            match doc {
                Value::Null => {}
                Value::Object(ref m) if m.get("kind").and_then(Value::as_str) == Some("List") => docs.extend(
                    m.get("items")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                ),
                other => docs.push(other),
            }
        }
        let is = |d: &Value, api: &str, kind: &str| {
            d.get("apiVersion").and_then(Value::as_str) == Some(api)
                && d.get("kind").and_then(Value::as_str) == Some(kind)
        };
        let pos = docs
            .iter()
            .position(|d| is(d, "apps/v1", "Deployment"))
            .ok_or(RolloutError::NoDeployment(p))?;
        let mut deployment = docs.remove(pos);
        let ns_name = deployment
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_owned();
        if let Some(meta) = deployment.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("namespace".into(), Value::String(ns_name.clone()));
        }
        let namespace = match docs.iter().position(|d| {
            is(d, "v1", "Namespace") && d.pointer("/metadata/name").and_then(Value::as_str) == Some(&ns_name)
        }) {
            Some(i) => docs.remove(i),
            None => json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns_name}}),
        };
        Ok(Self {
            deployment,
            namespace,
            others: docs,
        })
    }

    fn name(&self) -> &str {
        self.deployment
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("deployment")
    }

    fn namespace_name(&self) -> &str {
        self.deployment
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
    }
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

/// Per-admission latency, milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

impl LatencySummary {
    pub fn from_durations(durations: &[Duration]) -> Self {
        if durations.is_empty() {
            return Self::default();
        }
        let mut ms: Vec<f64> = durations.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let pick = |q: f64| ms[((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
        Self {
            p50_ms: pick(0.50),
            p95_ms: pick(0.95),
            p99_ms: pick(0.99),
            max_ms: ms[ms.len() - 1],
            mean_ms: ms.iter().sum::<f64>() / ms.len() as f64,
        }
    }
}

/// How close admissions came to a limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LimitReport {
    pub limit_ms: f64,
    /// Admissions that took at least 80 % of the limit.
    pub near: usize,
    /// Admissions that took the limit or longer.
    pub exceeded: usize,
    /// Slowest admission as a share of the limit (1.0 = the limit).
    pub max_fraction: f64,
}

impl LimitReport {
    fn new(limit: Duration, durations: &[Duration]) -> Self {
        let limit_ms = limit.as_secs_f64() * 1e3;
        let near = durations
            .iter()
            .filter(|d| d.as_secs_f64() * 1e3 >= 0.8 * limit_ms)
            .count();
        let exceeded = durations.iter().filter(|d| **d >= limit).count();
        let max = durations
            .iter()
            .max()
            .map(|d| d.as_secs_f64() * 1e3)
            .unwrap_or(0.0);
        Self {
            limit_ms,
            near,
            exceeded,
            max_fraction: if limit_ms > 0.0 { max / limit_ms } else { 0.0 },
        }
    }
}

/// What happened to the pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RolloutReport {
    pub deployment: String,
    pub namespace: String,
    pub replica_set: String,
    pub pod_template_hash: String,
    pub replicas: usize,
    pub workers: usize,
    /// Allowed with a patch that adds a `linkerd-proxy` container.
    pub injected: usize,
    /// Allowed without a proxy.
    pub skipped: usize,
    /// `allowed: false` (includes guest errors and deadline interruptions).
    pub rejected: usize,
    /// Of the rejected: interrupted by the policy deadline.
    pub deadline_exceeded: usize,
    /// Engine failures (instantiation, patch that cannot be decoded or applied).
    pub errors: usize,
    pub lookups: LookupStats,
    pub latency: LatencySummary,
    pub wall_time_ms: f64,
    pub throughput_per_s: f64,
    pub webhook_timeout: LimitReport,
    pub policy_deadline: Option<LimitReport>,
    /// A few rejection / error messages, with counts.
    pub failure_samples: BTreeMap<String, usize>,
}

/// What one pod admission of the rollout came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodAdmission {
    /// Allowed, and the module says it injected the proxy.
    Injected,
    /// Allowed without a proxy (skipped, or not considered).
    Skipped,
    Rejected(String),
    /// The engine failed, or the module's patch does not apply to the pod.
    Error(String),
}

/// Classifies a response to a pod CREATE by the module's own answer ([`Injection`]); its patch
/// must apply to the pod.
pub fn classify(pod: &Value, response: &AdmissionResponse) -> PodAdmission {
    if !response.allowed {
        return PodAdmission::Rejected(response.message().to_owned());
    }
    if let Err(e) = answer::mutated(pod, response) {
        return PodAdmission::Error(e.to_string());
    }
    match Injection::of(response) {
        Injection::Injected => PodAdmission::Injected,
        Injection::Skipped(_) | Injection::NotConsidered => PodAdmission::Skipped,
    }
}

/// The counts of a rollout, shared by the workers.
#[derive(Debug, Default)]
struct Tally {
    injected: AtomicUsize,
    skipped: AtomicUsize,
    rejected: AtomicUsize,
    errors: AtomicUsize,
    deadline_exceeded: AtomicUsize,
    /// Admissions finished, of any kind.
    done: AtomicUsize,
    /// Rejection and error messages (the first ten distinct ones), with counts.
    samples: Mutex<BTreeMap<String, usize>>,
}

impl Tally {
    fn count(&self, outcome: &PodAdmission) {
        let counter = match outcome {
            PodAdmission::Injected => &self.injected,
            PodAdmission::Skipped => &self.skipped,
            PodAdmission::Rejected(m) => {
                self.sample(format!("rejected: {m}"));
                &self.rejected
            }
            PodAdmission::Error(m) => {
                self.sample(format!("error: {m}"));
                &self.errors
            }
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    fn sample(&self, label: String) {
        let mut s = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        if s.len() < 10 || s.contains_key(&label) {
            *s.entry(label).or_default() += 1;
        }
    }

    fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::Relaxed)
    }

    fn draw_progress(&self, total: usize) {
        let n = Self::get(&self.done);
        let width = 30;
        let filled = (n * width).checked_div(total).unwrap_or(0);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {n}/{total}  injected {}  skipped {}  rejected {}  errors {}",
            "#".repeat(filled),
            "-".repeat(width - filled),
            Self::get(&self.injected),
            Self::get(&self.skipped),
            Self::get(&self.rejected),
            Self::get(&self.errors),
        );
        let _ = err.flush();
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
    Ok(report(
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
    instance
        .validate_settings(settings)
        .into_result()
        .map_err(RolloutError::InvalidSettings)
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
                    tally.deadline_exceeded.fetch_add(1, Ordering::Relaxed);
                }
                classify(pod, &resp)
            }
            Err(e) => PodAdmission::Error(e.to_string()),
        };
        tally.count(&outcome);
    }
    latencies
}

fn report(
    workload: &Workload,
    opts: &RolloutOptions,
    objects: Objects,
    host: &HostContext,
    tally: Tally,
    latencies: &[Duration],
    wall: Duration,
) -> RolloutReport {
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
        injected: Tally::get(&tally.injected),
        skipped: Tally::get(&tally.skipped),
        rejected: Tally::get(&tally.rejected),
        deadline_exceeded: Tally::get(&tally.deadline_exceeded),
        errors: Tally::get(&tally.errors),
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
        failure_samples: tally.samples.into_inner().unwrap_or_else(PoisonError::into_inner),
    }
}

impl RolloutReport {
    /// The human summary.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let push = |s: &mut String, line: String| {
            s.push_str(&line);
            s.push('\n');
        };
        push(
            &mut s,
            format!(
                "rollout of Deployment {}/{}: {} replicas via ReplicaSet {} (pod-template-hash {}), {} workers",
                self.namespace,
                self.deployment,
                self.replicas,
                self.replica_set,
                self.pod_template_hash,
                self.workers
            ),
        );
        push(&mut s, format!("  injected  {:>7}", self.injected));
        push(&mut s, format!("  skipped   {:>7}", self.skipped));
        push(
            &mut s,
            format!(
                "  rejected  {:>7}  (policy deadline exceeded: {})",
                self.rejected, self.deadline_exceeded
            ),
        );
        push(&mut s, format!("  errors    {:>7}", self.errors));
        push(
            &mut s,
            format!(
                "  lookups made {} (failed {}), served from cache {}, lists {}",
                self.lookups.made, self.lookups.failed, self.lookups.cached, self.lookups.lists
            ),
        );
        for (resource, r) in &self.lookups.by_resource {
            push(
                &mut s,
                format!(
                    "    {resource:<32} made {:>6}  cached {:>6}  failed {:>6}",
                    r.made, r.cached, r.failed
                ),
            );
        }
        let l = &self.latency;
        push(
            &mut s,
            format!(
                "  latency per admission: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms
            ),
        );
        push(
            &mut s,
            format!(
                "  throughput: {:.1} admissions/s (wall time {:.2} s)",
                self.throughput_per_s,
                self.wall_time_ms / 1e3
            ),
        );
        let limit = |name: &str, r: &LimitReport| {
            let verdict = if r.exceeded > 0 {
                format!("{} admissions exceeded it", r.exceeded)
            } else if r.near > 0 {
                format!("{} admissions came near it (>= 80%)", r.near)
            } else {
                "no admission came near it".to_owned()
            };
            format!(
                "  {name} {:.1} s: {verdict} (slowest: {:.1}% of it)",
                r.limit_ms / 1e3,
                r.max_fraction * 100.0
            )
        };
        push(&mut s, limit("webhook timeout", &self.webhook_timeout));
        if let Some(d) = &self.policy_deadline {
            push(&mut s, limit("policy deadline", d));
        }
        for (m, n) in &self.failure_samples {
            push(&mut s, format!("  {n} x {m}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_and_names() {
        assert_eq!(fnv32a(b""), 0x811c_9dc5);
        assert_eq!(fnv32a(b"a"), 0xe40c_292c);
        assert_eq!(safe_encode("0123"), "4567"); // (48 + i) % 27 indexes the alphabet
        let w = Workload::default_nginx(3);
        let t = w.deployment.pointer("/spec/template").unwrap();
        let h = pod_template_hash(t);
        assert!(h.chars().all(|c| SAFE_ALPHABET.contains(&(c as u8))) && !h.is_empty());
        let mut reordered = t.clone();
        reordered["spec"] = json!({"containers": [{"ports": [{"containerPort": 80}], "image": "nginx:1.27", "name": "nginx"}]});
        assert_eq!(pod_template_hash(&reordered), h);
    }

    #[test]
    fn pod_request_shape() {
        let w = Workload::default_nginx(3);
        let mut d = w.deployment.clone();
        d["metadata"]["uid"] = json!("d-uid");
        let (rs, hash) = replica_set_for(&d, "rs-uid").unwrap();
        assert_eq!(rs["metadata"]["name"], json!(format!("nginx-{hash}")));
        assert_eq!(rs["metadata"]["ownerReferences"][0]["uid"], json!("d-uid"));
        let mut rng = Rng::new(1);
        let req = pod_create_request(&rs, &mut rng).unwrap();
        let pod = req.object.clone().unwrap();
        assert_eq!(req.namespace.as_deref(), Some("rollout"));
        assert_eq!(req.name, None);
        assert_eq!(pod["metadata"]["generateName"], json!(format!("nginx-{hash}-")));
        assert_eq!(pod["metadata"]["creationTimestamp"], Value::Null);
        assert_eq!(pod["metadata"]["labels"]["pod-template-hash"], json!(hash));
        assert_eq!(pod["metadata"]["ownerReferences"][0]["controller"], json!(true));
        let vol = pod["spec"]["volumes"][0]["name"].as_str().unwrap();
        assert!(vol.starts_with("kube-api-access-") && vol.len() == "kube-api-access-".len() + 5);
        assert_eq!(
            pod["spec"]["containers"][0]["volumeMounts"][0]["name"],
            json!(vol)
        );
        assert_eq!(pod["spec"]["serviceAccountName"], json!("default"));
        assert_eq!(pod["spec"]["containers"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn a_replica_set_without_what_the_pod_needs_is_an_error() {
        let mut rng = Rng::new(1);
        let rs = json!({"metadata": {"name": "web-1", "namespace": "shop"}});
        assert_eq!(
            pod_create_request(&rs, &mut rng).unwrap_err(),
            ShapeError::ReplicaSet("spec.template")
        );
        let rs = json!({"metadata": {"name": "web-1"}, "spec": {"template": {}}});
        assert_eq!(
            pod_create_request(&rs, &mut rng).unwrap_err(),
            ShapeError::ReplicaSet("metadata.namespace")
        );
    }

    #[test]
    fn classifies_by_the_modules_answer() {
        let pod = json!({"spec": {"containers": [{"name": "app"}]}});
        let with = |injection: &str, ops: Value| AdmissionResponse {
            allowed: true,
            patch: Some(base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                ops.to_string(),
            )),
            audit_annotations: Some(BTreeMap::from([("injection".to_owned(), injection.to_owned())])),
            ..Default::default()
        };
        let add = json!([{"op": "add", "path": "/spec/containers/0", "value": {"name": "linkerd-proxy"}}]);
        assert_eq!(classify(&pod, &with("injected", add)), PodAdmission::Injected);
        let annotate = json!([{"op": "add", "path": "/metadata", "value": {}}]);
        assert_eq!(
            classify(&pod, &with("skipped: hostNetwork is enabled", annotate)),
            PodAdmission::Skipped
        );
        let bad = with("injected", json!([{"op": "remove", "path": "/nope"}]));
        assert!(matches!(classify(&pod, &bad), PodAdmission::Error(m) if m.starts_with("cannot apply")));
        assert_eq!(
            classify(
                &pod,
                &AdmissionResponse {
                    allowed: true,
                    ..Default::default()
                }
            ),
            PodAdmission::Skipped,
            "no injection annotation: not considered"
        );
        assert_eq!(
            classify(&pod, &AdmissionResponse::reject("u", "no", 400)),
            PodAdmission::Rejected("no".into())
        );
    }

    #[test]
    fn percentiles() {
        let d: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = LatencySummary::from_durations(&d);
        assert_eq!(
            (
                l.p50_ms.round(),
                l.p95_ms.round(),
                l.p99_ms.round(),
                l.max_ms.round()
            ),
            (50.0, 95.0, 99.0, 100.0)
        );
    }
}
