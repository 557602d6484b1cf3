//! The control plane's Helm values: key `values` of the `linkerd-config` ConfigMap, which
//! Linkerd's own injector re-reads on every request. Read through the engine's cached lookups,
//! parsed whole, and layered under the policy's settings ([`Settings::over_values`]), so a
//! `helm upgrade` of Linkerd takes effect at once and is never half applied.

use crate::cluster::{Cluster, Lookup, LookupError};
use crate::settings::{Settings, SettingsError, ValuesFailure, ValuesSource};
use serde_json::Value;
use std::borrow::Cow;

/// The ConfigMap's data key holding the values document.
pub const VALUES_KEY: &str = "values";

/// Why the control plane's values could not be used. Every message names the ConfigMap.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValuesError {
    #[error(
        "ConfigMap {at} not found: is Linkerd's control plane installed there? (policy.controlPlaneNamespace, policy.linkerdConfigMap; policy.valuesFrom: settings reads no ConfigMap)"
    )]
    NotFound { at: String },
    #[error("could not read ConfigMap {at}: {message} (usually transient; the API server will retry)")]
    Lookup { at: String, message: String },
    #[error("ConfigMap {at} has no data key \"{VALUES_KEY}\"")]
    MissingKey { at: String },
    #[error("ConfigMap {at}, key \"{VALUES_KEY}\": not YAML: {message}")]
    NotYaml { at: String, message: String },
    #[error("ConfigMap {at}, key \"{VALUES_KEY}\", under this policy's settings: {source}")]
    Invalid { at: String, source: SettingsError },
}

/// The settings in effect for one admission, and why the cluster's values were not used when a
/// fallback to the settings alone was taken.
#[derive(Debug)]
pub struct InEffect<'s> {
    pub settings: Cow<'s, Settings>,
    pub fallback: Option<ValuesError>,
}

/// The values in effect: the settings alone, or the control plane's values under them.
/// `Err` is the rejection to return (`policy.linkerdConfigFailure: reject`).
pub fn in_effect<'s>(settings: &'s Settings, cluster: &dyn Cluster) -> Result<InEffect<'s>, ValuesError> {
    if settings.policy.values_from == ValuesSource::Settings {
        return Ok(InEffect {
            settings: Cow::Borrowed(settings),
            fallback: None,
        });
    }
    match read(settings, cluster) {
        Ok(merged) => Ok(InEffect {
            settings: Cow::Owned(merged),
            fallback: None,
        }),
        Err(e) if settings.policy.linkerd_config_failure == ValuesFailure::Settings => Ok(InEffect {
            settings: Cow::Borrowed(settings),
            fallback: Some(e),
        }),
        Err(e) => Err(e),
    }
}

/// Reads, parses and layers the ConfigMap's values; all or nothing.
fn read(settings: &Settings, cluster: &dyn Cluster) -> Result<Settings, ValuesError> {
    let namespace = &settings.policy.control_plane_namespace;
    let name = &settings.policy.linkerd_config_map;
    let at = format!("{namespace}/{name}");
    let config_map = cluster
        .get(&Lookup::config_map(namespace, name))
        .map_err(|e| match e {
            LookupError::NotFound(_) => ValuesError::NotFound { at: at.clone() },
            LookupError::Failed(message) => ValuesError::Lookup {
                at: at.clone(),
                message,
            },
        })?;
    let Some(text) = config_map.pointer("/data/values").and_then(Value::as_str) else {
        return Err(ValuesError::MissingKey { at });
    };
    let values: Value =
        crate::helm_yaml::from_str_keeping(text, Settings::reads_from_values).map_err(|e| {
            ValuesError::NotYaml {
                at: at.clone(),
                message: e.to_string(),
            }
        })?;
    settings
        .over_values(values)
        .map_err(|source| ValuesError::Invalid { at, source })
}
