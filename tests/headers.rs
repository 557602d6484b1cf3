//! Every Rust source of the repository opens with a `//! ` line saying what it owns
//! (docs/development.md, "Layout"): the policy's, the engine's, the commands', the benchmarks' and
//! the playground's.

use std::path::{Path, PathBuf};

const SOURCE_DIRS: &[&str] = &[
    "src",
    "engine/src",
    "host/src",
    "benches/src",
    "benches/benches",
    "benches/floor-policy/src",
    "benches/trivial-policy/src",
    "playground/src",
];

/// The `.rs` files under `dir`, its subfolders' too.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The files of `dirs` (relative to `root`) that do not open with a `//! ` line, and how many
/// files were read.
fn without_a_header(root: &Path, dirs: &[&str]) -> (Vec<String>, usize) {
    let files: Vec<PathBuf> = dirs.iter().flat_map(|d| rust_files(&root.join(d))).collect();
    let mut missing: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            !text.starts_with("//! ")
        })
        .map(|path| path.strip_prefix(root).unwrap_or(path).display().to_string())
        .collect();
    missing.sort();
    (missing, files.len())
}

#[test]
fn every_source_file_says_what_it_owns() {
    let (missing, read) = without_a_header(Path::new(env!("CARGO_MANIFEST_DIR")), SOURCE_DIRS);
    // the folders above hold 119 files today: far fewer means a folder moved
    assert!(
        read > 100,
        "only {read} files read: did a folder of SOURCE_DIRS move?"
    );
    assert_eq!(missing, Vec::<String>::new());
}

#[test]
fn a_file_without_a_header_is_named() {
    let dir = std::env::temp_dir().join(format!("headers-test-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src/nested")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "//! The crate.\n").unwrap();
    std::fs::write(dir.join("src/nested/bare.rs"), "// a plain comment\nfn f() {}\n").unwrap();
    std::fs::write(dir.join("src/notes.txt"), "not Rust\n").unwrap();
    let found = without_a_header(&dir, &["src"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found, (vec!["src/nested/bare.rs".to_owned()], 2));
}
