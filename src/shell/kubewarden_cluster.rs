//! [`Cluster`] over Kubewarden's `kubernetes/get_resource` and
//! `kubernetes/list_resources_by_namespace` host capabilities: the module's lookups (the `host/`
//! crate is a different thing, an engine that runs the module). The requests are the SDK's own
//! types; the answers are read for the paths a lookup asked for ([`masked`]).

use crate::cluster::{Cluster, ListLookup, Lookup, LookupError, classify_host_error};
use crate::shell::masked;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListResourcesByNamespaceRequest,
};
use kubewarden_policy_sdk::wapc_guest::host_call;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

pub struct KubewardenCluster;

/// The request's `field_masks`: none (the whole object) when the lookup names no path.
fn masks(paths: &[&str]) -> Option<BTreeSet<String>> {
    (!paths.is_empty()).then(|| paths.iter().map(|p| (*p).to_owned()).collect())
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

fn malformed(what: &str, error: impl std::fmt::Display) -> LookupError {
    LookupError::Failed(format!("lookup of {what}: malformed answer: {error}"))
}

impl Cluster for KubewardenCluster {
    fn get(&self, lookup: &Lookup) -> Result<Value, LookupError> {
        let request = GetResourceRequest {
            api_version: lookup.api_version.to_owned(),
            kind: lookup.kind.to_owned(),
            name: lookup.name.clone(),
            namespace: lookup.namespace.clone(),
            disable_cache: lookup.disable_cache,
            field_masks: masks(lookup.field_masks),
        };
        let what = lookup.describe();
        let answer = Self::call("get_resource", &what, &request, |e| {
            classify_host_error(&what, &e)
        })?;
        let object = masked::object(&answer, lookup.field_masks).map_err(|e| malformed(&what, e))?;
        if !object.is_object() {
            return Err(malformed(&what, "not an object"));
        }
        Ok(object)
    }

    fn list(&self, lookup: &ListLookup) -> Result<Vec<Value>, LookupError> {
        let request = ListResourcesByNamespaceRequest {
            api_version: lookup.api_version.to_owned(),
            kind: lookup.kind.to_owned(),
            namespace: lookup.namespace.clone(),
            label_selector: None,
            field_selector: None,
            field_masks: masks(lookup.field_masks),
        };
        // a list has no "not found": every host error is a failed read
        let what = lookup.describe();
        let answer = Self::call("list_resources_by_namespace", &what, &request, |e| {
            LookupError::Failed(format!("lookup of {what} failed: {e}"))
        })?;
        masked::items(&answer, lookup.field_masks).map_err(|e| malformed(&what, e))
    }
}
