//! OCI registries: a policy module as Kubewarden's Wasm artifact (`registry://` URIs).
//!
//! Owns the artifact's shape, which is what kwctl pushes and Kubewarden's policy-fetcher pulls:
//! one layer of media type `application/vnd.wasm.content.layer.v1+wasm` holding the module, a
//! config blob `{}` of media type `application/vnd.wasm.config.v1+json`, and the module's
//! single-line metadata annotations on the manifest, plus `org.opencontainers.image.source`
//! copied from `io.kubewarden.policy.source`. Also owns how a registry is reached: HTTPS first;
//! for a source marked insecure, HTTPS without certificate checks and then plain HTTP, in that
//! order, as kwctl does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OciImageManifest, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::Deserialize;
use thiserror::Error;

use crate::protocol::metadata::PolicyMetadata;

/// The URI scheme of a module in an OCI registry.
pub const SCHEME: &str = "registry://";
/// The manifest annotation kwctl fills from `io.kubewarden.policy.source`.
pub const OCI_SOURCE_ANNOTATION: &str = "org.opencontainers.image.source";
const POLICY_SOURCE_ANNOTATION: &str = "io.kubewarden.policy.source";

#[derive(Debug, Error)]
pub enum RegistryError {
    #[error("`{0}` is not a registry URI: it must start with `registry://`")]
    NotRegistryUri(String),
    #[error("invalid OCI reference `{uri}`: {message}")]
    Reference { uri: String, message: String },
    #[error("Cannot push a policy that is not annotated. Use `annotate` command or `push --force`")]
    NotAnnotated,
    #[error("cannot read sources file {path}: {message}")]
    Sources { path: String, message: String },
    #[error("cannot start the registry client: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("registry {registry}: {message}{hint}")]
    Transfer {
        registry: String,
        message: String,
        hint: &'static str,
    },
    #[error("{uri}: the manifest has no layer of media type {WASM_LAYER_MEDIA_TYPE}")]
    NoWasmLayer { uri: String },
    #[error("cannot read the registry's answer for {uri}: {message}")]
    Answer { uri: String, message: String },
}

/// Registries that may be reached without TLS verification or over plain HTTP: kwctl's
/// `sources.yaml` (`insecure_sources: ["host:port", ...]`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Sources {
    #[serde(default)]
    insecure_sources: BTreeSet<String>,
}

impl Sources {
    /// Reads a kwctl sources file (YAML); other keys of that file are ignored.
    pub fn from_file(path: &Path) -> Result<Self, RegistryError> {
        let err = |message: String| RegistryError::Sources {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        serde_yaml_ng::from_str(&text).map_err(|e| err(e.to_string()))
    }

    /// Marks one `host[:port]` as insecure (`--insecure` on the command line).
    pub fn with_insecure(mut self, registry: impl Into<String>) -> Self {
        self.insecure_sources.insert(registry.into());
        self
    }

    fn is_insecure(&self, registry: &str) -> bool {
        self.insecure_sources.contains(registry)
    }
}

/// A parsed `registry://host[:port]/repository[:tag|@digest]`.
#[derive(Clone, Debug)]
pub struct ModuleRef {
    uri: String,
    reference: Reference,
}

impl ModuleRef {
    pub fn parse(uri: &str) -> Result<Self, RegistryError> {
        let rest = uri
            .strip_prefix(SCHEME)
            .ok_or_else(|| RegistryError::NotRegistryUri(uri.to_owned()))?;
        let reference = rest.parse::<Reference>().map_err(|e| RegistryError::Reference {
            uri: uri.to_owned(),
            message: e.to_string(),
        })?;
        Ok(Self {
            uri: uri.to_owned(),
            reference,
        })
    }

    /// `host[:port]`, the key of [`Sources`].
    pub fn registry(&self) -> &str {
        self.reference.registry()
    }

    /// `host[:port]/repository`, without tag or digest.
    pub fn repository(&self) -> String {
        format!("{}/{}", self.reference.registry(), self.reference.repository())
    }
}

/// What a push left in the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pushed {
    /// `host/repository@sha256:...`, the reference a policy should pin (kwctl's `immutable_ref`).
    pub immutable_ref: String,
    /// The manifest's digest, `sha256:...`.
    pub digest: String,
}

/// The manifest annotations kwctl derives from a module's metadata: single-line annotations,
/// trimmed, plus the OCI source annotation when the policy names its source.
pub fn manifest_annotations(metadata: &PolicyMetadata) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = metadata
        .annotations
        .iter()
        .filter(|(_, v)| v.lines().count() <= 1)
        .map(|(k, v)| (k.clone(), v.trim().to_owned()))
        .collect();
    if let Some(source) = out.get(POLICY_SOURCE_ANNOTATION).cloned() {
        out.entry(OCI_SOURCE_ANNOTATION.to_owned()).or_insert(source);
    }
    out
}

/// Pushes a module. An unannotated module is refused unless `force` (as `kwctl push`).
pub fn push(
    module: &[u8],
    destination: &ModuleRef,
    sources: &Sources,
    force: bool,
) -> Result<Pushed, RegistryError> {
    let metadata = PolicyMetadata::from_module(module).map_err(|e| RegistryError::Answer {
        uri: destination.uri.clone(),
        message: e.to_string(),
    })?;
    let annotations = match (metadata, force) {
        (Some(md), _) => Some(manifest_annotations(&md)),
        (None, true) => None,
        (None, false) => return Err(RegistryError::NotAnnotated),
    };
    let layers = vec![ImageLayer::new(
        module.to_vec(),
        WASM_LAYER_MEDIA_TYPE.to_owned(),
        None,
    )];
    let config = Config::new(b"{}".to_vec(), WASM_CONFIG_MEDIA_TYPE.to_owned(), None);
    let manifest = OciImageManifest::build(&layers, &config, annotations);
    let manifest_url = with_protocols(destination, sources, |client| {
        let (layers, config, manifest) = (layers.clone(), config.clone(), manifest.clone());
        async move {
            client
                .push(
                    &destination.reference,
                    &layers,
                    config,
                    &RegistryAuth::Anonymous,
                    Some(manifest),
                )
                .await
                .map(|r| r.manifest_url)
        }
    })?;
    let digest = manifest_url
        .rsplit_once('/')
        .map(|(_, d)| d.to_owned())
        .filter(|d| d.starts_with("sha256:"))
        .ok_or_else(|| RegistryError::Answer {
            uri: destination.uri.clone(),
            message: format!("no manifest digest in the pushed location {manifest_url}"),
        })?;
    Ok(Pushed {
        immutable_ref: format!("{}@{digest}", destination.repository()),
        digest,
    })
}

/// Pulls a module's bytes (the Wasm layer).
pub fn pull(source: &ModuleRef, sources: &Sources) -> Result<Vec<u8>, RegistryError> {
    let image = with_protocols(source, sources, |client| async move {
        client
            .pull(
                &source.reference,
                &RegistryAuth::Anonymous,
                vec![WASM_LAYER_MEDIA_TYPE],
            )
            .await
    })?;
    image
        .layers
        .into_iter()
        .find(|l| l.media_type == WASM_LAYER_MEDIA_TYPE)
        .map(|l| l.data.to_vec())
        .ok_or_else(|| RegistryError::NoWasmLayer {
            uri: source.uri.clone(),
        })
}

/// The raw manifest and its digest, for inspection (`injector-host pull --manifest`, tests).
pub fn manifest(source: &ModuleRef, sources: &Sources) -> Result<(Vec<u8>, String), RegistryError> {
    let accepted = [oci_client::manifest::OCI_IMAGE_MEDIA_TYPE];
    with_protocols(source, sources, |client| async move {
        client
            .pull_manifest_raw(&source.reference, &RegistryAuth::Anonymous, &accepted)
            .await
            .map(|(bytes, digest)| (bytes.to_vec(), digest))
    })
}

/// Runs one registry operation: HTTPS; then, only for an insecure source, HTTPS without
/// certificate checks, then plain HTTP. The first success wins; the last error is reported.
fn with_protocols<'a, T, F, Fut>(
    target: &'a ModuleRef,
    sources: &Sources,
    operation: F,
) -> Result<T, RegistryError>
where
    F: Fn(Client) -> Fut,
    Fut: std::future::Future<Output = Result<T, oci_client::errors::OciDistributionError>> + 'a,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RegistryError::Runtime)?;
    let insecure = sources.is_insecure(target.registry());
    let attempts: &[(ClientProtocol, bool)] = if insecure {
        &[
            (ClientProtocol::Https, false),
            (ClientProtocol::Https, true),
            (ClientProtocol::Http, true),
        ]
    } else {
        &[(ClientProtocol::Https, false)]
    };
    let mut last = String::new();
    for (protocol, skip_tls) in attempts {
        let client = Client::new(ClientConfig {
            protocol: protocol.clone(),
            accept_invalid_certificates: *skip_tls,
            ..Default::default()
        });
        match runtime.block_on(operation(client)) {
            Ok(value) => return Ok(value),
            Err(e) => last = error_text(&e),
        }
    }
    Err(RegistryError::Transfer {
        registry: target.registry().to_owned(),
        message: last,
        hint: if insecure {
            ""
        } else {
            " (a registry without TLS needs --insecure or a --sources-path listing it in insecure_sources)"
        },
    })
}

/// The error with its causes, so "connection refused" is not hidden behind "error sending request".
fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let next = c.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(annotations: &[(&str, &str)]) -> PolicyMetadata {
        PolicyMetadata {
            annotations: annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn source_is_copied_and_multiline_annotations_dropped() {
        let md = metadata(&[
            (POLICY_SOURCE_ANNOTATION, "https://example.com/src"),
            ("io.kubewarden.policy.usage", "line one\nline two"),
            ("io.kubewarden.policy.description", "ends with a newline\n"),
        ]);
        let expected: BTreeMap<String, String> = [
            ("io.kubewarden.policy.description", "ends with a newline"),
            (POLICY_SOURCE_ANNOTATION, "https://example.com/src"),
            (OCI_SOURCE_ANNOTATION, "https://example.com/src"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(manifest_annotations(&md), expected);
    }

    #[test]
    fn an_explicit_oci_source_is_kept() {
        let md = metadata(&[
            (POLICY_SOURCE_ANNOTATION, "https://example.com/src"),
            (OCI_SOURCE_ANNOTATION, "https://oci.example.com"),
        ]);
        assert_eq!(
            manifest_annotations(&md)[OCI_SOURCE_ANNOTATION],
            "https://oci.example.com"
        );
    }

    #[test]
    fn uris_are_parsed() {
        let r = ModuleRef::parse("registry://127.0.0.1:5000/policies/injector:v1").unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "127.0.0.1:5000/policies/injector");
        assert_eq!(
            ModuleRef::parse("127.0.0.1:5000/p:v1").unwrap_err().to_string(),
            "`127.0.0.1:5000/p:v1` is not a registry URI: it must start with `registry://`"
        );
    }
}
