//! The waPC payloads: decoding `validate` / `validate_settings` input and encoding the
//! answers as the SDK's own `ValidationResponse` and `SettingsValidationResponse`.

use crate::admission::admit::{self, Held, Request};
use crate::admission::outcome::{Outcome, Verdict};
use crate::cluster::Cluster;
use crate::shell::payload::{Payload, RequestFields, Shape};
use crate::shell::scan;
use crate::shell::spliced::Spliced;
use crate::values::settings::Settings;
/// The answers' types: the SDK's own (re-exported for the playground and the tests that read them).
pub use kubewarden_policy_sdk::{response::ValidationResponse, settings::SettingsValidationResponse};
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
    let (outcome, held) = match decode(payload) {
        Ok((request, settings)) => evaluate(request, &settings, cluster),
        Err(message) => (Outcome::rejected(message), None),
    };
    encode(outcome, held.as_ref())
}

/// `serde_json::from_slice` with the bytes checked as UTF-8 once, up front: reading from a
/// `str`, serde_json does not check each string again (that was 4 % of the guest's
/// instructions). Invalid UTF-8 is read by `from_slice`, whose error names the position.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

fn decode(payload: &[u8]) -> Result<(RequestFields, Settings), String> {
    // our reader where it is sure, serde_json's otherwise (and for every error)
    let scanned = std::str::from_utf8(payload).ok().and_then(scan::payload);
    let payload: Shape<Payload> = match scanned {
        Some(payload) => Shape::Object(payload),
        None => from_json(payload).map_err(|e| format!("validate payload: not a valid request: {e}"))?,
    };
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

/// Decides on the borrowed object, then applies the additions to the request's own object
/// (moved out of the request, never cloned), an injection's proxy container held out of it.
fn evaluate(request: RequestFields, settings: &Settings, cluster: &dyn Cluster) -> (Outcome, Option<Held>) {
    let object = request.object;
    let req = Request {
        kind: request.kind.get("kind").and_then(Value::as_str).unwrap_or(""),
        operation: request.operation.as_str().unwrap_or(""),
        namespace: request.namespace.as_str().unwrap_or(""),
        object: &object,
    };
    if req.operation == "CREATE" && !object.is_object() && matches!(req.kind, "Pod" | "Service") {
        let message = format!("request.object: a {} CREATE must carry the object", req.kind);
        return (Outcome::rejected(message), None);
    }
    let admission = admit::admit_edit(&req, settings, cluster);
    admission.finish_holding(object)
}

/// The SDK's `ValidationResponse`, field for field, with the mutated object written in place
/// (an injection's proxy container spliced into it) rather than built as one tree.
#[derive(serde::Serialize)]
struct Answer<'a> {
    accepted: bool,
    message: Option<String>,
    code: Option<u16>,
    mutated_object: Option<Mutated<'a>>,
    audit_annotations: Option<&'a BTreeMap<String, String>>,
    warnings: Option<&'a [String]>,
}

#[derive(serde::Serialize)]
#[serde(untagged)]
enum Mutated<'a> {
    Whole(&'a Value),
    Spliced(Spliced<'a>),
}

/// Encodes an outcome; `held` is the proxy container an injection held out of its mutated object.
fn encode(outcome: Outcome, held: Option<&Held>) -> Vec<u8> {
    let mutated = match (&outcome.mutated, held) {
        (Some(object), Some(held)) => Some(Spliced { object, held }),
        _ => None,
    };
    if mutated.as_ref().is_some_and(|s| !s.has_place()) {
        let message = "internal error: the proxy container has no place in the mutated object";
        return encode(Outcome::rejected(message), None);
    }
    let (accepted, message) = match outcome.verdict {
        Verdict::Rejected(m) => (false, Some(m)),
        _ => (true, None),
    };
    let answer = Answer {
        accepted,
        message,
        code: None,
        mutated_object: match mutated {
            Some(spliced) => Some(Mutated::Spliced(spliced)),
            None => outcome.mutated.as_ref().map(Mutated::Whole),
        },
        audit_annotations: (!outcome.audit_annotations.is_empty()).then_some(&outcome.audit_annotations),
        warnings: (!outcome.warnings.is_empty()).then_some(&outcome.warnings[..]),
    };
    crate::shell::json_out::to_vec(&answer).unwrap_or_default()
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
        assert_eq!(encode(rejected, None), serde_json::to_vec(&sdk).unwrap());

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
        assert_eq!(encode(mutated, None), serde_json::to_vec(&sdk).unwrap());
    }
}
