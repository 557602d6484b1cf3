//! `injector-host run` against kwctl 1.36.0-beta.1's recorded outputs (tests/data/oracle, see its
//! README): for every e2e evaluation, the same session, settings and request on the annotated
//! policy module must print the bytes kwctl printed, not merely an equivalent response.

mod common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use common::{manifest_dir, policy_wasm_path, policy_yaml_path};
use rstest::rstest;

/// Every oracle file; `every_oracle_file_has_a_case` keeps this list equal to the directory.
const ORACLE_FILES: [&str; 9] = [
    "session-empty--settings-default--pod-update-request.json",
    "session-empty--settings-invalid--pod-update-request.error",
    "session-injected--settings-default--pod-request.json",
    "session-namespace-error--settings-default--pod-request.json",
    "session-no-linkerd-config--settings-default--pod-request.json",
    "session-not-annotated--settings-default--pod-request.json",
    "session-service--settings-default--service-request.json",
    "session-verify--settings-verify--meshed-pod-request.json",
    "session-verify--settings-verify--pod-request.json",
];

fn oracle_dir() -> PathBuf {
    manifest_dir().join("tests/data/oracle/kwctl-1.36.0-beta.1")
}

fn e2e(name: &str) -> PathBuf {
    manifest_dir().join("tests/data/e2e").join(name)
}

/// The annotated module: `$INJECTOR_ANNOTATED_POLICY_WASM`, else the policy module annotated here
/// the way `make annotated-policy.wasm` does without kwctl. Annotating per test binary keeps it in
/// step with `policy.wasm` (which `make host-test` rebuilds) where a leftover
/// `annotated-policy.wasm` could be stale.
fn annotated_module() -> &'static Path {
    static MODULE: OnceLock<PathBuf> = OnceLock::new();
    MODULE.get_or_init(|| {
        if let Some(path) = std::env::var_os("INJECTOR_ANNOTATED_POLICY_WASM") {
            let path = PathBuf::from(path);
            assert!(path.exists(), "{} is missing", path.display());
            return path;
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kwctl-oracle");
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("annotated-policy.wasm");
        let result = Command::new(env!("CARGO_BIN_EXE_injector-host"))
            .arg("annotate")
            .arg("-m")
            .arg(policy_yaml_path())
            .arg("-u")
            .arg(manifest_dir().join("../README.md"))
            .arg("-o")
            .arg(&out)
            .arg(policy_wasm_path())
            .output()
            .expect("run injector-host annotate");
        assert!(
            result.status.success(),
            "annotate failed: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        out
    })
}

/// `injector-host run` with kwctl's arguments for an oracle file named
/// `<session>--<settings>--<request>.<json|error>`.
fn run_like_kwctl(oracle_file: &str) -> Output {
    let stem = oracle_file.rsplit_once('.').map(|(stem, _)| stem).unwrap();
    let [session, settings, request] = stem
        .split("--")
        .collect::<Vec<_>>()
        .try_into()
        .unwrap_or_else(|parts| panic!("{oracle_file}: not session--settings--request: {parts:?}"));
    Command::new(env!("CARGO_BIN_EXE_injector-host"))
        .arg("run")
        .arg("--allow-context-aware")
        .arg("--replay-host-capabilities-interactions")
        .arg(e2e(&format!("{session}.yml")))
        .arg("--settings-path")
        .arg(e2e(&format!("{settings}.yaml")))
        .arg("--request-path")
        .arg(e2e(&format!("{request}.json")))
        .arg(annotated_module())
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run injector-host")
}

/// Records one case's verdict; the case that completes the set prints the tally.
fn tally(file: &str, identical: bool) {
    static VERDICTS: Mutex<BTreeMap<String, bool>> = Mutex::new(BTreeMap::new());
    let mut verdicts = VERDICTS.lock().unwrap_or_else(|e| e.into_inner());
    verdicts.insert(file.to_owned(), identical);
    if verdicts.len() == ORACLE_FILES.len() {
        let same = verdicts.values().filter(|v| **v).count();
        // straight to the stream: `eprintln!` is captured by the harness for passing tests
        let _ = writeln!(
            std::io::stderr(),
            "kwctl oracle: {same}/{} byte-identical",
            ORACLE_FILES.len()
        );
    }
}

#[rstest]
#[case::empty_default_pod_update("session-empty--settings-default--pod-update-request.json")]
#[case::empty_invalid_settings("session-empty--settings-invalid--pod-update-request.error")]
#[case::injected_default_pod("session-injected--settings-default--pod-request.json")]
#[case::namespace_error_default_pod("session-namespace-error--settings-default--pod-request.json")]
#[case::no_linkerd_config_default_pod("session-no-linkerd-config--settings-default--pod-request.json")]
#[case::not_annotated_default_pod("session-not-annotated--settings-default--pod-request.json")]
#[case::service_default_service("session-service--settings-default--service-request.json")]
#[case::verify_meshed_pod("session-verify--settings-verify--meshed-pod-request.json")]
#[case::verify_pod("session-verify--settings-verify--pod-request.json")]
fn answers_like_kwctl(#[case] file: &str) {
    assert!(ORACLE_FILES.contains(&file), "{file} is not in ORACLE_FILES");
    let expected = std::fs::read_to_string(oracle_dir().join(file)).unwrap();
    let out = run_like_kwctl(file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if file.ends_with(".error") {
        // kwctl exits 1 and its last stderr line is the error; the file holds that line
        let last = stderr.lines().last().unwrap_or("");
        let identical = !out.status.success() && last == expected.trim_end_matches('\n');
        tally(file, identical);
        assert_eq!(out.status.code(), Some(1), "stdout: {stdout}\nstderr: {stderr}");
        assert!(stdout.is_empty(), "stdout: {stdout}");
        assert_eq!(last, expected.trim_end_matches('\n'), "stderr: {stderr}");
    } else {
        // the whole stdout: the one JSON line and its newline
        tally(file, out.status.success() && stdout == expected);
        assert!(out.status.success(), "status {:?}, stderr: {stderr}", out.status);
        assert_eq!(stdout, expected, "stderr: {stderr}");
    }
}

#[test]
fn every_oracle_file_has_a_case() {
    let mut files: Vec<String> = std::fs::read_dir(oracle_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json") || name.ends_with(".error"))
        .collect();
    files.sort();
    assert_eq!(files, ORACLE_FILES);
}
