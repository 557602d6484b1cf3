//! [`Cluster`] over Kubewarden's `kubernetes/get_resource` and
//! `kubernetes/list_resources_by_namespace` host capabilities: the module's lookups (the `host/`
//! crate is a different thing, an engine that runs the module).

use crate::cluster::{Cluster, ListLookup, Lookup, LookupError, classify_host_error};
use kubewarden_policy_sdk::wapc_guest::host_call;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The host capability's request, with the SDK's snake_case keys.
#[derive(Serialize)]
struct GetResource<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    namespace: Option<&'a str>,
    disable_cache: bool,
    field_masks: Option<&'a [&'a str]>,
}

/// `list_resources_by_namespace`'s request.
#[derive(Serialize)]
struct ListResourcesByNamespace<'a> {
    api_version: &'a str,
    kind: &'a str,
    namespace: &'a str,
    label_selector: Option<&'a str>,
    field_selector: Option<&'a str>,
    field_masks: Option<&'a [&'a str]>,
}

/// The part of a Kubernetes List the module reads.
#[derive(Deserialize)]
struct Items {
    items: Vec<Value>,
}

pub struct KubewardenCluster;

/// The request's `field_masks`: none (the whole object) when the lookup names no path.
fn masks<'a>(paths: &'a [&'a str]) -> Option<&'a [&'a str]> {
    (!paths.is_empty()).then_some(paths)
}

impl KubewardenCluster {
    /// One host call; `host_error` turns the host's error text into the lookup's error.
    fn call(
        operation: &str,
        what: &str,
        request: &impl Serialize,
        host_error: impl FnOnce(String) -> LookupError,
    ) -> Result<Vec<u8>, LookupError> {
        let payload = serde_json::to_vec(request)
            .map_err(|e| LookupError::Failed(format!("lookup of {what}: cannot encode request: {e}")))?;
        host_call("kubewarden", "kubernetes", operation, &payload).map_err(|e| host_error(e.to_string()))
    }
}

impl Cluster for KubewardenCluster {
    fn get(&self, lookup: &Lookup) -> Result<Value, LookupError> {
        let what = lookup.describe();
        let request = GetResource {
            api_version: lookup.api_version,
            kind: lookup.kind,
            name: &lookup.name,
            namespace: lookup.namespace.as_deref(),
            disable_cache: lookup.disable_cache,
            field_masks: masks(lookup.field_masks),
        };
        let answer = Self::call("get_resource", &what, &request, |e| {
            classify_host_error(&what, &e)
        })?;
        let object: Value = serde_json::from_slice(&answer)
            .map_err(|e| LookupError::Failed(format!("lookup of {what}: malformed answer: {e}")))?;
        if !object.is_object() {
            return Err(LookupError::Failed(format!(
                "lookup of {what}: malformed answer: not an object"
            )));
        }
        Ok(object)
    }

    fn list(&self, lookup: &ListLookup) -> Result<Vec<Value>, LookupError> {
        let what = lookup.describe();
        let request = ListResourcesByNamespace {
            api_version: lookup.api_version,
            kind: lookup.kind,
            namespace: &lookup.namespace,
            label_selector: None,
            field_selector: None,
            field_masks: masks(lookup.field_masks),
        };
        // A list has no "not found": every host error is a failed read.
        let answer = Self::call("list_resources_by_namespace", &what, &request, |e| {
            LookupError::Failed(format!("lookup of {what} failed: {e}"))
        })?;
        let list: Items = serde_json::from_slice(&answer)
            .map_err(|e| LookupError::Failed(format!("lookup of {what}: malformed answer: {e}")))?;
        Ok(list.items)
    }
}
