//! The AdmissionRequest sent to the guest, shaped like policy-evaluator's `AdmissionRequest`:
//! camelCase, required `uid`/`kind`/`resource`/`operation`/`userInfo`, optional fields omitted
//! when absent. `object: null` (DELETE) reads as absent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

/// Why a request or settings document could not be used.
#[derive(Debug, Error)]
pub enum RequestError {
    /// The request document is not a JSON object.
    #[error("Invalid request object")]
    NotAnObject,
    /// `kind: AdmissionReview` without a `request`.
    #[error("invalid AdmissionReview object")]
    ReviewWithoutRequest,
    /// The request does not have the AdmissionRequest shape.
    #[error("cannot build AdmissionRequest object from given input: {0}")]
    Shape(#[source] serde_json::Error),
    /// The settings must be an object or null.
    #[error("Invalid settings in CRD, not an object")]
    SettingsNotAnObject,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

/// `authentication/v1 UserInfo` (fields in k8s-openapi's order, `None` omitted).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct UserInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

/// `admission/v1 AdmissionRequest` as policy-evaluator models it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    pub uid: String,
    pub kind: GroupVersionKind,
    pub resource: GroupVersionResource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub operation: String,
    pub user_info: UserInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

impl AdmissionRequest {
    /// Reads an AdmissionReview (`kind: AdmissionReview`, takes `.request`) or a bare
    /// AdmissionRequest, like `kwctl run`.
    pub fn from_document(doc: &Value) -> Result<Self, RequestError> {
        let object = doc.as_object().ok_or(RequestError::NotAnObject)?;
        let req = if object.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
            object
                .get("request")
                .cloned()
                .ok_or(RequestError::ReviewWithoutRequest)?
        } else {
            doc.clone()
        };
        serde_json::from_value(req).map_err(RequestError::Shape)
    }
}

/// Policy settings: a JSON object; `null` means `{}` (policy-evaluator's `PolicySettings`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(transparent)]
pub struct PolicySettings(pub Map<String, Value>);

impl PolicySettings {
    pub fn from_value(value: &Value) -> Result<Self, RequestError> {
        match value {
            Value::Null => Ok(Self::default()),
            Value::Object(map) => Ok(Self(map.clone())),
            _ => Err(RequestError::SettingsNotAnObject),
        }
    }
}

impl TryFrom<Value> for PolicySettings {
    type Error = RequestError;
    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Self::from_value(&value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bare() -> Value {
        json!({
            "uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "CREATE", "userInfo": {"username": "me"},
            "object": {"kind": "Pod"}, "oldObject": null, "unknownField": 1
        })
    }

    #[test]
    fn reads_review_and_bare_request() {
        let review =
            json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": bare()});
        let a = AdmissionRequest::from_document(&review).unwrap();
        let b = AdmissionRequest::from_document(&bare()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.old_object, None);
        let out = serde_json::to_value(&a).unwrap();
        assert_eq!(
            out,
            json!({"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "operation": "CREATE", "userInfo": {"username": "me"}, "object": {"kind": "Pod"}})
        );
    }

    #[test]
    fn errors_name_the_problem() {
        assert_eq!(
            AdmissionRequest::from_document(&json!([]))
                .unwrap_err()
                .to_string(),
            "Invalid request object"
        );
        assert_eq!(
            AdmissionRequest::from_document(&json!({"kind": "AdmissionReview"}))
                .unwrap_err()
                .to_string(),
            "invalid AdmissionReview object"
        );
        let err = AdmissionRequest::from_document(&json!({})).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot build AdmissionRequest object from given input: missing field `uid`"),
            "{err}"
        );
        assert!(PolicySettings::from_value(&json!(3)).is_err());
        assert_eq!(
            PolicySettings::from_value(&Value::Null).unwrap(),
            PolicySettings::default()
        );
    }
}
