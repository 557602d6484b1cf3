//! Policy metadata, policy-evaluator's `Metadata` field for field: read from a metadata file
//! (`policy.yaml` / `metadata.yml`, camelCase YAML, kwctl's `-m` file) or from the
//! `io.kubewarden.metadata` custom section that `kwctl annotate` writes into the module (compact
//! JSON, the same field order), and validated with policy-evaluator's rules. The engine reads its
//! `contextAwareResources` allow-list; `injector-host annotate` writes it.

use std::collections::{BTreeMap, BTreeSet, HashSet};
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

/// `Operation` of a rule (Kubernetes' names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Operation {
    #[serde(rename = "CREATE")]
    Create,
    #[serde(rename = "UPDATE")]
    Update,
    #[serde(rename = "DELETE")]
    Delete,
    #[serde(rename = "CONNECT")]
    Connect,
    #[serde(rename = "*")]
    All,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub operations: Vec<Operation>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExecutionMode {
    #[default]
    #[serde(rename = "kubewarden-wapc")]
    KubewardenWapc,
    #[serde(rename = "opa")]
    Opa,
    #[serde(rename = "gatekeeper")]
    OpaGatekeeper,
    #[serde(rename = "wasi")]
    Wasi,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PolicyType {
    #[default]
    #[serde(rename = "kubernetes")]
    Kubernetes,
    #[serde(rename = "raw")]
    Raw,
}

/// `ProtocolVersion` of the SDK (`"Unknown"` / `"v1"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProtocolVersion {
    Unknown,
    #[serde(rename = "v1")]
    V1,
}

const fn default_true() -> bool {
    true
}

/// policy-evaluator's `Metadata`, field for field and in its order (the JSON written into the
/// section has exactly kwctl's shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub protocol_version: Option<ProtocolVersion>,
    pub rules: Vec<Rule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    pub mutating: bool,
    #[serde(default = "default_true")]
    pub background_audit: bool,
    #[serde(default)]
    pub execution_mode: ExecutionMode,
    #[serde(default)]
    pub policy_type: PolicyType,
    #[serde(default)]
    pub context_aware_resources: BTreeSet<ContextAwareResource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_capabilities: Option<BTreeSet<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum_kubewarden_version: Option<String>,
}

impl Metadata {
    /// Parses metadata YAML (kwctl's `-m` file).
    pub fn from_yaml(text: &str) -> Result<Self, serde_yaml_ng::Error> {
        serde_yaml_ng::from_str(text)
    }

    /// policy-evaluator's `Metadata::validate`: every problem, by field.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        match (self.execution_mode, self.protocol_version) {
            (_, None) => problems.push("protocolVersion: required".to_owned()),
            (ExecutionMode::KubewardenWapc, Some(ProtocolVersion::Unknown)) => {
                problems.push("Must specify a valid protocol version".to_owned())
            }
            _ => {}
        }
        for (i, rule) in self.rules.iter().enumerate() {
            let at = format!("rules[{i}]");
            for (field, list) in [
                ("apiGroups", &rule.api_groups),
                ("apiVersions", &rule.api_versions),
                ("resources", &rule.resources),
            ] {
                if list.is_empty() {
                    problems.push(format!("{at}.{field}: must not be empty"));
                } else if field != "resources" && list.iter().any(|s| s == "*") && list.len() > 1 {
                    problems.push(format!(
                        "{at}.{field}: No other elements can be defined when '*' is used"
                    ));
                }
            }
            if let Err(e) = validate_resources(&rule.resources) {
                problems.push(format!("{at}.resources: {e}"));
            }
            if rule.operations.is_empty() {
                problems.push(format!("{at}.operations: must not be empty"));
            } else if rule.operations.contains(&Operation::All) && rule.operations.len() > 1 {
                problems.push(format!(
                    "{at}.operations: No other elements can be defined when '*' is used"
                ));
            }
        }
        for r in &self.context_aware_resources {
            if r.api_version.is_empty() || r.kind.is_empty() {
                problems.push(format!(
                    "contextAwareResources: apiVersion and kind must not be empty ({}/{})",
                    r.api_version, r.kind
                ));
            }
        }
        if let Some(v) = &self.minimum_kubewarden_version
            && !is_semver(v)
        {
            problems.push(format!(
                "minimumKubewardenVersion: {v:?} is not a semantic version"
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// The section payload: compact JSON, like kwctl's `serde_json::to_vec(&metadata)`.
    pub fn to_section_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }

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

/// Kubernetes' check of webhook rule resources (as policy-evaluator transposes it).
fn validate_resources(data: &[String]) -> Result<(), String> {
    let mut resources_with_wildcard_subresources = HashSet::new();
    let mut subresources_with_wildcard_resource = HashSet::new();
    let mut has_double_wildcard = false;
    let mut has_single_wildcard = false;
    let mut has_resource_without_subresource = false;
    for resource in data {
        if resource.is_empty() {
            return Err("empty resource is not allowed".into());
        }
        match resource.as_str() {
            "*/*" => has_double_wildcard = true,
            "*" => has_single_wildcard = true,
            _ => {}
        }
        let Some((res, sub)) = resource.split_once('/') else {
            has_resource_without_subresource = resource != "*";
            continue;
        };
        if resources_with_wildcard_subresources.contains(res) {
            return Err(format!("if '{resource}/*' is present, must not specify {res}"));
        }
        if subresources_with_wildcard_resource.contains(sub) {
            return Err(format!("if '*/{sub}' is present, must not specify {resource}"));
        }
        if sub == "*" {
            resources_with_wildcard_subresources.insert(res.to_owned());
        }
        if res == "*" {
            subresources_with_wildcard_resource.insert(sub.to_owned());
        }
    }
    if data.len() > 1 && has_double_wildcard {
        return Err("if '*/*' is present, must not specify other resources".into());
    }
    if has_single_wildcard && has_resource_without_subresource {
        return Err("if '*' is present, must not specify other resources without subresources".into());
    }
    Ok(())
}

fn is_semver(v: &str) -> bool {
    let core = v.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
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
        let md = Metadata::from_module(&m).unwrap().unwrap();
        assert!(
            md.context_aware_resources
                .contains(&ContextAwareResource::new("v1", "Namespace"))
        );
        assert!(md.mutating);
        assert_eq!(
            Metadata::from_module(&module_with_section("other", b"x")).unwrap(),
            None
        );
        assert!(Metadata::from_module(&module_with_section(METADATA_SECTION, b"{")).is_err());
        let mut truncated = module_with_section("other", b"xyz");
        truncated.truncate(truncated.len() - 1);
        assert!(matches!(
            Metadata::from_module(&truncated),
            Err(MetadataError::Wasm(SectionError::Malformed(_)))
        ));
    }

    const YAML: &str = r#"
rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["pods"]
    operations: ["CREATE"]
mutating: true
contextAwareResources:
  - {apiVersion: v1, kind: Namespace}
  - {apiVersion: apps/v1, kind: ReplicaSet}
annotations:
  io.kubewarden.policy.title: t
  io.kubewarden.kwctl: "0.0.1"
someUnknownKey: dropped
"#;

    #[test]
    fn json_shape_and_order_match_policy_evaluator() {
        let mut md = Metadata::from_yaml(YAML).unwrap();
        md.protocol_version = Some(ProtocolVersion::V1);
        let json = String::from_utf8(md.to_section_json().unwrap()).unwrap();
        assert_eq!(
            json,
            r#"{"protocolVersion":"v1","rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"],"operations":["CREATE"]}],"annotations":{"io.kubewarden.kwctl":"0.0.1","io.kubewarden.policy.title":"t"},"mutating":true,"backgroundAudit":true,"executionMode":"kubewarden-wapc","policyType":"kubernetes","contextAwareResources":[{"apiVersion":"apps/v1","kind":"ReplicaSet"},{"apiVersion":"v1","kind":"Namespace"}]}"#
        );
        md.validate().unwrap();
    }

    #[test]
    fn validation_follows_policy_evaluator() {
        let mut md = Metadata::from_yaml(YAML).unwrap();
        assert!(md.validate().is_err(), "no protocol version");
        md.protocol_version = Some(ProtocolVersion::Unknown);
        assert!(md.validate().is_err());
        md.execution_mode = ExecutionMode::Opa;
        md.validate().unwrap();
        md.protocol_version = Some(ProtocolVersion::V1);
        md.rules[0].api_groups = vec!["".into(), "*".into()];
        md.rules[0].operations = vec![Operation::All, Operation::Create];
        md.rules[0].resources = vec!["*".into(), "pods".into()];
        let err = md.validate().unwrap_err().join("; ");
        assert!(err.contains("rules[0].apiGroups: No other elements"), "{err}");
        assert!(err.contains("rules[0].operations: No other elements"), "{err}");
        assert!(
            err.contains("if '*' is present, must not specify other resources without subresources"),
            "{err}"
        );
        assert!(validate_resources(&["*".into(), "pods/log".into()]).is_ok());
        assert!(validate_resources(&["*/*".into(), "pods".into()]).is_err());
        assert!(
            Metadata::from_yaml("rules: []\n").is_err(),
            "mutating is required"
        );
        assert!(is_semver("1.36.0-beta.1") && !is_semver("1.36"));
    }
}
