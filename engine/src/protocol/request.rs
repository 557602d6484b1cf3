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

impl GroupVersionKind {
    /// An object's `apiVersion` (`group/version`, or `version` for the core group) and `kind`.
    pub fn of_object(object: &Value) -> Self {
        let field = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
        let (group, version) = field("apiVersion")
            .split_once('/')
            .unwrap_or(("", field("apiVersion")));
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: field("kind").to_owned(),
        }
    }
}

impl GroupVersionResource {
    /// The resource of a kind as Kubernetes guesses it (`meta.UnsafeGuessKindToResource`): the
    /// kind in lower case, plural (`-s`, `-es` after an `s`, `-ies` for a final `y`).
    pub fn guessed(kind: &GroupVersionKind) -> Self {
        let singular = kind.kind.to_ascii_lowercase();
        let resource = if singular.ends_with("endpoints") {
            singular
        } else if singular.ends_with('s') {
            format!("{singular}es")
        } else if let Some(stem) = singular.strip_suffix('y') {
            format!("{stem}ies")
        } else {
            format!("{singular}s")
        };
        Self {
            group: kind.group.clone(),
            version: kind.version.clone(),
            resource,
        }
    }
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
    /// The CREATE of `object` as the API server sends it: kind and resource from the object (and
    /// repeated as the requested ones), `name` from `metadata.name` (none for a `generateName`),
    /// `CreateOptions`, not a dry run.
    pub fn create(uid: String, namespace: Option<String>, user_info: UserInfo, object: Value) -> Self {
        let kind = GroupVersionKind::of_object(&object);
        let resource = GroupVersionResource::guessed(&kind);
        Self {
            uid,
            request_kind: Some(kind.clone()),
            request_resource: Some(resource.clone()),
            kind,
            resource,
            sub_resource: None,
            request_sub_resource: None,
            name: object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            namespace,
            operation: "CREATE".into(),
            user_info,
            object: Some(object),
            old_object: None,
            dry_run: Some(false),
            options: Some(serde_json::json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"})),
        }
    }

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

    #[rstest::rstest]
    #[case::pod("v1", "Pod", "", "v1", "pods")]
    #[case::deployment("apps/v1", "Deployment", "apps", "v1", "deployments")]
    #[case::cronjob("batch/v1", "CronJob", "batch", "v1", "cronjobs")]
    #[case::ingress("networking.k8s.io/v1", "Ingress", "networking.k8s.io", "v1", "ingresses")]
    #[case::policy(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "networking.k8s.io",
        "v1",
        "networkpolicies"
    )]
    #[case::endpoints("v1", "Endpoints", "", "v1", "endpoints")]
    fn kind_and_guessed_resource(
        #[case] api_version: &str,
        #[case] kind: &str,
        #[case] group: &str,
        #[case] version: &str,
        #[case] resource: &str,
    ) {
        let gvk = GroupVersionKind::of_object(&json!({"apiVersion": api_version, "kind": kind}));
        assert_eq!(
            (gvk.group.as_str(), gvk.version.as_str(), gvk.kind.as_str()),
            (group, version, kind)
        );
        assert_eq!(GroupVersionResource::guessed(&gvk).resource, resource);
    }

    #[test]
    fn a_create_as_the_api_server_sends_it() {
        let user = UserInfo {
            username: Some("me".into()),
            ..Default::default()
        };
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
        let r = AdmissionRequest::create("u1".into(), Some("shop".into()), user, object.clone());
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"uid": "u1",
                "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
                "requestKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                "requestResource": {"group": "apps", "version": "v1", "resource": "deployments"},
                "name": "web", "namespace": "shop", "operation": "CREATE", "userInfo": {"username": "me"},
                "object": object, "dryRun": false,
                "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}})
        );
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
