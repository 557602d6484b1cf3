//! Settings that exist only in this policy, under the `policy` key.

use serde::Deserialize;

/// Where the identity trust bundle comes from.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum TrustAnchorsSource {
    /// `identityTrustAnchorsPEM` when it is set, otherwise the ConfigMap.
    #[default]
    Auto,
    /// Always `identityTrustAnchorsPEM`.
    Inline,
    /// Always the `linkerd-identity-trust-roots` ConfigMap, read at admission through the
    /// engine's cached lookups, so a trust-root rotation needs no policy change.
    ConfigMap,
}

/// What to do when the request's Namespace cannot be read.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum LookupFailure {
    /// Reject the pod, as Linkerd does (the API server's client retries).
    #[default]
    Reject,
    /// Admit the pod unchanged, with a warning and the reason annotation.
    Skip,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyOptions {
    /// Namespace of the Linkerd control plane (Linkerd's `-linkerd-namespace` flag).
    pub control_plane_namespace: String,
    /// Value of the `linkerd.io/created-by` annotation.
    pub created_by: String,
    pub trust_anchors: TrustAnchorsSource,
    /// Name of the ConfigMap holding `ca-bundle.crt` in the control-plane namespace.
    pub trust_anchors_config_map: String,
    pub namespace_lookup_failure: LookupFailure,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        Self {
            control_plane_namespace: "linkerd".into(),
            created_by: concat!("linkerd-injector-policy ", env!("CARGO_PKG_VERSION")).into(),
            trust_anchors: TrustAnchorsSource::Auto,
            trust_anchors_config_map: "linkerd-identity-trust-roots".into(),
            namespace_lookup_failure: LookupFailure::Reject,
        }
    }
}
