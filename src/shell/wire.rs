//! The waPC payloads: decoding `validate` / `validate_settings` input and encoding the answers
//! with serde_json, in the shape of the SDK's `ValidationResponse` and
//! `SettingsValidationResponse`.

use crate::admission::admit::{self, Request};
use crate::admission::outcome::{Outcome, Verdict};
use crate::cluster::Cluster;
use crate::shell::payload::{Payload, RequestFields, Shape};
use crate::values::settings::Settings;
/// The answers' types: the SDK's own (re-exported for the playground and the tests that read them).
pub use kubewarden_policy_sdk::{response::ValidationResponse, settings::SettingsValidationResponse};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Answers `validate_settings`.
pub fn validate_settings(payload: &[u8]) -> Vec<u8> {
    let answer = match Settings::from_json_bytes(payload) {
        Ok(_) => SettingsValidationResponse {
            valid: true,
            message: None,
        },
        Err(e) => SettingsValidationResponse {
            valid: false,
            message: Some(e.to_string()),
        },
    };
    serde_json::to_vec(&answer).unwrap_or_default()
}

/// Answers `validate`: decode, run the core, encode. Never fails: a malformed payload is a
/// rejection whose message names what is wrong.
pub fn validate(payload: &[u8], cluster: &dyn Cluster) -> Vec<u8> {
    let outcome = match decode(payload) {
        Ok((request, settings)) => evaluate(request, &settings, cluster),
        Err(message) => Outcome::rejected(message),
    };
    encode(&outcome)
}

/// The request's fields the core reads, and the settings.
fn decode(payload: &[u8]) -> Result<(RequestFields, Settings), String> {
    let payload: Shape<Payload> =
        serde_json::from_slice(payload).map_err(|e| format!("validate payload: not a valid request: {e}"))?;
    let Shape::Object(payload) = payload else {
        return Err("validate payload: must be a JSON object with \"request\" and \"settings\"".into());
    };
    let Some(request) = payload.request else {
        return Err("validate payload: missing \"request\"".into());
    };
    let settings = Settings::from_value(payload.settings).map_err(|e| e.to_string())?;
    let Shape::Object(request) = request else {
        return Err("request: must be an AdmissionRequest object".into());
    };
    Ok((request, settings))
}

/// Decides on the request's object, then adds to that same tree: every field of the request's
/// object, unknown and null ones included, is in the mutated object.
fn evaluate(request: RequestFields, settings: &Settings, cluster: &dyn Cluster) -> Outcome {
    let RequestFields {
        kind,
        operation,
        namespace,
        object,
    } = request;
    let req = Request {
        kind: kind.get("kind").and_then(Value::as_str).unwrap_or(""),
        operation: operation.as_str().unwrap_or(""),
        namespace: namespace.as_str().unwrap_or(""),
        object: &object,
    };
    if req.operation == "CREATE" && !object.is_object() && matches!(req.kind, "Pod" | "Service") {
        return Outcome::rejected(format!(
            "request.object: a {} CREATE must carry the object",
            req.kind
        ));
    }
    let admission = admit::admit_edit(&req, settings, cluster);
    admission.finish(object)
}

/// The SDK's `ValidationResponse`, field for field, with the audit annotations in a sorted map:
/// the SDK's is a `HashMap`, whose order differs between instances, and the same request must
/// get the same bytes.
#[derive(Serialize, Default)]
struct Answer<'a> {
    accepted: bool,
    message: Option<&'a str>,
    code: Option<u16>,
    mutated_object: Option<&'a Value>,
    audit_annotations: Option<&'a BTreeMap<String, String>>,
    warnings: Option<&'a [String]>,
}

/// Encodes an outcome as a `ValidationResponse`.
fn encode(outcome: &Outcome) -> Vec<u8> {
    let message = match &outcome.verdict {
        Verdict::Rejected(m) => Some(m.as_str()),
        _ => None,
    };
    let answer = Answer {
        accepted: message.is_none(),
        message,
        code: None,
        mutated_object: outcome.mutated.as_ref(),
        audit_annotations: (!outcome.audit_annotations.is_empty()).then_some(&outcome.audit_annotations),
        warnings: (!outcome.warnings.is_empty()).then_some(&outcome.warnings[..]),
    };
    serde_json::to_vec(&answer).unwrap_or_else(|e| {
        // only a map with a non-string key fails to encode, and JSON objects have none
        let message = format!("internal error: the answer could not be encoded: {e}");
        let failed = Answer {
            message: Some(&message),
            ..Answer::default()
        };
        serde_json::to_vec(&failed).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The answer is the SDK's `ValidationResponse`, byte for byte (one audit annotation: the
    /// SDK's map is a HashMap, whose order is its own).
    #[test]
    fn answers_as_the_sdk_writes_them() {
        let mut rejected = Outcome::rejected("no");
        rejected.warnings.push("w".into());
        rejected.audit_annotations.insert("k".into(), "v".into());
        let sdk = ValidationResponse {
            accepted: false,
            message: Some("no".into()),
            code: None,
            mutated_object: None,
            audit_annotations: Some([("k".to_string(), "v".to_string())].into()),
            warnings: Some(vec!["w".into()]),
        };
        assert_eq!(encode(&rejected), serde_json::to_vec(&sdk).unwrap());

        let mut mutated = Outcome::unchanged(Verdict::NotApplicable);
        mutated.mutated = Some(json!({"kind": "Service", "metadata": {"annotations": {"a": "b"}}}));
        let sdk = ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object: mutated.mutated.clone(),
            audit_annotations: None,
            warnings: None,
        };
        assert_eq!(encode(&mutated), serde_json::to_vec(&sdk).unwrap());
    }

    /// Several audit annotations are written in key order, whatever order they were added in.
    #[test]
    fn audit_annotations_are_written_sorted() {
        let mut outcome = Outcome::unchanged(Verdict::NotApplicable);
        for key in ["owner", "injection", "values"] {
            outcome.audit_annotations.insert(key.into(), "x".into());
        }
        let answer: Value = serde_json::from_slice(&encode(&outcome)).unwrap();
        let written = String::from_utf8(encode(&outcome)).unwrap();
        assert!(
            written.contains(r#""audit_annotations":{"injection":"x","owner":"x","values":"x"}"#),
            "{written}"
        );
        assert_eq!(answer["accepted"], json!(true));
    }
}
