//! Conformance with Linkerd's own webhook fixtures (TestGetPodPatch, TestGetAnnotationPatch), at
//! each release whose fixtures differ: Linkerd's expected patch applied to the input must equal
//! our mutated object, apart from the handler-level additions that Linkerd's unit tests bypass,
//! which are asserted explicitly. Every case runs for every release; the last case of a release
//! prints its count, `conformance <release>: passed/total`.

mod common;

use common::*;
use linkerd_injector_policy::opaque;
use linkerd_injector_policy::outcome::Verdict;
use linkerd_injector_policy::pod;
use linkerd_injector_policy::settings::Settings;
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The releases with their own webhook fixtures.
#[derive(Debug, Clone, Copy)]
enum Release {
    /// Fixtures byte-identical from edge-26.1.1 to edge-26.5.1 (native sidecars off by default).
    Edge26_5_1,
    /// The reference release.
    Edge26_8_3,
}

/// 10 TestGetPodPatch + 10 TestGetAnnotationPatch cases, per release.
const CASES: usize = 20;

struct Tally {
    passed: AtomicUsize,
    done: AtomicUsize,
}

static TALLIES: [Tally; 2] = [const {
    Tally {
        passed: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
    }
}; 2];

impl Release {
    fn tag(self) -> &'static str {
        match self {
            Self::Edge26_5_1 => "edge-26.5.1",
            Self::Edge26_8_3 => "edge-26.8.3",
        }
    }

    fn data(self) -> &'static str {
        match self {
            Self::Edge26_5_1 => "tests/fixtures/linkerd-versions/edge-26.5.1/proxy-injector-fake-data",
            Self::Edge26_8_3 => WEBHOOK_DATA,
        }
    }

    /// Linkerd's webhook config; the values keep `linkerdVersion: dev-undefined`, which renders
    /// as the newest release, so the older release is pinned.
    fn settings(self) -> Settings {
        let mut s = webhook_settings_json();
        if let Self::Edge26_5_1 = self {
            s["policy"]["renderVersion"] = json!(self.tag());
        }
        Settings::from_value(s).expect("conformance settings are valid")
    }

    fn tally(self) -> &'static Tally {
        &TALLIES[self as usize]
    }
}

/// Counts one case of `release` when dropped, passed or panicked; the last one prints the count.
struct Counted {
    release: Release,
    passed: bool,
}

impl Counted {
    fn new(release: Release) -> Self {
        Self {
            release,
            passed: false,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let t = self.release.tally();
        if self.passed {
            t.passed.fetch_add(1, Ordering::SeqCst);
        }
        if t.done.fetch_add(1, Ordering::SeqCst) + 1 == CASES {
            println!(
                "conformance {}: {}/{CASES}",
                self.release.tag(),
                t.passed.load(Ordering::SeqCst)
            );
        }
    }
}

/// TestGetPodPatch. `extra`: annotations the real handler adds that `GetPodPatch` does not
/// (created-by always; namespace-inherited keys when Linkerd's test did not call
/// `AppendNamespaceAnnotations`).
#[rstest]
#[case::inject_empty_ns_enabled(
    "pod-inject-empty.yaml",
    "enabled",
    "pod.patch.json",
    json!({"linkerd.io/inject": "enabled"})
)]
#[case::inject_enabled_ns_enabled("pod-inject-enabled.yaml", "enabled", "pod.patch.json", json!({}))]
#[case::inject_enabled_ns_none("pod-inject-enabled.yaml", "none", "pod.patch.json", json!({}))]
#[case::debug_disabled("pod-with-debug-disabled.yaml", "none", "pod.patch.json", json!({}))]
#[case::debug_enabled(
    "pod-with-debug-enabled.yaml",
    "enabled",
    "pod-with-debug.patch.json",
    json!({})
)]
#[case::custom_debug_tag(
    "pod-with-custom-debug-tag.yaml",
    "enabled",
    "pod-with-custom-debug.patch.json",
    json!({})
)]
#[case::log_level(
    "pod-inject-enabled-log-level.yaml",
    "enabled",
    "pod-log-level.json",
    json!({})
)]
#[case::cpu_ratio(
    "pod-inject-enabled-cpu-ratio.yaml",
    "enabled",
    "pod-cpu-ratio.json",
    json!({})
)]
#[case::namespace_config(
    "pod-inject-enabled.yaml",
    "config",
    "pod-with-ns-annotations.patch.json",
    json!({})
)]
#[case::pod_with_native_sidecar(
    "pod-nativesidecar-inject-enabled.yaml",
    "none",
    "pod.nativesidecar.patch.json",
    json!({})
)]
fn get_pod_patch(
    #[values(Release::Edge26_5_1, Release::Edge26_8_3)] release: Release,
    #[case] input: &str,
    #[case] ns: &str,
    #[case] expected: &str,
    #[case] extra: Value,
) {
    let mut count = Counted::new(release);
    let data = release.data();
    let settings = release.settings();
    let (pod, rs) = with_deployment_owner(load(data, input));
    let cluster = cluster(vec![namespace("kube-public", ns_annotations(ns)), rs]);
    let outcome = admit("Pod", &pod, "kube-public", &settings, &cluster);
    assert!(
        matches!(outcome.verdict, Verdict::Injected { .. }),
        "{input}: {:?}",
        outcome.verdict
    );
    assert_eq!(outcome.warnings, Vec::<String>::new(), "{input}: warnings");
    let ours = outcome.mutated.expect("injected pod is mutated");

    let mut theirs = apply_patch(&pod, &load(data, expected));
    let mut extra = extra;
    extra["linkerd.io/created-by"] = json!(CREATED_BY);
    for (k, v) in extra.as_object().into_iter().flatten() {
        theirs["metadata"]["annotations"][k] = v.clone();
    }
    assert_eq!(
        without_nulls(&ours),
        without_nulls(&theirs),
        "{} {input} in ns {ns} vs {expected}",
        release.tag()
    );
    assert_eq!(lost_path(&pod, &ours, ""), None, "{input}: input field lost");
    count.passed = true;
}

/// TestGetAnnotationPatch on Services, through the whole admission path: the result is exactly
/// Linkerd's.
#[rstest]
#[case::without_ns_opaque("service-without-opaque-ports.yaml", "opaque", Some("annotation.patch.json"))]
#[case::with_ns_opaque("service-with-opaque-ports.yaml", "opaque", None)]
#[case::with_ns_enabled("service-with-opaque-ports.yaml", "enabled", None)]
#[case::without_ns_enabled("service-without-opaque-ports.yaml", "enabled", None)]
#[case::filtered(
    "filter-service-opaque-ports.yaml",
    "enabled",
    Some("filtered-service-opaque-ports.json")
)]
fn get_annotation_patch_service(
    #[values(Release::Edge26_5_1, Release::Edge26_8_3)] release: Release,
    #[case] input: &str,
    #[case] ns: &str,
    #[case] expected: Option<&str>,
) {
    let mut count = Counted::new(release);
    let data = release.data();
    let settings = release.settings();
    let svc = load(data, input);
    let cluster = cluster(vec![namespace("kube-public", ns_annotations(ns))]);
    let outcome = admit("Service", &svc, "kube-public", &settings, &cluster);
    assert_eq!(outcome.verdict, Verdict::NotApplicable);
    match expected {
        Some(patch) => assert_eq!(
            outcome.mutated,
            Some(apply_patch(&svc, &load(data, patch))),
            "{input}"
        ),
        None => assert_eq!(outcome.mutated, None, "{input} in ns {ns} must be unchanged"),
    }
    count.passed = true;
}

/// TestGetAnnotationPatch on Pods: Linkerd's `CreateOpaquePortsPatch` is the annotation part of
/// our skip path; compare the same function on the same input, then check the full admission
/// agrees on the value.
#[rstest]
#[case::without_ns_opaque("pod-without-opaque-ports.yaml", "opaque", Some("annotation.patch.json"))]
#[case::with_ns_opaque("pod-with-opaque-ports.yaml", "opaque", None)]
#[case::with_ns_enabled("pod-with-opaque-ports.yaml", "enabled", None)]
#[case::without_ns_enabled("pod-without-opaque-ports.yaml", "enabled", None)]
#[case::filtered(
    "filter-pod-opaque-ports.yaml",
    "enabled",
    Some("filtered-pod-opaque-ports.json")
)]
fn get_annotation_patch_pod(
    #[values(Release::Edge26_5_1, Release::Edge26_8_3)] release: Release,
    #[case] input: &str,
    #[case] ns: &str,
    #[case] expected: Option<&str>,
) {
    let mut count = Counted::new(release);
    let data = release.data();
    let settings = release.settings();
    let pod = load(data, input);
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
            || Some(&*settings.proxy.opaque_ports),
        )
    };
    let mut ours = pod.clone();
    if let Some(v) = &value {
        ours["metadata"]["annotations"]["config.linkerd.io/opaque-ports"] = json!(v);
    }
    let theirs = match expected {
        Some(patch) => apply_patch(&pod, &load(data, patch)),
        None => pod.clone(),
    };
    assert_eq!(ours, theirs, "{input} in ns {ns}");

    let cluster = cluster(vec![namespace("kube-public", ns_ann)]);
    let outcome = admit("Pod", &pod, "kube-public", &settings, &cluster);
    let admitted = outcome.mutated.unwrap_or(pod);
    assert_eq!(
        admitted.pointer("/metadata/annotations/config.linkerd.io~1opaque-ports"),
        theirs.pointer("/metadata/annotations/config.linkerd.io~1opaque-ports"),
        "{input} in ns {ns}: admission's opaque-ports annotation"
    );
    count.passed = true;
}
