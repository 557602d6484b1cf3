//! [`Cluster`] over Kubewarden's `kubernetes/get_resource` host capability: the module's lookups
//! (the `host/` crate is a different thing, an engine that runs the module).

use crate::cluster::{Cluster, Lookup, LookupError, classify_host_error};
use kubewarden_policy_sdk::wapc_guest::host_call;
use serde::Serialize;
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

pub struct KubewardenCluster;

impl Cluster for KubewardenCluster {
    fn get(&self, lookup: &Lookup) -> Result<Value, LookupError> {
        let what = lookup.describe();
        let request = GetResource {
            api_version: lookup.api_version,
            kind: lookup.kind,
            name: &lookup.name,
            namespace: lookup.namespace.as_deref(),
            disable_cache: lookup.disable_cache,
            field_masks: (!lookup.field_masks.is_empty()).then_some(lookup.field_masks),
        };
        let payload = serde_json::to_vec(&request)
            .map_err(|e| LookupError::Failed(format!("lookup of {what}: cannot encode request: {e}")))?;
        let answer = host_call("kubewarden", "kubernetes", "get_resource", &payload)
            .map_err(|e| classify_host_error(&what, &e.to_string()))?;
        let object: Value = serde_json::from_slice(&answer)
            .map_err(|e| LookupError::Failed(format!("lookup of {what}: malformed answer: {e}")))?;
        if !object.is_object() {
            return Err(LookupError::Failed(format!(
                "lookup of {what}: malformed answer: not an object"
            )));
        }
        Ok(object)
    }
}
