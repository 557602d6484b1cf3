//! The cluster state the host answers lookups from: Kubernetes objects read from YAML or JSON
//! (several documents, `List`s, or JSON arrays), indexed by apiVersion, kind, namespace and name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use crate::hostcalls::selector::{FieldSelector, LabelSelector, SelectorError};

#[derive(Debug, Error)]
pub enum ClusterStateError {
    #[error("cannot read context file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse context file {path}, document {index}: {source}")]
    Yaml {
        path: PathBuf,
        index: usize,
        #[source]
        source: serde_yaml_ng::Error,
    },
    #[error("{origin}: object #{index} is not a Kubernetes object: {problem}")]
    Object {
        origin: String,
        index: usize,
        problem: String,
    },
}

/// Why a lookup failed. The texts are policy-server's (`callback_handler/kubernetes/client.rs`).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ClusterLookupError {
    #[error("Cannot find {api_version}/{kind} named '{name}' inside of namespace '{namespace:?}'")]
    NotFound {
        api_version: String,
        kind: String,
        name: String,
        namespace: Option<String>,
    },
    #[error("Resource {api_version}/{kind} is namespaced, but no namespace was provided")]
    NamespaceRequired { api_version: String, kind: String },
    #[error("Cannot find resource {api_version}/{kind}")]
    UnknownResource { api_version: String, kind: String },
    #[error("resource {api_version}/{kind} is cluster wide. Cannot search for it inside of a namespace")]
    ClusterWideList { api_version: String, kind: String },
    #[error("{0}")]
    Selector(#[from] SelectorError),
    /// An error injected by a fault rule.
    #[error("{0}")]
    Injected(String),
    /// A malformed answer injected by a fault rule: these bytes go to the guest as the answer.
    #[error("malformed answer")]
    Malformed(Vec<u8>),
}

/// Whether a kind lives in namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
}

/// Scope of the built-in kinds the API server knows without discovery of CRDs.
fn builtin_scope(api_version: &str, kind: &str) -> Option<Scope> {
    use Scope::{Cluster, Namespaced};
    let scope = match (api_version, kind) {
        ("v1", "Namespace" | "Node" | "PersistentVolume" | "ComponentStatus") => Cluster,
        (
            "v1",
            "Pod"
            | "Service"
            | "ConfigMap"
            | "Secret"
            | "ServiceAccount"
            | "Endpoints"
            | "Event"
            | "PersistentVolumeClaim"
            | "ReplicationController"
            | "LimitRange"
            | "ResourceQuota"
            | "PodTemplate",
        ) => Namespaced,
        ("apps/v1", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "ControllerRevision") => {
            Namespaced
        }
        ("batch/v1", "Job" | "CronJob") => Namespaced,
        ("networking.k8s.io/v1", "Ingress" | "NetworkPolicy") => Namespaced,
        ("networking.k8s.io/v1", "IngressClass") => Cluster,
        ("rbac.authorization.k8s.io/v1", "Role" | "RoleBinding") => Namespaced,
        ("rbac.authorization.k8s.io/v1", "ClusterRole" | "ClusterRoleBinding") => Cluster,
        ("policy/v1", "PodDisruptionBudget") => Namespaced,
        ("autoscaling/v1" | "autoscaling/v2", "HorizontalPodAutoscaler") => Namespaced,
        ("coordination.k8s.io/v1", "Lease") => Namespaced,
        ("discovery.k8s.io/v1", "EndpointSlice") => Namespaced,
        ("storage.k8s.io/v1", "StorageClass" | "CSIDriver" | "CSINode" | "VolumeAttachment") => Cluster,
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => Cluster,
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => Cluster,
        ("scheduling.k8s.io/v1", "PriorityClass") => Cluster,
        ("node.k8s.io/v1", "RuntimeClass") => Cluster,
        ("authorization.k8s.io/v1", "SubjectAccessReview") => Cluster,
        _ => return None,
    };
    Some(scope)
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ObjectKey {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

/// An in-memory set of Kubernetes objects.
#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    objects: BTreeMap<ObjectKey, Value>,
}

impl ClusterState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a context file: YAML (several documents) or JSON, objects or `List`s.
    pub fn from_file(path: &Path) -> Result<Self, ClusterStateError> {
        let text = std::fs::read_to_string(path).map_err(|source| ClusterStateError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut state = Self::new();
        state.load_str(&text, path)?;
        Ok(state)
    }

    /// Parses YAML/JSON text (several documents allowed) and inserts every object.
    pub fn load_str(&mut self, text: &str, origin: &Path) -> Result<usize, ClusterStateError> {
        let mut docs = Vec::new();
        for (index, de) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let doc = Value::deserialize(de).map_err(|source| ClusterStateError::Yaml {
                path: origin.to_owned(),
                index,
                source,
            })?;
            docs.push(doc);
        }
        let mut objects = Vec::new();
        for doc in docs {
            flatten(doc, &mut objects);
        }
        let count = objects.len();
        for (index, obj) in objects.into_iter().enumerate() {
            self.insert(obj).map_err(|problem| ClusterStateError::Object {
                origin: origin.display().to_string(),
                index,
                problem,
            })?;
        }
        Ok(count)
    }

    /// Adds or replaces an object. It must have `apiVersion`, `kind` and `metadata.name`;
    /// namespaced objects without `metadata.namespace` go to `default`, like kubectl.
    pub fn insert(&mut self, mut object: Value) -> Result<(), String> {
        let field = |o: &Value, p: &str| o.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let api_version = field(&object, "/apiVersion").ok_or("missing apiVersion")?;
        let kind = field(&object, "/kind").ok_or("missing kind")?;
        let name = field(&object, "/metadata/name").ok_or("missing metadata.name")?;
        let mut namespace = field(&object, "/metadata/namespace");
        match builtin_scope(&api_version, &kind) {
            Some(Scope::Cluster) => namespace = None,
            Some(Scope::Namespaced) if namespace.is_none() => {
                if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("namespace".into(), Value::String("default".into()));
                }
                namespace = Some("default".into());
            }
            _ => {}
        }
        self.objects.insert(
            ObjectKey {
                api_version,
                kind,
                namespace,
                name,
            },
            object,
        );
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Scope of a kind: built-in table, else inferred from the objects present.
    pub fn scope(&self, api_version: &str, kind: &str) -> Option<Scope> {
        builtin_scope(api_version, kind).or_else(|| {
            self.objects
                .keys()
                .find(|k| k.api_version == api_version && k.kind == kind)
                .map(|k| {
                    if k.namespace.is_some() {
                        Scope::Namespaced
                    } else {
                        Scope::Cluster
                    }
                })
        })
    }

    /// `GET` of one object, with policy-server's errors.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<&Value, ClusterLookupError> {
        let scope = self
            .scope(api_version, kind)
            .ok_or_else(|| ClusterLookupError::UnknownResource {
                api_version: api_version.into(),
                kind: kind.into(),
            })?;
        let key_ns = match scope {
            Scope::Cluster => None,
            Scope::Namespaced => Some(namespace.ok_or_else(|| ClusterLookupError::NamespaceRequired {
                api_version: api_version.into(),
                kind: kind.into(),
            })?),
        };
        let key = ObjectKey {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: key_ns.map(str::to_owned),
            name: name.into(),
        };
        self.objects
            .get(&key)
            .ok_or_else(|| self.not_found(api_version, kind, name, namespace))
    }

    /// The policy-server "not found" error for this lookup.
    pub fn not_found(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> ClusterLookupError {
        ClusterLookupError::NotFound {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            namespace: namespace.map(str::to_owned),
        }
    }

    /// `LIST` of a kind, in one namespace or everywhere, filtered by selectors.
    pub fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<Vec<&Value>, ClusterLookupError> {
        let scope = self
            .scope(api_version, kind)
            .ok_or_else(|| ClusterLookupError::UnknownResource {
                api_version: api_version.into(),
                kind: kind.into(),
            })?;
        if namespace.is_some() && scope == Scope::Cluster {
            return Err(ClusterLookupError::ClusterWideList {
                api_version: api_version.into(),
                kind: kind.into(),
            });
        }
        let labels = LabelSelector::parse(label_selector.unwrap_or(""))?;
        let fields = FieldSelector::parse(field_selector.unwrap_or(""))?;
        Ok(self
            .objects
            .iter()
            .filter(|(k, _)| k.api_version == api_version && k.kind == kind)
            .filter(|(k, _)| namespace.is_none() || k.namespace.as_deref() == namespace)
            .map(|(_, v)| v)
            .filter(|v| labels.matches(v) && fields.matches(v))
            .collect())
    }

    /// Every object, in key order.
    pub fn objects(&self) -> impl Iterator<Item = &Value> {
        self.objects.values()
    }
}

/// Expands `List`s and arrays; drops empty documents.
fn flatten(doc: Value, out: &mut Vec<Value>) {
    match doc {
        Value::Null => {}
        Value::Array(items) => items.into_iter().for_each(|i| flatten(i, out)),
        Value::Object(ref map)
            if map
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.ends_with("List"))
                && map.get("items").is_some_and(Value::is_array) =>
        {
            if let Some(Value::Array(items)) = doc.get("items").cloned() {
                items.into_iter().for_each(|i| flatten(i, out));
            }
        }
        other => out.push(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: emojivoto
  annotations: {example.com/team: web}
---
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: web-1, namespace: emojivoto, labels: {app: web}}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cm}
---
"#;

    #[test]
    fn loads_documents_and_lists() {
        let mut s = ClusterState::new();
        assert_eq!(s.load_str(YAML, Path::new("t.yaml")).unwrap(), 3);
        assert!(s.get("v1", "Namespace", "emojivoto", None).is_ok());
        assert!(s.get("v1", "Namespace", "emojivoto", Some("whatever")).is_ok());
        assert!(s.get("v1", "ConfigMap", "cm", Some("default")).is_ok());
        assert_eq!(
            s.get("apps/v1", "ReplicaSet", "web-2", Some("emojivoto"))
                .unwrap_err()
                .to_string(),
            r#"Cannot find apps/v1/ReplicaSet named 'web-2' inside of namespace 'Some("emojivoto")'"#
        );
        assert_eq!(
            s.get("v1", "Namespace", "x", None).unwrap_err().to_string(),
            "Cannot find v1/Namespace named 'x' inside of namespace 'None'"
        );
        assert_eq!(
            s.get("apps/v1", "ReplicaSet", "web-1", None)
                .unwrap_err()
                .to_string(),
            "Resource apps/v1/ReplicaSet is namespaced, but no namespace was provided"
        );
        assert_eq!(
            s.get("example.com/v1", "Thing", "x", None)
                .unwrap_err()
                .to_string(),
            "Cannot find resource example.com/v1/Thing"
        );
        assert_eq!(
            s.list("apps/v1", "ReplicaSet", Some("emojivoto"), Some("app=web"), None)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            s.list("apps/v1", "ReplicaSet", None, Some("app=db"), None)
                .unwrap()
                .len(),
            0
        );
        assert!(matches!(
            s.list("v1", "Namespace", Some("x"), None, None),
            Err(ClusterLookupError::ClusterWideList { .. })
        ));
    }

    #[test]
    fn json_and_bad_objects() {
        let mut s = ClusterState::new();
        s.load_str(
            r#"[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}]"#,
            Path::new("x.json"),
        )
        .unwrap();
        assert_eq!(s.len(), 1);
        let err = s
            .load_str("kind: Namespace\nmetadata: {name: a}\n", Path::new("bad.yaml"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad.yaml: object #0 is not a Kubernetes object: missing apiVersion"
        );
    }
}
