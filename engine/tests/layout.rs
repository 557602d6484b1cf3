//! What the crate boundary cannot check (docs/development.md, "Layout"): the engine depends on no
//! policy crate, and its sources do not even name Linkerd (its tests' fixtures may); every file
//! says what it owns.

mod common;

use std::path::Path;

use common::{files_under, files_without_a_header};

#[test]
fn the_engine_names_no_linkerd() {
    let files = files_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(files.len() >= 20, "{files:?}");
    let mut offences = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (n, line) in text.lines().enumerate() {
            if line.to_ascii_lowercase().contains("linkerd") {
                offences.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert_eq!(offences, Vec::<String>::new());
}

#[test]
fn every_file_says_what_it_owns() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert_eq!(files_without_a_header(&src), Vec::<String>::new());
}
