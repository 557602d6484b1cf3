//! The workload that owns a pod, for the `linkerd.io/proxy-<kind>` label.
//!
//! Follows Linkerd's `GetOwnerKindAndName` (one ownerReference; ReplicaSet → its Deployment,
//! Job → its CronJob) but never fails the admission: a cached lookup, then one uncached lookup
//! after an error (never after "not found"), then the `pod-template-hash` naming rule, then
//! Linkerd's own fallback. With `policy.ownerResolution: templateHash` (the default) a
//! Deployment's pod is resolved by the naming rule first, without a lookup. Which path was
//! taken is reported.

use crate::cluster::{Cluster, Lookup, LookupError};
use crate::values::settings::OwnerResolution;
use serde_json::Value;

/// Owner kinds that get a `linkerd.io/proxy-<kind>` label.
const LABELLED_KINDS: &[&str] = &[
    "deployment",
    "replicationcontroller",
    "replicaset",
    "job",
    "daemonset",
    "statefulset",
];

/// Grandparents of a ReplicaSet that Linkerd accepts.
const RS_PARENTS: &[&str] = &["job", "statefulset", "daemonset", "deployment"];

const OWNER_MASKS: &[&str] = &["metadata.name", "metadata.ownerReferences"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Lowercase kind, e.g. `deployment`.
    pub kind: String,
    pub name: String,
}

impl Owner {
    fn new(kind: &str, name: &str) -> Self {
        Self {
            kind: kind.to_ascii_lowercase(),
            name: name.to_string(),
        }
    }

    /// `(label key, value)` when this kind is labelled.
    pub fn label(&self) -> Option<(String, String)> {
        LABELLED_KINDS
            .contains(&self.kind.as_str())
            .then(|| (["linkerd.io/proxy-", &self.kind].concat(), self.name.clone()))
    }
}

/// How the owner was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Read from the pod itself (bare pod, or an owner kind that needs no lookup).
    Direct,
    /// `policy.ownerResolution: templateHash`: the ReplicaSet is named
    /// `<deployment>-<pod-template-hash>`, so no lookup was made.
    TemplateHashRule,
    /// The intermediate owner was read through the engine's cache.
    Cached,
    /// The cached lookup failed; a second, uncached lookup succeeded.
    Uncached { first_error: String },
    /// Lookups failed; the ReplicaSet name is `<deployment>-<pod-template-hash>`.
    TemplateHash { error: LookupError },
    /// Lookups failed; Linkerd's fallback (the intermediate owner itself).
    Fallback { error: LookupError },
}

impl Resolution {
    /// True when the result rests on a fallback rather than a lookup.
    pub fn is_fallback(&self) -> bool {
        matches!(self, Self::TemplateHash { .. } | Self::Fallback { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Self::Direct => "from the pod's ownerReferences".into(),
            Self::TemplateHashRule => "pod-template-hash naming rule".into(),
            Self::Cached => "owner lookup".into(),
            Self::Uncached { first_error } => format!("uncached owner lookup after: {first_error}"),
            Self::TemplateHash { error } => format!("pod-template-hash naming rule after: {error}"),
            Self::Fallback { error } => format!("fallback to the direct owner after: {error}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub owner: Owner,
    pub resolution: Resolution,
}

/// Resolves the owner of the pod described by `meta` (its `metadata`) in `namespace`.
pub fn resolve(meta: &Value, namespace: &str, how: OwnerResolution, cluster: &dyn Cluster) -> Resolved {
    let pod_name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    let direct = |kind: &str, name: &str| Resolved {
        owner: Owner::new(kind, name),
        resolution: Resolution::Direct,
    };
    let refs = meta
        .get("ownerReferences")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let [only] = refs else {
        return direct("pod", pod_name);
    };
    let kind = only.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = only.get("name").and_then(Value::as_str).unwrap_or("");
    match kind {
        // The rule first saves a host call; where it does not apply, the path is `lookup`'s.
        "ReplicaSet" => match (how, deployment_by_hash(meta, name)) {
            (OwnerResolution::TemplateHash, Some(deploy)) => Resolved {
                owner: deploy,
                resolution: Resolution::TemplateHashRule,
            },
            _ => replica_set_by_lookup(meta, name, namespace, cluster),
        },
        "Job" => {
            via_lookup(("batch/v1", "Job"), name, namespace, cluster, |_| true).unwrap_or_else(|error| {
                Resolved {
                    owner: Owner::new("job", name),
                    resolution: Resolution::Fallback { error },
                }
            })
        }
        _ => direct(kind, name),
    }
}

/// Linkerd's path: the ReplicaSet's own owner, when one of the accepted kinds; after failed
/// lookups the naming rule, then the ReplicaSet itself.
fn replica_set_by_lookup(meta: &Value, name: &str, namespace: &str, cluster: &dyn Cluster) -> Resolved {
    via_lookup(("apps/v1", "ReplicaSet"), name, namespace, cluster, |parent| {
        RS_PARENTS.contains(&parent.kind.as_str())
    })
    .unwrap_or_else(|error| match deployment_by_hash(meta, name) {
        Some(deploy) => Resolved {
            owner: deploy,
            resolution: Resolution::TemplateHash { error },
        },
        None => Resolved {
            owner: Owner::new("replicaset", name),
            resolution: Resolution::Fallback { error },
        },
    })
}

/// Looks the intermediate owner up (cached, then once uncached after an error) and takes its
/// single parent when `accept` allows it; otherwise the intermediate owner itself.
fn via_lookup(
    (api_version, kind): (&'static str, &'static str),
    name: &str,
    namespace: &str,
    cluster: &dyn Cluster,
    accept: impl Fn(&Owner) -> bool,
) -> Result<Resolved, LookupError> {
    let mut lookup = Lookup {
        api_version,
        kind,
        name: name.to_string(),
        namespace: Some(namespace.to_string()),
        disable_cache: false,
        field_masks: OWNER_MASKS,
    };
    let (object, resolution) = match cluster.get(&lookup) {
        Ok(obj) => (obj, Resolution::Cached),
        Err(LookupError::NotFound(what)) => return Err(LookupError::NotFound(what)),
        Err(LookupError::Failed(first_error)) => {
            lookup.disable_cache = true;
            (cluster.get(&lookup)?, Resolution::Uncached { first_error })
        }
    };
    let owner = single_owner(&object)
        .filter(|parent| accept(parent))
        .unwrap_or_else(|| Owner::new(kind, name));
    Ok(Resolved { owner, resolution })
}

fn single_owner(object: &Value) -> Option<Owner> {
    let refs = object.get("metadata")?.get("ownerReferences")?.as_array()?;
    let [only] = refs.as_slice() else { return None };
    let kind = only.get("kind")?.as_str()?;
    let name = only.get("name")?.as_str()?;
    Some(Owner::new(kind, name))
}

/// A Deployment's ReplicaSet is named `<deployment>-<pod-template-hash>`, and its pods carry the
/// `pod-template-hash` label: when both agree the Deployment name is known without a lookup.
/// Argo Rollouts label `rollouts-pod-template-hash` instead, so their pods never match here.
fn deployment_by_hash(meta: &Value, rs_name: &str) -> Option<Owner> {
    let hash = meta.get("labels")?.get("pod-template-hash")?.as_str()?;
    let deploy = rs_name.strip_suffix(hash)?.strip_suffix('-')?;
    (!deploy.is_empty() && !hash.is_empty()).then(|| Owner::new("deployment", deploy))
}
