//! The mutated object written with an injection's proxy container in its place: the container
//! stays typed (its forty env entries never become JSON maps) and goes straight into the
//! answer's bytes, where [`Held::insert_into`] would have put it in the tree.

use crate::admission::admit::Held;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// `object` with `held`'s container in the list its path names.
pub(crate) struct Spliced<'a> {
    pub object: &'a Value,
    pub held: &'a Held,
}

impl Spliced<'_> {
    /// Whether the held container's list is in the object (the edit made it: always, unless
    /// the core changes); the shell checks before writing, so a container is never dropped.
    pub fn has_place(&self) -> bool {
        let list = self.held.path.iter().try_fold(self.object, |v, k| v.get(*k));
        list.is_some_and(Value::is_array)
    }
}

impl Serialize for Spliced<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Node {
            value: self.object,
            path: &self.held.path,
            held: self.held,
        }
        .serialize(serializer)
    }
}

/// A value on the way to the list (`path`: the keys still to follow), or the list itself.
struct Node<'a> {
    value: &'a Value,
    path: &'a [&'static str],
    held: &'a Held,
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (self.path.split_first(), self.value) {
            (Some((key, rest)), Value::Object(map)) => {
                let mut m = serializer.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    if k == key {
                        let below = Node {
                            value: v,
                            path: rest,
                            held: self.held,
                        };
                        m.serialize_entry(k, &below)?;
                    } else {
                        m.serialize_entry(k, v)?;
                    }
                }
                m.end()
            }
            (None, Value::Array(items)) => {
                let (before, after) = items.split_at(self.held.index.min(items.len()));
                let mut s = serializer.serialize_seq(Some(items.len() + 1))?;
                for item in before {
                    s.serialize_element(item)?;
                }
                s.serialize_element(&self.held.proxy)?;
                for item in after {
                    s.serialize_element(item)?;
                }
                s.end()
            }
            // off the path ([`Spliced::has_place`] is checked before writing)
            _ => self.value.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::ProxyContainer;
    use serde_json::json;

    fn held(path: &[&'static str], index: usize) -> Held {
        Held {
            path: path.to_vec(),
            index,
            proxy: ProxyContainer::blank(),
        }
    }

    /// Written in place, the object is what inserting the container into the tree gives.
    #[test]
    fn writes_what_the_tree_would_hold() {
        let object = json!({"kind": "Deployment", "spec": {"replicas": 2, "template": {"spec": {
            "containers": [{"name": "a"}, {"name": "b"}], "volumes": []}}}});
        let path = ["spec", "template", "spec", "containers"];
        for index in 0..=2 {
            let h = held(&path, index);
            let written = serde_json::to_string(&Spliced {
                object: &object,
                held: &h,
            })
            .unwrap();
            let mut tree = object.clone();
            held(&path, index).insert_into(&mut tree);
            assert_eq!(written, serde_json::to_string(&tree).unwrap(), "index {index}");
        }
    }

    #[test]
    fn a_path_that_leads_to_no_list_has_no_place() {
        let object = json!({"spec": {"containers": {"not": "a list"}}});
        for path in [
            &["spec", "containers"][..],
            &["spec", "initContainers"],
            &["metadata", "x"],
        ] {
            let h = held(path, 0);
            assert!(
                !Spliced {
                    object: &object,
                    held: &h
                }
                .has_place(),
                "{path:?}"
            );
        }
        let h = held(&["spec"], 0);
        let object = json!({"spec": []});
        assert!(
            Spliced {
                object: &object,
                held: &h
            }
            .has_place()
        );
    }
}
