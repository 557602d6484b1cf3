//! Security controls of the platform team over what pod authors may change (settings
//! `policy.allowedImages`, `policy.restrictedAnnotations`, `policy.allowRootProxy`).
//!
//! Linkerd has none of these; all but the root rule are off by default.

use crate::annotations as ann;
use crate::render::Context;
use crate::render::config::ProxyConfig;
use crate::values::settings::Settings;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error(
        "annotation {key}: pod authors may not set it in namespace {namespace} (settings.policy.restrictedAnnotations)"
    )]
    Restricted { key: String, namespace: String },
    #[error("image \"{image}\" ({origin}) is not allowed by settings.policy.allowedImages")]
    Image { image: String, origin: String },
    #[error("{origin}: the proxy may not run as uid 0 (settings.policy.allowRootProxy is false)")]
    RootProxy { origin: String },
}

pub struct Subject<'a> {
    pub pod_annotations: &'a BTreeMap<String, String>,
    pub ns_annotations: &'a BTreeMap<String, String>,
    pub ns_labels: &'a BTreeMap<String, String>,
    pub namespace: &'a str,
}

/// Where an effective value came from, for messages: the pod's annotation, the namespace's,
/// or the settings.
fn source(s: &Subject<'_>, keys: &[&str], setting: &str) -> String {
    keys.iter()
        .find_map(|k| {
            if s.pod_annotations.contains_key(*k) {
                Some(format!("annotation {k}"))
            } else if s.ns_annotations.contains_key(*k) {
                Some(format!("annotation {k} on namespace {}", s.namespace))
            } else {
                None
            }
        })
        .unwrap_or_else(|| format!("settings.{setting}"))
}

pub fn check(
    settings: &Settings,
    config: &ProxyConfig<'_>,
    cx: &Context<'_>,
    s: &Subject<'_>,
) -> Result<(), GuardError> {
    let policy = &settings.policy;
    let exempt = policy
        .exempt_label()
        .is_some_and(|(k, v)| match (s.ns_labels.get(k), v) {
            (Some(actual), Some(want)) => actual == want,
            (Some(_), None) => true,
            (None, _) => false,
        });
    if !exempt
        && let Some(key) = policy
            .restricted_annotations
            .iter()
            .find(|k| s.pod_annotations.contains_key(*k))
    {
        return Err(GuardError::Restricted {
            key: key.clone(),
            namespace: s.namespace.to_string(),
        });
    }
    let proxy_image = cx.proxy_image();
    if !policy.image_allowed(&proxy_image) {
        let source = source(s, &[ann::PROXY_IMAGE, ann::PROXY_VERSION_OVERRIDE], "proxy.image");
        return Err(GuardError::Image {
            image: proxy_image,
            origin: source,
        });
    }
    if config.debug_sidecar {
        let image = cx.debug_image();
        if !policy.image_allowed(&image) {
            let origin = source(
                s,
                &[ann::DEBUG_IMAGE, ann::DEBUG_IMAGE_VERSION],
                "debugContainer.image",
            );
            return Err(GuardError::Image { image, origin });
        }
    }
    if config.values.proxy.uid == 0 && !policy.allow_root_proxy {
        return Err(GuardError::RootProxy {
            origin: source(s, &[ann::PROXY_UID], "proxy.uid"),
        });
    }
    Ok(())
}
