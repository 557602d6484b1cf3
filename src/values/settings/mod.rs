//! Policy settings: Linkerd's Helm values subset plus the policy's own `policy` block.
//!
//! Decoding is strict about types and values (every error names its key path) and about the
//! settings document's keys: a key that is in none of Linkerd's values documents is a typo
//! (`known_keys`), while keys Linkerd has but the injector ignores are accepted, so a whole values
//! document can be pasted. The cluster's `linkerd-config` values are not typo-checked.

mod block;
mod known_keys;
mod layered;
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

use crate::values::helm_yaml::Node;
use layered::{Keys, Layer, Layered};
use serde::Deserialize;
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
            // Every admission runs in a fresh instance: the common empty document is the
            // defaults, which are valid (`defaults_pass_validation` below), with nothing to check.
            Value::Null => return Ok(Settings::default()),
            Value::Object(map) if map.is_empty() => return Ok(Settings::default()),
            Value::Object(_) => strip_nulls(&mut value),
            other => {
                let msg = format!("must be an object, got {}", scalar::kind_of(other));
                return Err(SettingsError(vec![FieldError::new("", msg)]));
            }
        }
        // A shape error comes before any other. The layered decode refuses every non-object
        // where `check_shapes` wants one (`shapes_are_checked_where_the_decode_succeeds`), so
        // the shapes are checked only when something else fails: a settings document is decoded
        // on every admission.
        let unknown = known_keys::unknown_keys(&value);
        if !unknown.is_empty() {
            check_shapes(&value)?;
            return Err(SettingsError(unknown));
        }
        // a document of nulls alone is empty too
        if value.as_object().is_some_and(|m| m.is_empty()) {
            return Ok(Settings::default());
        }
        let mut settings = match decode_layered(&[Layer::Json(&value)], None) {
            Some(Ok(settings)) => settings,
            decoded => {
                check_shapes(&value)?;
                decoded.unwrap_or_else(|| decode_layers([value.clone()], None))?
            }
        };
        settings.overrides = value;
        Ok(settings)
    }

    /// These settings over the control plane's Helm values: chart defaults < `values` < this
    /// policy's settings document, merged key by key as Helm does. `values` may not set the
    /// policy's own block, and its `identityTrustAnchorsPEM` is dropped: like Linkerd's injector,
    /// the policy takes the trust bundle from the trust-roots ConfigMap or from its settings.
    /// `self` is settings that passed validation (as [`Settings::from_value`] and `Default` give
    /// them): a text value the merge kept from them is not checked again.
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
        let mut settings = decode_layers([values, self.overrides.clone()], Some(self))?;
        // The policy block is this policy's alone, never the cluster's: keep it as decoded.
        settings.policy = self.policy.clone();
        settings.overrides = self.overrides.clone();
        Ok(settings)
    }

    /// [`Settings::over_values`] for values the Helm YAML reader read (with
    /// [`Settings::reads_from_values`]), decoded straight from the reader's tree with the
    /// settings document layered over it key by key ([`layered`]). `None` when the decode is
    /// left to `over_values` (which also names the key of any error); where this answers, it
    /// answers as `over_values` does.
    pub fn over_node(&self, values: &Node<'_>) -> Option<Result<Self, SettingsError>> {
        if Settings::NOT_FROM_VALUES
            .iter()
            .any(|key| values.get(key).is_some())
        {
            return None;
        }
        let mut layers = vec![Layer::Yaml(values)];
        if self.overrides.is_object() {
            layers.push(Layer::Json(&self.overrides));
        }
        let decoded = decode_layered(&layers, Some(self))?.map(|mut settings| {
            // The policy block is this policy's alone, never the cluster's (as in `over_values`).
            settings.policy = self.policy.clone();
            settings.overrides = self.overrides.clone();
            settings
        });
        Some(decoded)
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

/// The defaults as a JSON document, computed once.
fn defaults_document() -> &'static Value {
    static DEFAULTS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    DEFAULTS.get_or_init(|| to_value(Settings::default()))
}

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

/// The layers merged as Helm merges them, decoded over the chart defaults. The layers alone are
/// merged and deserialised: a key no layer sets takes its struct's serde default, which is the
/// chart default, except under the blocks of [`PARTIAL_DEFAULTS`], which a parent defaults
/// differently from the block's type and which are completed first. Building the whole defaults
/// document cost more than the rest of the decode in a fresh instance. Any error is explained
/// by [`decode_over_defaults`], which gives the same settings (`decode_layers_as_over_the_defaults`
/// below checks every partial block).
fn decode_layers<const N: usize>(
    layers: [Value; N],
    before: Option<&Settings>,
) -> Result<Settings, SettingsError> {
    // Merging layers before the defaults differs from Helm's order only where a layer sets a
    // non-object at or above a partial block: rare, so it takes the reference path.
    let non_object_at_partial = PARTIAL_DEFAULTS.iter().any(|(path, ..)| {
        layers.iter().any(|layer| {
            (1..=path.len()).any(|n| {
                let found = path.iter().take(n).try_fold(layer, |v, k| v.get(*k));
                found.is_some_and(|v| !v.is_object() && !v.is_null())
            })
        })
    });
    if non_object_at_partial {
        return decode_over_defaults(layers);
    }
    let native_sidecar_set = layers
        .iter()
        .any(|l| l.get("proxy").and_then(|p| p.get("nativeSidecar")).is_some());
    let mut merged = Value::Object(Default::default());
    for layer in layers.into_iter().filter(|l| !l.is_null()) {
        merge(&mut merged, layer);
    }
    for (path, default, _) in PARTIAL_DEFAULTS {
        if let Some(block @ Value::Object(_)) = path.iter().try_fold(&mut merged, |v, k| v.get_mut(*k)) {
            let mut full = default();
            merge(&mut full, std::mem::take(block));
            *block = full;
        }
    }
    // The completed blocks hold what the defaults document would: the reference path over
    // `merged` gives the same settings, and names the key of an error.
    let Ok(settings) = Settings::deserialize(&merged) else {
        return decode_over_defaults([merged]);
    };
    finish(settings, native_sidecar_set, before)
}

/// Decoded settings completed and validated: `proxy.nativeSidecar` defaults by the Linkerd
/// version rendered unless a layer set it.
fn finish(
    mut settings: Settings,
    native_sidecar_set: bool,
    before: Option<&Settings>,
) -> Result<Settings, SettingsError> {
    if !native_sidecar_set {
        settings.proxy.native_sidecar =
            policy::native_sidecar_default(&settings.linkerd_version, settings.policy.render_version);
    }
    let errors = validate::validate(&settings, before);
    if errors.is_empty() {
        Ok(settings)
    } else {
        Err(SettingsError(errors))
    }
}

/// [`decode_layers`] over layers read in place ([`layered`]), with the same answer where it
/// answers; `None` leaves the decode to `decode_layers`, which names the key of an error.
fn decode_layered(
    layers: &[Layer<'_>],
    before: Option<&Settings>,
) -> Option<Result<Settings, SettingsError>> {
    // a block some layer sets in full takes nothing from its default, which is not built
    let partials: Vec<_> = PARTIAL_DEFAULTS
        .iter()
        .filter(|(path, _, keys)| {
            let mut blocks = layers.iter().filter_map(|l| l.at(path)).peekable();
            blocks.peek().is_some() && !blocks.any(|block| block.covers(keys))
        })
        .map(|(path, default, _)| (*path, default()))
        .collect();
    let root = Layered::root(layers, &partials).ok()?;
    let settings = Settings::deserialize(root).ok()?;
    let native_sidecar_set = layers.iter().any(|l| l.at(&["proxy", "nativeSidecar"]).is_some());
    Some(finish(settings, native_sidecar_set, before))
}

/// Blocks whose chart default is not their type's `Default` (a parent sets it), or that are
/// free-form maps with default keys: a partial block is merged over that default.
/// Each with the keys of its default (`chart_default_keys_are_the_defaults` below), so that a
/// block a layer sets in full is known without building the default.
type PartialDefault = (&'static [&'static str], fn() -> Value, Keys);
const PARTIAL_DEFAULTS: &[PartialDefault] = &[
    (
        &["proxy", "image"],
        || to_value(values::proxy_image()),
        IMAGE_KEYS,
    ),
    (
        &["proxy", "runtime", "workers"],
        || to_value(Runtime::default().workers),
        Keys::Map(&[
            ("maximum", Keys::Unset),
            ("maximumCPURatio", Keys::Unset),
            ("minimum", Keys::Leaf),
        ]),
    ),
    (
        &["proxy", "livenessProbe"],
        || to_value(values::liveness_probe()),
        PROBE_KEYS,
    ),
    (
        &["proxy", "readinessProbe"],
        || to_value(values::readiness_probe()),
        PROBE_KEYS,
    ),
    (&["proxy", "inbound"], Http2KeepAlive::value, KEEP_ALIVE_KEYS),
    (&["proxy", "outbound"], Http2KeepAlive::value, KEEP_ALIVE_KEYS),
    (
        &["proxy", "tracing", "labels"],
        || to_value(Tracing::default().labels),
        Keys::Map(&[
            ("k8s.container.name", Keys::Leaf),
            ("k8s.pod.ip", Keys::Leaf),
            ("k8s.pod.uid", Keys::Leaf),
        ]),
    ),
    (
        &["networkValidator", "securityContext"],
        NetworkValidatorSecurityContext::value,
        Keys::Map(&[
            ("allowPrivilegeEscalation", Keys::Leaf),
            ("capabilities", Keys::Map(&[("drop", Keys::Leaf)])),
            ("readOnlyRootFilesystem", Keys::Leaf),
            ("runAsGroup", Keys::Leaf),
            ("runAsNonRoot", Keys::Leaf),
            ("runAsUser", Keys::Leaf),
            ("seccompProfile", Keys::Map(&[("type", Keys::Leaf)])),
        ]),
    ),
    (
        &["debugContainer", "image"],
        || to_value(DebugContainer::default().image),
        IMAGE_KEYS,
    ),
];

const IMAGE_KEYS: Keys = Keys::Map(&[
    ("name", Keys::Leaf),
    ("pullPolicy", Keys::Leaf),
    ("version", Keys::Leaf),
]);
const PROBE_KEYS: Keys = Keys::Map(&[
    ("failureThreshold", Keys::Unset),
    ("initialDelaySeconds", Keys::Leaf),
    ("periodSeconds", Keys::Unset),
    ("timeoutSeconds", Keys::Leaf),
]);
const KEEP_ALIVE_KEYS: Keys = Keys::Map(&[(
    "server",
    Keys::Map(&[(
        "http2",
        Keys::Map(&[
            ("keepAliveInterval", Keys::Leaf),
            ("keepAliveTimeout", Keys::Leaf),
        ]),
    )]),
)]);

fn to_value<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Like Helm, each layer is merged over the chart defaults in turn: a partial block
/// (`proxy.image: {version: x}`) keeps the other defaults of that block. Then decoded and
/// validated as a whole.
fn decode_over_defaults<const N: usize>(layers: [Value; N]) -> Result<Settings, SettingsError> {
    let mut merged = defaults_document().clone();
    policy::apply_version_defaults(&mut merged, &layers);
    for layer in layers.into_iter().filter(|l| !l.is_null()) {
        merge(&mut merged, layer);
    }
    // Tracking the path of every key costs an allocation per key: only an error needs it.
    let settings = match Settings::deserialize(&merged) {
        Ok(settings) => settings,
        Err(_) => serde_path_to_error::deserialize(&merged).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            SettingsError(vec![FieldError::new(path, e.into_inner().to_string())])
        })?,
    };
    let errors = validate::validate(&settings, None);
    if errors.is_empty() {
        Ok(settings)
    } else {
        Err(SettingsError(errors))
    }
}

/// Objects merge key by key; anything else (arrays included) replaces.
fn merge(base: &mut Value, over: Value) {
    // an object over an empty one is itself: moved whole, not key by key (a map insert each)
    if over.is_object() && base.as_object().is_some_and(serde_json::Map::is_empty) {
        *base = over;
        return;
    }
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

    /// `{a: {b: value}}` for the path `[a, b]`.
    fn nest(path: &[String], value: Value) -> Value {
        path.iter().rev().fold(value, |v, k| {
            Value::Object([(k.clone(), v)].into_iter().collect())
        })
    }

    fn every_key(v: &Value, path: &mut Vec<String>, out: &mut Vec<Value>) {
        if let Value::Object(map) = v {
            for (k, child) in map {
                path.push(k.clone());
                out.push(nest(path, child.clone()));
                every_key(child, path, out);
                path.pop();
            }
        }
    }

    /// The keys each partial block's default is declared with are the keys it is built with.
    #[test]
    fn chart_default_keys_are_the_defaults() {
        fn shape(v: &Value) -> Value {
            match v {
                Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), shape(v))).collect(),
                Value::Null => Value::Null,
                _ => Value::Bool(true),
            }
        }
        fn declared(keys: &Keys) -> Value {
            match keys {
                Keys::Leaf => Value::Bool(true),
                Keys::Unset => Value::Null,
                Keys::Map(entries) => entries
                    .iter()
                    .map(|(k, below)| ((*k).to_string(), declared(below)))
                    .collect(),
            }
        }
        for (path, default, keys) in PARTIAL_DEFAULTS {
            assert_eq!(declared(keys), shape(&default()), "{path:?}");
        }
    }

    /// Each key of the defaults set alone (a partial block at every level), under and over
    /// another layer, decodes as over the whole defaults document; so do Linkerd's
    /// `linkerd-config` values under each shipped settings document.
    #[test]
    fn decode_layers_as_over_the_defaults() {
        use serde_json::json;
        let mut layers = Vec::new();
        every_key(
            &serde_json::to_value(Settings::default()).unwrap(),
            &mut Vec::new(),
            &mut layers,
        );
        layers.push(json!({"proxy": {"image": {"version": "v1"}, "tracing": {"labels": {"a": "b"}}}}));
        layers.push(json!({"networkValidator": {"securityContext": {"runAsUser": 1}}, "proxy": {"inbound": {"x": 1}}}));
        layers.push(json!({"proxy": {"inbound": 5}, "debugContainer": {"image": {"name": "d"}}}));
        layers.push(json!({"linkerdVersion": "edge-26.1.1"}));
        // policy blocks (the shipped `defaults.yaml` is one), pins on both sides of the
        // native-sidecar change, and invalid ones: both paths give the same error
        for block in [
            json!({"trustAnchors": "configMap"}),
            json!({"renderVersion": "edge-26.1.1"}),
            json!({"renderVersion": "edge-26.8.3", "mode": "verify"}),
            json!({"valuesFrom": "settings", "allowedImages": ["cr.l5d.io/"], "restrictedAnnotations": ["config.linkerd.io/proxy-uid"]}),
            json!({"controlPlaneNamespace": "mesh", "linkerdConfigFailure": "settings", "ownerResolution": "lookup"}),
            json!({"mode": "both"}),
            json!({"renderVersion": "edge-20.1.1"}),
            json!({"trustAnchors": "inline"}),
            json!({"controlPlaneNamespace": "Not_A_Label"}),
            json!({"allowedImages": [""]}),
        ] {
            layers.push(json!({ "policy": block }));
        }
        let other =
            json!({"proxy": {"logLevel": "debug", "image": {"name": "p"}}, "linkerdVersion": "edge-26.5.1"});
        let (mut checked, mut in_place_answered) = (0, 0);
        for mut layer in layers {
            strip_nulls(&mut layer);
            let pairs = [[layer.clone(), other.clone()], [other.clone(), layer.clone()]];
            assert_eq!(
                decode_layers([layer.clone()], None),
                decode_over_defaults([layer.clone()]),
                "{layer}"
            );
            // the settings document decoded in place: the same answer, or left to the merge
            // only where it finds an error to name
            match decode_layered(&[Layer::Json(&layer)], None) {
                Some(in_place) => {
                    assert_eq!(in_place, decode_layers([layer.clone()], None), "{layer}");
                    in_place_answered += 1;
                }
                None => assert!(decode_layers([layer.clone()], None).is_err(), "{layer}"),
            }
            for pair in pairs {
                assert_eq!(
                    decode_layers(pair.clone(), None),
                    decode_over_defaults(pair.clone()),
                    "{pair:?}"
                );
            }
            checked += 1;
        }
        assert!(
            checked > 150 && in_place_answered > 150,
            "{checked} {in_place_answered}"
        );

        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for tag in ["edge-26.5.1", "edge-26.8.3"] {
            for golden in [
                "install_default",
                "install_ha_output",
                "install_helm_control_plane_output",
            ] {
                let path = root.join(format!("tests/fixtures/linkerd-config/{tag}/{golden}.yaml"));
                let config_map: Value =
                    serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
                let mut values: Value =
                    serde_yaml_ng::from_str(config_map["data"]["values"].as_str().unwrap()).unwrap();
                values.as_object_mut().unwrap().remove("identityTrustAnchorsPEM");
                strip_nulls(&mut values);
                for doc in ["defaults", "ha", "cni", "hardened"] {
                    let text =
                        std::fs::read_to_string(root.join(format!("deploy/settings/{doc}.yaml"))).unwrap();
                    let mut settings: Value = serde_yaml_ng::from_str(&text).unwrap();
                    strip_nulls(&mut settings);
                    assert_eq!(
                        decode_layered(&[Layer::Json(&settings)], None),
                        Some(decode_layers([settings.clone()], None)),
                        "{doc}"
                    );
                    let pair = [values.clone(), settings];
                    let fast = decode_layers(pair.clone(), None).unwrap();
                    assert_eq!(fast, decode_over_defaults(pair).unwrap(), "{tag} {golden} {doc}");
                }
            }
        }
    }

    /// The decode straight from the Helm reader's tree ([`Settings::over_node`]) answers as
    /// `over_values` wherever it answers: each key of the defaults set alone as the values
    /// (read from YAML) under other settings, and as the settings over other values. It answers
    /// for every pair `over_values` accepts, and leaves only errors to it.
    #[test]
    fn over_node_as_over_values() {
        use serde_json::json;
        let mut layers = Vec::new();
        every_key(
            &serde_json::to_value(Settings::default()).unwrap(),
            &mut Vec::new(),
            &mut layers,
        );
        layers.extend([
            json!({"proxy": {"image": {"version": "v1"}, "tracing": {"labels": {"a": "b"}}}}),
            json!({"networkValidator": {"securityContext": {"runAsUser": 1}}, "proxy": {"inbound": {"x": 1}}}),
            json!({"proxy": {"inbound": 5}, "debugContainer": {"image": {"name": "d"}}}),
            json!({"proxy": {"image": [1]}, "proxyInit": {"xtMountPath": "x"}}),
            json!({"proxy": {"runtime": {"workers": {"minimum": 2}}, "logLevel": null}}),
            json!({"proxy": {"nativeSidecar": true, "additionalEnv": [{"name": "A", "value": null}]}}),
            json!({"proxy": {"ports": {"admin": 0}}}),
            json!({"linkerdVersion": "edge-26.1.1", "cniEnabled": "yes"}),
        ]);
        let others = [
            json!({"proxy": {"logLevel": "debug", "image": {"name": "p"}}, "linkerdVersion": "edge-26.5.1"}),
            json!({"proxy": {"image": "flat", "runtime": {"workers": {"maximum": 3}}}}),
            json!({"policy": {"renderVersion": "edge-26.1.1"}, "networkValidator": {"securityContext": {"a": 1}}}),
            json!({}),
        ];
        let (mut answered, mut left) = (0, 0);
        for mut layer in layers {
            strip_nulls(&mut layer);
            for other in &others {
                for (values, settings) in [(&layer, other), (other, &layer)] {
                    let Ok(settings) = Settings::from_value(settings.clone()) else {
                        continue;
                    };
                    let text = serde_yaml_ng::to_string(values).unwrap();
                    let Some(node) =
                        crate::values::helm_yaml::read_keeping(&text, Settings::reads_from_values)
                    else {
                        continue;
                    };
                    let reference = settings.over_values(node.clone().into_value());
                    match settings.over_node(&node) {
                        Some(fast) => {
                            assert_eq!(fast, reference, "values {values} settings {}", settings.overrides);
                            answered += 1;
                        }
                        // left only where the reference path finds an error to name
                        None => {
                            assert!(
                                reference.is_err(),
                                "values {values} settings {}",
                                settings.overrides
                            );
                            left += 1;
                        }
                    }
                }
            }
        }
        assert!(answered > 800 && left > 100, "answered {answered}, left {left}");
    }

    /// Every key that must hold an object, given any other kind, is refused as check_shapes
    /// words it: the layered decode never takes such a document where the shapes are checked
    /// only after it.
    #[test]
    fn shapes_are_checked_where_the_decode_succeeds() {
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

    /// `from_value` returns the defaults for an empty document without validating them, and
    /// validation spares the values equal to theirs: every check passes them.
    #[test]
    fn defaults_pass_validation() {
        assert_eq!(validate::checked(&Settings::default(), [None, None]), vec![]);
        assert_eq!(
            Settings::from_value(Value::Object(Default::default())).unwrap(),
            Settings::default()
        );
        assert_eq!(Settings::from_value(Value::Null).unwrap(), Settings::default());
    }
}
