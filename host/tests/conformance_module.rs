//! The webhook-fixture conformance suite of `tests/conformance.rs`, again, through the compiled
//! module (`../policy.wasm`) and the engine: every case is an AdmissionRequest evaluated in a
//! fresh instance with the context-aware resources of `policy.yaml`; the response's JSON patch
//! is decoded and applied to the request's object, and the result must equal Linkerd's expected
//! patch applied to the same input (plus the handler-level additions the native suite asserts
//! explicitly; `null` members count as absent).

mod common;
mod policy_support;

use injector_host::context::ClusterState;
use policy_support::*;
use serde_json::{Value, json};

const NAMESPACE: &str = FIXTURE_NAMESPACE;

/// One admission through the module: the object after the response's patch.
fn through_module(
    kind: &str,
    object: &Value,
    ns: &str,
    extra_objects: Vec<Value>,
    uid: &str,
) -> Result<(Value, injector_host::AdmissionResponse), String> {
    let mut state = ClusterState::new();
    for o in std::iter::once(namespace(NAMESPACE, ns_annotations(ns))).chain(extra_objects) {
        state.insert(o).map_err(|e| format!("cluster state: {e}"))?;
    }
    let host = cluster_host(state, faults(&[]));
    let request = create_request(kind, NAMESPACE, uid, object.clone());
    let response = evaluate(&host, &request, &settings(webhook_settings_json()));
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
fn pod_case(input: &str, ns: &str, expected: &str, extra: Value, uid: &str) -> Result<(), String> {
    let what = format!("{input} in ns {ns} vs {expected}");
    let (pod, rs) = with_deployment_owner(load(WEBHOOK_DATA, input));
    let (ours, response) = through_module("Pod", &pod, ns, vec![rs], uid)?;
    if response.patch.is_none() {
        return Err(format!("{what}: no patch"));
    }
    let mut theirs = apply_patch(&pod, &load(WEBHOOK_DATA, expected));
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
    if audit.get("injection").map(String::as_str) != Some("injected") {
        return Err(format!("{what}: audit annotations {audit:?}"));
    }
    Ok(())
}

/// TestGetAnnotationPatch for Services: the result is exactly Linkerd's (no patch when Linkerd
/// has none).
fn service_case(input: &str, ns: &str, expected: Option<&str>, uid: &str) -> Result<(), String> {
    let what = format!("{input} in ns {ns} vs {}", expected.unwrap_or("no patch"));
    let svc = load(WEBHOOK_DATA, input);
    let (ours, response) = through_module("Service", &svc, ns, vec![], uid)?;
    match expected {
        Some(patch) => {
            let theirs = apply_patch(&svc, &load(WEBHOOK_DATA, patch));
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
fn pod_annotation_case(input: &str, ns: &str, expected: Option<&str>, uid: &str) -> Result<(), String> {
    let what = format!("{input} in ns {ns} vs {}", expected.unwrap_or("no patch"));
    let pod = load(WEBHOOK_DATA, input);
    let (ours, _) = through_module("Pod", &pod, ns, vec![], uid)?;
    let theirs = match expected {
        Some(patch) => apply_patch(&pod, &load(WEBHOOK_DATA, patch)),
        None => pod.clone(),
    };
    let key = "/metadata/annotations/config.linkerd.io~1opaque-ports";
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

    fn run(&self, uid: &str) -> Result<(), String> {
        match self {
            Self::Pod(input, ns, expected, extra) => pod_case(input, ns, expected, extra.clone(), uid),
            Self::Service(input, ns, expected) => service_case(input, ns, *expected, uid),
            Self::PodAnnotation(input, ns, expected) => pod_annotation_case(input, ns, *expected, uid),
        }
    }
}

#[test]
fn webhook_fixtures_through_the_module() {
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
        if let Err(e) = case.run(&format!("conformance-{i:02}")) {
            failures.push(format!("[{}] {e}", case.name()));
        }
    }
    println!(
        "conformance: {}/{total} through the module",
        total - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
