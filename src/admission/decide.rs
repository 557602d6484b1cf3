//! Whether a pod gets a proxy: Linkerd's decision table, reasons and their exact texts.

use crate::pod;
use serde_json::Value;
use std::fmt;

/// Why a pod is not injected. `Display` gives Linkerd's text, `code` its metrics label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    HostNetwork,
    /// Not one of Linkerd's: its proxy and init images are Linux-only (linkerd2#2882).
    Windows,
    SidecarExists,
    UnsupportedResource,
    InvalidAtNamespace,
    InvalidAtWorkload,
    DisabledAnnotation,
    EnableAbsent,
    AutomountDisabled,
}

impl SkipReason {
    pub fn code(self) -> &'static str {
        match self {
            Self::HostNetwork => "host_network_enabled",
            Self::Windows => "windows_pod",
            Self::SidecarExists => "sidecar_already_exists",
            Self::UnsupportedResource => "unsupported_resource",
            Self::InvalidAtNamespace => "invalid_inject_annotation_at_ns",
            Self::InvalidAtWorkload => "invalid_inject_annotation_at_workload",
            Self::DisabledAnnotation => "injection_disable_annotation_present",
            Self::EnableAbsent => "injection_enable_annotation_absent",
            Self::AutomountDisabled => "disabled_automount_service_account_token_account",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl SkipReason {
    /// Linkerd's text for the reason.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::HostNetwork => "hostNetwork is enabled",
            Self::Windows => "pod runs on Windows",
            Self::SidecarExists => "pod has a sidecar injected already",
            Self::UnsupportedResource => "this resource kind is unsupported",
            Self::InvalidAtNamespace => "invalid value for annotation \"linkerd.io/inject\" at namespace",
            Self::InvalidAtWorkload => "invalid value for annotation \"linkerd.io/inject\" at workload",
            Self::DisabledAnnotation => "pod has the annotation \"linkerd.io/inject:disabled\"",
            Self::EnableAbsent => {
                "neither the namespace nor the pod have the annotation \"linkerd.io/inject:enabled\""
            }
            Self::AutomountDisabled => {
                "automountServiceAccountToken set to \"false\", with Values.identity.serviceAccountTokenProjection set to \"false\""
            }
        }
    }
}

/// Where the annotation that enabled injection was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnotationAt {
    Namespace,
    Workload,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Inject { ingress: bool, at: AnnotationAt },
    Skip(Vec<SkipReason>),
}

/// The inputs of the decision, borrowed from the request and the namespace.
#[derive(Debug, Clone, Copy)]
pub struct DecisionInput<'a> {
    pub spec: &'a Value,
    pub pod_inject: Option<&'a str>,
    pub ns_inject: Option<&'a str>,
    /// `identity.serviceAccountTokenProjection` of the values in effect; `None` when they were
    /// not read because the annotations already skip the pod, and the reason that needs them
    /// is then not evaluated.
    pub token_projection: Option<bool>,
}

/// Linkerd's `linkerd.io/inject` precedence, then the other reasons, all reported together.
pub fn decide(input: DecisionInput<'_>) -> Decision {
    let mut reasons = Vec::new();
    if pod::bool_field(input.spec, "hostNetwork") == Some(true) {
        reasons.push(SkipReason::HostNetwork);
    }
    if runs_on_windows(input.spec) {
        reasons.push(SkipReason::Windows);
    }
    if has_existing_sidecar(input.spec) {
        reasons.push(SkipReason::SidecarExists);
    }
    let annotation = inject_annotation(input.pod_inject, input.ns_inject);
    if let Err(reason) = annotation {
        reasons.push(reason);
    }
    if input.token_projection == Some(false) && lacks_service_account_token(input.spec) {
        reasons.push(SkipReason::AutomountDisabled);
    }
    match annotation {
        Ok((ingress, at)) if reasons.is_empty() => Decision::Inject { ingress, at },
        _ => Decision::Skip(reasons),
    }
}

const VALID: &[&str] = &["enabled", "disabled", "ingress"];

/// The inject-annotation part of the table: `Ok((ingress, where))` or the skip reason.
pub fn inject_annotation(pod: Option<&str>, ns: Option<&str>) -> Result<(bool, AnnotationAt), SkipReason> {
    let pod = pod.filter(|v| !v.is_empty());
    let ns = ns.filter(|v| !v.is_empty());
    if ns.is_some_and(|v| !VALID.contains(&v)) {
        return Err(SkipReason::InvalidAtNamespace);
    }
    if pod.is_some_and(|v| !VALID.contains(&v)) {
        return Err(SkipReason::InvalidAtWorkload);
    }
    let enables = |v: Option<&str>| matches!(v, Some("enabled" | "ingress"));
    if enables(ns) {
        if pod == Some("disabled") {
            return Err(SkipReason::DisabledAnnotation);
        }
        // The pod's own value decides ingress mode; an unannotated pod takes the namespace's.
        let effective = pod.or(ns);
        return Ok((effective == Some("ingress"), AnnotationAt::Namespace));
    }
    if enables(pod) {
        return Ok((pod == Some("ingress"), AnnotationAt::Workload));
    }
    Err(SkipReason::EnableAbsent)
}

/// `spec.os.name: windows`, or a `kubernetes.io/os: windows` node selector. Node affinity is
/// not read: it may allow both systems, and only the scheduler knows which one the pod gets.
pub fn runs_on_windows(spec: &Value) -> bool {
    let os = spec
        .get("os")
        .and_then(|os| os.get("name"))
        .and_then(Value::as_str);
    let selected = spec
        .get("nodeSelector")
        .and_then(|s| s.get("kubernetes.io/os"))
        .and_then(Value::as_str);
    os == Some("windows") || selected == Some("windows")
}

const SIDECAR_IMAGES: &[&str] = &["cr.l5d.io/linkerd/proxy:", "gcr.io/istio-release/proxyv2:"];
const SIDECAR_NAMES: &[&str] = &["linkerd-proxy", "istio-proxy"];
const INIT_IMAGES: &[&str] = &[
    "cr.l5d.io/linkerd/proxy-init:",
    "gcr.io/istio-release/proxy_init:",
];
const INIT_NAMES: &[&str] = &["linkerd-init", "istio-init"];

fn matches(container: &Value, names: &[&str], images: &[&str]) -> bool {
    let name = container.get("name").and_then(Value::as_str).unwrap_or("");
    let image = container.get("image").and_then(Value::as_str).unwrap_or("");
    names.contains(&name) || images.iter().any(|prefix| image.starts_with(prefix))
}

/// Linkerd's or Istio's proxy in any container, or their init container.
pub fn has_existing_sidecar(spec: &Value) -> bool {
    pod::all_containers(spec).any(|c| matches(c, SIDECAR_NAMES, SIDECAR_IMAGES))
        || pod::init_containers(spec)
            .iter()
            .any(|c| matches(c, INIT_NAMES, INIT_IMAGES))
}

/// No token to authenticate the proxy with when projection is off.
fn lacks_service_account_token(spec: &Value) -> bool {
    pod::bool_field(spec, "automountServiceAccountToken") == Some(false)
        || pod::sa_token_mount(spec).is_none()
}
