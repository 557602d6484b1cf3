//! Conformance with Linkerd's own webhook fixtures (TestGetPodPatch, TestGetAnnotationPatch):
//! Linkerd's expected patch applied to the input must equal our mutated object, apart from the
//! handler-level additions that Linkerd's unit tests bypass, which are asserted explicitly.

mod common;

use common::*;
use linkerd_injector_policy::cluster::MemoryCluster;
use linkerd_injector_policy::opaque;
use linkerd_injector_policy::outcome::Verdict;
use linkerd_injector_policy::pod;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};

static PASSED: AtomicUsize = AtomicUsize::new(0);
const POD_CASES: usize = 10;
const ANNOTATION_CASES: usize = 10;

/// `extra`: annotations the real handler adds that `GetPodPatch` does not (created-by always;
/// namespace-inherited keys when Linkerd's test did not call `AppendNamespaceAnnotations`).
fn pod_case(input: &str, ns: &str, expected: &str, extra: Value) {
    let settings = webhook_settings();
    let (pod, rs) = with_deployment_owner(load(WEBHOOK_DATA, input));
    let cluster = MemoryCluster::new(vec![namespace("kube-public", ns_annotations(ns)), rs]);
    let outcome = admit("Pod", &pod, "kube-public", &settings, &cluster);
    assert!(
        matches!(outcome.verdict, Verdict::Injected { .. }),
        "{input}: {:?}",
        outcome.verdict
    );
    let ours = outcome.mutated.expect("injected pod is mutated");

    let mut theirs = apply_patch(&pod, &load(WEBHOOK_DATA, expected));
    let mut extra = extra;
    extra["linkerd.io/created-by"] = json!(CREATED_BY);
    for (k, v) in extra.as_object().into_iter().flatten() {
        theirs["metadata"]["annotations"][k] = v.clone();
    }
    assert_eq!(
        without_nulls(&ours),
        without_nulls(&theirs),
        "{input} in ns {ns} vs {expected}"
    );
    assert_eq!(lost_path(&pod, &ours, ""), None, "{input}: input field lost");
    PASSED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn get_pod_patch_fixtures() {
    let inject = json!({"linkerd.io/inject": "enabled"});
    pod_case("pod-inject-empty.yaml", "enabled", "pod.patch.json", inject);
    pod_case("pod-inject-enabled.yaml", "enabled", "pod.patch.json", json!({}));
    pod_case("pod-inject-enabled.yaml", "none", "pod.patch.json", json!({}));
    pod_case(
        "pod-with-debug-disabled.yaml",
        "none",
        "pod.patch.json",
        json!({}),
    );
    pod_case(
        "pod-with-debug-enabled.yaml",
        "enabled",
        "pod-with-debug.patch.json",
        json!({}),
    );
    pod_case(
        "pod-with-custom-debug-tag.yaml",
        "enabled",
        "pod-with-custom-debug.patch.json",
        json!({}),
    );
    pod_case(
        "pod-inject-enabled-log-level.yaml",
        "enabled",
        "pod-log-level.json",
        json!({}),
    );
    pod_case(
        "pod-inject-enabled-cpu-ratio.yaml",
        "enabled",
        "pod-cpu-ratio.json",
        json!({}),
    );
    pod_case(
        "pod-inject-enabled.yaml",
        "config",
        "pod-with-ns-annotations.patch.json",
        json!({}),
    );
    pod_case(
        "pod-nativesidecar-inject-enabled.yaml",
        "none",
        "pod.nativesidecar.patch.json",
        json!({}),
    );
    report();
}

/// Services go through the whole admission path: the result is exactly Linkerd's.
fn service_case(input: &str, ns: &str, expected: Option<&str>) {
    let settings = webhook_settings();
    let svc = load(WEBHOOK_DATA, input);
    let cluster = MemoryCluster::new(vec![namespace("kube-public", ns_annotations(ns))]);
    let outcome = admit("Service", &svc, "kube-public", &settings, &cluster);
    assert_eq!(outcome.verdict, Verdict::NotApplicable);
    match expected {
        Some(patch) => assert_eq!(
            outcome.mutated,
            Some(apply_patch(&svc, &load(WEBHOOK_DATA, patch))),
            "{input}"
        ),
        None => assert_eq!(outcome.mutated, None, "{input} in ns {ns} must be unchanged"),
    }
    PASSED.fetch_add(1, Ordering::SeqCst);
}

/// Pods: Linkerd's `CreateOpaquePortsPatch` is the annotation part of our skip path; compare
/// the same function on the same input, then check the full admission agrees on the value.
fn pod_annotation_case(input: &str, ns: &str, expected: Option<&str>) {
    let settings = webhook_settings();
    let pod = load(WEBHOOK_DATA, input);
    let ns_ann = ns_annotations(ns);
    let ann = pod::string_map(&pod["metadata"], "annotations");
    let value = if ann.contains_key("config.linkerd.io/opaque-ports") {
        None
    } else {
        opaque::default_annotation(
            "Pod",
            &pod["spec"],
            ns_ann
                .get("config.linkerd.io/opaque-ports")
                .and_then(Value::as_str),
            &settings.proxy.opaque_ports,
        )
    };
    let mut ours = pod.clone();
    if let Some(v) = &value {
        ours["metadata"]["annotations"]["config.linkerd.io/opaque-ports"] = json!(v);
    }
    let theirs = match expected {
        Some(patch) => apply_patch(&pod, &load(WEBHOOK_DATA, patch)),
        None => pod.clone(),
    };
    assert_eq!(ours, theirs, "{input} in ns {ns}");

    let cluster = MemoryCluster::new(vec![namespace("kube-public", ns_ann)]);
    let outcome = admit("Pod", &pod, "kube-public", &settings, &cluster);
    let admitted = outcome.mutated.unwrap_or(pod);
    assert_eq!(
        admitted.pointer("/metadata/annotations/config.linkerd.io~1opaque-ports"),
        theirs.pointer("/metadata/annotations/config.linkerd.io~1opaque-ports"),
        "{input} in ns {ns}: admission's opaque-ports annotation"
    );
    PASSED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn get_annotation_patch_fixtures() {
    service_case(
        "service-without-opaque-ports.yaml",
        "opaque",
        Some("annotation.patch.json"),
    );
    service_case("service-with-opaque-ports.yaml", "opaque", None);
    service_case("service-with-opaque-ports.yaml", "enabled", None);
    service_case("service-without-opaque-ports.yaml", "enabled", None);
    pod_annotation_case(
        "pod-without-opaque-ports.yaml",
        "opaque",
        Some("annotation.patch.json"),
    );
    pod_annotation_case("pod-with-opaque-ports.yaml", "opaque", None);
    pod_annotation_case("pod-with-opaque-ports.yaml", "enabled", None);
    pod_annotation_case("pod-without-opaque-ports.yaml", "enabled", None);
    service_case(
        "filter-service-opaque-ports.yaml",
        "enabled",
        Some("filtered-service-opaque-ports.json"),
    );
    pod_annotation_case(
        "filter-pod-opaque-ports.yaml",
        "enabled",
        Some("filtered-pod-opaque-ports.json"),
    );
    report();
}

/// Both tables run in one process; whichever finishes second prints the total.
fn report() {
    let n = PASSED.load(Ordering::SeqCst);
    if n == POD_CASES + ANNOTATION_CASES {
        println!(
            "conformance: {n}/{} webhook fixtures",
            POD_CASES + ANNOTATION_CASES
        );
    }
}
