//! [`Cluster`] over Kubewarden's `kubernetes/get_resource` and
//! `kubernetes/list_resources_by_namespace` host capabilities: the module's lookups (the `host/`
//! crate is a different thing, an engine that runs the module).

use crate::cluster::{Cluster, ListLookup, Listed, Lookup, LookupError, StringReader, classify_host_error};
use crate::shell::wire::from_json;
use crate::shell::{masked, scan};
use kubewarden_policy_sdk::wapc_guest::host_call;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeSet;

/// A Kubernetes List as a whole: only read to explain an answer [`masked::items`] cannot read.
#[derive(Deserialize)]
struct Items {
    #[expect(dead_code, reason = "read for its errors only")]
    items: Vec<Value>,
}

/// An answer read by `read` (the masked reading); an answer it cannot read is read again
/// whole as `W`, so that every error message is serde_json's for the answer as sent.
fn read_answer<T, W: DeserializeOwned>(
    answer: &[u8],
    read: impl FnOnce(&str) -> serde_json::Result<T>,
) -> serde_json::Result<T> {
    let masked = simdutf8::basic::from_utf8(answer).map(read);
    match masked {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(from_json::<W>(answer).err().unwrap_or(e)),
        Err(_) => Err(not_utf8::<W>(answer)),
    }
}

/// Why an answer that is not UTF-8 cannot be read as `W`.
fn not_utf8<W: DeserializeOwned>(answer: &[u8]) -> serde_json::Error {
    from_json::<W>(answer)
        .err()
        .unwrap_or_else(|| <serde_json::Error as serde::de::Error>::custom("not UTF-8"))
}

pub struct KubewardenCluster;

/// The SDK's `GetResourceRequest` as it is written, borrowed from the lookup: the SDK's owns
/// each string and a set of its masks, built and freed on every call.
#[derive(Serialize)]
struct GetResourceRequest<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    namespace: Option<&'a str>,
    disable_cache: bool,
    field_masks: Option<BTreeSet<&'a str>>,
}

/// The SDK's `ListResourcesByNamespaceRequest` as it is written, borrowed.
#[derive(Serialize)]
struct ListResourcesByNamespaceRequest<'a> {
    api_version: &'a str,
    kind: &'a str,
    namespace: &'a str,
    label_selector: Option<&'a str>,
    field_selector: Option<&'a str>,
    field_masks: Option<BTreeSet<&'a str>>,
}

/// The request's `field_masks`, sorted and without repeats as the SDK's set writes them: none
/// (the whole object) when the lookup names no path.
fn masks<'a>(paths: &[&'a str]) -> Option<BTreeSet<&'a str>> {
    (!paths.is_empty()).then(|| paths.iter().copied().collect())
}

impl KubewardenCluster {
    /// One host call; `host_error` turns the host's error text into the lookup's error. What
    /// is looked up is described only for an error (formatting it cost more than the call's
    /// own work in the module).
    fn call(
        operation: &str,
        what: impl FnOnce() -> String,
        request: &impl Serialize,
        host_error: impl FnOnce(String) -> LookupError,
    ) -> Result<Vec<u8>, LookupError> {
        let payload = serde_json::to_vec(request)
            .map_err(|e| LookupError::Failed(format!("lookup of {}: cannot encode request: {e}", what())))?;
        host_call("kubewarden", "kubernetes", operation, &payload).map_err(|e| host_error(e.to_string()))
    }
}

impl Cluster for KubewardenCluster {
    fn get(&self, lookup: &Lookup) -> Result<Value, LookupError> {
        let request = GetResourceRequest {
            api_version: lookup.api_version,
            kind: lookup.kind,
            name: &lookup.name,
            namespace: lookup.namespace.as_deref(),
            disable_cache: lookup.disable_cache,
            field_masks: masks(lookup.field_masks),
        };
        let what = || lookup.describe();
        let answer = Self::call("get_resource", what, &request, |e| {
            classify_host_error(&what(), &e)
        })?;
        let object = read_answer::<_, Value>(&answer, |text| masked::object(text, lookup.field_masks))
            .map_err(|e| LookupError::Failed(format!("lookup of {}: malformed answer: {e}", what())))?;
        if !object.is_object() {
            return Err(LookupError::Failed(format!(
                "lookup of {}: malformed answer: not an object",
                what()
            )));
        }
        Ok(object)
    }

    fn list(&self, lookup: &ListLookup) -> Result<Vec<Value>, LookupError> {
        self.list_answer(lookup)?.items()
    }

    /// The answer's text, kept: its items are read when asked for.
    fn list_answer(&self, lookup: &ListLookup) -> Result<Box<dyn Listed + '_>, LookupError> {
        let request = ListResourcesByNamespaceRequest {
            api_version: lookup.api_version,
            kind: lookup.kind,
            namespace: &lookup.namespace,
            label_selector: None,
            field_selector: None,
            field_masks: masks(lookup.field_masks),
        };
        // A list has no "not found": every host error is a failed read.
        let what = || lookup.describe();
        let answer = Self::call("list_resources_by_namespace", what, &request, |e| {
            LookupError::Failed(format!("lookup of {} failed: {e}", what()))
        })?;
        Ok(Box::new(ListText {
            answer,
            lookup: lookup.clone(),
        }))
    }
}

fn malformed_list(lookup: &ListLookup, error: &serde_json::Error) -> LookupError {
    LookupError::Failed(format!(
        "lookup of {}: malformed answer: {error}",
        lookup.describe()
    ))
}

/// A list's answer as the engine wrote it.
struct ListText {
    answer: Vec<u8>,
    lookup: ListLookup,
}

impl ListText {
    /// The answer as text, checked as UTF-8 at each read rather than once when it arrives and
    /// copied into a `String` (`String::from_utf8` checks with the standard library's slower
    /// loop): an admission reads it once, by `json_string` or by `items`, and only `items`
    /// after a `json_string` that found nothing.
    fn text(&self) -> Option<&str> {
        simdutf8::basic::from_utf8(&self.answer).ok()
    }
}

impl Listed for ListText {
    fn items(&self) -> Result<Vec<Value>, LookupError> {
        let Some(text) = self.text() else {
            return Err(malformed_list(&self.lookup, &not_utf8::<Items>(&self.answer)));
        };
        masked::items(text, self.lookup.field_masks).map_err(|e| {
            let whole = from_json::<Items>(&self.answer).err().unwrap_or(e);
            malformed_list(&self.lookup, &whole)
        })
    }

    /// Read where it lies when `items` would read it: from an answer masked to `data`. `None`
    /// for an answer that is not UTF-8, whose `items` then say why.
    fn json_string(&self, name: &str, path: &[&str], read: StringReader<'_>) -> Option<Cow<'_, str>> {
        let (["data", key], ["data"]) = (path, self.lookup.field_masks) else {
            return None;
        };
        scan::item_data_string(self.text()?, name, key, read).map(Cow::Borrowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_policy_sdk::host_capabilities::kubernetes as sdk;
    use rstest::rstest;

    fn owned(paths: &[&str]) -> Option<BTreeSet<String>> {
        (!paths.is_empty()).then(|| paths.iter().map(|p| (*p).to_owned()).collect())
    }

    /// The borrowed requests write the bytes the SDK's own types write.
    #[rstest]
    #[case::namespaced_masked(Some("linkerd"), &["metadata.annotations", "data", "data"])]
    #[case::cluster_scoped_whole(None, &[])]
    fn requests_are_written_as_the_sdk_writes_them(#[case] namespace: Option<&str>, #[case] paths: &[&str]) {
        let ours = GetResourceRequest {
            api_version: "apps/v1",
            kind: "ReplicaSet",
            name: "web-768bf89858",
            namespace,
            disable_cache: true,
            field_masks: masks(paths),
        };
        let theirs = sdk::GetResourceRequest {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web-768bf89858".into(),
            namespace: namespace.map(Into::into),
            disable_cache: true,
            field_masks: owned(paths),
        };
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&theirs).unwrap()
        );
        let ours = ListResourcesByNamespaceRequest {
            api_version: "v1",
            kind: "ConfigMap",
            namespace: namespace.unwrap_or_default(),
            label_selector: None,
            field_selector: None,
            field_masks: masks(paths),
        };
        let theirs = sdk::ListResourcesByNamespaceRequest {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: namespace.unwrap_or_default().into(),
            label_selector: None,
            field_selector: None,
            field_masks: owned(paths),
        };
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&theirs).unwrap()
        );
    }
}
