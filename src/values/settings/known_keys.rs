//! Typos in settings: every key of the settings document must be a key of Linkerd's values (the
//! chart's `values.yaml` and the `linkerd-config` ConfigMap across the supported window, or read
//! by the injector) or a field of the policy's own `policy` block.
//!
//! Keys Linkerd has but the injector ignores are accepted, so a whole values document can be
//! pasted. The check runs on every admission (each in a fresh instance), so it is a walk over the
//! document with binary searches in a generated, sorted table; the nearest-key suggestion is
//! computed only for an unknown key.

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use super::FieldError;
use super::policy::PolicyOptions;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

mod table;
#[cfg(test)]
mod tests;

use table::KNOWN;

/// One error per unknown key, sorted by key path. A key is checked only below keys that have
/// sub-keys in [`KNOWN`]: values of free-form maps, lists and scalars are not keys.
pub fn unknown_keys(document: &Value) -> Vec<FieldError> {
    let Value::Object(top) = document else {
        return Vec::new();
    };
    let mut unknown = Unknown::new();
    walk(top, &mut String::new(), KNOWN, &mut unknown);
    unknown
        .into_iter()
        .map(|(path, key)| error(&path, &key))
        .collect()
}

/// Unknown keys: path to key (the last segment, which may contain a dot), sorted by path.
type Unknown = BTreeMap<String, String>;

/// Collects the unknown keys of `map`, found at `path`; `below` is the part of the table under
/// `path`, so each search is in its block only.
fn walk(map: &Map<String, Value>, path: &mut String, below: &'static [&'static str], unknown: &mut Unknown) {
    for (key, value) in map {
        let parent = path.len();
        if parent > 0 {
            path.push('.');
        }
        path.push_str(key);
        match below.binary_search(&path.as_str()) {
            _ if path == "policy" => policy_keys(value, unknown),
            // No known key has a dot in a segment: `{"ports.admin": 1}` is not `ports: {admin: 1}`.
            Ok(at) if !key.contains('.') => {
                let sub = sub_keys(below.get(at + 1..).unwrap_or_default(), path);
                if let (Value::Object(map), false) = (value, sub.is_empty()) {
                    walk(map, path, sub, unknown);
                }
            }
            _ => {
                unknown.insert(path.clone(), key.clone());
            }
        }
        path.truncate(parent);
    }
}

/// The entries of `table` below `path` (a contiguous block, as the table is sorted).
fn sub_keys(table: &'static [&'static str], path: &mut String) -> &'static [&'static str] {
    path.push('.');
    let start = table.partition_point(|k| *k < path.as_str());
    let block = table.get(start..).unwrap_or_default();
    let len = block.partition_point(|k| k.starts_with(path.as_str()));
    path.pop();
    block.get(..len).unwrap_or_default()
}

/// The `policy` block is ours: its keys are the fields of [`PolicyOptions`].
fn policy_keys(block: &Value, unknown: &mut Unknown) {
    let Value::Object(map) = block else {
        return;
    };
    let fields = policy_fields();
    for key in map.keys().filter(|k| !fields.contains(&k.as_str())) {
        unknown.insert(format!("policy.{key}"), key.clone());
    }
}

/// The field names serde's derive gives [`PolicyOptions`] (renames applied), so a field added
/// there is known here with no second list: the derive passes them to `deserialize_struct`,
/// which [`FieldNames`] records instead of deserializing.
fn policy_fields() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    // The capture always ends in an error: there is no value to build.
    let _ = PolicyOptions::deserialize(FieldNames(&mut fields));
    fields
}

/// A deserializer that only records the field names a struct asks for.
struct FieldNames<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("field names recorded"))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The error for one unknown key, with the nearest known key when one is close.
fn error(path: &str, key: &str) -> FieldError {
    match nearest(path, key) {
        Some(known) => FieldError::new(path, format!("unknown field `{key}`; did you mean `{known}`?")),
        None => FieldError::new(path, format!("unknown field `{key}`")),
    }
}

/// The known key nearest to the unknown `key` at `path`: among its siblings first (same parent,
/// closest name), then anywhere (closest name, then closest path: a key put under the wrong
/// block). Names are compared case-insensitively by Damerau-Levenshtein distance, and only a
/// distance up to a third of the typed name counts as close.
fn nearest(path: &str, key: &str) -> Option<String> {
    let typed = Typed {
        name: key.to_ascii_lowercase(),
        path: path.to_ascii_lowercase(),
        limit: (key.chars().count() / 3).max(1),
    };
    let policy: Vec<String> = policy_fields().iter().map(|f| format!("policy.{f}")).collect();
    // `min` over (distance, key) tuples: the order of the candidates does not matter.
    let candidates = || KNOWN.iter().copied().chain(policy.iter().map(String::as_str));
    let parent = path.strip_suffix(key).unwrap_or_default();
    let siblings = candidates().filter(|k| k.strip_prefix(parent).is_some_and(|rest| !rest.contains('.')));
    let sibling = siblings.filter_map(|k| typed.close(k).map(|d| (d, k))).min();
    let anywhere = || {
        let near = candidates().filter_map(|k| typed.close(k).map(|d| (d, typed.path_distance(k), k)));
        near.min().map(|(_, _, k)| k)
    };
    sibling.map(|(_, k)| k).or_else(anywhere).map(str::to_owned)
}

/// An unknown key, lower-cased, and how far from it a name may be.
struct Typed {
    name: String,
    path: String,
    limit: usize,
}

impl Typed {
    /// The distance from the last segment of `known` to the typed name, when close enough.
    fn close(&self, known: &str) -> Option<usize> {
        let name = known.rsplit('.').next().unwrap_or(known);
        let d = strsim::osa_distance(&self.name, &name.to_ascii_lowercase());
        (d <= self.limit).then_some(d)
    }

    fn path_distance(&self, known: &str) -> usize {
        strsim::osa_distance(&self.path, &known.to_ascii_lowercase())
    }
}

/// Maps and lists whose keys or items are the user's: labels and annotations, label selectors,
/// Kubernetes objects the chart renders verbatim (security contexts, capabilities, affinity,
/// tolerations, a deployment strategy), EnvVar lists, and the destination controller's protobuf
/// client parameters. The generated table holds none of their sub-keys (Linkerd's defaults give
/// some as examples, e.g. `nodeSelector.kubernetes.io/os`), so the walk never descends into them.
/// Likewise for every key that has no sub-keys in Linkerd's documents (a scalar, `{}`, `[]` or
/// `null`: `proxyInit.resources`, `heartbeat`, `configReaders`): it takes any value. The
/// `*resources` blocks are not free-form: Linkerd's template reads exactly
/// `{cpu,memory,ephemeral-storage}.{request,limit}`, and Kubernetes' `requests:`/`limits:` there
/// is a mistake it silently ignores.
#[cfg(test)]
const FREE_FORM: &[&str] = &[
    "commonLabels",
    "controller.tracing.labels",
    "deploymentStrategy",
    "destinationController.meshedHttp2ClientProtobuf",
    "destinationController.podAnnotations",
    "identity.additionalEnv",
    "identity.experimentalEnv",
    "identity.podAnnotations",
    "imagePullSecrets",
    "networkValidator.securityContext",
    "nodeAffinity",
    "nodeSelector",
    "podAnnotations",
    "podLabels",
    "podMonitor.labels",
    "policyValidator.namespaceSelector",
    "profileValidator.namespaceSelector",
    "proxy.additionalEnv",
    "proxy.capabilities",
    "proxy.experimentalEnv",
    "proxy.securityContext",
    "proxy.tracing.labels",
    "proxyInit.capabilities",
    "proxyInjector.additionalEnv",
    "proxyInjector.experimentalEnv",
    "proxyInjector.namespaceSelector",
    "proxyInjector.objectSelector",
    "proxyInjector.podAnnotations",
    "tolerations",
];
