//! What an admission adds to a pod (or pod template): keys set in string maps, items put at the
//! start or the end of lists. One description, carried out two ways: on a JSON tree
//! ([`Additions::apply`], for the core's own answer) and on the request's own bytes (the shell's
//! rewriter), so Linkerd's insert positions are stated once.

use crate::pod::{array_entry, object_entry};
use crate::render::{InitContainer, ProxyContainer, Volume};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Where an addition goes, from the template: an object on the way is made when absent (or not
/// an object), and so is the map or list itself.
pub type Path = &'static [&'static str];

/// The additions to one template, in the order they are made.
#[derive(Debug)]
pub struct Additions(pub Vec<(Path, Addition)>);

#[derive(Debug)]
pub enum Addition {
    /// Keys set in a map of strings (made, even when there are none, if absent).
    Strings(BTreeMap<String, String>),
    /// Items put before and after a list's own.
    List { first: Vec<Item>, last: Vec<Item> },
}

/// An item added to a list: a rendered JSON value, or one of the items every injection adds,
/// which stay typed until written (the proxy's forty env entries, the init container and the
/// volumes never become JSON maps on the shell's path).
#[derive(Debug, Clone)]
pub enum Item {
    Value(Value),
    Proxy(Box<ProxyContainer>),
    Init(Box<InitContainer>),
    Volume(Volume),
}

impl Item {
    pub fn into_value(self) -> Value {
        match self {
            Item::Value(v) => v,
            typed => serde_json::to_value(typed).unwrap_or(Value::Null),
        }
    }
}

impl Serialize for Item {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Item::Value(v) => v.serialize(serializer),
            Item::Proxy(p) => p.serialize(serializer),
            Item::Init(c) => c.serialize(serializer),
            Item::Volume(v) => v.serialize(serializer),
        }
    }
}

impl Additions {
    /// Annotations set on the template.
    pub fn annotations(annotations: BTreeMap<String, String>) -> Self {
        Self(vec![(
            &["metadata", "annotations"],
            Addition::Strings(annotations),
        )])
    }

    /// Carries the additions out on `template` (an object).
    pub fn apply(self, template: &mut Map<String, Value>) {
        for (path, addition) in self.0 {
            let Some((last, above)) = path.split_last() else {
                continue;
            };
            let parent = above.iter().fold(&mut *template, |m, k| object_entry(m, k));
            match addition {
                Addition::Strings(set) => {
                    let map = object_entry(parent, last);
                    for (k, v) in set {
                        map.insert(k, Value::String(v));
                    }
                }
                Addition::List { first, last: after } => {
                    let list = array_entry(parent, last);
                    list.splice(0..0, first.into_iter().map(Item::into_value));
                    list.extend(after.into_iter().map(Item::into_value));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn makes_what_is_missing_and_keeps_what_is_there() {
        let mut template =
            json!({"metadata": null, "spec": {"containers": [{"name": "a"}], "volumes": null}});
        let additions = Additions(vec![
            (
                &["metadata", "annotations"],
                Addition::Strings([("k".into(), "v".into())].into()),
            ),
            (&["metadata", "labels"], Addition::Strings(BTreeMap::new())),
            (
                &["spec", "containers"],
                Addition::List {
                    first: vec![Item::Value(json!("p"))],
                    last: vec![Item::Value(json!("d"))],
                },
            ),
            (
                &["spec", "volumes"],
                Addition::List {
                    first: vec![],
                    last: vec![Item::Value(json!(1)), Item::Value(json!(2))],
                },
            ),
        ]);
        additions.apply(template.as_object_mut().unwrap());
        assert_eq!(
            template,
            json!({"metadata": {"annotations": {"k": "v"}, "labels": {}},
                "spec": {"containers": ["p", {"name": "a"}, "d"], "volumes": [1, 2]}})
        );
    }
}
