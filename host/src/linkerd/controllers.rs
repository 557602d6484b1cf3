//! The Kubernetes side of a rollout, as the controllers and the API server play it: the
//! Deployment controller's ReplicaSet `<deploy>-<pod-template-hash>`, and the pod CREATE
//! AdmissionRequest the ReplicaSet controller causes, after the API server's defaulting, the
//! ServiceAccount and DefaultTolerationSeconds admission plugins. Nothing here is Linkerd's.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use thiserror::Error;

use kubewarden_engine::protocol::request::{AdmissionRequest, UserInfo};

/// A Deployment or ReplicaSet without a field the controllers need.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ShapeError {
    #[error("the Deployment has no {0}")]
    Deployment(&'static str),
    #[error("the ReplicaSet has no {0}")]
    ReplicaSet(&'static str),
}

/// Kubernetes' alphabet for generated names and hashes (`k8s.io/apimachinery/pkg/util/rand`).
pub const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

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

/// The ReplicaSet the Deployment controller creates, and its pod-template-hash.
pub fn replica_set_for(deployment: &Value, rs_uid: &str) -> Result<(Value, String), ShapeError> {
    let template = deployment
        .pointer("/spec/template")
        .ok_or(ShapeError::Deployment("spec.template"))?;
    let hash = pod_template_hash(template);
    let name = deployment
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or(ShapeError::Deployment("metadata.name"))?;
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
        .ok_or(ShapeError::Deployment("spec.template.metadata"))?;
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

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The user the ReplicaSet controller creates pods as.
fn replicaset_controller(rng: &mut Rng) -> UserInfo {
    UserInfo {
        username: Some("system:serviceaccount:kube-system:replicaset-controller".into()),
        uid: Some(rng.uuid()),
        groups: Some(
            [
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
                "system:authenticated",
            ]
            .map(String::from)
            .to_vec(),
        ),
        extra: None,
    }
}

/// The pod CREATE AdmissionRequest the ReplicaSet controller causes.
pub fn pod_create_request(rs: &Value, rng: &mut Rng) -> Result<AdmissionRequest, ShapeError> {
    let name = str_at(rs, "/metadata/name").ok_or(ShapeError::ReplicaSet("metadata.name"))?;
    let namespace = str_at(rs, "/metadata/namespace").ok_or(ShapeError::ReplicaSet("metadata.namespace"))?;
    let template = rs
        .pointer("/spec/template")
        .ok_or(ShapeError::ReplicaSet("spec.template"))?;
    let metadata = pod_metadata(rs, name, namespace, template);
    let mut spec = template
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    apply_api_server_defaults(&mut spec);
    let volume_name = format!("kube-api-access-{}", rng.safe_string(5));
    mount_service_account_token(&mut spec, &volume_name);
    add_default_tolerations(&mut spec);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {}});
    let uid = rng.uuid();
    Ok(AdmissionRequest::create(
        uid,
        Some(namespace.to_owned()),
        replicaset_controller(rng),
        pod,
    ))
}

/// `generateName`, namespace, the template's labels and annotations, the controller reference.
fn pod_metadata(rs: &Value, rs_name: &str, namespace: &str, template: &Value) -> Map<String, Value> {
    let mut metadata = Map::new();
    metadata.insert("generateName".into(), json!(format!("{rs_name}-")));
    metadata.insert("namespace".into(), json!(namespace));
    metadata.insert("creationTimestamp".into(), Value::Null);
    for key in ["labels", "annotations"] {
        if let Some(v) = template.pointer(&format!("/metadata/{key}")) {
            metadata.insert(key.into(), v.clone());
        }
    }
    let rs_uid = str_at(rs, "/metadata/uid").unwrap_or("");
    metadata.insert(
        "ownerReferences".into(),
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": rs_uid, "controller": true, "blockOwnerDeletion": true}]),
    );
    metadata
}

/// The API server's defaulting of a pod spec and its containers.
fn apply_api_server_defaults(spec: &mut Map<String, Value>) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "enableServiceLinks", json!(true));
    set_default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    set_default(spec, "priority", json!(0));
    for c in containers_mut(spec) {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let tag_latest = image.ends_with(":latest") || !image.rsplit('/').next().unwrap_or("").contains(':');
        set_default(
            c,
            "imagePullPolicy",
            json!(if tag_latest { "Always" } else { "IfNotPresent" }),
        );
        set_default(c, "resources", json!({}));
        set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
        set_default(c, "terminationMessagePolicy", json!("File"));
        for p in c
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(p) = p.as_object_mut() {
                set_default(p, "protocol", json!("TCP"));
            }
        }
    }
}

fn containers_mut(spec: &mut Map<String, Value>) -> impl Iterator<Item = &mut Map<String, Value>> {
    spec.iter_mut()
        .filter(|(k, _)| matches!(k.as_str(), "initContainers" | "containers"))
        .filter_map(|(_, v)| v.as_array_mut())
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// The ServiceAccount admission plugin: the account name, and its token volume mounted into
/// every container unless `automountServiceAccountToken: false`.
fn mount_service_account_token(spec: &mut Map<String, Value>, volume_name: &str) {
    let sa = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    spec.insert("serviceAccountName".into(), json!(sa));
    spec.insert("serviceAccount".into(), json!(sa));
    if spec.get("automountServiceAccountToken").and_then(Value::as_bool) == Some(false) {
        return;
    }
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"});
    for c in containers_mut(spec) {
        if let Some(m) = c
            .entry("volumeMounts")
            .or_insert_with(|| json!([]))
            .as_array_mut()
        {
            m.push(mount.clone());
        }
    }
    if let Some(v) = spec.entry("volumes").or_insert_with(|| json!([])).as_array_mut() {
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

/// The DefaultTolerationSeconds admission plugin.
fn add_default_tolerations(spec: &mut Map<String, Value>) {
    if let Some(t) = spec
        .entry("tolerations")
        .or_insert_with(|| json!([]))
        .as_array_mut()
    {
        for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
            t.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
            );
        }
    }
}
