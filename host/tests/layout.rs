//! What the compiler cannot check of the layout (docs/development.md, "Layout"): the generic
//! commands use no Linkerd one (both are this crate's), and every file says what it owns. That
//! the engine knows no policy is the `kubewarden-engine` crate's boundary (engine/tests/layout.rs
//! checks that its sources do not even name Linkerd).

mod common;

use std::path::Path;

use common::{files_under, files_without_a_header};

/// Dependencies point one way: the generic commands use no Linkerd command and not the command
/// line that joins them.
#[test]
fn the_generic_commands_use_no_linkerd_command() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let mut offences = Vec::new();
    for file in files_under(&dir) {
        let text = std::fs::read_to_string(&file).expect("a source file");
        let code = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim_start().starts_with("//"));
        for (n, line) in code {
            if line.contains("crate::linkerd") || line.contains("crate::cli") {
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
