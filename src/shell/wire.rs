//! The waPC payloads: decoding `validate` / `validate_settings` input and encoding the
//! answers as the SDK's own `ValidationResponse` and `SettingsValidationResponse`.

use crate::admission::admit::{self, Request};
use crate::admission::outcome::{Outcome, Verdict};
use crate::cluster::Cluster;
use crate::shell::payload::{Payload, RequestFields, Shape};
use crate::values::settings::Settings;
/// The answers' types: the SDK's own (re-exported for the playground and the tests that read them).
pub use kubewarden_policy_sdk::{response::ValidationResponse, settings::SettingsValidationResponse};
use serde_json::Value;

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
    encode(outcome)
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
    let payload: Shape<Payload> =
        from_json(payload).map_err(|e| format!("validate payload: not a valid request: {e}"))?;
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
/// (moved out of the request, never cloned).
fn evaluate(request: RequestFields, settings: &Settings, cluster: &dyn Cluster) -> Outcome {
    let object = request.object;
    let req = Request {
        kind: request.kind.get("kind").and_then(Value::as_str).unwrap_or(""),
        operation: request.operation.as_str().unwrap_or(""),
        namespace: request.namespace.as_str().unwrap_or(""),
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

pub fn encode(outcome: Outcome) -> Vec<u8> {
    let (accepted, message) = match outcome.verdict {
        Verdict::Rejected(m) => (false, Some(m)),
        _ => (true, None),
    };
    let response = ValidationResponse {
        accepted,
        code: None,
        message,
        mutated_object: outcome.mutated,
        // the SDK's map is a HashMap: the engine, not the guest, gives the answer its order
        audit_annotations: (!outcome.audit_annotations.is_empty())
            .then(|| outcome.audit_annotations.into_iter().collect()),
        warnings: (!outcome.warnings.is_empty()).then_some(outcome.warnings),
    };
    serde_json::to_vec(&response).unwrap_or_default()
}
