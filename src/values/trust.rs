//! The identity trust bundle: inline in the settings, or read from Linkerd's ConfigMap.

use crate::cluster::{Cluster, Lookup, LookupError};
use crate::values::settings::{Settings, TrustAnchorsSource};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The trust-roots ConfigMap's data key holding the bundle.
pub const BUNDLE_KEY: &str = "ca-bundle.crt";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    #[error(
        "could not read the trust anchors from ConfigMap {namespace}/{name}: {source} (usually transient; the API server will retry)"
    )]
    Lookup {
        namespace: String,
        name: String,
        source: LookupError,
    },
    #[error("ConfigMap {namespace}/{name} has no non-empty data key \"{BUNDLE_KEY}\"")]
    MissingKey { namespace: String, name: String },
}

/// The bundle's exact bytes, read only when a pod is being injected.
pub fn trust_anchors(settings: &Settings, cluster: &dyn Cluster) -> Result<String, TrustError> {
    let inline = &settings.identity_trust_anchors_pem;
    let use_inline = match settings.policy.trust_anchors {
        TrustAnchorsSource::Inline => true,
        TrustAnchorsSource::ConfigMap => false,
        TrustAnchorsSource::Auto => !inline.trim().is_empty(),
    };
    if use_inline {
        return Ok(inline.to_string());
    }
    let namespace = settings.policy.control_plane_namespace.to_string();
    let name = settings.policy.trust_anchors_config_map.to_string();
    let lookup = Lookup::config_map(&namespace, &name);
    let cm = cluster.get(&lookup).map_err(|source| TrustError::Lookup {
        namespace: namespace.clone(),
        name: name.clone(),
        source,
    })?;
    cm.get("data")
        .and_then(|d| d.get(BUNDLE_KEY))
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
        .ok_or(TrustError::MissingKey { namespace, name })
}

/// Hex SHA-256 of the raw bundle, for `linkerd.io/trust-root-sha256`.
pub fn sha256_hex(bundle: &str) -> String {
    // by hand: the digest's `{:x}` goes through the formatter once per byte, in every admission
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(bundle.as_bytes()) {
        for nibble in [b >> 4, b & 0xf] {
            out.extend(char::from_digit(u32::from(nibble), 16));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_hex_is_the_lowercase_digest() {
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        assert_eq!(sha256_hex(pem), format!("{:x}", Sha256::digest(pem.as_bytes())));
    }
}
