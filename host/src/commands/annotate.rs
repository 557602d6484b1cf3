//! `injector-host annotate`: writes a policy's metadata into the module's
//! `io.kubewarden.metadata` custom section, in the form `kwctl annotate` writes it.
//!
//! Like kwctl (`crates/kwctl/src/annotate.rs` with policy-evaluator's `policy_metadata.rs`):
//! the metadata YAML is read into Kubewarden's `Metadata` shape (unknown keys dropped,
//! `backgroundAudit` defaulting to true, `executionMode` to `kubewarden-wapc`, `policyType` to
//! `kubernetes`), `protocolVersion` is asked from the module itself (`protocol_version` through
//! the engine; `Unknown` for other execution modes), the usage text (`-u README.md`) becomes the
//! `io.kubewarden.policy.usage` annotation, the result is validated with policy-evaluator's rules
//! and serialised as compact JSON with the same field order. Differences: kwctl re-emits the
//! whole module through walrus and records its own version as `io.kubewarden.kwctl`; this
//! keeps every byte of the module, replaces any previous metadata section, appends the new one
//! at the end, and writes no `io.kubewarden.kwctl` (a value given in the file is dropped, as
//! kwctl overwrites it).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::hostcalls::lookup::Lookups;
use crate::protocol::metadata::{ContextAwareResource, METADATA_SECTION};
use crate::protocol::sections::{Section, SectionError, append_custom_section, sections};
use crate::runtime::callback::{HostContext, LogSink};
use crate::runtime::engine::{Engine, EngineConfig, EngineError};

/// Annotation holding the usage text (`-u`).
pub const USAGE_ANNOTATION: &str = "io.kubewarden.policy.usage";
/// Annotation kwctl fills with its own version.
pub const KWCTL_VERSION_ANNOTATION: &str = "io.kubewarden.kwctl";

/// Host capability operations policy-evaluator knows, as `(namespace, operation)`.
pub const HOST_CAPABILITIES: &[(&str, &str)] = &[
    ("crypto", "v1/is_certificate_trusted"),
    ("kubernetes", "can_i"),
    ("kubernetes", "get_resource"),
    ("kubernetes", "list_resources_all"),
    ("kubernetes", "list_resources_by_namespace"),
    ("net", "v1/dns_lookup_host"),
    ("oci", "v1/manifest_digest"),
    ("oci", "v1/oci_manifest"),
    ("oci", "v1/oci_manifest_config"),
    ("oci", "v1/verify"),
    ("oci", "v2/verify"),
];

#[derive(Debug, Error)]
pub enum AnnotateError {
    #[error("Error unmarshalling metadata {0}")]
    Parse(#[source] serde_yaml_ng::Error),
    #[error("Metadata is invalid: {}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error("Error parsing wasm module: {0}")]
    Wasm(#[from] SectionError),
    #[error("Cannot compute ProtocolVersion used by the policy: {0}")]
    ProtocolVersion(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("cannot serialise the metadata: {0}")]
    Serialize(#[source] serde_json::Error),
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
    pub fn from_yaml(text: &str) -> Result<Self, AnnotateError> {
        serde_yaml_ng::from_str(text).map_err(AnnotateError::Parse)
    }

    /// policy-evaluator's `Metadata::validate`: every problem, by field.
    pub fn validate(&self) -> Result<(), AnnotateError> {
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
            Err(AnnotateError::Invalid(problems))
        }
    }

    /// The section payload: compact JSON, like kwctl's `serde_json::to_vec(&metadata)`.
    pub fn to_section_json(&self) -> Result<Vec<u8>, AnnotateError> {
        serde_json::to_vec(self).map_err(AnnotateError::Serialize)
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

// === the WebAssembly side ===

/// The module with every `io.kubewarden.metadata` section removed and `data` appended as the
/// new one; every other section is kept byte for byte.
pub fn write_metadata_section(module: &[u8], data: &[u8]) -> Result<Vec<u8>, AnnotateError> {
    let sections = sections(module)?;
    let mut out = module[..8].to_vec();
    for s in sections.iter().filter(|s| !is_metadata(s)) {
        out.extend_from_slice(s.bytes);
    }
    append_custom_section(&mut out, METADATA_SECTION, data);
    Ok(out)
}

fn is_metadata(section: &Section<'_>) -> bool {
    section.custom.is_some_and(|(name, _)| name == METADATA_SECTION)
}

/// The host capabilities the module's data segments mention, like kwctl's `wasm_scanner`
/// (namespace and operation strings present; an operation that is a prefix of a longer one must
/// also occur on its own).
pub fn detect_host_capabilities(module: &[u8]) -> Result<BTreeSet<String>, AnnotateError> {
    let mut data = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let wasmparser::Payload::DataSection(reader) = payload.map_err(SectionError::from)? {
            for segment in reader {
                let segment = segment.map_err(SectionError::from)?;
                data.extend_from_slice(segment.data);
                data.push(0xff);
            }
        }
    }
    let find = |needle: &[u8], from: usize| {
        data.get(from..).and_then(|d| {
            d.windows(needle.len())
                .position(|w| w == needle)
                .map(|p| p + from)
        })
    };
    let mut found = BTreeSet::new();
    for (namespace, operation) in HOST_CAPABILITIES {
        if find(namespace.as_bytes(), 0).is_none() {
            continue;
        }
        let longer: Vec<&str> = HOST_CAPABILITIES
            .iter()
            .map(|(_, o)| *o)
            .filter(|o| o != operation && o.starts_with(operation))
            .collect();
        let present = if longer.is_empty() {
            find(operation.as_bytes(), 0).is_some()
        } else {
            longer.iter().all(|l| {
                let mut from = 0;
                while let Some(p) = find(operation.as_bytes(), from) {
                    if !data[p..].starts_with(l.as_bytes()) {
                        return true;
                    }
                    from = p + 1;
                }
                false
            })
        };
        if present {
            found.insert(format!("{namespace}/{operation}"));
        }
    }
    Ok(found)
}

/// Asks the module for its protocol version, through the engine.
pub fn protocol_version(module: &[u8]) -> Result<ProtocolVersion, AnnotateError> {
    let engine = Engine::new(EngineConfig::without_deadline())?;
    let policy = engine.load_policy("policy.wasm", module)?;
    let host = Arc::new(HostContext::new(
        policy.name(),
        BTreeSet::new(),
        Lookups::empty(),
        LogSink::Discard,
    ));
    let instance = policy.instantiate(&host)?;
    let version = instance
        .protocol_version()
        .map_err(|e| AnnotateError::ProtocolVersion(e.to_string()))?;
    match version.as_str() {
        "v1" => Ok(ProtocolVersion::V1),
        _ => Ok(ProtocolVersion::Unknown),
    }
}

/// What [`annotate`] produced.
#[derive(Debug, Clone)]
pub struct Annotated {
    pub module: Vec<u8>,
    pub metadata: Metadata,
    /// Differences between the declared `hostCapabilities` and what the module mentions.
    pub warnings: Vec<String>,
}

/// Annotates `module` with the metadata YAML and optional usage text.
pub fn annotate(module: &[u8], metadata_yaml: &str, usage: Option<&str>) -> Result<Annotated, AnnotateError> {
    let mut metadata = Metadata::from_yaml(metadata_yaml)?;
    sections(module)?;
    metadata.protocol_version = Some(match metadata.execution_mode {
        ExecutionMode::KubewardenWapc => protocol_version(module)?,
        _ => ProtocolVersion::Unknown,
    });
    let mut annotations = metadata.annotations.take().unwrap_or_default();
    annotations.remove(KWCTL_VERSION_ANNOTATION);
    if let Some(u) = usage {
        annotations.insert(USAGE_ANNOTATION.into(), u.into());
    }
    metadata.annotations = Some(annotations);
    metadata.validate()?;
    let detected = detect_host_capabilities(module)?;
    let declared = metadata.host_capabilities.clone().unwrap_or_default();
    let mut warnings = Vec::new();
    let undeclared: Vec<&String> = detected.difference(&declared).collect();
    if !undeclared.is_empty() {
        warnings.push(format!(
            "host capabilities used by the policy but not declared in metadata: {undeclared:?}"
        ));
    }
    let unused: Vec<&String> = declared.difference(&detected).collect();
    if !unused.is_empty() {
        warnings.push(format!(
            "host capabilities declared in metadata but not detected in the policy: {unused:?}"
        ));
    }
    let json = metadata.to_section_json()?;
    Ok(Annotated {
        module: write_metadata_section(module, &json)?,
        metadata,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sections::custom_section;

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
        let err = md.validate().unwrap_err().to_string();
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

    fn module_with(customs: &[(&str, &[u8])]) -> Vec<u8> {
        // a type section with no types, then the custom sections
        let mut m = b"\0asm\x01\0\0\0\x01\x01\x00".to_vec();
        for (name, data) in customs {
            append_custom_section(&mut m, name, data);
        }
        m
    }

    #[test]
    fn replaces_the_metadata_section_and_keeps_the_rest() {
        let module = module_with(&[(METADATA_SECTION, b"{\"old\":1}"), ("producers", b"x")]);
        let big = vec![b'a'; 300];
        let out = write_metadata_section(&module, &big).unwrap();
        assert_eq!(custom_section(&out, METADATA_SECTION).unwrap().unwrap(), &big[..]);
        assert_eq!(custom_section(&out, "producers").unwrap().unwrap(), b"x");
        assert_eq!(sections(&out).unwrap().len(), 3);
        assert!(out.starts_with(&module_with(&[])));
        assert!(write_metadata_section(b"\0asm\x01\0\0", b"").is_err());
        assert!(write_metadata_section(b"(module)", b"").is_err());
    }
}
