//! A free-form settings block (`proxy.inbound`, `networkValidator.securityContext`) whose chart
//! default is a JSON document, built only when it is read: serde builds a default `Settings`
//! (and `Proxy`) each time it decodes one, and most of them never read these blocks.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A block's chart default.
pub trait ChartDefault {
    fn value() -> Value;
}

/// A block as given, or its chart default `D` when not given.
pub struct Block<D> {
    given: Option<Value>,
    default: PhantomData<D>,
}

impl<D: ChartDefault> Block<D> {
    /// The block in effect.
    pub fn get(&self) -> Cow<'_, Value> {
        match &self.given {
            Some(v) => Cow::Borrowed(v),
            None => Cow::Owned(D::value()),
        }
    }

    /// The block as the settings gave it; `None` when its chart default is in effect.
    pub fn given(&self) -> Option<&Value> {
        self.given.as_ref()
    }
}

impl<D> Default for Block<D> {
    fn default() -> Self {
        Self {
            given: None,
            default: PhantomData,
        }
    }
}

impl<D> Clone for Block<D> {
    fn clone(&self) -> Self {
        Self {
            given: self.given.clone(),
            default: PhantomData,
        }
    }
}

impl<D: ChartDefault> From<Value> for Block<D> {
    fn from(v: Value) -> Self {
        Self {
            given: Some(v),
            default: PhantomData,
        }
    }
}

/// Equal when the blocks in effect are: a block given as its default equals one not given.
impl<D: ChartDefault> PartialEq for Block<D> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl<D: ChartDefault> fmt::Debug for Block<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

impl<D: ChartDefault> Serialize for Block<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(serializer)
    }
}

impl<'de, D: ChartDefault> Deserialize<'de> for Block<D> {
    fn deserialize<De: Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Two;
    impl ChartDefault for Two {
        fn value() -> Value {
            json!({"a": 2})
        }
    }

    #[test]
    fn the_default_is_read_written_and_compared_as_if_given() {
        let unset = Block::<Two>::default();
        assert_eq!(*unset.get(), json!({"a": 2}));
        assert_eq!(serde_json::to_value(&unset).unwrap(), json!({"a": 2}));
        assert_eq!(unset, Block::from(json!({"a": 2})));
        assert_ne!(unset, Block::from(json!({"a": 3})));
        let given: Block<Two> = serde_json::from_value(json!({"b": [1]})).unwrap();
        assert_eq!(*given.get(), json!({"b": [1]}));
        assert_eq!(format!("{given:?}"), format!("{:?}", json!({"b": [1]})));
    }
}
