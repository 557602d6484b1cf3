//! The control plane's Helm values: key `values` of the `linkerd-config` ConfigMap, which
//! Linkerd's own injector re-reads on every request. Read through the engine's cached lookups,
//! parsed whole, and layered under the policy's settings ([`Settings::over_values`]), so a
//! `helm upgrade` of Linkerd takes effect at once and is never half applied.
//!
//! [`Values`] reads them at most once per admission, and only when an answer depends on them:
//! a pod that gets a proxy needs them ([`Values::required`]); the default opaque-ports annotation
//! of a pod without a proxy or of a Service only refines the answer ([`Values::optional`]), so an
//! unusable `linkerd-config` never rejects a workload that asked for no proxy.

use crate::cluster::{Cluster, Lookup, LookupError};
use crate::values::settings::{Settings, SettingsError, ValuesFailure, ValuesSource};
use serde_json::Value;
use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};

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

/// The values of one admission, read on first use.
pub struct Values<'s, 'c> {
    settings: &'s Settings,
    cluster: &'c dyn Cluster,
    read: OnceCell<Result<InEffect<'s>, ValuesError>>,
    /// What was left out of the answer because the values were unusable.
    left_out: RefCell<Vec<&'static str>>,
}

/// How the values of one admission were used, for the warnings the answer carries.
#[derive(Debug, PartialEq)]
pub enum Read<'a> {
    /// Not read: nothing in the answer depends on them.
    NotRead,
    /// Read and layered under the settings.
    Used,
    /// Unusable; the settings alone were used (`policy.linkerdConfigFailure: settings`).
    SettingsAlone(&'a ValuesError),
    /// Unusable; these outputs were left out of the answer (or the admission was rejected).
    Unusable(&'a ValuesError, Vec<&'static str>),
}

/// What an unusable `linkerd-config` leaves out of a pod's or Service's answer.
const OPAQUE_DEFAULT: &str = "the default config.linkerd.io/opaque-ports annotation (proxy.opaquePorts)";

impl<'s, 'c> Values<'s, 'c> {
    pub fn new(settings: &'s Settings, cluster: &'c dyn Cluster) -> Self {
        Self {
            settings,
            cluster,
            read: OnceCell::new(),
            left_out: RefCell::new(Vec::new()),
        }
    }

    /// The policy's own settings, which never come from the values (`policy.*`).
    pub fn settings(&self) -> &'s Settings {
        self.settings
    }

    fn in_effect(&self) -> &Result<InEffect<'s>, ValuesError> {
        self.read.get_or_init(|| {
            let settings = self.settings;
            if settings.policy.values_from == ValuesSource::Settings {
                return Ok(InEffect {
                    settings: Cow::Borrowed(settings),
                    fallback: None,
                });
            }
            let at = || config_map_name(settings);
            let layered = fetch(settings, self.cluster).and_then(|text| layer(settings, &text, at()));
            match layered {
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
        })
    }

    /// The settings in effect for an answer that cannot be given without them (a pod that gets
    /// a proxy); `Err` is the rejection under `policy.linkerdConfigFailure: reject`.
    pub fn required(&self) -> Result<&Settings, ValuesError> {
        match self.in_effect() {
            Ok(v) => Ok(&v.settings),
            Err(e) => Err(e.clone()),
        }
    }

    /// The settings in effect for `output`, which the answer can do without: `None` when the
    /// values are unusable under `policy.linkerdConfigFailure: reject`, and `output` is then
    /// named in the admission's warning.
    pub fn optional(&self, output: &'static str) -> Option<&Settings> {
        match self.in_effect() {
            Ok(v) => Some(&v.settings),
            Err(_) => {
                self.left_out.borrow_mut().push(output);
                None
            }
        }
    }

    /// `proxy.opaquePorts` in effect, for the default annotation of an object that gets no
    /// proxy; `None` when the values are unusable (then named in the warning). The values are
    /// read whole, as for a pod that gets a proxy, so one rule decides whether they are usable.
    pub fn opaque_ports(&self) -> Option<String> {
        let settings = self.settings;
        let set_here = settings.policy.values_from == ValuesSource::Settings
            || settings
                .overrides
                .get("proxy")
                .and_then(|p| p.get("opaquePorts"))
                .is_some();
        if set_here {
            return Some(settings.proxy.opaque_ports.to_string());
        }
        self.optional(OPAQUE_DEFAULT)
            .map(|s| s.proxy.opaque_ports.to_string())
    }

    /// What this admission did with the values.
    pub fn read(&self) -> Read<'_> {
        match self.read.get() {
            None => Read::NotRead,
            Some(Ok(InEffect { fallback: None, .. })) => Read::Used,
            Some(Ok(InEffect {
                fallback: Some(e), ..
            })) => Read::SettingsAlone(e),
            Some(Err(e)) => Read::Unusable(e, self.left_out.borrow().clone()),
        }
    }
}

fn config_map_name(settings: &Settings) -> String {
    let policy = &settings.policy;
    [&policy.control_plane_namespace, "/", &policy.linkerd_config_map].concat()
}

fn config_map_lookup(settings: &Settings) -> Lookup {
    Lookup::config_map(
        &settings.policy.control_plane_namespace,
        &settings.policy.linkerd_config_map,
    )
}

/// The ConfigMap's `values` text.
fn fetch(settings: &Settings, cluster: &dyn Cluster) -> Result<String, ValuesError> {
    let mut config_map = cluster.get(&config_map_lookup(settings)).map_err(|e| match e {
        LookupError::NotFound(_) => ValuesError::NotFound {
            at: config_map_name(settings),
        },
        LookupError::Failed(message) => ValuesError::Lookup {
            at: config_map_name(settings),
            message,
        },
    })?;
    // the answer is ours: take the text out of it rather than copy it
    let values = config_map.get_mut("data").and_then(|d| d.get_mut(VALUES_KEY));
    match values.map(Value::take) {
        Some(Value::String(text)) => Ok(text),
        _ => Err(ValuesError::MissingKey {
            at: config_map_name(settings),
        }),
    }
}

/// Parses the values and layers them under the settings; all or nothing. A document outside the
/// Helm reader's subset is read by libyaml.
fn layer(settings: &Settings, text: &str, at: String) -> Result<Settings, ValuesError> {
    use crate::values::helm_yaml::{libyaml_keeping, read_keeping};
    let values = match read_keeping(text, Settings::reads_from_values) {
        Some(node) => node.into_value(),
        None => libyaml_keeping(text, Settings::reads_from_values).map_err(|e| ValuesError::NotYaml {
            at: at.clone(),
            message: e.to_string(),
        })?,
    };
    settings
        .over_values(values)
        .map_err(|source| ValuesError::Invalid { at, source })
}
