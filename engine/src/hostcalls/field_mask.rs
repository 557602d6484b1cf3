//! `field_masks` pruning like policy-server: dot-separated paths, arrays are transparent, an empty
//! or absent mask keeps everything. policy-server prunes the `data` part of a kube
//! `DynamicObject`, so `apiVersion`, `kind` and `metadata` always come back whole; only the other
//! top-level fields (`spec`, `status`, `data`, ...) are pruned.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// A tree of allowed paths.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FieldMask {
    children: BTreeMap<String, FieldMask>,
}

impl FieldMask {
    pub fn new<I, S>(paths: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut root = Self::default();
        for path in paths {
            let mut node = &mut root;
            for part in path.as_ref().split('.') {
                node = node.children.entry(part.to_owned()).or_default();
            }
        }
        root
    }

    /// Removes from `value` every field the mask does not name.
    pub fn prune(&self, value: &mut Value) {
        if self.children.is_empty() {
            return;
        }
        match value {
            Value::Object(map) => map.retain(|key, child| match self.children.get(key) {
                Some(node) => {
                    node.prune(child);
                    true
                }
                None => false,
            }),
            Value::Array(items) => items.iter_mut().for_each(|item| self.prune(item)),
            _ => {}
        }
    }
}

/// Applies `field_masks` to a Kubernetes object the way policy-server does.
pub fn apply_to_object(object: &mut Value, field_masks: Option<&BTreeSet<String>>) {
    let Some(masks) = field_masks else { return };
    let mask = FieldMask::new(masks);
    if mask.children.is_empty() {
        return;
    }
    if let Value::Object(map) = object {
        let mut data: serde_json::Map<String, Value> = serde_json::Map::new();
        let keys: Vec<String> = map
            .keys()
            .filter(|k| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            .cloned()
            .collect();
        for key in keys {
            if let Some(v) = map.remove(&key) {
                data.insert(key, v);
            }
        }
        let mut data = Value::Object(data);
        mask.prune(&mut data);
        if let Value::Object(data) = data {
            map.extend(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prunes_objects_and_arrays() {
        let mut v = json!({"users": [{"name": "a", "age": 1}, {"name": "b", "age": 2}], "x": {"y": 1, "z": 2}, "w": 3});
        FieldMask::new(["users.name", "x.y"]).prune(&mut v);
        assert_eq!(v, json!({"users": [{"name": "a"}, {"name": "b"}], "x": {"y": 1}}));
        let mut v = json!({"a": {"b": 1}});
        FieldMask::new(Vec::<String>::new()).prune(&mut v);
        assert_eq!(v, json!({"a": {"b": 1}}));
    }

    #[test]
    fn object_metadata_is_never_pruned() {
        let mut obj = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "rs", "labels": {"a": "b"}}, "spec": {"replicas": 3, "template": {}}, "status": {"x": 1}});
        let masks: BTreeSet<String> = ["metadata.name".to_owned(), "spec.replicas".to_owned()].into();
        apply_to_object(&mut obj, Some(&masks));
        assert_eq!(
            obj,
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "rs", "labels": {"a": "b"}}, "spec": {"replicas": 3}})
        );
    }
}
