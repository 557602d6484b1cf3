//! The reader's own tree: keys and plain scalars borrowed from the text, mappings as lists in
//! document order. Building a `serde_json::Value` instead cost a `String` per key and scalar and a
//! B-tree insert per entry, for a tree the settings decode walks once and drops.

use serde_json::{Map, Number, Value};
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    Seq(Vec<Node<'a>>),
    /// Keys are unique (the reader declines a document that repeats one).
    Map(Vec<(&'a str, Node<'a>)>),
}

impl<'a> Node<'a> {
    /// The entry under `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The same document as `serde_json` values.
    pub fn into_value(self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Number(n) => Value::Number(n),
            Node::Str(s) => Value::String(s.into_owned()),
            Node::Seq(items) => Value::Array(items.into_iter().map(Node::into_value).collect()),
            Node::Map(entries) => Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.into_value()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}
