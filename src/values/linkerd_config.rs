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
use crate::values::helm_yaml::{skim_along_json, skim_json_string};
use crate::values::settings::{Settings, SettingsError, ValuesFailure, ValuesSource};
use serde_json::Value;
use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};

/// The ConfigMap's data key holding the values document.
pub const VALUES_KEY: &str = "values";
const VALUES_PATH: [&str; 2] = ["data", VALUES_KEY];

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
    /// `data.values` of `linkerd-config`, fetched once.
    text: OnceCell<Result<String, ValuesError>>,
    read: OnceCell<Result<InEffect<'s>, ValuesError>>,
    /// What was left out of the answer because the values were unusable.
    left_out: RefCell<Vec<&'static str>>,
}

/// How the values of one admission were used, for the warnings the answer carries.
#[derive(Debug, PartialEq)]
pub enum Read<'a> {
    /// Not read whole: nothing in the answer depends on more than `proxy.opaquePorts`.
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
            text: OnceCell::new(),
            read: OnceCell::new(),
            left_out: RefCell::new(Vec::new()),
        }
    }

    /// The policy's own settings, which never come from the values (`policy.*`).
    pub fn settings(&self) -> &'s Settings {
        self.settings
    }

    fn text(&self) -> Result<&str, &ValuesError> {
        match self.text.get_or_init(|| fetch(self.settings, self.cluster)) {
            Ok(text) => Ok(text),
            Err(e) => Err(e),
        }
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
            let layered = self
                .text()
                .map_err(Clone::clone)
                .and_then(|text| layer(settings, text, at()));
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
    /// proxy; `None` when the values are unusable (then named in the warning). That key alone
    /// is read from `linkerd-config` when the settings do not set it and nothing else needed
    /// the values ([`Values::opaque_ports_alone`]); a document the targeted reads cannot answer
    /// exactly is read whole.
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
        if self.read.get().is_none()
            && let Some(ports) = self.opaque_ports_alone()
        {
            return Some(ports);
        }
        self.optional(OPAQUE_DEFAULT)
            .map(|s| s.proxy.opaque_ports.to_string())
    }

    /// `proxy.opaquePorts` read alone: where the cluster's answer holds the document, its
    /// escapes left in (neither unescaped nor copied), or else from the document's text;
    /// `None` when neither read is sure.
    fn opaque_ports_alone(&self) -> Option<String> {
        if self.text.get().is_none()
            && let Some(ports) = self.skimmed_in_answer().and_then(|doc| ports_in(&doc))
        {
            return Some(ports);
        }
        opaque_ports_of(self.text().ok()?)
    }

    /// The document cut to `proxy.opaquePorts`, skimmed where the cluster's answer holds it.
    /// The skim is handed each such string as the answer is read, and its finding where the
    /// string ends spares the answer's reader that search. Where the skim read the string
    /// returned (it starts there), its answer stands, and so does its doubt: the skim reads the
    /// same bytes up to the closing quote either way, so skimming the string again could only
    /// doubt again. Its answer counts only where it ended where the string does.
    fn skimmed_in_answer(&self) -> Option<Value> {
        let mut skimmed = None;
        let lookup = config_map_lookup(self.settings);
        let json = self.cluster.json_string(&lookup, &VALUES_PATH, &mut |rest| {
            let found = skim_json_string(rest, "proxy", "opaquePorts");
            let end = found.as_ref().map(|&(_, end)| end);
            skimmed = Some((rest.as_ptr(), found));
            end
        })?;
        match skimmed {
            Some((at, found)) if std::ptr::eq(at, json.as_ptr()) => {
                found.and_then(|(doc, end)| (end == json.len()).then_some(doc))
            }
            _ => skim_along_json(&json, "proxy", "opaquePorts"),
        }
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

/// Parses the values and layers them under the settings; all or nothing. The reader's tree is
/// decoded straight into the settings; a document outside the reader's subset, or a decode left
/// to the reference path, takes `serde_json` values and [`Settings::over_values`].
fn layer(settings: &Settings, text: &str, at: String) -> Result<Settings, ValuesError> {
    use crate::values::helm_yaml::{libyaml_keeping, read_keeping};
    // each reader reads the document once: the subset reader's tree serves both paths
    let values = match read_keeping(text, Settings::reads_from_values) {
        Some(node) => match settings.over_node(&node) {
            Some(decoded) => return decoded.map_err(|source| ValuesError::Invalid { at, source }),
            None => node.into_value(),
        },
        None => libyaml_keeping(text, Settings::reads_from_values).map_err(|e| ValuesError::NotYaml {
            at: at.clone(),
            message: e.to_string(),
        })?,
    };
    settings
        .over_values(values)
        .map_err(|source| ValuesError::Invalid { at, source })
}

/// `proxy.opaquePorts` of a values document, as reading the whole document under settings that
/// do not set it gives it: the chart default when absent or null, the string when it is a valid
/// list. `None` for anything else (a document both targeted readers decline, another type, an
/// invalid list), which the whole read then explains. The skim reads the key's own lines only,
/// so a YAML mistake away from them does not touch the answer either.
fn opaque_ports_of(text: &str) -> Option<String> {
    use crate::values::helm_yaml::{fast_along, skim_along};
    let doc =
        skim_along(text, "proxy", "opaquePorts").or_else(|| fast_along(text, &["proxy", "opaquePorts"]))?;
    ports_in(&doc)
}

/// [`opaque_ports_of`] from the document cut to `proxy.opaquePorts`.
fn ports_in(doc: &Value) -> Option<String> {
    let ports = match doc.get("proxy") {
        None | Some(Value::Null) => None,
        Some(Value::Object(proxy)) => proxy.get("opaquePorts").filter(|v| !v.is_null()),
        Some(_) => return None,
    };
    match ports {
        None => Some(crate::values::settings::DEFAULT_OPAQUE_PORTS.to_string()),
        Some(Value::String(s)) if crate::values::settings::opaque_ports_are_valid(s) => Some(s.clone()),
        Some(_) => None,
    }
}
