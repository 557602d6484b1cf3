//! Parsing the three inputs, with errors that name the input and the line.

use crate::Input;
use crate::locate;
use linkerd_injector_policy::settings::Settings;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A problem in one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputError {
    pub input: Input,
    pub message: String,
    /// 1-based, when known.
    pub line: Option<usize>,
    pub column: Option<usize>,
}

impl InputError {
    fn new(input: Input, message: impl Into<String>) -> Self {
        Self {
            input,
            message: message.into(),
            line: None,
            column: None,
        }
    }

    fn at(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }

    fn yaml(input: Input, e: &serde_yaml_ng::Error) -> Self {
        let mut message = e.to_string();
        let (line, column) = match e.location() {
            Some(l) => {
                // The position is reported apart; drop it from the text.
                let suffix = format!(" at line {} column {}", l.line(), l.column());
                if let Some(i) = message.find(&suffix) {
                    message.replace_range(i..i + suffix.len(), "");
                }
                (Some(l.line()), Some(l.column()))
            }
            None => (None, None),
        };
        Self {
            input,
            message,
            line,
            column,
        }
    }

    fn json(input: Input, e: &serde_json::Error) -> Self {
        let mut message = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        if let Some(i) = message.find(&suffix) {
            message.replace_range(i..i + suffix.len(), "");
        }
        Self {
            input,
            message,
            line: (e.line() > 0).then_some(e.line()),
            column: (e.column() > 0).then_some(e.column()),
        }
    }
}

/// Every non-empty document of a YAML stream (JSON is read as JSON, for its exact rules).
fn documents(input: Input, text: &str) -> Result<Vec<Value>, InputError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let value: Value = serde_json::from_str(text).map_err(|e| InputError::json(input, &e))?;
        return Ok(vec![value]);
    }
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).map_err(|e| InputError::yaml(input, &e))?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// One manifest document: an object, or a List whose items are objects.
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    Object(Value),
    List(Value),
}

/// The parsed manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub documents: Vec<Document>,
}

impl Manifest {
    /// Every object, List items one by one.
    pub fn objects(&self) -> impl Iterator<Item = &Value> {
        self.documents.iter().flat_map(|d| match d {
            Document::Object(o) => std::slice::from_ref(o).iter(),
            Document::List(l) => l["items"].as_array().map(Vec::as_slice).unwrap_or(&[]).iter(),
        })
    }
}

fn is_list(value: &Value) -> bool {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    value.get("items").is_some() && (kind == "List" || kind.ends_with("List"))
}

fn check_object(value: &Value, what: &str) -> Result<(), String> {
    let Some(obj) = value.as_object() else {
        return Err(format!(
            "{what}: must be a Kubernetes object (a mapping with apiVersion and kind)"
        ));
    };
    match obj.get("kind") {
        Some(Value::String(k)) if !k.is_empty() => Ok(()),
        Some(_) => Err(format!("{what}: kind must be a non-empty string")),
        None => Err(format!("{what}: has no kind (e.g. kind: Pod)")),
    }
}

/// Parses the manifest: a Pod, a workload, a List, or several documents.
pub fn manifest(text: &str) -> Result<Manifest, InputError> {
    let docs = documents(Input::Manifest, text)?;
    if docs.is_empty() {
        return Err(InputError::new(
            Input::Manifest,
            "empty: paste a Pod, a workload (Deployment, StatefulSet, DaemonSet, Job, CronJob, ...) or a List",
        ));
    }
    let many = docs.len() > 1;
    let mut out = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let what = if many {
            format!("document {}", i + 1)
        } else {
            "the manifest".into()
        };
        let line = if many { None } else { Some(1) };
        if is_list(&doc) {
            let Some(items) = doc["items"].as_array() else {
                let at = if many {
                    None
                } else {
                    locate::key_line(text, "items")
                };
                return Err(InputError::new(Input::Manifest, format!("{what}: items must be a list")).at(at));
            };
            for (j, item) in items.iter().enumerate() {
                check_object(item, &format!("{what}, items[{j}]")).map_err(|m| {
                    let at = if many {
                        None
                    } else {
                        locate::key_line(text, &format!("items[{j}]"))
                    };
                    InputError::new(Input::Manifest, m).at(at)
                })?;
            }
            out.push(Document::List(doc));
        } else {
            check_object(&doc, &what).map_err(|m| InputError::new(Input::Manifest, m).at(line))?;
            out.push(Document::Object(doc));
        }
    }
    Ok(Manifest { documents: out })
}

/// The namespace's metadata, from the namespace input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceInput {
    /// The name of a pasted Namespace object.
    pub name: Option<String>,
    pub annotations: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct NamespaceObject {
    #[serde(default)]
    metadata: NamespaceMetadata,
}

#[derive(Deserialize, Default)]
struct NamespaceMetadata {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

/// Parses the namespace input: empty, a map of annotations, or a Namespace object (whose
/// annotations and labels are used).
pub fn namespace(text: &str) -> Result<NamespaceInput, InputError> {
    let docs = documents(Input::Namespace, text)?;
    let doc = match docs.as_slice() {
        [] => return Ok(NamespaceInput::default()),
        [doc] => doc,
        _ => {
            return Err(InputError::new(
                Input::Namespace,
                "several documents: give one map of annotations, or one Namespace",
            ));
        }
    };
    if !doc.is_object() {
        return Err(InputError::new(
            Input::Namespace,
            "must be a map of annotations (linkerd.io/inject: enabled) or a Namespace object",
        )
        .at(Some(1)));
    }
    // Typed decoding again, from the text, so a value of the wrong type gets its line.
    let single = |e: serde_yaml_ng::Error| InputError::yaml(Input::Namespace, &e);
    let first = || serde_yaml_ng::Deserializer::from_str(text).next();
    let is_object = doc.get("kind").is_some() || doc.get("metadata").is_some();
    if is_object {
        let typed = match first() {
            Some(d) => NamespaceObject::deserialize(d).map_err(single)?,
            None => NamespaceObject {
                metadata: NamespaceMetadata::default(),
            },
        };
        Ok(NamespaceInput {
            name: typed.metadata.name.filter(|n| !n.is_empty()),
            annotations: typed.metadata.annotations.unwrap_or_default(),
            labels: typed.metadata.labels.unwrap_or_default(),
        })
    } else {
        let annotations = match first() {
            Some(d) => BTreeMap::<String, String>::deserialize(d).map_err(single)?,
            None => BTreeMap::new(),
        };
        Ok(NamespaceInput {
            name: None,
            annotations,
            labels: BTreeMap::new(),
        })
    }
}

/// Parses and validates the settings (empty means the defaults); every problem gets its line.
pub fn settings(text: &str) -> Result<Settings, Vec<InputError>> {
    let docs = documents(Input::Settings, text).map_err(|e| vec![e])?;
    let value = match docs.as_slice() {
        [] => Value::Object(Map::new()),
        [doc] => doc.clone(),
        _ => {
            return Err(vec![InputError::new(
                Input::Settings,
                "several documents: give one settings document",
            )]);
        }
    };
    Settings::from_value(value).map_err(|e| {
        e.0.iter()
            .map(|f| {
                let line = if f.path.is_empty() {
                    None
                } else {
                    locate::key_line(text, &f.path)
                };
                InputError::new(Input::Settings, f.to_string()).at(line)
            })
            .collect()
    })
}
