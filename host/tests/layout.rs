//! The engine half of the crate knows nothing of Linkerd (docs/development.md, "Layout"): no file of
//! `protocol/`, `runtime/` or `hostcalls/` names it or imports the commands.

use std::path::{Path, PathBuf};

fn engine_files() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in ["protocol", "runtime", "hostcalls"] {
        let entries = std::fs::read_dir(src.join(dir)).unwrap_or_else(|e| panic!("src/{dir}: {e}"));
        files.extend(entries.map(|e| e.expect("a directory entry").path()));
    }
    files.sort();
    files
}

#[test]
fn the_engine_names_no_linkerd_and_no_command() {
    let files = engine_files();
    assert!(files.len() >= 16, "{files:?}");
    let mut offences = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_ascii_lowercase();
            if ["linkerd", "crate::commands", "crate::linkerd"]
                .iter()
                .any(|w| lower.contains(w))
            {
                offences.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert_eq!(offences, Vec::<String>::new());
}

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

/// Every file under `dir`, its subfolders' too (a command may be a folder).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_file_says_what_it_owns() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let missing: Vec<String> = files_under(&src)
        .into_iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).expect("a source file");
            !text.starts_with("//! ")
        })
        .map(|path| path.display().to_string())
        .collect();
    assert_eq!(missing, Vec::<String>::new());
}
