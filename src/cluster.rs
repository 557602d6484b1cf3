//! Lookups of cluster objects, behind a trait so the core never touches the host directly.
//!
//! In the module the implementation is Kubewarden's `kubernetes/get_resource` host capability
//! (cached 5 s by policy-server); tests and native callers use [`MemoryCluster`].

use serde_json::Value;
use std::cell::RefCell;

/// One `get_resource` request, in the shape of Kubewarden's host capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub name: String,
    /// `None` for cluster-scoped kinds.
    pub namespace: Option<String>,
    /// Bypass the engine's cache (a live GET).
    pub disable_cache: bool,
    /// Only these dot-separated paths are returned.
    pub field_masks: &'static [&'static str],
}

impl Lookup {
    /// A cached get of a control-plane ConfigMap's `data` (trust roots, `linkerd-config`).
    pub fn config_map(namespace: &str, name: &str) -> Self {
        Self {
            api_version: "v1",
            kind: "ConfigMap",
            name: name.to_string(),
            namespace: Some(namespace.to_string()),
            disable_cache: false,
            field_masks: &["data"],
        }
    }

    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {}/{}", self.kind, ns, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// The engine answered authoritatively that the object does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The lookup failed (API server, network, permissions, malformed answer).
    #[error("{0}")]
    Failed(String),
}

pub trait Cluster {
    fn get(&self, lookup: &Lookup) -> Result<Value, LookupError>;
}

/// Classifies a host error text: the engines report "not found" only in prose.
pub fn classify_host_error(what: &str, message: &str) -> LookupError {
    let lower = message.to_ascii_lowercase();
    if lower.contains("not found") || lower.contains("cannot find") || lower.contains("notfound") {
        LookupError::NotFound(what.to_string())
    } else {
        LookupError::Failed(format!("lookup of {what} failed: {message}"))
    }
}

/// Objects held in memory, with an optional scripted failure per kind; records every lookup.
#[derive(Debug, Default)]
pub struct MemoryCluster {
    pub objects: Vec<Value>,
    /// `(kind, error)` or `(kind/name, error)` answers given instead of the object; consumed
    /// in order.
    pub failures: RefCell<Vec<(String, LookupError)>>,
    pub log: RefCell<Vec<Lookup>>,
}

impl MemoryCluster {
    pub fn new(objects: Vec<Value>) -> Self {
        Self {
            objects,
            ..Self::default()
        }
    }

    pub fn fail(self, kind: &str, error: LookupError) -> Self {
        self.failures.borrow_mut().push((kind.to_string(), error));
        self
    }

    pub fn lookups(&self) -> Vec<Lookup> {
        self.log.borrow().clone()
    }
}

impl Cluster for MemoryCluster {
    fn get(&self, lookup: &Lookup) -> Result<Value, LookupError> {
        self.log.borrow_mut().push(lookup.clone());
        let scripted = {
            let mut failures = self.failures.borrow_mut();
            failures
                .iter()
                .position(|(k, _)| k == lookup.kind || *k == format!("{}/{}", lookup.kind, lookup.name))
                .map(|i| failures.remove(i).1)
        };
        if let Some(err) = scripted {
            return Err(err);
        }
        let found = self.objects.iter().find(|o| {
            let meta = &o["metadata"];
            o["kind"].as_str() == Some(lookup.kind)
                && meta["name"].as_str() == Some(lookup.name.as_str())
                && meta["namespace"].as_str() == lookup.namespace.as_deref()
        });
        found
            .cloned()
            .ok_or_else(|| LookupError::NotFound(lookup.describe()))
    }
}
