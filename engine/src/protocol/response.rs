//! Guest answers (`ValidationResponse`, `SettingsValidationResponse`) and the AdmissionResponse the
//! engine builds from them, like policy-evaluator's `admission_response.rs`.

use std::collections::BTreeMap;

use base64::{Engine as _, engine::general_purpose::STANDARD};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Message of a rejection for a mutation of a DELETE request (policy-evaluator's text).
pub const DELETE_MUTATION_MESSAGE: &str = "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed";
/// Message of a rejection after an epoch-deadline interruption (policy-evaluator's text).
pub const DEADLINE_MESSAGE: &str =
    "Policy execution interrupted because it exceeded the allowed execution time";

/// The guest's answers are the SDK's own types: the engine reads what the guest wrote with them.
pub use kubewarden_policy_sdk::response::ValidationResponse;
pub use kubewarden_policy_sdk::settings::SettingsValidationResponse;

/// Settings the guest refused, with its message (empty when it gave none), in policy-server's
/// words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Provided settings are not valid: {0}")]
pub struct SettingsRejected(pub String);

impl SettingsRejected {
    /// `Err` with the guest's message when `validate_settings` found the settings invalid.
    pub fn check(answer: SettingsValidationResponse) -> Result<(), SettingsRejected> {
        match answer.valid {
            true => Ok(()),
            false => Err(SettingsRejected(answer.message.unwrap_or_default())),
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum PatchType {
    #[serde(rename = "JSONPatch")]
    JsonPatch,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AdmissionResponseStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// `admission/v1 AdmissionResponse`, serialised like policy-evaluator (camelCase; `patchType`,
/// `patch`, `status` omitted when absent; `auditAnnotations` and `warnings` always present).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<PatchType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AdmissionResponseStatus>,
    #[serde(default)]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
}

impl AdmissionResponse {
    pub fn reject(uid: &str, message: impl Into<String>, code: u16) -> Self {
        Self {
            uid: uid.to_owned(),
            allowed: false,
            status: Some(AdmissionResponseStatus {
                message: Some(message.into()),
                code: Some(code),
            }),
            ..Default::default()
        }
    }

    pub fn reject_internal_server_error(uid: &str, message: impl std::fmt::Display) -> Self {
        Self::reject(uid, format!("internal server error: {message}"), 500)
    }

    /// Builds the response from the guest's answer. `object` is the request's object (`None` for
    /// DELETE).
    pub fn from_validation_response(
        uid: &str,
        object: Option<&Value>,
        resp: &ValidationResponse,
    ) -> Result<Self, serde_json::Error> {
        let patch = match (&resp.mutated_object, object) {
            (Some(_), None) => {
                return Ok(Self {
                    uid: uid.to_owned(),
                    allowed: false,
                    status: Some(AdmissionResponseStatus {
                        message: Some(DELETE_MUTATION_MESSAGE.to_owned()),
                        code: None,
                    }),
                    ..Default::default()
                });
            }
            (Some(mutated), Some(object)) => {
                let diff = kwctl_diff(object, mutated);
                if diff.0.is_empty() {
                    None
                } else {
                    Some(STANDARD.encode(serde_json::to_string(&diff)?))
                }
            }
            (None, _) => None,
        };
        let status = (resp.message.is_some() || resp.code.is_some()).then(|| AdmissionResponseStatus {
            message: resp.message.clone(),
            code: resp.code,
        });
        Ok(Self {
            uid: uid.to_owned(),
            allowed: resp.accepted,
            patch_type: patch.as_ref().map(|_| PatchType::JsonPatch),
            patch,
            status,
            // the SDK's map is a HashMap: sorted here, so the engine's answer is the same bytes
            // every time (policy-server's order varies from one answer to the next)
            audit_annotations: resp
                .audit_annotations
                .as_ref()
                .map(|a| a.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            warnings: resp.warnings.clone(),
        })
    }

    /// The decoded JSON patch, if any.
    pub fn decoded_patch(&self) -> Result<Option<json_patch::Patch>, PatchDecodeError> {
        let Some(patch) = &self.patch else {
            return Ok(None);
        };
        let bytes = STANDARD.decode(patch).map_err(PatchDecodeError::Base64)?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(PatchDecodeError::Json)
    }

    /// The status message, or "" when there is none.
    pub fn message(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.message.as_deref())
            .unwrap_or("")
    }
}

/// `json_patch::diff` as policy-evaluator computes it. Its serde_json has no `preserve_order`, so
/// every object is a `BTreeMap`: the diff walks keys sorted (the order of the operations) and the
/// values it copies into `add`/`replace` serialise with sorted keys. This workspace enables
/// `preserve_order` (insertion order), so both sides are re-sorted first to get kwctl's bytes.
/// Arrays keep their element order; sorting keys does not change what the patch does.
fn kwctl_diff(object: &Value, mutated: &Value) -> json_patch::Patch {
    let (mut object, mut mutated) = (object.clone(), mutated.clone());
    object.sort_all_objects();
    mutated.sort_all_objects();
    json_patch::diff(&object, &mutated)
}

#[derive(Debug, thiserror::Error)]
pub enum PatchDecodeError {
    #[error("patch is not base64: {0}")]
    Base64(#[source] base64::DecodeError),
    #[error("patch is not a JSON patch: {0}")]
    Json(#[source] serde_json::Error),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn accepting(mutated_object: Value) -> ValidationResponse {
        ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object: Some(mutated_object),
            audit_annotations: None,
            warnings: None,
        }
    }

    #[test]
    fn serialises_like_policy_evaluator() {
        let r = AdmissionResponse {
            uid: "u".into(),
            allowed: true,
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"uid":"u","allowed":true,"auditAnnotations":null,"warnings":null}"#
        );
        let r = AdmissionResponse::reject_internal_server_error("u", "boom");
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"uid":"u","allowed":false,"status":{"message":"internal server error: boom","code":500},"auditAnnotations":null,"warnings":null}"#
        );
    }

    #[test]
    fn patch_from_mutated_object() {
        let obj = json!({"metadata": {"name": "a"}});
        let resp = accepting(json!({"metadata": {"name": "a", "labels": {"x": "y"}}}));
        let r = AdmissionResponse::from_validation_response("u", Some(&obj), &resp).unwrap();
        assert_eq!(r.patch_type, Some(PatchType::JsonPatch));
        let patch = serde_json::to_value(r.decoded_patch().unwrap().unwrap()).unwrap();
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}])
        );
        assert_eq!(r.status, None);

        let same = accepting(obj.clone());
        let r = AdmissionResponse::from_validation_response("u", Some(&obj), &same).unwrap();
        assert_eq!((r.patch, r.patch_type), (None, None));

        let r = AdmissionResponse::from_validation_response("u", None, &resp).unwrap();
        assert!(!r.allowed);
        assert_eq!(r.message(), DELETE_MUTATION_MESSAGE);
        assert_eq!(r.status.unwrap().code, None);
    }

    #[test]
    fn patch_walks_and_serialises_keys_sorted_like_kwctl() {
        // insertion order (kept by `preserve_order`) deliberately differs from sorted order
        let obj = json!({
            "spec": {"containers": [{"name": "app"}]},
            "metadata": {"labels": {"z": "1"}, "old-b": "x", "old-a": "x"}
        });
        let mutated = json!({
            "spec": {
                "containers": [{"name": "app"}],
                "volumes": [{"name": "w", "emptyDir": {}}, {"name": "v"}]
            },
            "metadata": {"labels": {"z": "1", "b": "2"}, "annotations": {"y": "1", "x": "2"}}
        });
        let resp = accepting(mutated.clone());
        let r = AdmissionResponse::from_validation_response("u", Some(&obj), &resp).unwrap();
        let bytes = STANDARD.decode(r.patch.as_deref().unwrap()).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            concat!(
                r#"[{"op":"add","path":"/metadata/annotations","value":{"x":"2","y":"1"}},"#,
                r#"{"op":"add","path":"/metadata/labels/b","value":"2"},"#,
                r#"{"op":"remove","path":"/metadata/old-a"},"#,
                r#"{"op":"remove","path":"/metadata/old-b"},"#,
                // array elements keep their order, only their objects' keys are sorted
                r#"{"op":"add","path":"/spec/volumes","value":[{"emptyDir":{},"name":"w"},{"name":"v"}]}]"#
            )
        );
        // the patch still yields the mutated object
        let mut patched = obj.clone();
        json_patch::patch(&mut patched, &r.decoded_patch().unwrap().unwrap()).unwrap();
        assert_eq!(patched, mutated);
    }
}
