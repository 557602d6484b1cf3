//! Nothing lost: for every fixture input (webhook, CLI and integration data), each member of the
//! input object is present and unchanged in our output, whatever the namespace says.

mod common;

use common::*;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;

const DIRS: &[&str] = &[
    "tests/fixtures/linkerd/controller/proxy-injector/fake/data",
    "tests/fixtures/linkerd/cli/cmd/testdata",
    "tests/fixtures/linkerd/test/integration/install/inject/testdata",
];

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    // A syntax error repeats forever in serde_yaml_ng's document iterator: stop at the first.
    serde_yaml_ng::Deserializer::from_str(&text)
        .map_while(|doc| Value::deserialize(doc).ok())
        .flat_map(|v| match v.get("kind").and_then(Value::as_str) {
            Some("List") => v["items"].as_array().cloned().unwrap_or_default(),
            _ => vec![v],
        })
        .filter(|v| v.is_object())
        .collect()
}

#[test]
fn every_fixture_input_keeps_every_field() {
    let settings = webhook_settings();
    let mut checked = 0;
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
    println!("nothing lost: {checked} admissions of fixture objects");
    assert!(checked > 100, "fixtures found: {checked}");
    let _ = json!(null);
}
