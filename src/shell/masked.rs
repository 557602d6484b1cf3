//! Host-call answers read for the paths a lookup asked for. policy-server applies a lookup's
//! field masks to everything but `metadata`, which it returns whole (labels, `uid`,
//! `managedFields`); a list's items are whole objects. So the shell applies the masks itself
//! while reading: what lies outside them (and outside `metadata.name`, which names a list's
//! items) is tokenised, never built.

use crate::shell::payload::KeyString;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// One object of an answer, with only `masks` (dot-separated paths) and `metadata.name` built;
/// all of it when `masks` is empty.
pub(crate) fn object(answer: &[u8], masks: &[&str]) -> serde_json::Result<Value> {
    let paths = with_name(masks);
    let mut de = serde_json::Deserializer::from_slice(answer);
    let value = Masked { paths: &paths }.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// The `items` of a List answer, each read as [`object`] reads one.
pub(crate) fn items(answer: &[u8], masks: &[&str]) -> serde_json::Result<Vec<Value>> {
    let paths = with_name(masks);
    let mut de = serde_json::Deserializer::from_slice(answer);
    let items = ItemsOf { paths: &paths }.deserialize(&mut de)?;
    de.end()?;
    Ok(items)
}

/// The masks and `metadata.name`; none at all (everything) when the lookup names none.
fn with_name<'m>(masks: &[&'m str]) -> Vec<&'m str> {
    if masks.is_empty() {
        return Vec::new();
    }
    let mut paths = masks.to_vec();
    paths.push("metadata.name");
    paths
}

/// A value with only `paths` built below it (all of it when `paths` is empty, or when it is
/// not an object: then the reader sees the shape it was given).
#[derive(Clone, Copy)]
struct Masked<'p> {
    paths: &'p [&'p str],
}

impl<'de> DeserializeSeed<'de> for Masked<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        if self.paths.is_empty() {
            return Value::deserialize(deserializer);
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Masked<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key::<KeyString<'de>>()? {
            let key = key.as_str();
            let value = if self.paths.contains(&key) {
                map.next_value::<Value>()?
            } else {
                let below: Vec<&str> = self
                    .paths
                    .iter()
                    .filter_map(|p| p.strip_prefix(key)?.strip_prefix('.'))
                    .collect();
                if below.is_empty() {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                map.next_value_seed(Masked { paths: &below })?
            };
            kept.insert(key.to_owned(), value);
        }
        Ok(Value::Object(kept))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// A List's `items`, each one [`Masked`]; the List's other fields are skipped.
struct ItemsOf<'p> {
    paths: &'p [&'p str],
}

impl<'de> DeserializeSeed<'de> for ItemsOf<'_> {
    type Value = Vec<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Value>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ItemsOf<'_> {
    type Value = Vec<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a List")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Value>, A::Error> {
        let mut items = None;
        while let Some(key) = map.next_key::<KeyString<'de>>()? {
            if key.as_str() == "items" {
                items = Some(map.next_value_seed(Each { paths: self.paths })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        items.ok_or_else(|| de::Error::missing_field("items"))
    }
}

/// A sequence of [`Masked`] objects.
struct Each<'p> {
    paths: &'p [&'p str],
}

impl<'de> DeserializeSeed<'de> for Each<'_> {
    type Value = Vec<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Value>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Each<'_> {
    type Value = Vec<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Value>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Masked { paths: self.paths })? {
            items.push(item);
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn namespace() -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "shop", "uid": "u-1", "resourceVersion": "7",
                "annotations": {"linkerd.io/inject": "enabled"}, "labels": {"team": "a"},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {}}}]},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    }

    #[test]
    fn keeps_the_masked_paths_and_the_name() {
        let text = namespace().to_string().into_bytes();
        assert_eq!(
            object(&text, &["metadata.annotations"]).unwrap(),
            json!({"metadata": {"name": "shop", "annotations": {"linkerd.io/inject": "enabled"}}})
        );
        assert_eq!(
            object(&text, &["metadata.annotations", "metadata.labels", "status"]).unwrap(),
            json!({"metadata": {"name": "shop", "annotations": {"linkerd.io/inject": "enabled"},
                "labels": {"team": "a"}}, "status": {"phase": "Active"}})
        );
    }

    #[test]
    fn no_masks_is_the_whole_object() {
        let text = namespace().to_string().into_bytes();
        assert_eq!(object(&text, &[]).unwrap(), namespace());
    }

    #[test]
    fn a_prefix_that_is_not_an_object_is_kept_as_given() {
        let text = r#"{"metadata": "odd", "data": [1, {"a": 2}], "x": 1}"#;
        assert_eq!(
            object(text.as_bytes(), &["metadata.annotations", "data.values"]).unwrap(),
            json!({"metadata": "odd", "data": [1, {"a": 2}]})
        );
    }

    #[test]
    fn list_items_are_masked_and_the_rest_of_the_list_skipped() {
        let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "9"},
        "items": [
            {"metadata": {"name": "a", "uid": "1", "labels": {"x": "y"}}, "data": {"k": "v"}},
            {"metadata": {"name": "b"}, "binaryData": {"z": "AA=="}}
        ]});
        assert_eq!(
            items(list.to_string().as_bytes(), &["data"]).unwrap(),
            vec![
                json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
                json!({"metadata": {"name": "b"}})
            ]
        );
        assert_eq!(
            items(br#"{"kind": "List"}"#, &["data"]).unwrap_err().to_string(),
            "missing field `items` at line 1 column 16"
        );
    }

    /// The reference: the whole answer read by serde_json, then only `paths` copied out.
    fn pruned(whole: &Value, paths: &[&str]) -> Value {
        let mut kept = json!({});
        for path in paths {
            let keys: Vec<&str> = path.split('.').collect();
            let Some(found) = keys.iter().try_fold(whole, |v, k| v.get(k)) else {
                continue;
            };
            let (last, above) = keys.split_last().unwrap();
            let parent = above.iter().fold(&mut kept, |v, k| {
                v.as_object_mut().unwrap().entry(*k).or_insert_with(|| json!({}))
            });
            parent[*last] = found.clone();
        }
        kept
    }

    /// Every answer recorded from kwctl and policy-server (tests/fixtures/host-answers/) is read
    /// as the whole answer would be, cut to the lookup's masks and the name.
    #[test]
    fn recorded_answers_are_read_as_serde_json_reads_them() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/host-answers");
        let masks: std::collections::BTreeMap<String, Vec<String>> =
            serde_json::from_str(&std::fs::read_to_string(format!("{dir}/masks.json")).unwrap()).unwrap();
        assert_eq!(masks.len(), 4);
        for (file, masks) in masks {
            let answer = std::fs::read(format!("{dir}/{file}")).unwrap();
            let masks: Vec<&str> = masks.iter().map(String::as_str).collect();
            let paths: Vec<&str> = masks.iter().copied().chain(["metadata.name"]).collect();
            let whole: Value = serde_json::from_slice(&answer).unwrap();
            if file.contains("-list") {
                let expected: Vec<Value> = whole["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|item| pruned(item, &paths))
                    .collect();
                assert!(!expected.is_empty(), "{file}");
                assert_eq!(items(&answer, &masks).unwrap(), expected, "{file}");
            } else {
                assert_eq!(object(&answer, &masks).unwrap(), pruned(&whole, &paths), "{file}");
            }
        }
    }
}
