//! The rollout of linkerd2#3358, played against the engine: the Deployment controller makes a
//! ReplicaSet `<deploy>-<pod-template-hash>`, the ReplicaSet controller asks for N pods, and
//! every pod CREATE AdmissionRequest (as the API server builds it after defaulting and the
//! ServiceAccount admission plugin) goes through the policy on W worker threads. Each evaluation
//! is a fresh instance of the shared pre-compiled module; all workers share one host context,
//! so the `get_resource` cache is shared like in policy-server.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use thiserror::Error;

use crate::hostcalls::lookup::LookupStats;
use crate::protocol::request::{AdmissionRequest, PolicySettings};
use crate::protocol::response::{AdmissionResponse, DEADLINE_MESSAGE};
use crate::runtime::callback::HostContext;
use crate::runtime::engine::{EngineError, Policy};

/// Kubernetes' alphabet for generated names and hashes (`k8s.io/apimachinery/pkg/util/rand`).
pub const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Name of the proxy container the injector adds.
pub const PROXY_CONTAINER: &str = "linkerd-proxy";

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
    #[error("the Deployment has no {0}")]
    DeploymentShape(&'static str),
    #[error("cannot add {what} to the cluster state: {message}")]
    ClusterState { what: String, message: String },
    #[error("cannot instantiate the policy to validate its settings: {0}")]
    Instantiate(#[source] EngineError),
    #[error("Provided settings are not valid: {0}")]
    InvalidSettings(String),
    #[error("replicas must be at least 1 and workers at least 1")]
    Counts,
}

/// A small deterministic PRNG (xorshift64*), so a seed reproduces a rollout.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// `utilrand.String(n)`: n characters of the safe alphabet.
    pub fn safe_string(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| SAFE_ALPHABET[(self.next_u64() % SAFE_ALPHABET.len() as u64) as usize] as char)
            .collect()
    }

    pub fn uuid(&mut self) -> String {
        let (a, b) = (self.next_u64(), self.next_u64());
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | (b >> 48) & 0x3fff,
            b & 0xffff_ffff_ffff
        )
    }
}

/// FNV-1a, 32 bits.
pub fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// Kubernetes' `rand.SafeEncodeString`: each character mapped into the safe alphabet.
pub fn safe_encode(s: &str) -> String {
    s.chars()
        .map(|c| SAFE_ALPHABET[(c as usize) % SAFE_ALPHABET.len()] as char)
        .collect()
}

fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> = map.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The pod-template-hash: FNV-32a of the template (canonical JSON; Kubernetes hashes a
/// spew dump of the Go struct, so values differ from a real cluster), decimal, safe-encoded.
pub fn pod_template_hash(template: &Value) -> String {
    let bytes = serde_json::to_vec(&canonical(template)).unwrap_or_default();
    safe_encode(&fnv32a(&bytes).to_string())
}

/// A dummy trust bundle for the default control plane (not a real certificate).
pub const DUMMY_TRUST_BUNDLE: &str = "-----BEGIN CERTIFICATE-----\nMIIBwDCCAWagAwIBAgIQZ3Rlc3QtdHJ1c3QtYW5jaG9yMAoGCCqGSM49BAMCMCkx\nJzAlBgNVBAMTHmlkZW50aXR5LmxpbmtlcmQuY2x1c3Rlci5sb2NhbDAeFw0yNjAx\n-----END CERTIFICATE-----\n";

/// The objects of a Linkerd control plane the injector reads: Namespace `linkerd` and the
/// ConfigMap `linkerd/linkerd-identity-trust-roots` (`ca-bundle.crt`).
pub fn default_control_plane() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "linkerd", "labels": {"linkerd.io/is-control-plane": "true", "kubernetes.io/metadata.name": "linkerd"}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "linkerd-identity-trust-roots", "namespace": "linkerd"},
            "data": {"ca-bundle.crt": DUMMY_TRUST_BUNDLE}}),
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

/// The ReplicaSet the Deployment controller creates, and its pod-template-hash.
pub fn replica_set_for(deployment: &Value, rs_uid: &str) -> Result<(Value, String), RolloutError> {
    let template = deployment
        .pointer("/spec/template")
        .ok_or(RolloutError::DeploymentShape("spec.template"))?;
    let hash = pod_template_hash(template);
    let name = deployment
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or(RolloutError::DeploymentShape("metadata.name"))?;
    let namespace = deployment
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let deploy_uid = deployment
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let replicas = deployment.pointer("/spec/replicas").cloned().unwrap_or(json!(1));
    let mut template = template.clone();
    let labels = template
        .pointer_mut("/metadata")
        .and_then(Value::as_object_mut)
        .map(|m| m.entry("labels").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
        .ok_or(RolloutError::DeploymentShape("spec.template.metadata"))?;
    labels.insert("pod-template-hash".into(), Value::String(hash.clone()));
    let labels = Value::Object(labels.clone());
    let mut selector = deployment
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(sel) = selector.as_object_mut() {
        let ml = sel.entry("matchLabels").or_insert_with(|| json!({}));
        if let Some(ml) = ml.as_object_mut() {
            ml.insert("pod-template-hash".into(), Value::String(hash.clone()));
        }
    }
    let rs = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{name}-{hash}"),
            "namespace": namespace,
            "uid": rs_uid,
            "labels": labels,
            "annotations": {
                "deployment.kubernetes.io/desired-replicas": replicas.to_string(),
                "deployment.kubernetes.io/max-replicas": replicas.to_string(),
                "deployment.kubernetes.io/revision": "1"
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": deploy_uid,
                "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {"replicas": replicas, "selector": selector, "template": template}
    });
    Ok((rs, hash))
}

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.entry(key.to_owned()).or_insert(value);
}

/// The pod CREATE AdmissionRequest the ReplicaSet controller causes.
pub fn pod_create_request(rs: &Value, rng: &mut Rng) -> AdmissionRequest {
    let rs_name = rs
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("rs");
    let namespace = rs
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    let rs_uid = rs.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
    let template = rs.pointer("/spec/template").cloned().unwrap_or_else(|| json!({}));
    let mut metadata = Map::new();
    metadata.insert("generateName".into(), json!(format!("{rs_name}-")));
    metadata.insert("namespace".into(), json!(namespace));
    metadata.insert("creationTimestamp".into(), Value::Null);
    if let Some(labels) = template.pointer("/metadata/labels") {
        metadata.insert("labels".into(), labels.clone());
    }
    if let Some(annotations) = template.pointer("/metadata/annotations") {
        metadata.insert("annotations".into(), annotations.clone());
    }
    metadata.insert(
        "ownerReferences".into(),
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": rs_uid, "controller": true, "blockOwnerDeletion": true}]),
    );

    let mut spec = template
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // API server defaulting
    set_default(&mut spec, "restartPolicy", json!("Always"));
    set_default(&mut spec, "terminationGracePeriodSeconds", json!(30));
    set_default(&mut spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(&mut spec, "securityContext", json!({}));
    set_default(&mut spec, "schedulerName", json!("default-scheduler"));
    set_default(&mut spec, "enableServiceLinks", json!(true));
    set_default(&mut spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    set_default(&mut spec, "priority", json!(0));
    // ServiceAccount admission plugin
    let sa = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    spec.insert("serviceAccountName".into(), json!(sa));
    spec.insert("serviceAccount".into(), json!(sa));
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let volume_name = format!("kube-api-access-{}", rng.safe_string(5));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"});
    for key in ["initContainers", "containers"] {
        if let Some(containers) = spec.get_mut(key).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                let tag_latest =
                    image.ends_with(":latest") || !image.rsplit('/').next().unwrap_or("").contains(':');
                set_default(
                    c,
                    "imagePullPolicy",
                    json!(if tag_latest { "Always" } else { "IfNotPresent" }),
                );
                set_default(c, "resources", json!({}));
                set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
                set_default(c, "terminationMessagePolicy", json!("File"));
                if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                    for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                        set_default(p, "protocol", json!("TCP"));
                    }
                }
                if automount {
                    let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
                    if let Some(m) = mounts.as_array_mut() {
                        m.push(mount.clone());
                    }
                }
            }
        }
    }
    if automount {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(v) = volumes.as_array_mut() {
            v.push(json!({
                "name": volume_name,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                    ]
                }
            }));
        }
    }
    // DefaultTolerationSeconds admission plugin
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(t) = tolerations.as_array_mut() {
        for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
            t.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
            );
        }
    }

    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {}});
    let gvk = json!({"group": "", "version": "v1", "kind": "Pod"});
    let gvr = json!({"group": "", "version": "v1", "resource": "pods"});
    let request = json!({
        "uid": rng.uuid(),
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "namespace": namespace,
        "operation": "CREATE",
        "userInfo": {
            "username": "system:serviceaccount:kube-system:replicaset-controller",
            "uid": rng.uuid(),
            "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]
        },
        "object": pod,
        "dryRun": false,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    });
    // the shape above always matches AdmissionRequest
    serde_json::from_value(request).unwrap_or_else(|_| unreachable_request())
}

fn unreachable_request() -> AdmissionRequest {
    AdmissionRequest {
        uid: String::new(),
        kind: Default::default(),
        resource: Default::default(),
        sub_resource: None,
        request_kind: None,
        request_resource: None,
        request_sub_resource: None,
        name: None,
        namespace: None,
        operation: "CREATE".into(),
        user_info: Default::default(),
        object: None,
        old_object: None,
        dry_run: None,
        options: None,
    }
}

/// What one admission came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Injected,
    Skipped,
    Rejected(String),
    Error(String),
}

fn has_proxy(pod: &Value) -> bool {
    ["/spec/containers", "/spec/initContainers"].iter().any(|p| {
        pod.pointer(p).and_then(Value::as_array).is_some_and(|cs| {
            cs.iter()
                .any(|c| c.get("name").and_then(Value::as_str) == Some(PROXY_CONTAINER))
        })
    })
}

/// Classifies a response to a pod CREATE: injected if applying its patch adds a `linkerd-proxy`
/// container (or native-sidecar init container).
pub fn classify(pod: &Value, response: &AdmissionResponse) -> Outcome {
    if !response.allowed {
        return Outcome::Rejected(response.message().to_owned());
    }
    let patch = match response.decoded_patch() {
        Ok(None) => return Outcome::Skipped,
        Ok(Some(p)) => p,
        Err(e) => return Outcome::Error(e.to_string()),
    };
    let mut patched = pod.clone();
    if let Err(e) = json_patch::patch(&mut patched, &patch) {
        return Outcome::Error(format!("the patch does not apply to the pod: {e}"));
    }
    if has_proxy(&patched) && !has_proxy(pod) {
        Outcome::Injected
    } else {
        Outcome::Skipped
    }
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
    let mut deployment = workload.deployment.clone();
    if let Some(meta) = deployment.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("uid").or_insert_with(|| json!(rng.uuid()));
    }
    if let Some(spec) = deployment.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("replicas".into(), json!(opts.replicas));
    }
    let (rs, hash) = replica_set_for(&deployment, &rng.uuid())?;
    let mut namespace = workload.namespace.clone();
    if let Some(meta) = namespace.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("uid").or_insert_with(|| json!(rng.uuid()));
    }
    for (what, obj) in [
        ("the Namespace", &namespace),
        ("the Deployment", &deployment),
        ("the ReplicaSet", &rs),
    ]
    .into_iter()
    .chain(workload.others.iter().map(|o| ("an object of the manifest", o)))
    {
        host.lookups()
            .insert_object(obj.clone())
            .map_err(|message| RolloutError::ClusterState {
                what: what.into(),
                message,
            })?;
    }

    // policy-server validates settings once, when it loads the policy
    let mut instance = policy.instantiate(host).map_err(RolloutError::Instantiate)?;
    let validation = instance.validate_settings(&opts.settings);
    if !validation.valid {
        return Err(RolloutError::InvalidSettings(
            validation.message.unwrap_or_default(),
        ));
    }
    drop(instance);

    let requests: Vec<AdmissionRequest> = (0..opts.replicas)
        .map(|_| pod_create_request(&rs, &mut rng))
        .collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let counts = [
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ];
    let samples: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
    let latencies: Mutex<Vec<Duration>> = Mutex::new(Vec::with_capacity(opts.replicas));
    let deadline_hits = AtomicUsize::new(0);
    let finished = AtomicBool::new(false);
    let draw = opts.progress && std::io::stderr().is_terminal();
    let started = Instant::now();

    std::thread::scope(|scope| {
        if draw {
            scope.spawn(|| {
                while !finished.load(Ordering::Relaxed) {
                    draw_progress(&done, &counts, opts.replicas);
                    std::thread::sleep(Duration::from_millis(100));
                }
                draw_progress(&done, &counts, opts.replicas);
                eprintln!();
            });
        }
        let workers: Vec<_> = (0..opts.workers.min(opts.replicas))
            .map(|_| {
                scope.spawn(|| {
                    let mut local = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(request) = requests.get(i) else {
                            break;
                        };
                        let t0 = Instant::now();
                        let result = policy.evaluate(host, request, &opts.settings);
                        local.push(t0.elapsed());
                        let pod = request.object.clone().unwrap_or(Value::Null);
                        let outcome = match result {
                            Ok(resp) => {
                                if !resp.allowed && resp.message() == DEADLINE_MESSAGE {
                                    deadline_hits.fetch_add(1, Ordering::Relaxed);
                                }
                                classify(&pod, &resp)
                            }
                            Err(e) => Outcome::Error(e.to_string()),
                        };
                        let slot = match &outcome {
                            Outcome::Injected => 0,
                            Outcome::Skipped => 1,
                            Outcome::Rejected(m) | Outcome::Error(m) => {
                                let mut s = samples.lock().unwrap_or_else(PoisonError::into_inner);
                                let label = if matches!(outcome, Outcome::Rejected(_)) {
                                    "rejected"
                                } else {
                                    "error"
                                };
                                if s.len() < 10 || s.contains_key(&format!("{label}: {m}")) {
                                    *s.entry(format!("{label}: {m}")).or_default() += 1;
                                }
                                if label == "rejected" { 2 } else { 3 }
                            }
                        };
                        counts[slot].fetch_add(1, Ordering::Relaxed);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
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

    let wall = started.elapsed();
    let latencies = latencies.into_inner().unwrap_or_else(PoisonError::into_inner);
    let processed = latencies.len();
    Ok(RolloutReport {
        deployment: workload.name().to_owned(),
        namespace: workload.namespace_name().to_owned(),
        replica_set: rs
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        pod_template_hash: hash,
        replicas: opts.replicas,
        workers: opts.workers,
        injected: counts[0].load(Ordering::Relaxed),
        skipped: counts[1].load(Ordering::Relaxed),
        rejected: counts[2].load(Ordering::Relaxed),
        deadline_exceeded: deadline_hits.load(Ordering::Relaxed),
        errors: counts[3].load(Ordering::Relaxed),
        lookups: host.stats(),
        latency: LatencySummary::from_durations(&latencies),
        wall_time_ms: wall.as_secs_f64() * 1e3,
        throughput_per_s: if wall.is_zero() {
            0.0
        } else {
            processed as f64 / wall.as_secs_f64()
        },
        webhook_timeout: LimitReport::new(opts.webhook_timeout, &latencies),
        policy_deadline: opts.policy_deadline.map(|d| LimitReport::new(d, &latencies)),
        failure_samples: samples.into_inner().unwrap_or_else(PoisonError::into_inner),
    })
}

fn draw_progress(done: &AtomicUsize, counts: &[AtomicUsize; 4], total: usize) {
    let n = done.load(Ordering::Relaxed);
    let width = 30;
    let filled = (n * width).checked_div(total).unwrap_or(0);
    let c: Vec<usize> = counts.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r[{}{}] {n}/{total}  injected {}  skipped {}  rejected {}  errors {}",
        "#".repeat(filled),
        "-".repeat(width - filled),
        c[0],
        c[1],
        c[2],
        c[3]
    );
    let _ = err.flush();
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
        let req = pod_create_request(&rs, &mut rng);
        let pod = req.object.clone().unwrap();
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
        assert!(!has_proxy(&pod));
    }

    #[test]
    fn classifies() {
        let pod = json!({"spec": {"containers": [{"name": "app"}]}});
        let with = |ops: Value| AdmissionResponse {
            allowed: true,
            patch: Some(base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                ops.to_string(),
            )),
            ..Default::default()
        };
        let add =
            with(json!([{"op": "add", "path": "/spec/containers/0", "value": {"name": "linkerd-proxy"}}]));
        assert_eq!(classify(&pod, &add), Outcome::Injected);
        let other = with(json!([{"op": "add", "path": "/metadata", "value": {}}]));
        assert_eq!(classify(&pod, &other), Outcome::Skipped);
        let bad = with(json!([{"op": "remove", "path": "/nope"}]));
        assert!(matches!(classify(&pod, &bad), Outcome::Error(_)));
        assert_eq!(
            classify(&pod, &AdmissionResponse::reject("u", "no", 400)),
            Outcome::Rejected("no".into())
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
