//! What an admission adds to a pod (or pod template): keys set in string maps, items put at the
//! start or the end of lists, carried out on the request's own object ([`Additions::apply`]), so
//! Linkerd's insert positions are stated once.

use crate::pod::{array_entry, object_entry};
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
    List { first: Vec<Value>, last: Vec<Value> },
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
                    list.splice(0..0, first);
                    list.extend(after);
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
                    first: vec![json!("p")],
                    last: vec![json!("d")],
                },
            ),
            (
                &["spec", "volumes"],
                Addition::List {
                    first: vec![],
                    last: vec![json!(1), json!(2)],
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
