//! The webhook-fixture conformance suite of `tests/conformance.rs`, again, through the compiled
//! module (`../policy.wasm`) and the engine, at each release whose fixtures differ: every case is
//! an AdmissionRequest evaluated in a fresh instance with the context-aware resources of
//! `policy.yaml`; the response's JSON patch is decoded and applied to the request's object, and
//! the result must equal Linkerd's expected patch applied to the same input (plus the
//! handler-level additions the native suite asserts explicitly; `null` members count as absent).
//! Then the version rules through the module: the changes of the window, releases outside it.

mod common;
mod policy_support;

use kubewarden_engine::hostcalls::cluster::ClusterState;
use policy_support::*;
use rstest::rstest;
use serde_json::{Value, json};

const NAMESPACE: &str = FIXTURE_NAMESPACE;

/// A release with its own webhook fixtures: its tag, its data, and the settings that render it
/// (the values keep `linkerdVersion: dev-undefined`, the newest rendering, so older releases are
/// pinned with `policy.renderVersion`).
#[derive(Debug, Clone, Copy)]
struct Release {
    tag: &'static str,
    data: &'static str,
    pinned: bool,
}

const EDGE_26_5_1: Release = Release {
    tag: "edge-26.5.1",
    data: "tests/fixtures/linkerd-versions/edge-26.5.1/proxy-injector-fake-data",
    pinned: true,
};
const EDGE_26_8_3: Release = Release {
    tag: "edge-26.8.3",
    data: WEBHOOK_DATA,
    pinned: false,
};

impl Release {
    fn settings(self) -> Value {
        let mut s = webhook_settings_json();
        if self.pinned {
            s["policy"]["renderVersion"] = json!(self.tag);
        }
        s
    }
}

/// One admission through the module: the object after the response's patch.
fn through_module(
    kind: &str,
    object: &Value,
    ns: &str,
    extra_objects: Vec<Value>,
    uid: &str,
    release: Release,
) -> Result<(Value, kubewarden_engine::AdmissionResponse), String> {
    let mut state = ClusterState::new();
    let objects = [namespace(NAMESPACE, ns_annotations(ns)), neutral_linkerd_config()];
    for o in objects.into_iter().chain(extra_objects) {
        state.insert(o).map_err(|e| format!("cluster state: {e}"))?;
    }
    let host = cluster_host(state, faults(&[]));
    let request = create_request(kind, NAMESPACE, uid, object.clone());
    let response = evaluate(&host, &request, &settings(release.settings()));
    if response.uid != uid || !response.allowed {
        return Err(format!(
            "{kind} in ns {ns}: not allowed: {}",
            serde_json::to_string(&response).unwrap_or_default()
        ));
    }
    Ok((patched(object, &response), response))
}

/// What differs, as a JSON patch from `theirs` to `ours`.
fn mismatch(what: &str, ours: &Value, theirs: &Value) -> String {
    let diff = json_patch::diff(theirs, ours);
    format!(
        "{what}: the module's result differs from Linkerd's; patch from Linkerd's to ours:\n{}",
        serde_json::to_string_pretty(&diff).unwrap_or_default()
    )
}

/// TestGetPodPatch: `extra` are the annotations the real handler adds that `GetPodPatch` does
/// not (created-by always; `linkerd.io/inject` inherited from the namespace).
fn pod_case(
    input: &str,
    ns: &str,
    expected: &str,
    extra: Value,
    uid: &str,
    release: Release,
) -> Result<(), String> {
    let what = format!("{input} in ns {ns} vs {expected}");
    let (pod, rs) = with_deployment_owner(load(release.data, input));
    let (ours, response) = through_module("Pod", &pod, ns, vec![rs], uid, release)?;
    if response.patch.is_none() {
        return Err(format!("{what}: no patch"));
    }
    let mut theirs = apply_patch(&pod, &load(release.data, expected));
    let mut extra = extra;
    extra["linkerd.io/created-by"] = json!(CREATED_BY);
    for (k, v) in extra.as_object().into_iter().flatten() {
        theirs["metadata"]["annotations"][k] = v.clone();
    }
    let (ours_nn, theirs_nn) = (without_nulls(&ours), without_nulls(&theirs));
    if ours_nn != theirs_nn {
        return Err(mismatch(&what, &ours_nn, &theirs_nn));
    }
    if let Some(path) = lost_path(&pod, &ours, "") {
        return Err(format!("{what}: input field lost at {path}"));
    }
    let audit = response.audit_annotations.unwrap_or_default();
    if audit.get("injection").map(String::as_str) != Some("injected") || audit.contains_key("rendering") {
        return Err(format!("{what}: audit annotations {audit:?}"));
    }
    if let Some(w) = response.warnings.filter(|w| !w.is_empty()) {
        return Err(format!("{what}: warnings {w:?}"));
    }
    Ok(())
}

/// TestGetAnnotationPatch for Services: the result is exactly Linkerd's (no patch when Linkerd
/// has none).
fn service_case(
    input: &str,
    ns: &str,
    expected: Option<&str>,
    uid: &str,
    release: Release,
) -> Result<(), String> {
    let what = format!("{input} in ns {ns} vs {}", expected.unwrap_or("no patch"));
    let svc = load(release.data, input);
    let (ours, response) = through_module("Service", &svc, ns, vec![], uid, release)?;
    match expected {
        Some(patch) => {
            let theirs = apply_patch(&svc, &load(release.data, patch));
            if ours != theirs {
                return Err(mismatch(&what, &ours, &theirs));
            }
        }
        None => {
            if let Some(patch) = decoded_patch(&response) {
                return Err(format!(
                    "{what}: must be unchanged, got patch {}",
                    serde_json::to_string(&patch).unwrap_or_default()
                ));
            }
        }
    }
    Ok(())
}

/// TestGetAnnotationPatch for Pods: the native suite compares the core's opaque-ports function;
/// through the module the admitted (injected or skipped) pod's `config.linkerd.io/opaque-ports`
/// annotation must be the one of Linkerd's expected result.
fn pod_annotation_case(
    input: &str,
    ns: &str,
    expected: Option<&str>,
    uid: &str,
    release: Release,
) -> Result<(), String> {
    let what = format!("{input} in ns {ns} vs {}", expected.unwrap_or("no patch"));
    let pod = load(release.data, input);
    let (ours, _) = through_module("Pod", &pod, ns, vec![], uid, release)?;
    let theirs = match expected {
        Some(patch) => apply_patch(&pod, &load(release.data, patch)),
        None => pod.clone(),
    };
    let key = "/metadata/annotations/config.linkerd.io~1opaque-ports";
    // A patch case compares an annotation Linkerd adds; "no patch" asserts we add none.
    if expected.is_some() && theirs.pointer(key).is_none() {
        return Err(format!(
            "{what}: Linkerd's patch adds no opaque-ports annotation to compare"
        ));
    }
    if ours.pointer(key) != theirs.pointer(key) {
        return Err(format!(
            "{what}: opaque-ports annotation {:?}, Linkerd's {:?}",
            ours.pointer(key),
            theirs.pointer(key)
        ));
    }
    Ok(())
}

/// One case of the two Go tables.
enum Case {
    /// TestGetPodPatch: input, namespace case, expected patch, handler-level additions.
    Pod(&'static str, &'static str, &'static str, Value),
    /// TestGetAnnotationPatch on a Service: input, namespace case, expected patch.
    Service(&'static str, &'static str, Option<&'static str>),
    /// TestGetAnnotationPatch on a Pod: input, namespace case, expected patch.
    PodAnnotation(&'static str, &'static str, Option<&'static str>),
}

impl Case {
    fn name(&self) -> String {
        match self {
            Self::Pod(input, ns, expected, _) => format!("TestGetPodPatch {input}/{ns}/{expected}"),
            Self::Service(input, ns, expected) | Self::PodAnnotation(input, ns, expected) => format!(
                "TestGetAnnotationPatch {input}/{ns}/{}",
                expected.unwrap_or("no patch")
            ),
        }
    }

    fn run(&self, uid: &str, release: Release) -> Result<(), String> {
        match self {
            Self::Pod(input, ns, expected, extra) => {
                pod_case(input, ns, expected, extra.clone(), uid, release)
            }
            Self::Service(input, ns, expected) => service_case(input, ns, *expected, uid, release),
            Self::PodAnnotation(input, ns, expected) => {
                pod_annotation_case(input, ns, *expected, uid, release)
            }
        }
    }
}

#[rstest]
#[case::edge_26_5_1(EDGE_26_5_1)]
#[case::edge_26_8_3(EDGE_26_8_3)]
fn webhook_fixtures_through_the_module(#[case] release: Release) {
    use Case::{Pod, PodAnnotation, Service};
    let none = || json!({});
    let cases = [
        // TestGetPodPatch
        Pod(
            "pod-inject-empty.yaml",
            "enabled",
            "pod.patch.json",
            json!({"linkerd.io/inject": "enabled"}),
        ),
        Pod("pod-inject-enabled.yaml", "enabled", "pod.patch.json", none()),
        Pod("pod-inject-enabled.yaml", "none", "pod.patch.json", none()),
        Pod("pod-with-debug-disabled.yaml", "none", "pod.patch.json", none()),
        Pod(
            "pod-with-debug-enabled.yaml",
            "enabled",
            "pod-with-debug.patch.json",
            none(),
        ),
        Pod(
            "pod-with-custom-debug-tag.yaml",
            "enabled",
            "pod-with-custom-debug.patch.json",
            none(),
        ),
        Pod(
            "pod-inject-enabled-log-level.yaml",
            "enabled",
            "pod-log-level.json",
            none(),
        ),
        Pod(
            "pod-inject-enabled-cpu-ratio.yaml",
            "enabled",
            "pod-cpu-ratio.json",
            none(),
        ),
        Pod(
            "pod-inject-enabled.yaml",
            "config",
            "pod-with-ns-annotations.patch.json",
            none(),
        ),
        Pod(
            "pod-nativesidecar-inject-enabled.yaml",
            "none",
            "pod.nativesidecar.patch.json",
            none(),
        ),
        // TestGetAnnotationPatch
        Service(
            "service-without-opaque-ports.yaml",
            "opaque",
            Some("annotation.patch.json"),
        ),
        Service("service-with-opaque-ports.yaml", "opaque", None),
        Service("service-with-opaque-ports.yaml", "enabled", None),
        Service("service-without-opaque-ports.yaml", "enabled", None),
        PodAnnotation(
            "pod-without-opaque-ports.yaml",
            "opaque",
            Some("annotation.patch.json"),
        ),
        PodAnnotation("pod-with-opaque-ports.yaml", "opaque", None),
        PodAnnotation("pod-with-opaque-ports.yaml", "enabled", None),
        PodAnnotation("pod-without-opaque-ports.yaml", "enabled", None),
        Service(
            "filter-service-opaque-ports.yaml",
            "enabled",
            Some("filtered-service-opaque-ports.json"),
        ),
        PodAnnotation(
            "filter-pod-opaque-ports.yaml",
            "enabled",
            Some("filtered-pod-opaque-ports.json"),
        ),
    ];
    let pods = cases.iter().filter(|c| matches!(c, Pod(..))).count();
    assert_eq!(
        (pods, cases.len() - pods),
        (10, 10),
        "10 TestGetPodPatch + 10 TestGetAnnotationPatch cases"
    );

    let total = cases.len();
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        if let Err(e) = case.run(&format!("conformance-{i:02}"), release) {
            failures.push(format!("[{}] {e}", case.name()));
        }
    }
    println!(
        "conformance {}: {}/{total} through the module",
        release.tag,
        total - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// --- the version rules through the module -------------------------------------------------

/// Linkerd's webhook config with `extra` merged over it; the image tags stay `dev-undefined`
/// whatever `linkerdVersion` says, so renderings compare on their version differences only.
fn version_settings(extra: Value) -> Value {
    let mut s = webhook_settings_json();
    s["proxy"] = json!({"image": {"version": "dev-undefined"}});
    for (k, v) in extra.as_object().into_iter().flatten() {
        match (s.get_mut(k).and_then(Value::as_object_mut), v.as_object()) {
            (Some(base), Some(over)) => base.extend(over.clone()),
            _ => s[k] = v.clone(),
        }
    }
    s
}

/// `pod-inject-enabled.yaml` with `annotations`, in a namespace with `ns_annotations`.
fn admit_pod(
    settings_json: Value,
    annotations: Value,
    ns_annotations: Value,
) -> (Value, kubewarden_engine::AdmissionResponse) {
    let (mut pod, rs) = with_deployment_owner(load(WEBHOOK_DATA, "pod-inject-enabled.yaml"));
    for (k, v) in annotations.as_object().into_iter().flatten() {
        pod["metadata"]["annotations"][k] = v.clone();
    }
    let mut state = ClusterState::new();
    for o in [namespace(NAMESPACE, ns_annotations), rs, neutral_linkerd_config()] {
        state.insert(o).expect("cluster state");
    }
    let host = cluster_host(state, faults(&[]));
    let request = create_request("Pod", NAMESPACE, "version-case", pod.clone());
    let response = evaluate(&host, &request, &settings(settings_json));
    (patched(&pod, &response), response)
}

fn enabled() -> Value {
    json!({"linkerd.io/inject": "enabled"})
}

fn proxy_env<'a>(pod: &'a Value, name: &str) -> Option<&'a str> {
    ["initContainers", "containers"]
        .iter()
        .filter_map(|k| pod["spec"][k].as_array())
        .flatten()
        .filter(|c| c["name"] == "linkerd-proxy")
        .filter_map(|c| c["env"].as_array())
        .flatten()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
}

#[rstest]
#[case::before_first_tag("edge-26.4.2", None)]
#[case::first_tag("edge-26.4.3", Some("p"))]
fn additional_env_annotation_through_the_module(#[case] v: &str, #[case] value: Option<&str>) {
    let (pod, response) = admit_pod(
        version_settings(json!({"linkerdVersion": v})),
        json!({"config.linkerd.io/proxy-additional-env": r#"[{"name":"FROM_POD","value":"p"}]"#}),
        enabled(),
    );
    assert!(response.allowed);
    assert_eq!(proxy_env(&pod, "FROM_POD"), value);
}

#[rstest]
#[case::before_first_tag("edge-26.5.1", ["linkerd-init"], ["nginx", "linkerd-proxy"])]
#[case::first_tag("edge-26.5.2", ["linkerd-init", "linkerd-proxy"], ["nginx"])]
fn native_sidecar_default_through_the_module<const I: usize, const C: usize>(
    #[case] v: &str,
    #[case] init: [&str; I],
    #[case] containers: [&str; C],
) {
    let (pod, _) = admit_pod(
        version_settings(json!({"linkerdVersion": v})),
        json!({}),
        enabled(),
    );
    let names = |k: &str| -> Vec<String> {
        pod["spec"][k]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(names("initContainers"), init);
    let mut ours = names("containers");
    ours.sort();
    let mut theirs = containers.map(str::to_owned).to_vec();
    theirs.sort();
    assert_eq!(ours, theirs);
}

#[rstest]
#[case::before_first_tag("edge-26.6.3", "cluster.example")]
#[case::first_tag("edge-26.7.1", "trust.example")]
fn trace_collector_identity_through_the_module(#[case] v: &str, #[case] domain: &str) {
    let (pod, _) = admit_pod(
        version_settings(json!({
            "linkerdVersion": v, "clusterDomain": "cluster.example", "identityTrustDomain": "trust.example",
            "proxy": {"image": {"version": "dev-undefined"}, "tracing": {"enabled": true, "collector": {
                "endpoint": "collector.tracing:4317",
                "meshIdentity": {"serviceAccountName": "collector", "namespace": "tracing"}}}}
        })),
        json!({}),
        enabled(),
    );
    assert_eq!(
        proxy_env(&pod, "LINKERD2_PROXY_TRACE_COLLECTOR_SVC_NAME"),
        Some(format!("collector.tracing.serviceaccount.identity.linkerd.{domain}").as_str())
    );
}

#[rstest]
#[case::newer_edge("edge-26.9.1")]
#[case::stable("stable-2.14.0")]
fn outside_the_window_rejected_through_the_module(#[case] v: &str) {
    let (_, response) = admit_pod(
        version_settings(json!({"linkerdVersion": v, "policy": {"versionOutsideWindow": "reject"}})),
        json!({}),
        enabled(),
    );
    assert!(!response.allowed);
    assert_eq!(response.patch, None);
    assert_eq!(
        response.status.and_then(|s| s.message),
        Some(format!(
            "linkerdVersion {v} is outside the Linkerd releases this policy renders exactly (edge-26.1.1 to edge-26.8.3) and policy.versionOutsideWindow is reject; pin one with policy.renderVersion, or use a policy release that knows {v}"
        ))
    );
}

/// `validate_settings` refuses a pin outside the window, naming the key.
#[test]
fn render_version_outside_the_window_is_refused_by_validate_settings() {
    let host = cluster_host(ClusterState::new(), faults(&[]));
    let s = settings(json!({"policy": {"renderVersion": "edge-26.9.1"}}));
    assert_eq!(
        settings_verdict(&host, &s),
        (
            false,
            Some(
                "settings.policy.renderVersion: must be an edge release from edge-26.1.1 to edge-26.8.3 such as \"edge-26.1.1\", got \"edge-26.9.1\""
                    .to_string()
            )
        )
    );
}
