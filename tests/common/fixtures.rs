//! Linkerd's webhook fixtures and the JSON comparisons the conformance suites use: shared by the
//! native suite (`tests/common`) and the through-the-module suite (`host/tests/policy_support`,
//! which includes this file by path), so both run exactly the same cases the same way.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Linkerd's webhook unit-test data (fixtures README, section 1), relative to the repository.
pub const WEBHOOK_DATA: &str = "tests/fixtures/linkerd/controller/proxy-injector/fake/data";
pub const CREATED_BY: &str = "linkerd-injector-policy test";
/// The namespace of Linkerd's webhook fixtures.
pub const FIXTURE_NAMESPACE: &str = "kube-public";

/// The repository root, from either crate's manifest directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("tests/fixtures/linkerd").is_dir())
        .expect("the repository's tests/fixtures/linkerd")
        .to_path_buf()
}

pub fn fixture_path(dir: &str, name: &str) -> PathBuf {
    repo_root().join(dir).join(name)
}

/// A YAML or JSON fixture as JSON (first document).
pub fn load(dir: &str, name: &str) -> Value {
    load_path(&fixture_path(dir, name))
}

/// A YAML or JSON file as JSON (first document), by its path.
pub fn load_path(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    } else {
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// Key `values` of one of Linkerd's `linkerd-config` goldens
/// (`tests/fixtures/linkerd-config/<tag>/<golden>.yaml`), as text.
pub fn linkerd_config_values(tag: &str, golden: &str) -> String {
    let config_map = load(
        &format!("tests/fixtures/linkerd-config/{tag}"),
        &format!("{golden}.yaml"),
    );
    config_map["data"]["values"]
        .as_str()
        .unwrap_or_else(|| panic!("{tag}/{golden}: no data.values"))
        .to_owned()
}

/// Every `linkerd-config` golden (`tests/fixtures/linkerd-config/<tag>/*.yaml`) as
/// (`<tag>/<file>`, the ConfigMap), sorted by name.
pub fn linkerd_config_goldens() -> Vec<(String, Value)> {
    let root = repo_root().join("tests/fixtures/linkerd-config");
    let mut goldens = Vec::new();
    for tag in std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
        let tag = tag.expect("a directory entry").path();
        if !tag.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&tag).unwrap_or_else(|e| panic!("{}: {e}", tag.display())) {
            let file = file.expect("a directory entry").path();
            if file.extension().is_some_and(|e| e == "yaml") {
                let name = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
                goldens.push((name, load_path(&file)));
            }
        }
    }
    goldens.sort_by(|a, b| a.0.cmp(&b.0));
    goldens
}

/// Deep-merges `extra` into `base`, as settings documents layer: objects key by key, anything
/// else (arrays and `null` included) replaces.
pub fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

/// The settings Linkerd's webhook tests assume (fixtures README, section 1).
pub fn webhook_settings_json() -> Value {
    json!({
        "linkerdVersion": "dev-undefined",
        "identityTrustAnchorsPEM": "IdentityTrustAnchorsPEM",
        "policy": {"createdBy": CREATED_BY}
    })
}

/// The control plane's `linkerd/linkerd-config` ConfigMap holding `values` (YAML).
pub fn linkerd_config(values: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "linkerd-config", "namespace": "linkerd"},
           "data": {"values": values}})
}

/// A `linkerd-config` whose values change nothing from the chart defaults the settings start
/// from, for tests about everything else.
pub fn neutral_linkerd_config() -> Value {
    linkerd_config("linkerdVersion: edge-26.8.3\n")
}

pub fn namespace(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "annotations": annotations}})
}

/// The namespace annotation sets the webhook tests use.
pub fn ns_annotations(which: &str) -> Value {
    match which {
        "enabled" => json!({"linkerd.io/inject": "enabled"}),
        "none" => json!({}),
        "opaque" => {
            json!({"linkerd.io/inject": "enabled", "config.linkerd.io/opaque-ports": "3306"})
        }
        "config" => json!({
            "linkerd.io/inject": "enabled",
            "config.linkerd.io/skip-outbound-ports": "34567",
            "config.alpha.linkerd.io/proxy-wait-before-exit-seconds": "300",
            "config.linkerd.io/invalid-key": "invalid-value"
        }),
        other => panic!("unknown namespace case {other}"),
    }
}

/// Linkerd's tests stub the owner as (deployment, owner-deployment); here the same owner is
/// real: the pod is owned by a ReplicaSet that the Deployment owns.
pub fn with_deployment_owner(mut pod: Value) -> (Value, Value) {
    pod["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "owner-deployment-5d8f9c7b4",
        "uid": "rs-uid", "controller": true
    }]);
    let rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "owner-deployment-5d8f9c7b4", "namespace": FIXTURE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "owner-deployment",
                "uid": "d-uid", "controller": true}]}
    });
    (pod, rs)
}

/// Applies an RFC 6902 patch file to `input`.
pub fn apply_patch(input: &Value, patch: &Value) -> Value {
    let patch: json_patch::Patch = serde_json::from_value(patch.clone()).expect("patch fixture parses");
    let mut out = input.clone();
    json_patch::patch(&mut out, &patch).expect("Linkerd's patch applies to its input");
    out
}

/// Drops `null` members (Linkerd renders `resources: null`, which the API server drops).
pub fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Nothing lost: every member of `input` is in `output` unchanged; array elements of the
/// input appear in the output in the same order (injection only inserts). Returns the first
/// path that differs.
pub fn lost_path(input: &Value, output: &Value, path: &str) -> Option<String> {
    match (input, output) {
        (Value::Object(a), Value::Object(b)) => a.iter().find_map(|(k, v)| match b.get(k) {
            Some(w) => lost_path(v, w, &format!("{path}/{k}")),
            None => Some(format!("{path}/{k}")),
        }),
        (Value::Array(a), Value::Array(b)) => {
            let mut rest = b.iter();
            for (i, item) in a.iter().enumerate() {
                if !rest.any(|o| o == item) {
                    return Some(format!("{path}/{i}"));
                }
            }
            None
        }
        (a, b) if a == b => None,
        _ => Some(path.to_string()),
    }
}

/// A readable diff of two JSON documents for assertion messages.
pub fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}
