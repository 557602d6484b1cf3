//! Linkerd versions: each injector change of the window on both sides of its first tag,
//! `policy.renderVersion`, the chart's version-dependent `proxy.nativeSidecar` default,
//! releases outside the window (warning + audit annotation, or rejection) and version strings
//! that are not release tags.

mod common;

use common::*;
use linkerd_injector_policy::cluster::MemoryCluster;
use linkerd_injector_policy::outcome::{Outcome, Verdict};
use linkerd_injector_policy::settings::Settings;
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};

const OLD_DATA: &str = "tests/fixtures/linkerd-versions/edge-26.5.1/proxy-injector-fake-data";

/// Linkerd's webhook config with `extra` merged in; the image tags stay `dev-undefined` whatever
/// `linkerdVersion` is, so renderings of different versions compare on their differences only.
fn settings(extra: Value) -> Settings {
    let mut s = webhook_settings_json();
    s["proxy"] = json!({"image": {"version": "dev-undefined"}});
    merge(&mut s, extra);
    Settings::from_value(s).expect("settings are valid")
}

fn version(v: &str) -> Value {
    json!({"linkerdVersion": v})
}

/// `pod-inject-enabled.yaml` (with `annotations` added) admitted in a namespace with
/// `ns_annotations`.
fn inject(s: &Settings, annotations: Value, ns_annotations: Value) -> (Value, Outcome) {
    let (mut pod, rs) = with_deployment_owner(load(WEBHOOK_DATA, "pod-inject-enabled.yaml"));
    for (k, v) in annotations.as_object().into_iter().flatten() {
        pod["metadata"]["annotations"][k] = v.clone();
    }
    let cluster = cluster(vec![namespace(FIXTURE_NAMESPACE, ns_annotations), rs]);
    let outcome = admit("Pod", &pod, FIXTURE_NAMESPACE, s, &cluster);
    (pod, outcome)
}

fn injected(s: &Settings) -> Outcome {
    let (_, outcome) = inject(s, json!({}), json!({"linkerd.io/inject": "enabled"}));
    assert!(
        matches!(outcome.verdict, Verdict::Injected { .. }),
        "{:?}",
        outcome.verdict
    );
    outcome
}

fn mutated(outcome: &Outcome) -> &Value {
    outcome.mutated.as_ref().expect("injected pod is mutated")
}

/// The `linkerd-proxy` container, wherever it was placed.
fn proxy(pod: &Value) -> &Value {
    ["initContainers", "containers"]
        .iter()
        .filter_map(|k| pod["spec"][k].as_array())
        .flatten()
        .find(|c| c["name"] == "linkerd-proxy")
        .expect("a linkerd-proxy container")
}

fn env<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    proxy(pod)["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| &e["value"])
}

// --- config.linkerd.io/proxy-additional-env, from edge-26.4.3 -----------------------------

const EXTRA_ENV: &str = r#"[{"name":"FROM_POD","value":"p"}]"#;
const NS_EXTRA_ENV: &str = r#"[{"name":"FROM_NS","value":"n"}]"#;

#[rstest]
#[case::before_first_tag("edge-26.4.2", None, None)]
#[case::first_tag("edge-26.4.3", Some("p"), Some("n"))]
#[case::oldest("edge-26.1.1", None, None)]
#[case::newest("edge-26.8.3", Some("p"), Some("n"))]
fn additional_env_annotation(#[case] v: &str, #[case] from_pod: Option<&str>, #[case] from_ns: Option<&str>) {
    let (_, outcome) = inject(
        &settings(version(v)),
        json!({"config.linkerd.io/proxy-additional-env": EXTRA_ENV}),
        json!({"linkerd.io/inject": "enabled", "config.linkerd.io/proxy-additional-env": NS_EXTRA_ENV}),
    );
    let pod = mutated(&outcome);
    assert_eq!(env(pod, "FROM_POD").and_then(Value::as_str), from_pod);
    assert_eq!(env(pod, "FROM_NS").and_then(Value::as_str), from_ns);
    assert_eq!(outcome.warnings, Vec::<String>::new());
}

/// The namespace's value is written onto the pod only by an injector that knows the key.
#[rstest]
#[case::before_first_tag("edge-26.4.2", None)]
#[case::first_tag("edge-26.4.3", Some(NS_EXTRA_ENV))]
fn additional_env_inherited_from_the_namespace(#[case] v: &str, #[case] written: Option<&str>) {
    let (_, outcome) = inject(
        &settings(version(v)),
        json!({}),
        json!({"linkerd.io/inject": "enabled", "config.linkerd.io/proxy-additional-env": NS_EXTRA_ENV}),
    );
    let annotation =
        mutated(&outcome).pointer("/metadata/annotations/config.linkerd.io~1proxy-additional-env");
    assert_eq!(annotation.and_then(Value::as_str), written);
}

/// `proxy.additionalEnv` from the values is older than the window: honoured on both sides.
#[rstest]
#[case::before_first_tag("edge-26.4.2")]
#[case::first_tag("edge-26.4.3")]
fn additional_env_values_on_both_sides(#[case] v: &str) {
    let s = settings(
        json!({"linkerdVersion": v, "proxy": {"additionalEnv": [{"name": "FROM_VALUES", "value": "v"}]}}),
    );
    assert_eq!(env(mutated(&injected(&s)), "FROM_VALUES"), Some(&json!("v")));
}

// --- proxy.nativeSidecar default true, from edge-26.5.2 -----------------------------------

/// Linkerd's own fixture patch of each side, reached from `linkerdVersion` (no pin).
#[rstest]
#[case::before_first_tag("edge-26.5.1", OLD_DATA)]
#[case::first_tag("edge-26.5.2", WEBHOOK_DATA)]
#[case::oldest("edge-26.1.1", OLD_DATA)]
#[case::newest("edge-26.8.3", WEBHOOK_DATA)]
fn native_sidecar_default_renders_that_release_fixture(#[case] v: &str, #[case] data: &str) {
    let (pod, outcome) = inject(
        &settings(version(v)),
        json!({}),
        json!({"linkerd.io/inject": "enabled"}),
    );
    let mut theirs = apply_patch(&pod, &load(data, "pod.patch.json"));
    theirs["metadata"]["annotations"]["linkerd.io/created-by"] = json!(CREATED_BY);
    assert_eq!(without_nulls(mutated(&outcome)), without_nulls(&theirs));
}

/// The chart default applies only to an unset key: an explicit value always wins.
#[rstest]
#[case::unset_before_first_tag(json!({"linkerdVersion": "edge-26.5.1"}), false)]
#[case::unset_first_tag(json!({"linkerdVersion": "edge-26.5.2"}), true)]
#[case::unset_oldest(json!({"linkerdVersion": "edge-26.1.1"}), false)]
#[case::unset_default_version(json!({}), true)]
#[case::unset_placeholder(json!({"linkerdVersion": "dev-undefined"}), true)]
#[case::unset_outside_window(json!({"linkerdVersion": "stable-2.14.0"}), true)]
#[case::unset_pinned_old(json!({"linkerdVersion": "edge-26.8.3", "policy": {"renderVersion": "edge-26.5.1"}}), false)]
#[case::unset_pinned_new(json!({"linkerdVersion": "edge-26.5.1", "policy": {"renderVersion": "edge-26.5.2"}}), true)]
#[case::null_is_unset(json!({"linkerdVersion": "edge-26.5.1", "proxy": {"nativeSidecar": null}}), false)]
#[case::explicit_true_old(json!({"linkerdVersion": "edge-26.5.1", "proxy": {"nativeSidecar": true}}), true)]
#[case::explicit_false_new(json!({"linkerdVersion": "edge-26.8.3", "proxy": {"nativeSidecar": false}}), false)]
#[case::explicit_false_pinned_new(
    json!({"policy": {"renderVersion": "edge-26.8.3"}, "proxy": {"nativeSidecar": false}}),
    false
)]
fn native_sidecar_chart_default(#[case] doc: Value, #[case] native: bool) {
    let s = Settings::from_value(doc).expect("valid settings");
    assert_eq!(s.proxy.native_sidecar, native);
}

/// A whole edge-26.5.1 values document states `nativeSidecar: false`: it stays off even when
/// `linkerdVersion` says a newer release.
#[test]
fn pasted_old_chart_values_keep_their_native_sidecar() {
    let mut values = load("tests/fixtures/linkerd-versions/edge-26.5.1", "values.yaml");
    values["linkerdVersion"] = json!("edge-26.8.3");
    assert!(
        !Settings::from_value(values)
            .expect("chart values are valid settings")
            .proxy
            .native_sidecar
    );
}

// --- trace-collector identity from the trust domain, from edge-26.7.1 ---------------------

fn tracing(v: &str) -> Settings {
    settings(json!({
        "linkerdVersion": v,
        "clusterDomain": "cluster.example",
        "identityTrustDomain": "trust.example",
        "proxy": {"tracing": {"enabled": true, "collector": {"endpoint": "collector.tracing.svc.cluster.example:4317",
            "meshIdentity": {"serviceAccountName": "collector", "namespace": "tracing"}}}}
    }))
}

#[rstest]
#[case::before_first_tag("edge-26.6.3", "cluster.example")]
#[case::first_tag("edge-26.7.1", "trust.example")]
#[case::oldest("edge-26.1.1", "cluster.example")]
#[case::newest("edge-26.8.3", "trust.example")]
fn trace_collector_identity(#[case] v: &str, #[case] domain: &str) {
    let outcome = injected(&tracing(v));
    let pod = mutated(&outcome);
    assert_eq!(
        env(pod, "LINKERD2_PROXY_TRACE_COLLECTOR_SVC_NAME"),
        Some(&json!(format!(
            "collector.tracing.serviceaccount.identity.linkerd.{domain}"
        )))
    );
    // The address and the proxy's own identity do not change with the release.
    assert_eq!(
        env(pod, "LINKERD2_PROXY_TRACE_COLLECTOR_SVC_ADDR"),
        Some(&json!("collector.tracing.svc.cluster.example:4317"))
    );
    assert_eq!(
        env(pod, "LINKERD2_PROXY_IDENTITY_LOCAL_NAME"),
        Some(&json!(
            "$(_pod_sa).$(_pod_ns).serviceaccount.identity.linkerd.trust.example"
        ))
    );
}

// --- outside the window ------------------------------------------------------------------

/// Rendered exactly as edge-26.8.3 would, with a warning and an audit annotation naming both
/// versions.
#[rstest]
#[case::edge_2025("edge-25.12.3")]
#[case::newer_edge("edge-26.9.1")]
#[case::next_patch("edge-26.8.4")]
#[case::stable("stable-2.14.0")]
fn outside_the_window_renders_the_newest_and_says_so(#[case] v: &str) {
    let outcome = injected(&settings(version(v)));
    let newest = injected(&settings(version("edge-26.8.3")));
    assert_eq!(outcome.mutated, newest.mutated);
    assert_eq!(
        outcome.warnings,
        vec![format!(
            "linkerdVersion {v} is outside the Linkerd releases this policy renders exactly (edge-26.1.1 to edge-26.8.3); the proxy is rendered as edge-26.8.3's injector renders it (policy.versionOutsideWindow: renderNewest)"
        )]
    );
    assert_eq!(
        outcome.audit_annotations.get("rendering").map(String::as_str),
        Some(format!("edge-26.8.3 for linkerdVersion {v} (outside edge-26.1.1 to edge-26.8.3)").as_str())
    );
    assert_eq!(
        outcome.audit_annotations.get("injection").map(String::as_str),
        Some("injected")
    );
}

#[rstest]
#[case::edge_2025("edge-25.12.3")]
#[case::newer_edge("edge-26.9.1")]
#[case::stable("stable-2.14.0")]
fn outside_the_window_rejects_when_asked(#[case] v: &str) {
    let (_, outcome) = inject(
        &settings(json!({"linkerdVersion": v, "policy": {"versionOutsideWindow": "reject"}})),
        json!({}),
        json!({"linkerd.io/inject": "enabled"}),
    );
    assert_eq!(
        outcome,
        Outcome::rejected(format!(
            "linkerdVersion {v} is outside the Linkerd releases this policy renders exactly (edge-26.1.1 to edge-26.8.3) and policy.versionOutsideWindow is reject; pin one with policy.renderVersion, or use a policy release that knows {v}"
        ))
    );
}

/// Inside the window, and for placeholders, `reject` changes nothing.
#[rstest]
#[case::in_window("edge-26.5.1")]
#[case::placeholder("dev-undefined")]
fn reject_leaves_known_versions_alone(#[case] v: &str) {
    let s = settings(json!({"linkerdVersion": v, "policy": {"versionOutsideWindow": "reject"}}));
    assert_eq!(injected(&s).warnings, Vec::<String>::new());
}

/// Pods that get no proxy are not rendered: no warning about the version, no rejection.
#[test]
fn outside_the_window_does_not_touch_skipped_pods() {
    let s = settings(json!({"linkerdVersion": "edge-26.9.1", "policy": {"versionOutsideWindow": "reject"}}));
    let (_, outcome) = inject(&s, json!({"linkerd.io/inject": "disabled"}), json!({}));
    assert!(
        matches!(outcome.verdict, Verdict::Skipped(_)),
        "{:?}",
        outcome.verdict
    );
    assert_eq!(outcome.warnings, Vec::<String>::new());
}

/// A pin is the admin's choice: the values' version is not second-guessed.
#[test]
fn a_pin_renders_quietly_whatever_linkerd_version_says() {
    let pinned = injected(&settings(
        json!({"linkerdVersion": "edge-26.9.1", "policy": {"renderVersion": "edge-26.5.1"}}),
    ));
    let old = injected(&settings(version("edge-26.5.1")));
    assert_eq!(pinned.mutated, old.mutated);
    assert_eq!(pinned.warnings, Vec::<String>::new());
    assert_eq!(pinned.audit_annotations.get("rendering"), None);
}

// --- not release tags ---------------------------------------------------------------------

/// Development builds and the placeholders of Linkerd's fixtures and goldens render as the
/// newest release, silently.
#[rstest]
#[case::dev_undefined("dev-undefined")]
#[case::install_golden("install-control-plane-version")]
#[case::helm_golden("linkerd-version")]
#[case::cli_golden("test-inject-control-plane-version")]
#[case::git_describe("edge-26.8.3-1-gb24cd4059")]
#[case::git_sha("git-b24cd405")]
fn placeholders_render_as_the_newest(#[case] v: &str) {
    let outcome = injected(&tracing(v));
    let newest = injected(&tracing("edge-26.8.3"));
    assert_eq!(outcome.mutated, newest.mutated);
    assert_eq!(outcome.warnings, Vec::<String>::new());
    assert_eq!(outcome.audit_annotations.get("rendering"), None);
    assert!(
        Settings::from_value(version(v))
            .expect("valid")
            .proxy
            .native_sidecar
    );
}

// --- the settings --------------------------------------------------------------------------

#[rstest]
#[case::stable("stable-2.14.0")]
#[case::newer_edge("edge-26.9.1")]
#[case::older_edge("edge-25.12.3")]
#[case::placeholder("dev-undefined")]
#[case::git_describe("edge-26.8.3-1-gb24cd4059")]
fn render_version_must_be_a_release_in_the_window(#[case] v: &str) {
    let err = Settings::from_value(json!({"policy": {"renderVersion": v}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "settings.policy.renderVersion: must be an edge release from edge-26.1.1 to edge-26.8.3 such as \"edge-26.1.1\", got \"{v}\""
        )
    );
}

#[rstest]
#[case::oldest("edge-26.1.1")]
#[case::newest("edge-26.8.3")]
fn render_version_accepts_the_window_ends(#[case] v: &str) {
    let s = Settings::from_value(json!({"policy": {"renderVersion": v}})).expect("valid");
    assert_eq!(s.policy.render_version.map(|e| e.to_string()).as_deref(), Some(v));
}

#[rstest]
#[case::empty(json!(""))]
#[case::null(json!(null))]
fn render_version_empty_or_null_is_unset(#[case] v: Value) {
    let s = Settings::from_value(json!({"policy": {"renderVersion": v}})).expect("valid");
    assert_eq!(s.policy.render_version, None);
}

#[rstest]
#[case::not_a_string(
    json!({"policy": {"renderVersion": 26}}),
    "settings.policy.renderVersion: invalid type: integer `26`, expected a string"
)]
#[case::unknown_choice(
    json!({"policy": {"versionOutsideWindow": "ignore"}}),
    "settings.policy.versionOutsideWindow: unknown variant `ignore`, expected `renderNewest` or `reject`"
)]
fn version_settings_errors_name_the_key(#[case] doc: Value, #[case] message: &str) {
    assert_eq!(Settings::from_value(doc).unwrap_err().to_string(), message);
}

// --- the version of the control plane's linkerd-config ----------------------------------

/// Settings that leave `linkerdVersion` to the cluster's values.
fn cluster_settings(policy: Value) -> Settings {
    let mut s =
        json!({"identityTrustAnchorsPEM": "IdentityTrustAnchorsPEM", "policy": {"createdBy": CREATED_BY}});
    merge(&mut s["policy"], policy);
    Settings::from_value(s).expect("settings are valid")
}

/// `pod-inject-enabled.yaml` with the control plane's values `values`.
fn inject_with_values(s: &Settings, values: &str) -> Outcome {
    let (pod, rs) = with_deployment_owner(load(WEBHOOK_DATA, "pod-inject-enabled.yaml"));
    let cluster = MemoryCluster::new(vec![
        namespace(FIXTURE_NAMESPACE, json!({"linkerd.io/inject": "enabled"})),
        rs,
        linkerd_config(values),
    ]);
    let outcome = admit("Pod", &pod, FIXTURE_NAMESPACE, s, &cluster);
    assert!(
        matches!(outcome.verdict, Verdict::Injected { .. }),
        "{:?}",
        outcome.verdict
    );
    outcome
}

fn proxy_is_native(outcome: &Outcome) -> bool {
    let init = &mutated(outcome)["spec"]["initContainers"];
    init.as_array()
        .into_iter()
        .flatten()
        .any(|c| c["name"] == "linkerd-proxy")
}

/// The release named by the cluster's values picks the chart default of its keys left unset.
#[rstest]
#[case::before_first_tag("linkerdVersion: edge-26.5.1\n", false)]
#[case::first_tag("linkerdVersion: edge-26.5.2\n", true)]
#[case::explicit_wins("linkerdVersion: edge-26.5.1\nproxy:\n  nativeSidecar: true\n", true)]
fn native_sidecar_default_from_linkerd_config(#[case] values: &str, #[case] native: bool) {
    let outcome = inject_with_values(&cluster_settings(json!({})), values);
    assert_eq!(proxy_is_native(&outcome), native);
    assert_eq!(outcome.warnings, Vec::<String>::new());
}

/// Linkerd's own install goldens: the version is a placeholder (rendered as the newest, silently)
/// and `nativeSidecar` is stated, so each release's ConfigMap gives that release's placement.
#[rstest]
#[case::edge_26_5_1("edge-26.5.1", false)]
#[case::edge_26_8_3("edge-26.8.3", true)]
fn install_goldens_keep_their_placement(#[case] tag: &str, #[case] native: bool) {
    let values = linkerd_config_values(tag, "install_default");
    let outcome = inject_with_values(&cluster_settings(json!({})), &values);
    assert_eq!(proxy_is_native(&outcome), native);
    assert_eq!(outcome.warnings, Vec::<String>::new());
    assert_eq!(outcome.audit_annotations.get("rendering"), None);
}

#[test]
fn linkerd_config_outside_the_window_is_reported() {
    let outcome = inject_with_values(&cluster_settings(json!({})), "linkerdVersion: edge-26.9.1\n");
    assert_eq!(
        outcome.audit_annotations.get("rendering").map(String::as_str),
        Some("edge-26.8.3 for linkerdVersion edge-26.9.1 (outside edge-26.1.1 to edge-26.8.3)")
    );
    assert_eq!(outcome.warnings.len(), 1, "{:?}", outcome.warnings);
}

/// The pin is a setting: it holds whatever the cluster's values say.
#[test]
fn a_pin_holds_over_linkerd_config() {
    let s = cluster_settings(json!({"renderVersion": "edge-26.5.1"}));
    let outcome = inject_with_values(&s, "linkerdVersion: edge-26.9.1\n");
    assert!(!proxy_is_native(&outcome));
    assert_eq!(outcome.warnings, Vec::<String>::new());
}
