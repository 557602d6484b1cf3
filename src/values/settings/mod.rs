//! Policy settings: Linkerd's Helm values subset plus the policy's own `policy` block.
//!
//! Decoding is strict about types and values (every error names its key path) and about the
//! settings document's keys: a key that is in none of Linkerd's values documents is a typo
//! (`known_keys`), while keys Linkerd has but the injector ignores are accepted, so a whole values
//! document can be pasted. The cluster's `linkerd-config` values are not typo-checked.

mod block;
mod known_keys;
mod policy;
mod scalar;
mod validate;
pub use validate::{INBOUND_POLICIES, opaque_ports_are_valid};
mod values;

pub use block::{Block, ChartDefault};
pub use policy::{
    ConfigMapLookup, LookupFailure, Mode, OwnerResolution, PolicyOptions, StaleProxy, TrustAnchorsSource,
    ValuesFailure, ValuesSource, VersionOutsideWindow,
};
pub use values::*;

use serde_json::Value;

/// One invalid setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("settings{}{path}: {message}", if path.is_empty() { "" } else { "." })]
pub struct FieldError {
    pub path: String,
    pub message: String,
}

impl FieldError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Every problem found in a settings document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", join(.0))]
pub struct SettingsError(pub Vec<FieldError>);

fn join(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl Settings {
    /// Decodes and validates settings given as JSON (`null` means all defaults).
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Self, SettingsError> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| SettingsError(vec![FieldError::new("", format!("not valid JSON: {e}"))]))?;
        Self::from_value(value)
    }

    /// Decodes and validates an already parsed settings document, over the chart's defaults.
    pub fn from_value(mut value: Value) -> Result<Self, SettingsError> {
        match &value {
            Value::Null => return Ok(Settings::default()),
            Value::Object(_) => strip_nulls(&mut value),
            other => {
                let msg = format!("must be an object, got {}", scalar::kind_of(other));
                return Err(SettingsError(vec![FieldError::new("", msg)]));
            }
        }
        // an empty document (or one of nulls alone) is the defaults, with no overrides
        if value.as_object().is_some_and(serde_json::Map::is_empty) {
            return Ok(Settings::default());
        }
        // a shape error comes before any other
        check_shapes(&value)?;
        let unknown = known_keys::unknown_keys(&value);
        if !unknown.is_empty() {
            return Err(SettingsError(unknown));
        }
        let mut settings = decode_over_defaults([value.clone()])?;
        settings.overrides = value;
        Ok(settings)
    }

    /// These settings over the control plane's Helm values: chart defaults < `values` < this
    /// policy's settings document, merged key by key as Helm does. `values` may not set the
    /// policy's own block, and its `identityTrustAnchorsPEM` is dropped: like Linkerd's injector,
    /// the policy takes the trust bundle from the trust-roots ConfigMap or from its settings.
    pub fn over_values(&self, mut values: Value) -> Result<Self, SettingsError> {
        let Value::Object(map) = &mut values else {
            let msg = format!("must be a mapping, got {}", scalar::kind_of(&values));
            return Err(SettingsError(vec![FieldError::new("", msg)]));
        };
        for key in Settings::NOT_FROM_VALUES {
            map.remove(*key);
        }
        strip_nulls(&mut values);
        check_shapes(&values)?;
        let mut settings = decode_layers([values, self.overrides.clone()])?;
        // The policy block is this policy's alone, never the cluster's: keep it as decoded.
        settings.policy = self.policy.clone();
        settings.overrides = self.overrides.clone();
        Ok(settings)
    }

    /// The trust domain of mesh identities.
    pub fn trust_domain(&self) -> &str {
        if self.identity_trust_domain.is_empty() {
            &self.cluster_domain
        } else {
            &self.identity_trust_domain
        }
    }
}

/// Keys that hold objects; serde would also accept arrays for them.
const OBJECT_KEYS: &[&str] = &[
    "policy",
    "identity",
    "proxy",
    "proxy.image",
    "proxy.ports",
    "proxy.runtime",
    "proxy.runtime.workers",
    "proxy.resources",
    "proxy.resources.cpu",
    "proxy.resources.memory",
    "proxy.resources.ephemeral-storage",
    "proxy.livenessProbe",
    "proxy.readinessProbe",
    "proxy.startupProbe",
    "proxy.control",
    "proxy.control.streams",
    "proxy.metrics",
    "proxy.tracing",
    "proxy.tracing.labels",
    "proxy.tracing.collector",
    "proxy.tracing.collector.meshIdentity",
    "proxyInit",
    "proxyInit.xtMountPath",
    "networkValidator",
    "debugContainer",
    "debugContainer.image",
];

/// Keys that must hold objects, checked before serde (which would accept arrays for them).
fn check_shapes(value: &Value) -> Result<(), SettingsError> {
    let errors: Vec<FieldError> = OBJECT_KEYS
        .iter()
        .filter_map(|path| {
            let found = path.split('.').try_fold(value, |v, k| v.get(k))?;
            (!found.is_object()).then(|| {
                FieldError::new(
                    *path,
                    format!("must be an object, got {}", scalar::kind_of(found)),
                )
            })
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(SettingsError(errors))
    }
}

/// The free-form blocks with a chart default. [`check_shapes`] keeps every other block whose
/// chart default differs from its type's `Default` an object.
const FREE_FORM_BLOCKS: &[&str] = &[
    "/proxy/inbound",
    "/proxy/outbound",
    "/networkValidator/securityContext",
];

/// The layers (shapes checked) merged first, then over the chart defaults, unless a layer sets
/// a [`FREE_FORM_BLOCKS`] block to a non-object: then each goes over the defaults in turn.
fn decode_layers(layers: [Value; 2]) -> Result<Settings, SettingsError> {
    // Not collapsed: in turn alone, or merged first alone, would change answers the module gives.
    let hides_a_default = FREE_FORM_BLOCKS.iter().any(|block| {
        layers
            .iter()
            .any(|l| l.pointer(block).is_some_and(|v| !v.is_object()))
    });
    if hides_a_default {
        return decode_over_defaults(layers);
    }
    let mut merged = Value::Object(Default::default());
    for layer in layers.into_iter().filter(|l| !l.is_null()) {
        merge(&mut merged, layer);
    }
    decode_over_defaults([merged])
}

/// Each layer merged over the chart defaults in turn: a partial block (`proxy.image: {version:
/// x}`) keeps the other defaults of that block. Then decoded and validated as a whole.
fn decode_over_defaults<const N: usize>(layers: [Value; N]) -> Result<Settings, SettingsError> {
    let mut merged = serde_json::to_value(Settings::default()).unwrap_or(Value::Null);
    policy::apply_version_defaults(&mut merged, &layers);
    for layer in layers.into_iter().filter(|l| !l.is_null()) {
        merge(&mut merged, layer);
    }
    let settings: Settings = serde_path_to_error::deserialize(&merged).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        SettingsError(vec![FieldError::new(path, e.into_inner().to_string())])
    })?;
    let errors = validate::validate(&settings);
    if errors.is_empty() {
        Ok(settings)
    } else {
        Err(SettingsError(errors))
    }
}

/// Objects merge key by key; anything else (arrays included) replaces.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o,
    }
}

/// Helm treats `key: null` as "not set": drop such keys so the defaults apply.
fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list the values reader keeps is exactly the serialised fields.
    #[test]
    fn top_level_keys_are_the_fields() {
        let defaults = serde_json::to_value(Settings::default()).unwrap();
        let mut fields: Vec<&str> = defaults.as_object().unwrap().keys().map(String::as_str).collect();
        let mut listed = Settings::TOP_LEVEL_KEYS.to_vec();
        fields.sort_unstable();
        listed.sort_unstable();
        assert_eq!(fields, listed);
    }

    /// Every key that must hold an object, given any other kind, is refused as check_shapes
    /// words it.
    #[test]
    fn keys_that_hold_objects_refuse_other_kinds() {
        use serde_json::json;
        for path in OBJECT_KEYS {
            for (bad, kind) in [
                (json!("x"), "string"),
                (json!(1), "number"),
                (json!(true), "boolean"),
                (json!([]), "array"),
                (json!([{}]), "array"),
            ] {
                let doc = path.rsplit('.').fold(bad, |inner, key| json!({ key: inner }));
                let expected = format!("settings.{path}: must be an object, got {kind}");
                let got = Settings::from_value(doc.clone())
                    .map(|_| ())
                    .map_err(|e| e.to_string());
                assert_eq!(got, Err(expected), "{doc}");
            }
        }
    }

    /// The settings' part of a free-form block keeps the rest of its chart default over values
    /// that hold a non-object inside the block, and none of it over values that set the block
    /// to one.
    #[test]
    fn a_block_set_in_part_over_values() {
        use serde_json::json;
        let interval = json!({"proxy": {"outbound": {"server": {"http2": {"keepAliveInterval": "1s"}}}}});
        let settings = Settings::from_value(interval).unwrap();
        let outbound = |values| {
            settings
                .over_values(values)
                .map(|s| s.proxy.outbound.get().into_owned())
        };
        assert_eq!(
            outbound(json!({"proxy": {"outbound": {"server": "x"}}})),
            Ok(json!({"server": {"http2": {"keepAliveInterval": "1s", "keepAliveTimeout": "3s"}}}))
        );
        assert_eq!(
            outbound(json!({"proxy": {"outbound": "x"}})),
            Ok(json!({"server": {"http2": {"keepAliveInterval": "1s"}}}))
        );
    }

    /// `from_value` returns the defaults for an empty document without validating them: every
    /// check passes them.
    #[test]
    fn defaults_pass_validation() {
        assert_eq!(validate::validate(&Settings::default()), vec![]);
        assert_eq!(
            Settings::from_value(Value::Object(Default::default())).unwrap(),
            Settings::default()
        );
        assert_eq!(Settings::from_value(Value::Null).unwrap(), Settings::default());
    }
}
