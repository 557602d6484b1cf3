//! The control plane's values and the settings document decoded into [`Settings`] in one pass,
//! merged as they are read instead of as `Value` trees first.
//!
//! A [`Layered`] node is the same key in every layer that sets it, lowest first: the values as the
//! Helm YAML reader read them, the settings document, and under a partial block
//! ([`super::PARTIAL_DEFAULTS`]) the chart default that completes it. A mapping's entries are the
//! union of its layers' (in the order the merged tree would hold them); any other node is the top
//! layer's alone, as Helm merges: a later layer replaces what is not a mapping. A null in the
//! values or the settings is not set (Helm's rule); a null in a chart default is a value.
//!
//! This path only has to be exact where it succeeds: anything the reference path might answer
//! differently (a mapping over a non-mapping, a non-mapping at or over a partial block, a list
//! where a struct belongs) is an error here, and the caller then takes the reference path, which
//! also names the key of any error.
//!
//! [`Settings`]: super::Settings

use crate::values::helm_yaml::Node;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Error, Value};

/// The shape of a chart default's keys.
pub(super) enum Keys {
    /// A value.
    Leaf,
    /// A null in the default where the block's type reads a null as an absent key (an
    /// `Option` field): nothing a layer has to set.
    Unset,
    Map(&'static [(&'static str, Keys)]),
}

/// One layer's node.
#[derive(Clone, Copy)]
pub(super) enum Layer<'a> {
    /// The control plane's values, as the Helm YAML reader read them.
    Yaml(&'a Node<'a>),
    /// The settings document (its nulls already removed).
    Json(&'a Value),
    /// A chart default completing a partial block.
    Default(&'a Value),
}

impl<'a> Layer<'a> {
    fn is_map(self) -> bool {
        matches!(
            self,
            Layer::Yaml(Node::Map(_)) | Layer::Json(Value::Object(_)) | Layer::Default(Value::Object(_))
        )
    }

    fn is_null(self) -> bool {
        matches!(
            self,
            Layer::Yaml(Node::Null) | Layer::Json(Value::Null) | Layer::Default(Value::Null)
        )
    }

    /// The node under `key`, when this layer sets it.
    pub(super) fn child(self, key: &str) -> Option<Layer<'a>> {
        match self {
            Layer::Yaml(Node::Map(entries)) => entries
                .iter()
                .find(|(k, v)| *k == key && !matches!(v, Node::Null))
                .map(|(_, v)| Layer::Yaml(v)),
            Layer::Json(Value::Object(map)) => map.get(key).filter(|v| !v.is_null()).map(Layer::Json),
            Layer::Default(Value::Object(map)) => map.get(key).map(Layer::Default),
            _ => None,
        }
    }

    /// The node at `path`, when this layer sets it.
    pub(super) fn at(self, path: &[&str]) -> Option<Layer<'a>> {
        path.iter().try_fold(self, |layer, key| layer.child(key))
    }

    /// Whether this layer sets every key of a chart default that `keys` describes (a mapping
    /// where it has one, a value that is neither null nor a mapping where it has a leaf), so
    /// that under it the default adds nothing and overrides nothing.
    pub(super) fn covers(self, keys: &Keys) -> bool {
        match keys {
            Keys::Leaf => !self.is_map() && !self.is_null(),
            Keys::Unset => true,
            Keys::Map(entries) => {
                self.is_map()
                    && entries.iter().all(|(k, below)| {
                        matches!(below, Keys::Unset) || self.child(k).is_some_and(|c| c.covers(below))
                    })
            }
        }
    }

    /// This layer's entries, in order; `None` unless a mapping.
    fn entries(self) -> Option<LayerEntries<'a>> {
        match self {
            Layer::Yaml(Node::Map(entries)) => Some(LayerEntries::Yaml(entries.iter())),
            Layer::Json(Value::Object(map)) => Some(LayerEntries::Json(map.iter(), true)),
            Layer::Default(Value::Object(map)) => Some(LayerEntries::Json(map.iter(), false)),
            _ => None,
        }
    }
}

/// A mapping layer's entries, nulls skipped where they are not set.
enum LayerEntries<'a> {
    Yaml(std::slice::Iter<'a, (&'a str, Node<'a>)>),
    /// Whether a null is skipped.
    Json(serde_json::map::Iter<'a>, bool),
}

impl<'a> Iterator for LayerEntries<'a> {
    type Item = (&'a str, Layer<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            LayerEntries::Yaml(entries) => entries
                .find(|(_, v)| !matches!(v, Node::Null))
                .map(|(k, v)| (*k, Layer::Yaml(v))),
            LayerEntries::Json(entries, skip_null) => {
                entries.find(|(_, v)| !(*skip_null && v.is_null())).map(|(k, v)| {
                    (
                        k.as_str(),
                        if *skip_null {
                            Layer::Json(v)
                        } else {
                            Layer::Default(v)
                        },
                    )
                })
            }
        }
    }
}

/// The chart defaults of the partial blocks some layer sets, by path.
pub(super) type Partials = [(&'static [&'static str], Value)];

/// One key's node across the layers, lowest first; a single layer unless all are mappings.
pub(super) struct Layered<'a> {
    layers: [Option<Layer<'a>>; 3],
    /// The partial blocks at or below this node (one bit per entry of `partials`), and how deep
    /// the node is: most nodes have none, and pay nothing for them.
    below: u32,
    depth: usize,
    partials: &'a Partials,
}

fn not_exact() -> Error {
    de::Error::custom("left to the reference decode")
}

impl<'a> Layered<'a> {
    /// The document's root, over `layers` (lowest first, at most two).
    pub(super) fn root(layers: &[Layer<'a>], partials: &'a Partials) -> Result<Self, Error> {
        let mut run = [None; 3];
        for (slot, layer) in run.iter_mut().zip(layers) {
            *slot = Some(*layer);
        }
        if layers.len() > 2 || layers.iter().any(|l| !l.is_map()) || partials.len() > 32 {
            return Err(not_exact());
        }
        Ok(Self {
            layers: run,
            below: u32::MAX,
            depth: 0,
            partials,
        })
    }

    fn top(&self) -> Option<Layer<'a>> {
        self.layers.iter().rev().flatten().next().copied()
    }

    /// The node under `key`, which layer `at` holds as `here` and no layer below it sets: the
    /// layers that set it, from the top down to the first that is not a mapping (which stands
    /// alone when it is the top), then a partial block's default below.
    fn child(&self, key: &'a str, at: usize, here: Layer<'a>) -> Result<Self, Error> {
        let alone = self.layers.get(at + 1).is_none_or(Option::is_none);
        let mut child = if alone {
            // the common node: one layer (no layer above `at` to look the key up in)
            self.below_with([Some(here), None, None])
        } else {
            self.below_with(self.stacked(key, at, here)?)
        };
        if self.below == 0 {
            return Ok(child);
        }
        let mut default = None;
        // only the partial blocks still below this node (a key under `proxy` is compared with
        // the few paths through `proxy`, not with every one)
        let mut bits = self.below;
        while bits != 0 {
            let bit = bits.trailing_zeros();
            bits &= bits - 1;
            let Some((path, value)) = self.partials.get(bit as usize) else {
                break;
            };
            if path.get(self.depth) == Some(&key) {
                child.below |= 1 << bit;
                if path.len() == child.depth {
                    default = Some(value);
                }
            }
        }
        if let Some(default) = default {
            child.under(Layer::Default(default))?;
        }
        Ok(child)
    }

    /// The layers above `at` that set `key`, from the top down to the first that is not a
    /// mapping, over `here`: lowest first.
    fn stacked(&self, key: &'a str, at: usize, here: Layer<'a>) -> Result<[Option<Layer<'a>>; 3], Error> {
        let above = self.layers.iter().skip(at + 1).rev().flatten();
        let nodes = above.filter_map(|l| l.child(key)).chain(std::iter::once(here));
        let mut found: [Option<Layer<'a>>; 3] = [None; 3];
        let mut n = 0;
        for node in nodes {
            if node.is_map() || n == 0 {
                *found.get_mut(n).ok_or_else(not_exact)? = Some(node);
                n += 1;
                if !node.is_map() {
                    break;
                }
            } else if node.is_null() {
                break;
            } else {
                // a mapping over a list or scalar: the reference path checks its shape
                return Err(not_exact());
            }
        }
        if let Some(run) = found.get_mut(..n) {
            run.reverse();
        }
        Ok(found)
    }

    /// A node one level below this one, over `layers`, with no partial block below it yet.
    fn below_with(&self, layers: [Option<Layer<'a>>; 3]) -> Self {
        Self {
            layers,
            below: 0,
            depth: self.depth + 1,
            partials: self.partials,
        }
    }

    /// Puts `default` below a partial block's mapping layers.
    fn under(&mut self, default: Layer<'a>) -> Result<(), Error> {
        let n = self.layers.iter().flatten().count();
        if n == 0 || n == self.layers.len() || !self.layers.iter().flatten().all(|l| l.is_map()) {
            return Err(not_exact());
        }
        self.layers.copy_within(0..n, 1);
        if let Some(lowest) = self.layers.first_mut() {
            *lowest = Some(default);
        }
        Ok(())
    }

    /// A list item: a node of its own, with no partial block below.
    fn item(node: &'a Node<'a>, partials: &'a Partials) -> Self {
        Self {
            layers: [Some(Layer::Yaml(node)), None, None],
            below: 0,
            depth: 0,
            partials,
        }
    }
}

impl<'de> Deserializer<'de> for Layered<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let top = self.top().ok_or_else(not_exact)?;
        if top.is_map() {
            return visitor.visit_map(Entries::new(self));
        }
        match top {
            Layer::Yaml(node) => match node {
                Node::Null => visitor.visit_unit(),
                Node::Bool(b) => visitor.visit_bool(*b),
                Node::Number(n) => n.deserialize_any(visitor),
                Node::Str(s) => visitor.visit_borrowed_str(s.as_ref()),
                Node::Seq(items) => visitor.visit_seq(Items {
                    items: items.iter(),
                    partials: self.partials,
                }),
                Node::Map(_) => Err(not_exact()),
            },
            Layer::Json(value) | Layer::Default(value) => value.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.top() {
            Some(top) if top.is_null() => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.top().ok_or_else(not_exact)? {
            Layer::Yaml(Node::Str(s)) => visitor.visit_enum(BorrowedStrDeserializer::new(s.as_ref())),
            Layer::Json(value) | Layer::Default(value) if !value.is_object() => {
                value.deserialize_enum(name, variants, visitor)
            }
            _ => Err(not_exact()),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // serde takes a list for a struct; the reference path refuses it where it must
        match self.top().ok_or_else(not_exact)? {
            Layer::Yaml(Node::Seq(_)) | Layer::Json(Value::Array(_)) | Layer::Default(Value::Array(_)) => {
                Err(not_exact())
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
    }
}

/// A mapping's entries across its layers: each key once, where its lowest layer has it.
struct Entries<'a> {
    node: Layered<'a>,
    /// The layer whose entries are being read, and what is left of them.
    at: usize,
    entries: Option<LayerEntries<'a>>,
    /// The entry whose key was given last.
    entry: Option<(&'a str, Layer<'a>)>,
}

impl<'a> Entries<'a> {
    fn new(node: Layered<'a>) -> Self {
        Self {
            node,
            at: 0,
            entries: None,
            entry: None,
        }
    }

    fn next_entry(&mut self) -> Option<(&'a str, Layer<'a>)> {
        loop {
            if self.entries.is_none() {
                // every layer of a mapping node is a mapping
                self.entries = Some((*self.node.layers.get(self.at)?)?.entries()?);
            }
            match self.entries.as_mut().and_then(Iterator::next) {
                Some((key, here)) => {
                    let mut below = self.node.layers.iter().take(self.at).flatten();
                    if !below.any(|l| l.child(key).is_some()) {
                        return Some((key, here));
                    }
                }
                None => {
                    self.entries = None;
                    self.at += 1;
                }
            }
        }
    }
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some((key, here)) = self.next_entry() else {
            return Ok(None);
        };
        self.entry = Some((key, here));
        seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (key, here) = self.entry.take().ok_or_else(not_exact)?;
        seed.deserialize(self.node.child(key, self.at, here)?)
    }
}

/// A list of the values document's (lists are never merged).
struct Items<'a> {
    items: std::slice::Iter<'a, Node<'a>>,
    partials: &'a Partials,
}

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        match self.items.next() {
            Some(node) => seed.deserialize(Layered::item(node, self.partials)).map(Some),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::helm_yaml::read_keeping;
    use serde::Deserialize;
    use serde_json::json;

    fn decode(yaml: &str, json: &Value, partials: &Partials) -> Result<Value, Error> {
        let node = read_keeping(yaml, |_: &str| true).unwrap();
        let layers = [Layer::Yaml(&node), Layer::Json(json)];
        Value::deserialize(Layered::root(&layers, partials)?)
    }

    #[test]
    fn mappings_merge_key_by_key_and_the_top_replaces_the_rest() {
        let yaml = "a:\n  x: 1\n  y: ~\n  l:\n  - k: v\n    n: null\nb:\n- 1\nc:\n  d: 1\n";
        let json = json!({"a": {"z": "2", "l": [0]}, "c": "s"});
        assert_eq!(
            decode(yaml, &json, &[]).unwrap(),
            json!({"a": {"x": 1, "z": "2", "l": [0]}, "b": [1], "c": "s"})
        );
        let json = json!({"b": {}});
        assert!(
            decode(yaml, &json, &[]).is_err(),
            "a mapping over a list is left to the reference path"
        );
        // a list's mappings lose their nulls too, as in the reference path
        assert_eq!(
            decode("a:\n  l:\n  - k: v\n    n: null\n", &json!({}), &[]).unwrap(),
            json!({"a": {"l": [{"k": "v"}]}})
        );
    }

    #[test]
    fn a_partial_block_is_completed_by_its_default_and_its_nulls() {
        let partials = [(&["a", "p"][..], json!({"keep": 1, "gone": 2, "unset": null}))];
        let json = json!({"a": {"p": {"gone": 3}}});
        assert_eq!(
            decode("a:\n  p:\n    new: x\n", &json, &partials).unwrap(),
            json!({"a": {"p": {"keep": 1, "gone": 3, "unset": null, "new": "x"}}})
        );
        assert!(decode("a:\n  p: 5\n", &json!({}), &partials).is_err());
        assert!(
            decode("a: 5\n", &json!({}), &partials).is_ok(),
            "no block, no default"
        );
    }
}
