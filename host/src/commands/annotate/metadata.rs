//! policy-evaluator's `Metadata`, as kwctl reads the `-m` file: the shape (unknown keys dropped,
//! its defaults), the validation with policy-evaluator's rules, and the compact JSON written into
//! the section, field for field in the same order.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use super::AnnotateError;
use kubewarden_engine::protocol::metadata::ContextAwareResource;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
