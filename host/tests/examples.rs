//! The ready-to-run examples in `../examples/` (pod-request.json, context.yaml, session.yml,
//! settings.yaml) with the `injector-host run` CLI: the cluster-state run and the kwctl replay
//! run give the same AdmissionResponse, which injects `linkerd-proxy` and labels the pod
//! `linkerd.io/proxy-deployment: web`; the session holds exactly the policy's lookups, in order,
//! with the answers the context file gives.

mod common;
mod policy_support;

use std::path::PathBuf;
use std::process::{Command, Output};

use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::hostcalls::replay::CallbackRequestType;
use kubewarden_engine::{AdmissionRequest, AdmissionResponse, ClusterState, FaultPlan};
use policy_support::*;
use serde_json::{Value, json};

/// sha256 of the bundle in context.yaml (Linkerd's `valid-trust-anchors.pem`).
const BUNDLE_SHA256: &str = "8dc603abd4e755c25c94da05abbf29b9b283a784733651020d72f97ca8ab98e4";

fn example(name: &str) -> PathBuf {
    common::manifest_dir().join("../examples").join(name)
}

fn run(lookups: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_injector-host"))
        .arg("run")
        .arg("--request-path")
        .arg(example("pod-request.json"))
        .arg("--settings-path")
        .arg(example("settings.yaml"))
        .arg("--allow-context-aware")
        .arg("--metadata-path")
        .arg(common::policy_yaml_path())
        .arg("--print-stats")
        .args(lookups)
        .arg(common::policy_wasm_path())
        .output()
        .expect("run injector-host")
}

fn request() -> AdmissionRequest {
    let text = std::fs::read_to_string(example("pod-request.json")).unwrap();
    AdmissionRequest::from_document(&serde_json::from_str(&text).unwrap()).expect("AdmissionReview")
}

/// The stats line `--print-stats` writes last on stderr.
fn printed_stats(out: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("no stats line ({e}): {stderr}"))
}

#[test]
fn context_and_replay_runs_give_the_same_injecting_response() {
    let context = example("context.yaml");
    let session = example("session.yml");
    let with_context = run(&["--context", context.to_str().unwrap()]);
    let with_replay = run(&[
        "--replay-host-capabilities-interactions",
        session.to_str().unwrap(),
    ]);
    for (out, how) in [(&with_context, "context"), (&with_replay, "replay")] {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{how}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("have not been replayed") && !stderr.contains("Replay error"),
            "{how}: {stderr}"
        );
        // two host calls reach the source, none fails: the Namespace, then the list of the
        // control plane's ConfigMaps (linkerd-config and the trust roots); the owner comes
        // from the pod-template-hash naming rule (the default `policy.ownerResolution`)
        let stats = printed_stats(out);
        assert_eq!(
            (
                &stats["made"],
                &stats["cached"],
                &stats["failed"],
                &stats["lists"]
            ),
            (&json!(1), &json!(0), &json!(0), &json!(1)),
            "{how}: {stats}"
        );
        assert_eq!(
            stats["by_resource"]["v1/Namespace"]["made"],
            json!(1),
            "{how}: {stats}"
        );
        assert_eq!(stats["by_resource"].get("v1/ConfigMap"), None, "{how}: {stats}");
        assert_eq!(
            stats["by_resource"].get("apps/v1/ReplicaSet"),
            None,
            "{how}: {stats}"
        );
    }
    assert_eq!(
        String::from_utf8_lossy(&with_context.stdout),
        String::from_utf8_lossy(&with_replay.stdout),
        "identical AdmissionResponses"
    );
    let stdout = String::from_utf8_lossy(&with_context.stdout);
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
    let response: AdmissionResponse = serde_json::from_str(&stdout).expect("AdmissionResponse");

    let request = request();
    assert_eq!(response.uid, request.uid);
    assert!(response.allowed, "{stdout}");
    assert_eq!(response.warnings, None, "{stdout}");
    assert_eq!(
        response
            .audit_annotations
            .as_ref()
            .and_then(|a| a.get("owner"))
            .map(String::as_str),
        Some("deployment/web (pod-template-hash naming rule)")
    );
    let object = request.object.as_ref().expect("object");
    assert!(!container_names(object).contains(&"linkerd-proxy".to_owned()));
    assert!(decoded_patch(&response).is_some(), "a patch: {stdout}");
    let pod = patched(object, &response);
    let names = container_names(&pod);
    assert!(
        names.contains(&"linkerd-proxy".to_owned()),
        "patch adds linkerd-proxy: {names:?}"
    );
    assert_eq!(
        pod.pointer("/metadata/labels/linkerd.io~1proxy-deployment"),
        Some(&json!("web"))
    );
    assert_eq!(
        owner_labels(&pod).len(),
        1,
        "one owner label: {:?}",
        owner_labels(&pod)
    );
    assert_eq!(
        pod.pointer("/metadata/annotations/linkerd.io~1trust-root-sha256"),
        Some(&json!(BUNDLE_SHA256)),
        "trust anchors from the ConfigMap"
    );
    assert_eq!(lost_path(object, &pod, ""), None, "nothing of the pod lost");
}

/// The session's requests and answers are what the policy asks and what the context file
/// answers (field masks applied as the host applies them).
#[test]
fn session_matches_the_context_file() {
    let text = std::fs::read_to_string(example("session.yml")).unwrap();
    let raw: Vec<Value> = serde_yaml_ng::from_str(&text).expect("session is a YAML list");
    let state = ClusterState::from_file(&example("context.yaml")).expect("context.yaml");
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(state, FaultPlan::new())));
    let mut asked = Vec::new();
    for (i, exchange) in raw.iter().enumerate() {
        assert_eq!(exchange["type"], json!("Exchange"), "#{i}");
        assert_eq!(exchange["response"]["type"], json!("Success"), "#{i}");
        let request: CallbackRequestType =
            serde_yaml_ng::from_str(exchange["request"].as_str().expect("request is a string"))
                .unwrap_or_else(|e| panic!("#{i}: {e}"));
        match &request {
            CallbackRequestType::KubernetesGetResource { .. }
            | CallbackRequestType::KubernetesListResourceNamespace { .. } => asked.push(request.to_string()),
            other => {
                panic!("#{i}: only get_resource and list_resources_by_namespace expected, got {other:?}")
            }
        }
        let served = lookups.answer(request).unwrap_or_else(|e| panic!("#{i}: {e}"));
        let served: Value = serde_json::from_slice(&served).unwrap();
        let recorded: Value = serde_json::from_str(exchange["response"]["payload"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("#{i}: payload is not JSON: {e}"));
        assert_eq!(
            recorded, served,
            "#{i}: payload differs from the context's answer"
        );
    }
    assert_eq!(
        asked,
        [
            "get v1/Namespace emojivoto masks [metadata.annotations]",
            "list v1/ConfigMap in linkerd masks [data]"
        ]
    );

    // the replayed evaluation consumes every exchange, with nothing left over
    let session = kubewarden_engine::hostcalls::replay::ReplaySession::from_file(&example("session.yml"))
        .expect("session.yml");
    let host = replay_host(session);
    let response = evaluate(&host, &request(), &example_settings());
    assert!(response.allowed);
    assert_eq!(replay_leftovers(&host), 0);
}

fn example_settings() -> kubewarden_engine::PolicySettings {
    let text = std::fs::read_to_string(example("settings.yaml")).unwrap();
    settings(serde_yaml_ng::from_str(&text).expect("settings.yaml"))
}

/// settings.yaml is valid, and so are the values it shows in comments.
#[test]
fn example_settings_are_valid() {
    let host = cluster_host(ClusterState::new(), FaultPlan::new());
    assert_eq!(settings_verdict(&host, &example_settings()), (true, None));

    let text = std::fs::read_to_string(example("settings.yaml")).unwrap();
    let commented: String = text
        .lines()
        .skip_while(|l| !l.contains("Values you might set instead"))
        .skip(1)
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let value: Value = serde_yaml_ng::from_str(&commented).expect("commented settings parse");
    assert_eq!(value["proxy"]["logLevel"], json!("warn,linkerd=info"));
    assert_eq!(settings_verdict(&host, &settings(value)), (true, None));
}
