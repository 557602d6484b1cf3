//! A lower bound for the injector's guest instructions: the least any policy that decides on the
//! injector's inputs with `serde_json` must do, and nothing more.
//!
//! `validate` reads the payload for the request's namespace alone (every other field is
//! tokenised and dropped, nothing is built), makes the injector's host calls for a pod or a
//! Service (a cached `get_resource` of the Namespace, mask `metadata.annotations`; with
//! `{"listConfigMaps": "linkerd"}` the `list_resources_by_namespace` of that namespace's
//! ConfigMaps, mask `data`), tokenises their answers (`serde::de::IgnoredAny`) and accepts without
//! a mutation. It reads no values document and renders nothing, so the injector can only cost
//! more (benches/notes.md, "the bound").
//!
//! With `{"answer": <a validation response>}` it answers that response, copied as it came, in
//! place of the plain accept: given the injector's own answer to a request, it makes the
//! injector's host calls and gives the injector's answer with no work of its own, the bound of
//! `make bench-kubewarden`. The engine sends the settings in every payload, so that bound also
//! pays for carrying the answer there, which the injector does not.

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListResourcesByNamespaceRequest,
};
use kubewarden_policy_sdk::settings::Validatable;
use kubewarden_policy_sdk::wapc_guest::{CallResult, host_call};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// `{"listConfigMaps": namespace, "answer": response}`, default none.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Settings {
    /// List the ConfigMaps of this namespace after the Namespace lookup.
    pub list_config_maps: Option<String>,
    /// The validation response to answer with, in place of the plain accept.
    pub answer: Option<Box<RawValue>>,
}

/// The settings as `validate` reads them: the answer borrowed from the payload, not copied.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Given<'a> {
    list_config_maps: Option<Cow<'a, str>>,
    #[serde(borrow)]
    answer: Option<&'a RawValue>,
}

impl Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The payload with only what the host calls need.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    request: Namespaced<'a>,
    #[serde(borrow, default)]
    settings: Given<'a>,
}

#[derive(Deserialize)]
struct Namespaced<'a> {
    #[serde(borrow, default)]
    namespace: Cow<'a, str>,
}

/// Only in the module: natively the benchmarks may link this crate next to the injector policy,
/// which exports its own `wapc_init`.
#[cfg(target_arch = "wasm32")]
#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    use kubewarden_policy_sdk::wapc_guest as guest;
    guest::register_function("validate", validate);
    guest::register_function(
        "validate_settings",
        kubewarden_policy_sdk::validate_settings::<Settings>,
    );
    guest::register_function("protocol_version", kubewarden_policy_sdk::protocol_version_guest);
}

/// Tokenises the payload and the answers of the injector's host calls, then accepts (or answers
/// the settings' `answer`).
pub fn validate(payload: &[u8]) -> CallResult {
    let envelope: Envelope<'_> = serde_json::from_slice(payload)?;
    tokenised_answer(
        "get_resource",
        &GetResourceRequest {
            api_version: "v1".to_owned(),
            kind: "Namespace".to_owned(),
            name: envelope.request.namespace.into_owned(),
            namespace: None,
            disable_cache: false,
            field_masks: Some(["metadata.annotations".to_owned()].into_iter().collect()),
        },
    )?;
    if let Some(namespace) = envelope.settings.list_config_maps {
        tokenised_answer(
            "list_resources_by_namespace",
            &ListResourcesByNamespaceRequest {
                api_version: "v1".to_owned(),
                kind: "ConfigMap".to_owned(),
                namespace: namespace.into_owned(),
                label_selector: None,
                field_selector: None,
                field_masks: Some(["data".to_owned()].into_iter().collect()),
            },
        )?;
    }
    match envelope.settings.answer {
        Some(answer) => Ok(answer.get().as_bytes().to_vec()),
        None => kubewarden_policy_sdk::accept_request(),
    }
}

/// One `kubernetes` host call; its answer is tokenised, nothing built (the SDK's own helpers
/// would deserialise it into k8s-openapi types).
fn tokenised_answer(
    operation: &str,
    request: &impl Serialize,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let answer = host_call(
        "kubewarden",
        "kubernetes",
        operation,
        &serde_json::to_vec(request)?,
    )?;
    let _: IgnoredAny = serde_json::from_slice(&answer)?;
    Ok(())
}
