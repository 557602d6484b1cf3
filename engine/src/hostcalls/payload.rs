//! The payloads of the `kubewarden/kubernetes/*` host calls, as the SDK serialises them. Shared
//! by the lookup backends ([`super::lookup`]) and the replay sessions ([`super::replay`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// `kubernetes/get_resource` payload (SDK `GetResourceRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetResourceRequest {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    pub disable_cache: bool,
    pub field_masks: Option<BTreeSet<String>>,
}

/// `kubernetes/list_resources_by_namespace` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListResourcesByNamespaceRequest {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub field_masks: Option<BTreeSet<String>>,
}

/// `kubernetes/list_resources_all` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListAllResourcesRequest {
    pub api_version: String,
    pub kind: String,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub field_masks: Option<BTreeSet<String>>,
}

/// `kubernetes/can_i` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanIRequest {
    pub subject_access_review: SubjectAccessReview,
    pub disable_cache: bool,
}

/// The SDK's `SubjectAccessReview` (not the Kubernetes object).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SubjectAccessReview {
    pub groups: Option<Vec<String>>,
    pub resource_attributes: ResourceAttributes,
    pub user: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResourceAttributes {
    pub group: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub resource: String,
    pub subresource: Option<String>,
    pub verb: String,
    pub version: Option<String>,
}
