//! Lookups of cluster objects, behind a trait so the core never touches the host directly.
//!
//! In the module the implementation is Kubewarden's `kubernetes/get_resource` host capability
//! (cached 5 s by policy-server) and `kubernetes/list_resources_by_namespace` (served from a
//! watch-backed reflector); tests and native callers use [`MemoryCluster`].
#![forbid(unsafe_code)]

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

/// One `list_resources_by_namespace` request: every object of a kind in one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListLookup {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub namespace: String,
    /// Only these dot-separated paths of each item are returned.
    pub field_masks: &'static [&'static str],
}

impl ListLookup {
    /// The ConfigMaps of a namespace with their `data` (policy-server keeps every item's
    /// `metadata`, so its name, whatever the masks).
    pub fn config_maps(namespace: &str) -> Self {
        Self {
            api_version: "v1",
            kind: "ConfigMap",
            namespace: namespace.to_string(),
            field_masks: &["data"],
        }
    }

    pub fn describe(&self) -> String {
        format!("{}s in namespace {}", self.kind, self.namespace)
    }
}

/// A host call the core asked for, as [`MemoryCluster`] records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Get(Lookup),
    List(ListLookup),
}

impl Call {
    /// `get <what>` or `list <what>`.
    pub fn describe(&self) -> String {
        match self {
            Call::Get(l) => format!("get {}", l.describe()),
            Call::List(l) => format!("list {}", l.describe()),
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
    /// The items of the list, in the engine's order.
    fn list(&self, lookup: &ListLookup) -> Result<Vec<Value>, LookupError>;
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
    /// `(kind, error)` or `(kind/name, error)` answers given instead of the object (a list
    /// takes `kind` ones only); consumed in order.
    pub failures: RefCell<Vec<(String, LookupError)>>,
    pub log: RefCell<Vec<Call>>,
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

    /// The gets asked for, in order.
    pub fn lookups(&self) -> Vec<Lookup> {
        let log = self.log.borrow();
        let gets = log.iter().filter_map(|c| match c {
            Call::Get(l) => Some(l.clone()),
            Call::List(_) => None,
        });
        gets.collect()
    }

    /// Every host call asked for, gets and lists, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.log.borrow().clone()
    }

    fn scripted_failure(&self, matches: impl Fn(&str) -> bool) -> Option<LookupError> {
        let mut failures = self.failures.borrow_mut();
        let i = failures.iter().position(|(k, _)| matches(k))?;
        Some(failures.remove(i).1)
    }
}

impl Cluster for MemoryCluster {
    fn get(&self, lookup: &Lookup) -> Result<Value, LookupError> {
        self.log.borrow_mut().push(Call::Get(lookup.clone()));
        let named = format!("{}/{}", lookup.kind, lookup.name);
        if let Some(err) = self.scripted_failure(|k| k == lookup.kind || k == named) {
            return Err(err);
        }
        let found = self.objects.iter().find(|o| {
            in_scope(o, lookup.kind, lookup.namespace.as_deref())
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(lookup.name.as_str())
        });
        found
            .cloned()
            .ok_or_else(|| LookupError::NotFound(lookup.describe()))
    }

    fn list(&self, lookup: &ListLookup) -> Result<Vec<Value>, LookupError> {
        self.log.borrow_mut().push(Call::List(lookup.clone()));
        if let Some(err) = self.scripted_failure(|k| k == lookup.kind) {
            return Err(err);
        }
        let items = self
            .objects
            .iter()
            .filter(|o| in_scope(o, lookup.kind, Some(&lookup.namespace)));
        Ok(items.cloned().collect())
    }
}

/// Whether `object` is of `kind` in `namespace` (`None`: cluster-scoped).
fn in_scope(object: &Value, kind: &str, namespace: Option<&str>) -> bool {
    object.get("kind").and_then(Value::as_str) == Some(kind)
        && object.pointer("/metadata/namespace").and_then(Value::as_str) == namespace
}
