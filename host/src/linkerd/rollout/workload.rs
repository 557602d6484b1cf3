//! What a rollout runs against: the Deployment and its Namespace ([`Workload`], the default nginx
//! or a manifest's), and the Linkerd control plane the injector reads
//! ([`default_control_plane`]: its Namespace, trust roots and `linkerd-config` values).

use std::path::Path;

use linkerd_injector_policy::annotations::CONTROL_PLANE_NS_LABEL;
use linkerd_injector_policy::linkerd_config::VALUES_KEY;
use linkerd_injector_policy::settings::PolicyOptions;
use linkerd_injector_policy::trust::BUNDLE_KEY;
use serde::Deserialize;
use serde_json::{Value, json};

use super::RolloutError;

/// A dummy trust bundle for the default control plane (not a real certificate).
pub const DUMMY_TRUST_BUNDLE: &str = "-----BEGIN CERTIFICATE-----\nMIIBwDCCAWagAwIBAgIQZ3Rlc3QtdHJ1c3QtYW5jaG9yMAoGCCqGSM49BAMCMCkx\nJzAlBgNVBAMTHmlkZW50aXR5LmxpbmtlcmQuY2x1c3Rlci5sb2NhbDAeFw0yNjAx\n-----END CERTIFICATE-----\n";

/// The Helm values of a default `linkerd install` at edge-26.8.3 (key `values` of
/// `linkerd-config`; where it comes from is in the file).
pub const DEFAULT_LINKERD_VALUES: &str = include_str!("../../../data/linkerd-config-values.yaml");

/// The objects of a Linkerd control plane the injector reads: Namespace `linkerd`, the
/// ConfigMap `linkerd/linkerd-identity-trust-roots` (`ca-bundle.crt`) and the ConfigMap
/// `linkerd/linkerd-config` (`values`).
/// The names are the policy's defaults (`policy.controlPlaneNamespace`, `policy.linkerdConfigMap`,
/// `policy.trustAnchorsConfigMap`), taken from the core so the two never differ.
pub fn default_control_plane() -> Vec<Value> {
    let policy = PolicyOptions::default();
    let ns = &*policy.control_plane_namespace;
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
        let mut docs = read_documents(path)?;
        let is = |d: &Value, api: &str, kind: &str| {
            d.get("apiVersion").and_then(Value::as_str) == Some(api)
                && d.get("kind").and_then(Value::as_str) == Some(kind)
        };
        let pos = docs
            .iter()
            .position(|d| is(d, "apps/v1", "Deployment"))
            .ok_or_else(|| RolloutError::NoDeployment(path.display().to_string()))?;
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

    pub(super) fn name(&self) -> &str {
        self.deployment
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("deployment")
    }

    pub(super) fn namespace_name(&self) -> &str {
        self.deployment
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
    }
}

/// The manifest's objects, in order, with the items of `List`s taken out of them.
fn read_documents(path: &Path) -> Result<Vec<Value>, RolloutError> {
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
    Ok(docs)
}

/// The controllers' side (`super::controllers`) played on the default workload.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::linkerd::controllers::{
        Rng, SAFE_ALPHABET, ShapeError, fnv32a, pod_create_request, pod_template_hash, replica_set_for,
        safe_encode,
    };

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
}
