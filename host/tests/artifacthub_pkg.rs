//! `artifacthub-pkg.yml` (written by `kwctl scaffold artifacthub -m policy.yaml -q
//! questions-ui.yml`, `make artifacthub`) agrees with `policy.yaml` and `questions-ui.yml`, all
//! three parsed: version, names, links, annotations, resources and questions. And every question
//! of `questions-ui.yml` is a setting the policy module reads (checked through its own
//! `validate_settings`).

mod common;
mod policy_support;

use policy_support::merge;
use std::collections::BTreeSet;
use std::path::PathBuf;

use kubewarden_engine::runtime::engine::Policy;
use serde_json::{Map, Value, json};

fn read(p: &str) -> String {
    let path: PathBuf = common::manifest_dir().join("..").join(p);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml(p: &str) -> Value {
    serde_yaml_ng::from_str(&read(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key}: a string, got {}", v[key]))
}

/// A comma-separated annotation as its entries.
fn list(value: &str) -> Vec<String> {
    value.split(',').map(|s| s.trim().to_owned()).collect()
}

#[test]
fn the_package_agrees_with_the_metadata() {
    let (metadata, package) = (yaml("policy.yaml"), yaml("artifacthub-pkg.yml"));
    let ann = &metadata["annotations"];
    let version = text(ann, "io.kubewarden.policy.version");
    let oci = text(ann, "io.kubewarden.policy.ociUrl");
    let source = text(ann, "io.kubewarden.policy.source");
    assert_eq!(text(&package, "version"), version);
    assert_eq!(text(&package, "name"), text(ann, "io.kubewarden.policy.title"));
    assert_eq!(
        text(&package, "displayName"),
        text(ann, "io.artifacthub.displayName")
    );
    assert_eq!(
        text(&package, "description"),
        text(ann, "io.kubewarden.policy.description")
    );
    assert_eq!(
        text(&package, "license"),
        text(ann, "io.kubewarden.policy.license")
    );
    assert_eq!(text(&package, "homeURL"), text(ann, "io.kubewarden.policy.url"));
    assert_eq!(
        package["containersImages"],
        json!([{"name": "policy", "image": format!("{oci}:v{version}")}])
    );
    let keywords: Vec<String> = serde_json::from_value(package["keywords"].clone()).expect("keywords");
    assert_eq!(keywords, list(text(ann, "io.artifacthub.keywords")));
    assert_eq!(
        package["links"],
        json!([
            {"name": "policy", "url": format!("{source}/releases/download/v{version}/policy.wasm")},
            {"name": "source", "url": source}
        ])
    );
    assert!(text(&package, "install").contains(&format!("kwctl pull {oci}:v{version}")));
    let created = text(&package, "createdAt");
    assert!(
        created.len() >= 20 && created.ends_with('Z'),
        "createdAt: {created}"
    );
}

#[test]
fn the_package_annotations_are_the_metadata_and_the_questions() {
    let (metadata, package) = (yaml("policy.yaml"), yaml("artifacthub-pkg.yml"));
    let ann = &package["annotations"];
    let parsed = |key: &str| -> Value {
        serde_yaml_ng::from_str(text(ann, key)).unwrap_or_else(|e| panic!("{key}: {e}"))
    };
    assert_eq!(
        parsed("kubewarden/contextAwareResources"),
        metadata["contextAwareResources"]
    );
    assert_eq!(parsed("kubewarden/rules"), metadata["rules"]);
    assert_eq!(text(ann, "kubewarden/mutation"), metadata["mutating"].to_string());
    assert_eq!(
        list(text(ann, "kubewarden/resources")),
        list(text(&metadata["annotations"], "io.artifacthub.resources"))
    );
    // the questions are embedded as written, so Artifact Hub shows the same form
    assert_eq!(text(ann, "kubewarden/questions-ui"), read("questions-ui.yml"));
}

// === questions-ui.yml against the module's settings ===

/// `(variable, type, default, options)` of every question and subquestion.
fn question_list() -> Vec<(String, String, Value, Vec<Value>)> {
    fn walk(list: &Value, out: &mut Vec<(String, String, Value, Vec<Value>)>) {
        for q in list.as_array().expect("a list of questions") {
            let variable = q["variable"].as_str().expect("every question has a variable");
            let kind = q["type"].as_str().expect("every question has a type");
            let options = q["options"].as_array().cloned().unwrap_or_default();
            out.push((variable.into(), kind.into(), q["default"].clone(), options));
            if let Some(sub) = q.get("subquestions") {
                walk(sub, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&yaml("questions-ui.yml")["questions"], &mut out);
    out
}

/// A settings document with `value` at the dotted `path`.
fn at_path(path: &str, value: Value) -> Value {
    path.rsplit('.').fold(value, |inner, key| {
        let mut m = Map::new();
        m.insert(key.into(), inner);
        Value::Object(m)
    })
}

fn verdict(policy: &Policy, doc: &Value) -> (bool, Option<String>) {
    let host = common::policy_host();
    let mut instance = policy.instantiate(&host).expect("instance");
    let v = instance.validate_settings(&common::settings(doc.clone()));
    (v.valid, v.message)
}

#[test]
fn every_question_is_a_setting_the_policy_reads() {
    let engine = common::engine();
    let policy = engine
        .load_policy_file(&common::policy_wasm_path())
        .expect("policy.wasm");
    let list = question_list();
    assert!(list.len() >= 30, "the main settings are asked: {}", list.len());
    let mut all = json!({});
    for (variable, kind, default, options) in &list {
        // the default is an accepted value of that key
        let doc = at_path(variable, default.clone());
        assert_eq!(verdict(&policy, &doc), (true, None), "{variable} = {default}");
        // and the key is read: a value of the wrong type is refused, naming the key (keys the
        // policy does not read are ignored, so this would pass for a misspelt variable)
        let wrong = if kind.starts_with("map[") {
            json!("text")
        } else {
            json!({"wrong": "type"})
        };
        let (valid, message) = verdict(&policy, &at_path(variable, wrong));
        let message = message.unwrap_or_default();
        assert!(
            !valid && message.contains(&format!("settings.{variable}: ")),
            "{variable}: {message}"
        );
        // every option is an accepted value of the key (`inline` alone is then refused for the
        // missing PEM, a problem of another key)
        for option in options {
            let (_, message) = verdict(&policy, &at_path(variable, option.clone()));
            let message = message.unwrap_or_default();
            assert!(
                !message.contains(&format!("settings.{variable}: ")),
                "{variable} = {option}: {message}"
            );
        }
        merge(&mut all, doc);
    }
    assert_eq!(
        verdict(&policy, &all),
        (true, None),
        "all defaults together: {all}"
    );
    let mut seen = BTreeSet::new();
    assert!(list.iter().all(|(v, ..)| seen.insert(v)), "variables are unique");
}
