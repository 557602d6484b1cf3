//! The waPC payloads: decoding `validate` / `validate_settings` input and encoding the
//! answers as the SDK's own `ValidationResponse` and `SettingsValidationResponse`.

use crate::admission::admit::{self, Admission, Edit, Request};
use crate::admission::outcome::{Outcome, Verdict};
use crate::cluster::Cluster;
use crate::shell::payload::{Payload, RequestFields, Shape};
use crate::shell::{json_out, rewrite, scan};
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
    match decode(payload) {
        Ok((request, settings, text)) => evaluate(request, text, &settings, cluster),
        Err(message) => encode(&Outcome::rejected(message), None),
    }
}

/// `serde_json::from_slice` with the bytes checked as UTF-8 once, up front: reading from a
/// `str`, serde_json does not check each string again (that was 4 % of the guest's
/// instructions). Invalid UTF-8 is read by `from_slice`, whose error names the position.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// The request, the settings, and the request object's text when our reader read the payload.
fn decode(payload: &[u8]) -> Result<(RequestFields, Settings, Option<&str>), String> {
    // our reader where it is sure, serde_json's otherwise (and for every error)
    let text = simdutf8::basic::from_utf8(payload).ok();
    let scanned = text.and_then(scan::payload);
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
    let object_text = request.object_span.clone().and_then(|span| text?.get(span));
    Ok((request, settings, object_text))
}

/// Decides on the object as read; the mutated object is written from the object's own text
/// when our reader read it (its tree then lacks what the core never reads), else the edit is
/// applied to the tree.
fn evaluate(
    request: RequestFields,
    text: Option<&str>,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Vec<u8> {
    let object = request.object;
    let req = Request {
        kind: request.kind.get("kind").and_then(Value::as_str).unwrap_or(""),
        operation: request.operation.as_str().unwrap_or(""),
        namespace: request.namespace.as_str().unwrap_or(""),
        object: &object,
    };
    if req.operation == "CREATE" && !object.is_object() && matches!(req.kind, "Pod" | "Service") {
        let message = format!("request.object: a {} CREATE must carry the object", req.kind);
        return encode(&Outcome::rejected(message), None);
    }
    let admission = admit::admit_edit(&req, settings, cluster);
    match (admission.edit, text) {
        (Some(edit), Some(text)) => encode(&admission.outcome, Some(Mutated::Text(text, &edit))),
        (edit, _) => {
            let outcome = Admission {
                outcome: admission.outcome,
                edit,
            }
            .finish(object);
            encode(&outcome, outcome.mutated.as_ref().map(Mutated::Tree))
        }
    }
}

/// The mutated object: a tree, or the request object's text with an edit written into it.
enum Mutated<'a> {
    Tree(&'a Value),
    Text(&'a str, &'a Edit),
}

/// Encodes an outcome as the SDK's `ValidationResponse` writes it, field for field, with the
/// mutated object in place.
fn encode(outcome: &Outcome, mutated: Option<Mutated<'_>>) -> Vec<u8> {
    let mut out = Vec::with_capacity(match mutated {
        // the object, an injection's additions (about 8 KB) and the rest of the answer
        Some(Mutated::Text(text, _)) => 2 * text.len() + 8192,
        _ => 8192,
    });
    let (accepted, message) = match &outcome.verdict {
        Verdict::Rejected(m) => (false, Some(m)),
        _ => (true, None),
    };
    out.extend_from_slice(if accepted {
        b"{\"accepted\":true,\"message\":"
    } else {
        b"{\"accepted\":false,\"message\":"
    });
    let written = json_out::append(&mut out, &message).and_then(|()| {
        out.extend_from_slice(b",\"code\":null,\"mutated_object\":");
        match mutated {
            None => out.extend_from_slice(b"null"),
            Some(Mutated::Tree(object)) => json_out::append(&mut out, object)?,
            Some(Mutated::Text(text, edit)) => {
                let mark = out.len();
                match rewrite::rewrite(text, edit, &mut out) {
                    Some(true) => {}
                    // the edit's path leads to no object: nothing is added, as on the tree
                    Some(false) => {
                        out.truncate(mark);
                        out.extend_from_slice(b"null");
                    }
                    None => return Err(<serde_json::Error as serde::ser::Error>::custom(UNWRITABLE)),
                }
            }
        }
        out.extend_from_slice(b",\"audit_annotations\":");
        let audit = &outcome.audit_annotations;
        json_out::append(&mut out, &(!audit.is_empty()).then_some(audit))?;
        out.extend_from_slice(b",\"warnings\":");
        json_out::append(
            &mut out,
            &(!outcome.warnings.is_empty()).then_some(&outcome.warnings),
        )?;
        out.push(b'}');
        Ok(())
    });
    match written {
        Ok(()) => out,
        Err(_) if matches!(mutated, Some(Mutated::Text(..))) => encode(&Outcome::rejected(UNWRITABLE), None),
        // JSON of strings and a tree: serde_json writes it if ours does not
        Err(_) => Vec::new(),
    }
}

/// The rejection when the request object's text is not what the payload reader took (never,
/// unless the two disagree): no answer is better than one that loses part of the object.
const UNWRITABLE: &str = "internal error: the request's object could not be written again";

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
        assert_eq!(encode(&rejected, None), serde_json::to_vec(&sdk).unwrap());

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
        let object = mutated.mutated.as_ref().map(Mutated::Tree);
        assert_eq!(encode(&mutated, object), serde_json::to_vec(&sdk).unwrap());
    }
}
