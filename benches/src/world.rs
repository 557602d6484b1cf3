//! Requests and cluster state shared by the benchmarks (`core`, `engine` and `profile`).
//!
//! Pods are made the way the rollout of `injector-host` makes them: a Deployment, its ReplicaSet
//! (`<deploy>-<pod-template-hash>`) and the pod CREATE AdmissionRequest the API server sends
//! after defaulting and the ServiceAccount admission plugin. Every scenario runs with empty
//! settings (the policy's defaults), the trust anchors coming from Linkerd's ConfigMap.

use std::collections::BTreeSet;
use std::sync::Arc;

use injector_host::linkerd::rollout::{Rng, default_control_plane, pod_create_request, replica_set_for};
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, Lookups};
use kubewarden_engine::{
    AdmissionRequest, ClusterState, ContextAwareResource, FaultPlan, HostContext, LogSink, LookupSource,
    PolicySettings,
};
use serde_json::{Value, json};

/// Namespace annotated `linkerd.io/inject: enabled`.
pub const MESHED_NS: &str = "shop";
/// Namespace without the annotation.
pub const PLAIN_NS: &str = "plain";

/// One request of a benchmark.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Short id (used in criterion ids and tables).
    pub id: String,
    /// What it is, for the tables.
    pub label: String,
    pub request: AdmissionRequest,
    /// The `validate` payload exactly as the engine builds it.
    pub payload: Vec<u8>,
    /// Size of `request.object` as compact JSON.
    pub object_bytes: usize,
}

/// Empty settings (policy defaults), as `injector-host rollout` uses by default.
pub fn settings() -> PolicySettings {
    PolicySettings::default()
}

/// `{"request": ..., "settings": ...}`, as `Instance::validate` builds it.
pub fn payload(request: &AdmissionRequest, settings: &PolicySettings) -> Vec<u8> {
    serde_json::to_vec(&json!({"request": request, "settings": settings})).expect("payload")
}

fn scenario(id: &str, label: &str, request: AdmissionRequest) -> Scenario {
    let object_bytes = request
        .object
        .as_ref()
        .map(|o| serde_json::to_vec(o).map(|v| v.len()).unwrap_or(0))
        .unwrap_or(0);
    Scenario {
        id: id.into(),
        label: label.into(),
        payload: payload(&request, &settings()),
        request,
        object_bytes,
    }
}

/// The application container of a typical web Deployment.
fn app_container(name: &str, port: u64) -> Value {
    json!({
        "name": name,
        "image": format!("ghcr.io/example/{name}:1.4.2"),
        "args": [format!("--port={port}"), format!("--metrics-port={}", port + 1000)],
        "ports": [
            {"name": "http", "containerPort": port},
            {"name": "metrics", "containerPort": port + 1000}
        ],
        "env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "LOG_FORMAT", "value": "json"},
            {"name": "HTTP_PORT", "value": port.to_string()},
            {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": "db", "key": "url"}}},
            {"name": "CACHE_TTL", "value": "30s"},
            {"name": "FEATURE_FLAGS", "value": "checkout-v2,search-v3"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}
        ],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": port}, "initialDelaySeconds": 5, "periodSeconds": 10},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": port}, "periodSeconds": 5},
        "volumeMounts": [{"name": "config", "mountPath": format!("/etc/{name}")}]
    })
}

fn deployment(name: &str, namespace: &str, containers: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("{name}-deploy-uid"),
            "labels": {"app": name}, "generation": 1},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {
                    "labels": {"app": name, "tier": "frontend", "version": "v1"},
                    "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9080"}
                },
                "spec": {
                    "containers": containers,
                    "volumes": [{"name": "config", "configMap": {"name": format!("{name}-config")}}]
                }
            }
        }
    })
}

/// `n` env vars of ~70 bytes each.
fn env_vars(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"name": format!("VAR_{i:06}"), "value": format!("value-{i:06}-abcdefghijklmnopqrstuvwxyz0123456789")}))
        .collect()
}

/// Everything the scenarios need in the cluster: the Linkerd control plane, the two
/// namespaces, and the Deployments and ReplicaSets owning the pods.
pub struct World {
    pub objects: Vec<Value>,
    rng: Rng,
}

impl World {
    /// A host whose cluster state holds every object of this world (guest logs dropped).
    pub fn host(&self, name: &str, resources: BTreeSet<ContextAwareResource>) -> Arc<HostContext> {
        let mut state = ClusterState::new();
        for o in &self.objects {
            state.insert(o.clone()).expect("cluster object");
        }
        Arc::new(HostContext::new(
            name,
            resources,
            Lookups::new(LookupSource::Cluster(ClusterLookup::new(state, FaultPlan::new()))),
            LogSink::Discard,
        ))
    }

    pub fn new() -> Self {
        let mut objects = default_control_plane();
        objects.push(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": MESHED_NS, "uid": "shop-uid",
                "annotations": {"linkerd.io/inject": "enabled"},
                "labels": {"kubernetes.io/metadata.name": MESHED_NS}}}));
        objects.push(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": PLAIN_NS, "uid": "plain-uid",
                "labels": {"kubernetes.io/metadata.name": PLAIN_NS}}}));
        Self {
            objects,
            rng: Rng::new(3358),
        }
    }

    /// A pod CREATE of the ReplicaSet of a new Deployment; the Deployment and ReplicaSet are
    /// added to the cluster.
    fn deployment_pod(&mut self, name: &str, namespace: &str, containers: Vec<Value>) -> AdmissionRequest {
        let deploy = deployment(name, namespace, containers);
        let (rs, _hash) = replica_set_for(&deploy, &format!("{name}-rs-uid")).expect("replicaset");
        let request = pod_create_request(&rs, &mut self.rng).expect("a pod of the ReplicaSet");
        self.objects.push(deploy);
        self.objects.push(rs);
        request
    }

    /// A typical web Deployment's pod (one container with ports, env, probes, resources).
    pub fn typical(&mut self) -> Scenario {
        let r = self.deployment_pod("web", MESHED_NS, vec![app_container("web", 8080)]);
        scenario("typical", "typical Deployment pod", r)
    }

    /// The typical pod created directly: no owner.
    pub fn bare(&mut self) -> Scenario {
        let mut r = self.deployment_pod("bare", MESHED_NS, vec![app_container("web", 8080)]);
        let meta = r
            .object
            .as_mut()
            .and_then(|o| o.get_mut("metadata"))
            .and_then(Value::as_object_mut)
            .expect("metadata");
        meta.remove("ownerReferences");
        meta.remove("generateName");
        meta.insert("name".into(), json!("web-debug"));
        r.name = Some("web-debug".into());
        scenario("bare", "bare pod (no owner)", r)
    }

    /// The typical pod in a namespace that does not ask for injection.
    pub fn skipped(&mut self) -> Scenario {
        let r = self.deployment_pod("web", PLAIN_NS, vec![app_container("web", 8080)]);
        scenario("skipped", "skipped pod (namespace not enabled)", r)
    }

    /// A Service CREATE.
    pub fn service(&mut self) -> Scenario {
        let svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": MESHED_NS, "labels": {"app": "web"}},
            "spec": {
                "type": "ClusterIP",
                "selector": {"app": "web"},
                "ports": [
                    {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                    {"name": "mysql", "port": 3306, "targetPort": 3306, "protocol": "TCP"}
                ],
                "sessionAffinity": "None",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "internalTrafficPolicy": "Cluster"
            }
        });
        let gvk = json!({"group": "", "version": "v1", "kind": "Service"});
        let gvr = json!({"group": "", "version": "v1", "resource": "services"});
        let r: AdmissionRequest = serde_json::from_value(json!({
            "uid": self.rng.uuid(),
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": "web", "namespace": MESHED_NS, "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
            "object": svc, "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        }))
        .expect("service request");
        scenario("service", "Service", r)
    }

    /// A Deployment pod with 20 application containers.
    pub fn containers20(&mut self) -> Scenario {
        let cs = (0..20)
            .map(|i| app_container(&format!("app{i:02}"), 8000 + i))
            .collect();
        let r = self.deployment_pod("many", MESHED_NS, cs);
        scenario("containers20", "20 containers", r)
    }

    /// A Deployment pod whose container has `n` env vars (besides the typical ones).
    pub fn env(&mut self, id: &str, label: &str, n: usize) -> Scenario {
        let mut c = app_container("web", 8080);
        c["env"].as_array_mut().expect("env").extend(env_vars(n));
        let r = self.deployment_pod(&format!("env{n}"), MESHED_NS, vec![c]);
        scenario(id, label, r)
    }

    /// A Deployment pod of about `bytes` bytes (compact JSON of the object), grown with env vars.
    pub fn sized(&mut self, id: &str, label: &str, bytes: usize) -> Scenario {
        let base = World::new().typical().object_bytes;
        let per = serde_json::to_vec(&env_vars(2)[1])
            .map(|v| v.len() + 1)
            .unwrap_or(70);
        let n = bytes.saturating_sub(base) / per;
        let mut s = self.env(id, label, n);
        s.id = id.into();
        s
    }

    /// The benchmarks' scenarios: typical, bare, skipped, service, containers20, env1500, pod64k,
    /// pod1m.
    pub fn scenarios(&mut self) -> Vec<Scenario> {
        vec![
            self.typical(),
            self.bare(),
            self.skipped(),
            self.service(),
            self.containers20(),
            self.env("env1500", "1,500 env vars", 1500),
            self.sized("pod64k", "64 KB pod", 64 * 1024),
            self.sized("pod1m", "1 MB pod", 1024 * 1024),
        ]
    }

    /// The size series: pods of 4 KB to 1 MB.
    pub fn series(&mut self) -> Vec<Scenario> {
        [4usize, 16, 64, 256, 1024]
            .iter()
            .map(|k| self.sized(&format!("series{k}k"), &format!("{k} KB"), k * 1024))
            .collect()
    }
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}
