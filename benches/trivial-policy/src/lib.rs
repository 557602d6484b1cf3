//! Calibration for the benchmarks: what "a trivial mutating policy" costs in an engine.
//!
//! `validate` parses `{"request", "settings"}` with the SDK's `ValidationRequest`, deserialises
//! the object into a k8s-openapi `Pod`, adds the label `trivial: "true"` and answers with
//! `mutate_request`. With `{"lookup": true}` it first reads the request's Namespace through the
//! SDK's `get_resource` host capability (cached: `disable_cache: false`) and then does the same.
//! With `{"lookup": true, "listConfigMaps": "linkerd"}` it also lists that namespace's ConfigMaps
//! (`list_resources_by_namespace`, mask `data`): the two host calls the injector makes for an
//! injected pod, with a trivial policy's work around them.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListResourcesByNamespaceRequest, get_resource, list_resources_by_namespace,
};
use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::settings::Validatable;
use kubewarden_policy_sdk::wapc_guest::CallResult;
use serde::{Deserialize, Serialize};

/// `{"lookup": bool, "listConfigMaps": namespace}`, default false and none.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Settings {
    /// Do one cached `get_resource` of the request's Namespace before mutating.
    pub lookup: bool,
    /// List the ConfigMaps of this namespace before mutating.
    pub list_config_maps: Option<String>,
}

impl Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
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

/// Adds `trivial: "true"` to the pod's labels, after the Namespace lookup if the settings ask.
pub fn validate(payload: &[u8]) -> CallResult {
    let request: ValidationRequest<Settings> = serde_json::from_slice(payload)?;
    if request.settings.lookup {
        let _namespace: Namespace = get_resource(&GetResourceRequest {
            api_version: "v1".to_owned(),
            kind: "Namespace".to_owned(),
            name: request.request.namespace.clone(),
            namespace: None,
            disable_cache: false,
            field_masks: None,
        })?;
    }
    if let Some(namespace) = &request.settings.list_config_maps {
        let _config_maps: k8s_openapi::List<ConfigMap> =
            list_resources_by_namespace(&ListResourcesByNamespaceRequest {
                api_version: "v1".to_owned(),
                kind: "ConfigMap".to_owned(),
                namespace: namespace.clone(),
                label_selector: None,
                field_selector: None,
                field_masks: Some(["data".to_owned()].into_iter().collect()),
            })?;
    }
    let mut pod: Pod = serde_json::from_value(request.request.object)?;
    pod.metadata
        .labels
        .get_or_insert_default()
        .insert("trivial".to_owned(), "true".to_owned());
    kubewarden_policy_sdk::mutate_request(serde_json::to_value(&pod)?)
}
