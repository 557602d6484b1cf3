//! `artifacthub-pkg.yml` is what `injector-host scaffold artifacthub` (kwctl's format) generates
//! from `policy.yaml` and `questions-ui.yml`, and every question of `questions-ui.yml` is a
//! setting the policy module reads (checked through its own `validate_settings`).

mod common;

use std::path::PathBuf;
use std::process::Command;

use injector_host::commands::artifacthub::{self, ArtifactHubError};
use injector_host::runtime::engine::Policy;
use serde_json::{Map, Value, json};

fn root(p: &str) -> PathBuf {
    common::manifest_dir().join("..").join(p)
}

fn read(p: &PathBuf) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("artifacthub");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_injector-host"))
}

fn policy_yaml() -> String {
    read(&root("policy.yaml"))
}

fn questions() -> String {
    read(&root("questions-ui.yml"))
}

fn committed() -> String {
    read(&root("artifacthub-pkg.yml"))
}

/// The committed file's `createdAt` value.
fn committed_created_at() -> String {
    let text = committed();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("createdAt: "))
        .expect("artifacthub-pkg.yml has a createdAt line");
    line.to_owned()
}

/// Line by line, exact, except the value of `createdAt` (any RFC 3339 timestamp).
fn assert_same_except_created_at(generated: &str, committed: &str) {
    let (g, c): (Vec<&str>, Vec<&str>) = (
        generated.split_inclusive('\n').collect(),
        committed.split_inclusive('\n').collect(),
    );
    let mut created_at_lines = 0;
    for (n, (gl, cl)) in g.iter().zip(&c).enumerate() {
        match (gl.strip_prefix("createdAt: "), cl.strip_prefix("createdAt: ")) {
            (Some(gv), Some(cv)) => {
                created_at_lines += 1;
                for v in [gv, cv] {
                    assert!(artifacthub::is_rfc3339(v.trim_end()), "line {}: {v:?}", n + 1);
                }
            }
            _ => assert_eq!(gl, cl, "line {} differs: run `make artifacthub`", n + 1),
        }
    }
    assert_eq!(g.len(), c.len(), "line count differs: run `make artifacthub`");
    assert_eq!(created_at_lines, 1, "one createdAt line");
}

#[test]
fn committed_package_is_what_the_command_generates() {
    let out = tmp("artifacthub-pkg.yml");
    let run = host()
        .args(["scaffold", "artifacthub", "-m"])
        .arg(root("policy.yaml"))
        .arg("-q")
        .arg(root("questions-ui.yml"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.stdout.is_empty() && run.stderr.is_empty());
    assert_same_except_created_at(&read(&out), &committed());
}

#[test]
fn generation_is_exact_for_a_given_timestamp() {
    let generated =
        artifacthub::generate(&policy_yaml(), Some(&questions()), &committed_created_at()).unwrap();
    assert_eq!(generated, committed());
    // kwctl's header and the order it writes the kubewarden/* annotations in (a sorted map)
    assert!(generated.starts_with(
        "# Kubewarden Artifacthub Package config\n#\n# Use this config to submit the policy to \
         https://artifacthub.io.\n#\n# This config can be saved to its default location with:\n#   \
         kwctl scaffold artifacthub > artifacthub-pkg.yml \nversion: 0.1.0\n"
    ));
    let keys: Vec<&str> = generated
        .lines()
        .filter_map(|l| l.strip_prefix("  kubewarden/"))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "contextAwareResources",
            "mutation",
            "questions-ui",
            "resources",
            "rules"
        ]
    );
}

#[test]
fn stdout_ends_like_kwctl_println() {
    let run = host()
        .args([
            "scaffold",
            "artifacthub",
            "--created-at",
            "2026-01-31T12:00:00Z",
            "-m",
        ])
        .arg(root("policy.yaml"))
        .arg("-q")
        .arg(root("questions-ui.yml"))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let expected = artifacthub::generate(&policy_yaml(), Some(&questions()), "2026-01-31T12:00:00Z").unwrap();
    assert_eq!(String::from_utf8(run.stdout).unwrap(), format!("{expected}\n"));
}

#[test]
fn questions_ui_is_embedded_verbatim() {
    let package: Value = serde_yaml_ng::from_str(&committed()).unwrap();
    assert_eq!(
        package["annotations"]["kubewarden/questions-ui"].as_str(),
        Some(questions().as_str())
    );
    // the form is a `questions` list, as Rancher reads it
    let q: Value = serde_yaml_ng::from_str(&questions()).unwrap();
    assert!(q["questions"].as_array().is_some_and(|l| !l.is_empty()));
}

/// policy.yaml without the line of one annotation.
fn without(key: &str) -> String {
    let text = policy_yaml();
    let prefix = format!("  {key}: ");
    let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with(&prefix)).collect();
    assert_eq!(kept.len() + 1, text.lines().count(), "{key} is in policy.yaml");
    kept.join("\n")
}

#[test]
fn a_missing_required_annotation_is_named() {
    let cases = [
        (
            "io.kubewarden.policy.version",
            "policy metadata must specify \"io.kubewarden.policy.version\" in annotations",
        ),
        (
            "io.kubewarden.policy.title",
            "policy metadata must specify \"io.kubewarden.policy.title\" in annotations",
        ),
        (
            "io.artifacthub.displayName",
            "policy metadata must specify \"io.artifacthub.displayName\" in annotations",
        ),
        (
            "io.kubewarden.policy.description",
            "policy metadata must specify \"io.kubewarden.policy.description\" in annotations",
        ),
        (
            "io.kubewarden.policy.ociUrl",
            "policy metadata must specify \"io.kubewarden.policy.ociUrl\" in annotations",
        ),
    ];
    for (key, message) in cases {
        let err = artifacthub::generate(&without(key), None, "2026-01-31T12:00:00Z").unwrap_err();
        assert_eq!(err.to_string(), message, "{key}");
    }
}

#[test]
fn the_command_fails_naming_the_annotation() {
    let metadata = tmp("no-oci-url.yaml");
    std::fs::write(&metadata, without("io.kubewarden.policy.ociUrl")).unwrap();
    let out = tmp("never-written.yml");
    let run = host()
        .args(["scaffold", "artifacthub", "-m"])
        .arg(&metadata)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&run.stderr),
        "Error: policy metadata must specify \"io.kubewarden.policy.ociUrl\" in annotations\n"
    );
    assert!(!out.exists());
}

#[test]
fn other_metadata_problems_are_refused_as_kwctl_does() {
    let at = "2026-01-31T12:00:00Z";
    let gen_err = |yaml: &str, q: Option<&str>| artifacthub::generate(yaml, q, at).unwrap_err();
    assert_eq!(
        gen_err("rules: []\nmutating: false\n", None).to_string(),
        "no annotations in policy metadata. policy metadata must specify annotations"
    );
    assert_eq!(
        gen_err(&policy_yaml(), Some("")),
        ArtifactHubError::EmptyQuestionsUI
    );
    let bad_version = policy_yaml().replace("policy.version: 0.1.0", "policy.version: v0.1.0");
    assert_eq!(
        gen_err(&bad_version, None).to_string(),
        "policy version must be in semver: unexpected character 'v' while parsing major version number"
    );
    // the first problem in kwctl's order: the version before the title
    let neither =
        without("io.kubewarden.policy.title").replace("  io.kubewarden.policy.version: 0.1.0\n", "");
    assert_eq!(
        gen_err(&neither, None),
        ArtifactHubError::MissingAnnotation("io.kubewarden.policy.version")
    );
    assert!(
        gen_err("mutating: true\n", None)
            .to_string()
            .starts_with("Error unmarshalling metadata ")
    );
    assert_eq!(
        artifacthub::generate(&policy_yaml(), None, "yesterday")
            .unwrap_err()
            .to_string(),
        "--created-at must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z, got \"yesterday\""
    );
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
    let doc: Value = serde_yaml_ng::from_str(&questions()).unwrap();
    let mut out = Vec::new();
    walk(&doc["questions"], &mut out);
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

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
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
    let mut seen = std::collections::BTreeSet::new();
    assert!(list.iter().all(|(v, ..)| seen.insert(v)), "variables are unique");
}

/// kwctl from `$KWCTL`, else from PATH; `None` (the test is skipped) when there is none.
fn kwctl() -> Option<PathBuf> {
    let candidate = std::env::var_os("KWCTL").map_or_else(|| PathBuf::from("kwctl"), PathBuf::from);
    let works = Command::new(&candidate)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    works.then_some(candidate)
}

/// Needs Kubewarden's kwctl, which the project cannot build in its tests: run it with
/// `KWCTL=/path/to/kwctl cargo test -p injector-host --test artifacthub -- --ignored`.
#[test]
#[ignore = "needs kwctl: KWCTL=/path/to/kwctl cargo test --test artifacthub -- --ignored"]
fn a_real_kwctl_writes_the_same_bytes() {
    let kwctl = kwctl().expect("no kwctl: set KWCTL=/path/to/kwctl or put kwctl on PATH");
    let out = tmp("kwctl-artifacthub-pkg.yml");
    let run = Command::new(kwctl)
        .args(["scaffold", "artifacthub", "-m"])
        .arg(root("policy.yaml"))
        .arg("-q")
        .arg(root("questions-ui.yml"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let theirs = read(&out);
    let created_at = theirs
        .lines()
        .find_map(|l| l.strip_prefix("createdAt: "))
        .expect("createdAt");
    let ours = artifacthub::generate(&policy_yaml(), Some(&questions()), created_at).unwrap();
    assert_eq!(ours, theirs);
}
