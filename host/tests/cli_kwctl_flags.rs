//! The `injector-host` flags that follow kwctl's (`run --raw`, `-e`, `--allowed-host-capabilities`,
//! `--record-host-capabilities-interactions`), the rollout's exit status, `inject -o json`, and
//! errors printed once.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::*;
use serde_json::{Value, json};

fn host(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_injector-host"))
        .args(args)
        .output()
        .expect("run injector-host")
}

fn e2e(name: &str) -> String {
    manifest_dir()
        .join("tests/data/e2e")
        .join(name)
        .display()
        .to_string()
}

fn module() -> String {
    policy_wasm_path().display().to_string()
}

fn metadata() -> String {
    policy_yaml_path().display().to_string()
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A cluster-state file holding the objects e2e's injected session answers with.
fn injected_cluster() -> String {
    let session: Vec<Value> =
        serde_yaml_ng::from_str(&std::fs::read_to_string(e2e("session-injected.yml")).unwrap()).unwrap();
    let answers = session
        .iter()
        .filter_map(|e| e["response"]["payload"].as_str())
        .map(|p| serde_json::from_str::<Value>(p).unwrap());
    // a list answer holds its objects in `items`
    let objects: Vec<Value> = answers
        .flat_map(|a| match a.get("items") {
            Some(Value::Array(items)) => items.clone(),
            _ => vec![a],
        })
        .collect();
    // the policy names the ReplicaSet's Deployment by the template-hash rule: no fourth object
    assert_eq!(
        objects.len(),
        3,
        "linkerd-config, trust roots (one list), Namespace"
    );
    let path = tmp("injected-cluster.json");
    std::fs::write(&path, Value::Array(objects).to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn a_recorded_session_replays_to_the_same_response() {
    let session = tmp("recorded-session.yml");
    let (request, context, md, module) = (e2e("pod-request.json"), injected_cluster(), metadata(), module());
    let s = session.display().to_string();
    let recorded = host(&[
        "run",
        "--allow-context-aware",
        "--metadata-path",
        &md,
        "--context",
        &context,
        "--record-host-capabilities-interactions",
        &s,
        "-r",
        &request,
        &module,
    ]);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    let text = std::fs::read_to_string(&session).unwrap();
    assert!(text.contains("!KubernetesGetResource"), "{text}");
    assert!(text.contains("type: Success"), "{text}");
    let replayed = host(&[
        "run",
        "--allow-context-aware",
        "--metadata-path",
        &md,
        "--replay-host-capabilities-interactions",
        &s,
        "-r",
        &request,
        &module,
    ]);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert!(
        !stderr(&replayed).contains("have not been replayed"),
        "every recorded exchange is used: {}",
        stderr(&replayed)
    );
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&recorded.stdout)
    );
    let response: Value = serde_json::from_slice(&recorded.stdout).unwrap();
    assert_eq!(response["patchType"], "JSONPatch");
    // and the same answer as e2e's hand-made session for the same cluster
    let e2e_replay = host(&[
        "run",
        "--allow-context-aware",
        "--metadata-path",
        &md,
        "--replay-host-capabilities-interactions",
        &e2e("session-injected.yml"),
        "-r",
        &request,
        &module,
    ]);
    assert_eq!(
        String::from_utf8_lossy(&e2e_replay.stdout),
        String::from_utf8_lossy(&recorded.stdout)
    );
}

#[test]
fn only_the_kubewarden_execution_mode_runs() {
    let out = host(&["run", "-e", "opa", "-r", &e2e("pod-request.json"), &module()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim_end(),
        "Error: execution mode `opa` is not supported: injector-host runs Kubewarden waPC policies (`kubewarden`) only"
    );
    let ok = host(&[
        "run",
        "--execution-mode",
        "kubewarden",
        "-r",
        &e2e("pod-request.json"),
        &module(),
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn a_denied_host_capability_reaches_the_policy_as_a_failed_lookup() {
    let (request, md, module) = (e2e("pod-request.json"), metadata(), module());
    let out = host(&[
        "run",
        "--allow-context-aware",
        "--metadata-path",
        &md,
        "--context",
        &e2e("context.yaml"),
        "--allowed-host-capabilities",
        "oci/*",
        "-r",
        &request,
        &module,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let response: Value = serde_json::from_slice(&out.stdout).unwrap();
    let message = response["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message
            .contains("Policy has not been granted access to the 'kubernetes/get_resource' host capability"),
        "{response}"
    );
}

#[test]
fn an_invalid_capability_pattern_is_refused() {
    let out = host(&[
        "run",
        "--allowed-host-capabilities",
        "kubernetes/get",
        "-r",
        &e2e("pod-request.json"),
        &module(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with(
            "Error: invalid host capability pattern \"kubernetes/get\": unknown path; known paths: crypto/v1/is_certificate_trusted, "
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_raw_request_is_sent_as_it_is() {
    let raw = tmp("raw-request.json");
    std::fs::write(&raw, json!({"uid": "raw-1", "user": "alice"}).to_string()).unwrap();
    let out = host(&["run", "--raw", "-r", raw.to_str().unwrap(), &module()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let response: Value = serde_json::from_slice(&out.stdout).unwrap();
    // the uid comes from the raw document; without a `kind` there is nothing to inject
    assert_eq!(
        response,
        json!({"uid": "raw-1", "allowed": true, "auditAnnotations": null, "warnings": null})
    );
    // without --raw the same document is not an AdmissionRequest
    let out = host(&["run", "-r", raw.to_str().unwrap(), &module()]);
    assert_eq!(
        stderr(&out).trim_end(),
        "Error: cannot build AdmissionRequest object from given input: missing field `kind`"
    );
}

#[test]
fn a_rollout_with_rejections_exits_1_after_its_report() {
    let out = host(&[
        "rollout",
        "--replicas",
        "3",
        "--workers",
        "1",
        "--fault",
        "Namespace=error",
        "--quiet-policy-logs",
        "--json",
        "--metadata-path",
        &metadata(),
        &module(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["rejected"], 3);
    assert_eq!(
        stderr(&out).lines().last().unwrap_or_default(),
        "Error: 3 of 3 admissions were not admitted (3 rejected, 0 engine errors)"
    );
    let ok = host(&[
        "rollout",
        "--replicas",
        "3",
        "--workers",
        "1",
        "--quiet-policy-logs",
        "--json",
        "--metadata-path",
        &metadata(),
        &module(),
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn inject_reports_as_json() {
    let manifest = tmp("inject-json-pod.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  containers:\n  - name: web\n    image: nginx\n",
    )
    .unwrap();
    let out = host(&[
        "inject",
        "-o",
        "json",
        "--module",
        &module(),
        "--metadata-path",
        &metadata(),
        "--context",
        &e2e("context.yaml"),
        manifest.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(report["injected"], 1);
    assert_eq!(report["skipped"], 0);
    assert_eq!(report["objects"][0]["kind"], "Pod");
    assert_eq!(report["objects"][0]["name"], "web");
    assert_eq!(report["objects"][0]["namespace"], "shop");
    assert_eq!(report["objects"][0]["verdict"], "injected");
    assert!(String::from_utf8_lossy(&out.stdout).contains("linkerd-proxy"));
}

#[test]
fn errors_print_once() {
    let out = host(&["run", "-r", "/nonexistent/req.json", &module()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim_end(),
        "Error: cannot open request file /nonexistent/req.json: No such file or directory (os error 2)"
    );
}
