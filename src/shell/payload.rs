//! The `validate` payload read for the four fields of the request the core reads and the
//! settings; every other field (user info, resources, options, `oldObject`) is tokenised and
//! skipped, never built into a JSON tree.

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// A JSON document that is an object read by `T`, or any other value (skipped).
#[derive(Debug)]
pub(crate) enum Shape<T> {
    Object(T),
    Other,
}

/// The payload's two fields; `request` is `None` when absent.
#[derive(Debug, Default)]
pub(crate) struct Payload {
    pub request: Option<Shape<RequestFields>>,
    pub settings: Value,
}

/// The fields of an AdmissionRequest the core reads, as JSON values (their types are checked
/// where they are read, as with a whole tree).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct RequestFields {
    pub kind: Value,
    pub operation: Value,
    pub namespace: Value,
    pub object: Value,
}

/// The fields of one object: `read` takes a key it keeps, and says whether it did.
trait Fields: Default {
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error>;
}

impl Fields for Payload {
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "request" => self.request = Some(map.next_value()?),
            "settings" => self.settings = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl Fields for RequestFields {
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        let slot = match key {
            "kind" => &mut self.kind,
            "operation" => &mut self.operation,
            "namespace" => &mut self.namespace,
            "object" => &mut self.object,
            _ => return Ok(false),
        };
        *slot = map.next_value()?;
        Ok(true)
    }
}

impl<'de, T: Fields> Deserialize<'de> for Shape<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor(std::marker::PhantomData))
    }
}

struct ShapeVisitor<T>(std::marker::PhantomData<T>);

impl<T> ShapeVisitor<T> {
    fn other<E>(self) -> Result<Shape<T>, E> {
        Ok(Shape::Other)
    }
}

impl<'de, T: Fields> Visitor<'de> for ShapeVisitor<T> {
    type Value = Shape<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = T::default();
        // a key repeated is read again, so the last one counts, as in a JSON tree
        while let Some(key) = map.next_key::<KeyString<'de>>()? {
            if !fields.read(key.as_str(), &mut map)? {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Shape::Object(fields))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.other()
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        self.other()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        self.other()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        self.other()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        self.other()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        self.other()
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.other()
    }
}

/// A key, borrowed from the JSON text unless it has escapes.
pub(super) enum KeyString<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl KeyString<'_> {
    pub(super) fn as_str(&self) -> &str {
        match self {
            KeyString::Borrowed(s) => s,
            KeyString::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for KeyString<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = KeyString<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(KeyString::Borrowed(s))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(KeyString::Owned(s.to_owned()))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Shape<Payload> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn keeps_the_four_fields_and_the_settings_and_skips_the_rest() {
        let Shape::Object(p) = read(
            r#"{"request": {"uid": "u", "kind": {"kind": "Pod"}, "userInfo": {"groups": [1, [2]]},
                "operation": "CREATE", "namespace": "shop", "object": {"a": 1}, "oldObject": null},
                "settings": {"x": 1}, "extra": [true]}"#,
        ) else {
            panic!("an object")
        };
        let Some(Shape::Object(r)) = p.request else {
            panic!("a request object")
        };
        assert_eq!(r.kind, json!({"kind": "Pod"}));
        assert_eq!(r.operation, json!("CREATE"));
        assert_eq!(r.namespace, json!("shop"));
        assert_eq!(r.object, json!({"a": 1}));
        assert_eq!(p.settings, json!({"x": 1}));
    }

    #[test]
    fn the_last_of_a_repeated_key_counts_and_escaped_keys_are_read() {
        let Shape::Object(p) = read(r#"{"request": {"operation": "A", "oper\u0061tion": "B"}}"#) else {
            panic!("an object")
        };
        let Some(Shape::Object(r)) = p.request else {
            panic!("a request object")
        };
        assert_eq!(r.operation, json!("B"));
        assert_eq!(p.settings, Value::Null);
    }

    #[test]
    fn non_objects_are_other() {
        for text in ["[]", "[1, {\"a\": 2}]", "1", "-1", "1.5", "\"x\"", "true", "null"] {
            assert!(matches!(read(text), Shape::Other), "{text}");
        }
        let Shape::Object(p) = read(r#"{"request": [1]}"#) else {
            panic!("an object")
        };
        assert!(matches!(p.request, Some(Shape::Other)));
    }
}
