//! What the policy added to an object, grouped for reading: containers, init containers and
//! volumes by name (with their position), labels and annotations by key. Computed by comparing
//! the object with the mutated object, wherever the pod template sits.

use serde::Serialize;
use serde_json::Value;

/// One addition (or replacement) in the mutated object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// `containers`, `initContainers`, `volumes`, `labels`, `annotations`, or `other`.
    pub section: &'static str,
    /// Where the section is, e.g. `spec.template.metadata.annotations`.
    pub at: String,
    /// `added` or `changed`.
    pub change: &'static str,
    /// Container or volume name, label or annotation key (the field name for `other`).
    pub name: String,
    /// Position in the list (containers, init containers, volumes).
    pub index: Option<usize>,
    /// The new value: a string for labels and annotations, YAML otherwise.
    pub value: String,
    /// The old value, for `changed`.
    pub before: Option<String>,
}

/// The changes from `before` to `after`, in document order.
pub fn changes(before: &Value, after: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    walk(before, after, &mut Vec::new(), &mut out);
    out
}

fn render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other).unwrap_or_default(),
    }
}

fn section(key: &str, parent: Option<&str>) -> Option<&'static str> {
    match (key, parent) {
        ("annotations", Some("metadata")) => Some("annotations"),
        ("labels", Some("metadata")) => Some("labels"),
        ("containers", _) => Some("containers"),
        ("initContainers", _) => Some("initContainers"),
        ("volumes", _) => Some("volumes"),
        _ => None,
    }
}

fn walk(before: &Value, after: &Value, path: &mut Vec<String>, out: &mut Vec<Change>) {
    let (Value::Object(old), Value::Object(new)) = (before, after) else {
        return;
    };
    for (key, value) in new {
        let previous = old.get(key);
        if previous == Some(value) {
            continue;
        }
        let section = section(key, path.last().map(String::as_str));
        path.push(key.clone());
        let at = path.join(".");
        match (section, value) {
            (Some(section @ ("annotations" | "labels")), Value::Object(entries)) => {
                let old_entries = previous.and_then(Value::as_object);
                for (k, v) in entries {
                    let was = old_entries.and_then(|m| m.get(k));
                    if was == Some(v) {
                        continue;
                    }
                    out.push(Change {
                        section,
                        at: at.clone(),
                        change: if was.is_some() { "changed" } else { "added" },
                        name: k.clone(),
                        index: None,
                        value: render(v),
                        before: was.map(render),
                    });
                }
            }
            (Some(section), Value::Array(items)) => {
                let old_items = previous
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                let name_of = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_string);
                for (i, item) in items.iter().enumerate() {
                    let name = name_of(item).unwrap_or_else(|| format!("#{i}"));
                    let was = old_items
                        .iter()
                        .find(|o| name_of(o).as_deref() == Some(name.as_str()));
                    if was == Some(item) {
                        continue;
                    }
                    out.push(Change {
                        section,
                        at: at.clone(),
                        change: if was.is_some() { "changed" } else { "added" },
                        name,
                        index: Some(i),
                        value: render(item),
                        before: was.map(render),
                    });
                }
            }
            (_, Value::Object(_)) if previous.is_none_or(Value::is_object) => {
                // A new object (e.g. `metadata` on a template without one) is read as additions.
                let empty = Value::Object(Default::default());
                walk(previous.unwrap_or(&empty), value, path, out);
            }
            _ => out.push(Change {
                section: "other",
                at: path[..path.len() - 1].join("."),
                change: if previous.is_some() { "changed" } else { "added" },
                name: key.clone(),
                index: None,
                value: render(value),
                before: previous.map(render),
            }),
        }
        path.pop();
    }
}
