//! The `injector-host` binary.

mod common;

use std::process::{Command, Output};

use common::*;
use serde_json::Value;

/// The test guest in a file of its own per call (tests run in parallel, and one test writing
/// the file while another compiles it gave an empty module), removed when dropped.
fn guest_file() -> tempfile::TempPath {
    let mut file = tempfile::Builder::new()
        .prefix("injector-host-test-guest-")
        .suffix(".wasm")
        .tempfile()
        .unwrap();
    std::io::Write::write_all(&mut file, test_guest_wasm()).unwrap();
    file.into_temp_path()
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_injector-host"))
        .args(args)
        .output()
        .expect("run injector-host")
}

fn data(name: &str) -> String {
    manifest_dir().join("tests/data").join(name).display().to_string()
}

fn stdout_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "status {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.lines().count(), 1, "one JSON line: {text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn run_prints_one_admission_response_line() {
    let module = guest_file();
    let out = run(&[
        "run",
        "--request-path",
        &data("pod-review.json"),
        module.to_str().unwrap(),
    ]);
    let resp = stdout_json(&out);
    assert_eq!(
        resp,
        serde_json::json!({"uid": "1299d386-525b-4032-98ae-1949f69f9cfc", "allowed": true, "auditAnnotations": null, "warnings": null})
    );
}

#[test]
fn run_accepts_a_bare_request_from_stdin() {
    let module = guest_file();
    let review: Value =
        serde_json::from_str(&std::fs::read_to_string(data("pod-review.json")).unwrap()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_injector-host"))
        .args([
            "run",
            "-r",
            "-",
            "--settings-json",
            r#"{"response": {"accepted": false, "message": "denied"}}"#,
        ])
        .arg(&*module)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(review["request"].to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let resp = stdout_json(&out);
    assert_eq!(resp["allowed"], false);
    assert_eq!(resp["status"]["message"], "denied");
}

#[test]
fn invalid_settings_fail_like_kwctl() {
    let module = guest_file();
    let out = run(&[
        "run",
        "-r",
        &data("pod-review.json"),
        "--settings-json",
        r#"{"invalid": "bad proxy image"}"#,
        module.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error: Provided settings are not valid: bad proxy image"
    );
    let out = run(&[
        "run",
        "-r",
        &data("pod-review.json"),
        "--settings-json",
        "[1]",
        module.to_str().unwrap(),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error: Invalid settings in CRD, not an object"
    );
}

#[test]
fn run_serves_context_only_with_allow_context_aware() {
    let module = guest_file();
    let dir = tempfile::tempdir().unwrap();
    let context = dir.path().join("cluster.yaml");
    std::fs::write(&context, CLUSTER).unwrap();
    let metadata = dir.path().join("policy.yaml");
    std::fs::write(
        &metadata,
        "rules: []\nmutating: true\ncontextAwareResources:\n- {apiVersion: v1, kind: Namespace}\n",
    )
    .unwrap();
    let settings = dir.path().join("settings.yaml");
    std::fs::write(
        &settings,
        "host_calls:\n- binding: kubewarden\n  namespace: kubernetes\n  operation: get_resource\n  payload: {api_version: v1, kind: Namespace, name: emojivoto, namespace: null, disable_cache: false, field_masks: null}\n",
    )
    .unwrap();
    let base = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "-r",
            "X",
            "--settings-path",
            settings.to_str().unwrap(),
            "--context",
            context.to_str().unwrap(),
            "--metadata-path",
            metadata.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.push(module.to_str().unwrap());
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let review = data("pod-review.json");
    let with = |extra: &[&str]| {
        let mut args = base(extra);
        args[2] = review.clone();
        run(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let denied = stdout_json(&with(&[]));
    assert!(
        denied["warnings"][0]
            .as_str()
            .unwrap()
            .contains("not been granted access to Kubernetes v1/Namespace"),
        "{denied}"
    );
    let allowed = stdout_json(&with(&["--allow-context-aware", "--print-stats"]));
    assert!(
        allowed["warnings"][0].as_str().unwrap().starts_with("ok:"),
        "{allowed}"
    );
    let faulted = stdout_json(&with(&["--allow-context-aware", "--fault", "Namespace=notfound"]));
    assert!(
        faulted["warnings"][0]
            .as_str()
            .unwrap()
            .contains("Cannot find v1/Namespace named 'emojivoto'"),
        "{faulted}"
    );
    let replayed = run(&[
        "run",
        "-r",
        &review,
        "--settings-path",
        settings.to_str().unwrap(),
        "--allow-context-aware",
        "--metadata-path",
        metadata.to_str().unwrap(),
        "--replay-host-capabilities-interactions",
        &engine_test_data("session.yml").display().to_string(),
        module.to_str().unwrap(),
    ]);
    let replayed_json = stdout_json(&replayed);
    assert!(
        replayed_json["warnings"][0].as_str().unwrap().starts_with("ok:"),
        "{replayed_json}"
    );
    assert!(String::from_utf8_lossy(&replayed.stderr).contains("have not been replayed: 1 left"));
    let bad_fault = with(&["--fault", "Namespace=explode"]);
    assert!(!bad_fault.status.success());
    assert!(String::from_utf8_lossy(&bad_fault.stderr).contains("unknown effect"));
}

#[test]
fn missing_files_are_named() {
    let out = run(&["run", "-r", "/nonexistent/req.json", "/nonexistent/policy.wasm"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("Error: cannot open request file /nonexistent/req.json: ")
    );
    let out = run(&["run", "-r", &data("pod-review.json"), "/nonexistent/policy.wasm"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("Error: cannot read module /nonexistent/policy.wasm:")
    );
    assert!(engine_test_data("session.yml").exists());
}
