//! Settings that exist only in this policy, under the `policy` key.

use super::values::Text;
use crate::version::{self, Edge, Rendering, Tag};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Where the identity trust bundle comes from.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum LookupFailure {
    /// Reject the pod, as Linkerd does (the API server's client retries).
    #[default]
    Reject,
    /// Admit the pod unchanged, with a warning and the reason annotation.
    Skip,
}

/// How the owner of a ReplicaSet's pod is found.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum OwnerResolution {
    /// A pod labelled `pod-template-hash: <h>` whose ReplicaSet is named `<d>-<h>` belongs to
    /// Deployment `<d>`, without a host call (each waits on policy-server); other pods
    /// are looked up. Differs from Linkerd only for a ReplicaSet that has a Deployment's name
    /// and hash but not that Deployment as its owner (orphaned or hand-made).
    #[default]
    TemplateHash,
    /// Always look the ReplicaSet up, as Linkerd does.
    Lookup,
}

/// Where Linkerd's Helm values come from.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum ValuesSource {
    /// The control plane's `linkerd-config` ConfigMap (key `values`), read at admission through
    /// the engine's cached lookups as Linkerd's injector re-reads it on every request, so a
    /// `helm upgrade` of Linkerd takes effect at once; the settings override it key by key.
    #[default]
    LinkerdConfig,
    /// The settings alone (over the chart defaults); no lookup.
    Settings,
}

/// How the control plane's ConfigMaps (`linkerd-config`, the trust roots) are read.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum ConfigMapLookup {
    /// One `list_resources_by_namespace` of the control-plane namespace's ConfigMaps, which
    /// policy-server serves from a watch-backed reflector: one host call for both, and each
    /// call waits on policy-server. Needs `list` and `watch` on ConfigMaps there.
    #[default]
    List,
    /// One cached `get_resource` per ConfigMap. Needs only `get` on the two.
    Get,
}

/// What to do when `linkerd-config` cannot be used (missing, unreadable, not YAML, invalid).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum ValuesFailure {
    /// Reject the object (the API server's client retries), as Linkerd's injector does.
    #[default]
    Reject,
    /// Use the settings alone, with a warning and an audit annotation naming the reason.
    Settings,
}

/// What the module does with a pod.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// Inject the proxy (a mutating policy).
    #[default]
    Mutate,
    /// Reject pods that should be meshed but have no proxy (a validating policy).
    Verify,
}

/// What verify mode answers for a meshed pod whose proxy is not the version the control plane
/// injects.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum StaleProxy {
    /// Admit it with a warning and an audit annotation: the pod runs, a restart updates it.
    #[default]
    Warn,
    /// Reject it, naming both versions and the workload to restart. Kubewarden's audit scanner
    /// records only rejections as failures, so this is what a monitor-mode audit policy sets.
    Reject,
}

/// What to do with a pod when `linkerdVersion` is a release outside the window this policy
/// renders exactly (`edge-26.1.1` to `edge-26.8.3`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum VersionOutsideWindow {
    /// Render the newest known injector, with a warning and an audit annotation naming both
    /// versions.
    #[default]
    RenderNewest,
    /// Reject the pod, naming both versions.
    Reject,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyOptions {
    pub mode: Mode,
    /// Verify mode only.
    pub stale_proxy: StaleProxy,
    /// Namespace of the Linkerd control plane (Linkerd's `-linkerd-namespace` flag).
    pub control_plane_namespace: Text,
    /// Value of the `linkerd.io/created-by` annotation.
    pub created_by: Text,
    pub trust_anchors: TrustAnchorsSource,
    /// Name of the ConfigMap holding `ca-bundle.crt` in the control-plane namespace.
    pub trust_anchors_config_map: Text,
    pub namespace_lookup_failure: LookupFailure,
    pub owner_resolution: OwnerResolution,
    pub values_from: ValuesSource,
    /// Name of the ConfigMap holding the Helm values (key `values`) in the control-plane
    /// namespace.
    pub linkerd_config_map: Text,
    pub linkerd_config_failure: ValuesFailure,
    pub config_map_lookup: ConfigMapLookup,
    /// Registry/repository prefixes the proxy, init, validator and debug images must start
    /// with; empty allows any image.
    pub allowed_images: Vec<String>,
    /// Override annotations pod authors may not set on their pods.
    pub restricted_annotations: Vec<String>,
    /// Namespace label (`key` or `key=value`) whose namespaces are exempt from
    /// `restrictedAnnotations`; empty exempts none.
    pub restricted_annotations_exempt_label: Text,
    /// Allow the proxy to run as uid 0 (it then fails `runAsNonRoot` anyway).
    pub allow_root_proxy: bool,
    /// The release whose injector renders, whatever `linkerdVersion` says; unset follows
    /// `linkerdVersion`.
    #[serde(deserialize_with = "render_version_de", serialize_with = "render_version_ser")]
    pub render_version: Option<Edge>,
    pub version_outside_window: VersionOutsideWindow,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        Self {
            mode: Mode::Mutate,
            stale_proxy: StaleProxy::Warn,
            control_plane_namespace: "linkerd".into(),
            created_by: concat!("linkerd-injector-policy ", env!("CARGO_PKG_VERSION")).into(),
            trust_anchors: TrustAnchorsSource::Auto,
            trust_anchors_config_map: "linkerd-identity-trust-roots".into(),
            namespace_lookup_failure: LookupFailure::Reject,
            owner_resolution: OwnerResolution::TemplateHash,
            values_from: ValuesSource::LinkerdConfig,
            linkerd_config_map: "linkerd-config".into(),
            linkerd_config_failure: ValuesFailure::Reject,
            config_map_lookup: ConfigMapLookup::List,
            allowed_images: Vec::new(),
            restricted_annotations: Vec::new(),
            restricted_annotations_exempt_label: Text::Borrowed(""),
            allow_root_proxy: false,
            render_version: None,
            version_outside_window: VersionOutsideWindow::RenderNewest,
        }
    }
}

impl PolicyOptions {
    /// True when `image` is under one of the allowed prefixes (or no list is set). A prefix
    /// matches whole path segments: `cr.l5d.io/linkerd/proxy` allows `cr.l5d.io/linkerd/proxy:v1`
    /// but not `cr.l5d.io/linkerd/proxy-evil:v1`.
    pub fn image_allowed(&self, image: &str) -> bool {
        self.allowed_images.is_empty()
            || self.allowed_images.iter().any(|prefix| {
                image == prefix
                    || (image.starts_with(prefix.as_str())
                        && (prefix.ends_with('/')
                            || matches!(image.as_bytes().get(prefix.len()), Some(b'/' | b':' | b'@'))))
            })
    }

    /// The exempt label as `(key, Some(value))` or `(key, None)`.
    pub fn exempt_label(&self) -> Option<(&str, Option<&str>)> {
        let l = &*self.restricted_annotations_exempt_label;
        if l.is_empty() {
            return None;
        }
        Some(match l.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (l, None),
        })
    }
}

/// A pin must be a release this policy renders exactly; empty or `null` is unset.
fn render_version_de<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Edge>, D::Error> {
    let raw = Option::<String>::deserialize(d)?;
    match raw.as_deref() {
        None | Some("") => Ok(None),
        Some(s) => render_version_pin(s).map(Some).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "must be an edge release from {} such as \"{}\", got \"{s}\"",
                version::window(),
                version::OLDEST
            ))
        }),
    }
}

fn render_version_pin(s: &str) -> Option<Edge> {
    match Tag::parse(s) {
        Tag::Edge(e) if e.in_window() => Some(e),
        _ => None,
    }
}

fn render_version_ser<S: Serializer>(v: &Option<Edge>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(e) => s.collect_str(e),
        None => s.serialize_none(),
    }
}

/// Writes the chart defaults that changed inside the window into `defaults`, for the release
/// that renders `layers` (the topmost layer's `linkerdVersion` and `policy.renderVersion`, else
/// the defaults' version): what Helm would have filled in for keys no layer sets.
pub(super) fn apply_version_defaults(defaults: &mut Value, layers: &[Value]) {
    let top = |pointer: &str| layers.iter().rev().find_map(|l| l.pointer(pointer));
    let linkerd_version = top("/linkerdVersion")
        .or_else(|| defaults.get("linkerdVersion"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let pin = top("/policy/renderVersion")
        .and_then(Value::as_str)
        .and_then(render_version_pin);
    let native_sidecar = native_sidecar_default(linkerd_version, pin);
    if let Some(proxy) = defaults.get_mut("proxy").and_then(Value::as_object_mut) {
        proxy.insert("nativeSidecar".into(), Value::Bool(native_sidecar));
    }
}

/// The chart's `proxy.nativeSidecar` default for the release that renders.
pub(super) fn native_sidecar_default(linkerd_version: &str, pin: Option<Edge>) -> bool {
    Rendering::of(linkerd_version, pin)
        .version
        .native_sidecar_by_default()
}
