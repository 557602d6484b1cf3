//! Policy metadata: the `contextAwareResources` allow-list, read from a metadata file
//! (`policy.yaml` / `metadata.yml`, camelCase YAML) or from the `io.kubewarden.metadata` custom
//! section that `kwctl annotate` writes into the module (JSON).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::protocol::sections::{SectionError, custom_section};

/// Name of the custom section holding the metadata of an annotated module.
pub const METADATA_SECTION: &str = "io.kubewarden.metadata";

#[derive(Debug, Error)]
pub enum MetadataError {
    #[error("cannot read metadata file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse metadata file {path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_yaml_ng::Error,
    },
    #[error("cannot parse the `{METADATA_SECTION}` custom section of the module: {0}")]
    Section(#[source] serde_json::Error),
    #[error(transparent)]
    Wasm(#[from] SectionError),
}

/// One `{apiVersion, kind}` pair a policy may look up.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAwareResource {
    pub api_version: String,
    pub kind: String,
}

impl ContextAwareResource {
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
        }
    }
}

/// The part of Kubewarden's policy `Metadata` this host uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyMetadata {
    #[serde(default)]
    pub context_aware_resources: BTreeSet<ContextAwareResource>,
    #[serde(default)]
    pub mutating: Option<bool>,
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// The oldest Kubewarden release the policy runs on (`minimumKubewardenVersion`, semver);
    /// carried so `inspect`-like consumers and the annotated section keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_kubewarden_version: Option<String>,
    /// `annotations` of the metadata; `kwctl push` puts the single-line ones on the manifest.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
}

impl PolicyMetadata {
    /// Reads a metadata YAML file (`policy.yaml`).
    pub fn from_file(path: &Path) -> Result<Self, MetadataError> {
        let text = std::fs::read_to_string(path).map_err(|source| MetadataError::Read {
            path: path.to_owned(),
            source,
        })?;
        serde_yaml_ng::from_str(&text).map_err(|source| MetadataError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// Reads the metadata embedded in an annotated module, `None` when the module is not annotated.
    pub fn from_module(bytes: &[u8]) -> Result<Option<Self>, MetadataError> {
        match custom_section(bytes, METADATA_SECTION)? {
            None => Ok(None),
            Some(data) => serde_json::from_slice(data)
                .map(Some)
                .map_err(MetadataError::Section),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module_with_section(name: &str, data: &[u8]) -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        let mut payload = vec![name.len() as u8];
        payload.extend_from_slice(name.as_bytes());
        payload.extend_from_slice(data);
        m.push(0);
        m.push(payload.len() as u8);
        m.extend(payload);
        m
    }

    #[test]
    fn reads_custom_section() {
        let m = module_with_section(
            METADATA_SECTION,
            br#"{"contextAwareResources":[{"apiVersion":"v1","kind":"Namespace"}],"mutating":true,"rules":[]}"#,
        );
        let md = PolicyMetadata::from_module(&m).unwrap().unwrap();
        assert!(
            md.context_aware_resources
                .contains(&ContextAwareResource::new("v1", "Namespace"))
        );
        assert_eq!(md.mutating, Some(true));
        assert_eq!(
            PolicyMetadata::from_module(&module_with_section("other", b"x")).unwrap(),
            None
        );
        assert!(PolicyMetadata::from_module(&module_with_section(METADATA_SECTION, b"{")).is_err());
        let mut truncated = module_with_section("other", b"xyz");
        truncated.truncate(truncated.len() - 1);
        assert!(matches!(
            PolicyMetadata::from_module(&truncated),
            Err(MetadataError::Wasm(SectionError::Malformed(_)))
        ));
    }
}
