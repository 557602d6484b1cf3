//! Helm values are YAML: `request: 1` and `ignoreInboundPorts: 4567` arrive as numbers.

use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;

/// Accepts a string, an integer or a float and keeps its text.
pub fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<super::Text, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s.into()),
        Value::Number(n) => Ok(n.to_string().into()),
        Value::Null => Ok(super::Text::Borrowed("")),
        other => Err(D::Error::custom(format!(
            "invalid type: {}, expected a string or a number",
            kind_of(&other)
        ))),
    }
}

/// The JSON type name used in messages.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
