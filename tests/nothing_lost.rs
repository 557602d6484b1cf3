//! Nothing lost: for every fixture input (webhook, CLI and integration data), each member of the
//! input object is present and unchanged in our output, whatever the namespace says.

mod common;

use common::*;
use linkerd_injector_policy::outcome::Verdict;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

const DIRS: &[&str] = &[
    "tests/fixtures/linkerd/controller/proxy-injector/fake/data",
    "tests/fixtures/linkerd/cli/cmd/testdata",
    "tests/fixtures/linkerd/test/integration/install/inject/testdata",
];

/// The objects of a fixture file. Linkerd's `*.bad.*` inputs are invalid YAML on purpose: the
/// documents before the error are read, and the error must be there.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let meant_bad = path.to_string_lossy().contains(".bad.");
    let mut docs = Vec::new();
    let mut failed = false;
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
        // serde_yaml_ng's iterator repeats a syntax error forever: stop at the first one.
        let v = match Value::deserialize(doc) {
            Ok(v) => v,
            Err(e) if meant_bad => {
                failed = true;
                println!("{} document {i}: not YAML, as meant: {e}", path.display());
                break;
            }
            Err(e) => panic!("{} document {i}: not YAML: {e}", path.display()),
        };
        match v.get("kind").and_then(Value::as_str) {
            Some("List") => docs.extend(v["items"].as_array().cloned().unwrap_or_default()),
            _ => docs.push(v),
        }
    }
    assert_eq!(
        failed,
        meant_bad,
        "{}: a .bad. fixture must not parse",
        path.display()
    );
    docs.into_iter().filter(Value::is_object).collect()
}

#[test]
fn every_fixture_input_keeps_every_field() {
    let settings = webhook_settings();
    let (mut checked, mut injected) = (0, 0);
    for dir in DIRS {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut files: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        {
            for doc in documents(file) {
                let kind = doc["kind"].as_str().unwrap_or("").to_string();
                for ns in ["enabled", "none", "config", "opaque"] {
                    let cluster = common::cluster(vec![namespace("ns", ns_annotations(ns))]);
                    let out = admit(&kind, &doc, "ns", &settings, &cluster);
                    assert!(
                        !out.is_rejected(),
                        "{}: {kind} rejected: {:?}",
                        file.display(),
                        out.verdict
                    );
                    if matches!(out.verdict, Verdict::Injected { .. }) {
                        let m = out.mutated.as_ref().expect("an injected object is mutated");
                        let added = m.pointer("/spec/template/spec").or(m.get("spec"));
                        assert!(
                            added.is_some_and(|spec| spec.to_string().contains("\"linkerd-proxy\"")),
                            "{} ({kind}, ns {ns}): injected without a proxy",
                            file.display()
                        );
                        injected += 1;
                    }
                    if let Some(m) = &out.mutated {
                        assert_eq!(
                            lost_path(&doc, m, ""),
                            None,
                            "{} ({kind}, ns {ns})",
                            file.display()
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    println!("nothing lost: {checked} admissions of fixture objects, {injected} injected");
    // Every fixture object is admitted under the four namespaces, and the "enabled" one injects
    // each workload that does not opt out: the lost-field check must have run on injections.
    assert!(checked > 100, "fixtures found: {checked}");
    assert!(injected >= 100, "injected objects: {injected} of {checked}");
}
