//! Host calls per admission, as exact counts and sequences (never timings): every owner path
//! under every combination of `policy.ownerResolution` and the trust-anchor source, plus the
//! admissions that must stop at the Namespace lookup, each with the control plane's values read
//! from `linkerd-config` (the default: read first) and from the settings alone, and with the
//! control plane's ConfigMaps listed once (`policy.configMapLookup: list`, the default) or got
//! one by one. In policy-server each host call costs 0.1-0.5 ms of wall time even when cached,
//! so a call that appears here is a cost users pay. `MemoryCluster` records every call the core
//! asks for, in order.

mod common;

use common::admit;
use linkerd_injector_policy::cluster::{Call, ListLookup, Lookup, MemoryCluster};
use linkerd_injector_policy::outcome::Verdict;
use linkerd_injector_policy::settings::OwnerResolution::{self, Lookup as ByLookup, TemplateHash};
use linkerd_injector_policy::settings::Settings;
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const NS: &str = "shop";
const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const OWNER_MASKS: &[&str] = &["metadata.name", "metadata.ownerReferences"];

fn namespaced(api_version: &str, kind: &str, name: &str, owner: Option<(&str, &str)>) -> Value {
    let mut o = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": NS}});
    if let Some((k, n)) = owner {
        o["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "apps/v1", "kind": k, "name": n, "controller": true}]);
    }
    o
}

/// Every object any case may look up.
fn cluster() -> MemoryCluster {
    let rs = |name, owner| namespaced("apps/v1", "ReplicaSet", name, owner);
    common::cluster(vec![
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": NS, "annotations": {"linkerd.io/inject": "enabled"}, "labels": {"team": "a"}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "linkerd-identity-trust-roots", "namespace": "linkerd"},
            "data": {"ca-bundle.crt": PEM}}),
        rs("web-7d9c6b5f4", Some(("Deployment", "web"))),
        rs("canary-6c8b9d7f5", Some(("Rollout", "canary"))),
        rs("static", None),
        rs("web-legacy", Some(("Deployment", "web"))),
        rs("old-5f7c9b8d6", None),
        namespaced("batch/v1", "Job", "backup-2901", Some(("CronJob", "backup"))),
        namespaced("batch/v1", "Job", "migrate", None),
    ])
}

fn pod_in(ns: &str, owner: Option<(&str, &str)>, labels: Value) -> Value {
    let mut meta = json!({"name": "p", "namespace": ns, "labels": labels});
    if let Some((kind, name)) = owner {
        meta["ownerReferences"] =
            json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "controller": true}]);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

fn pod(owner: Option<(&str, &str)>, labels: Value) -> Value {
    pod_in(NS, owner, labels)
}

fn hash(h: &str) -> Value {
    json!({"app": "x", "pod-template-hash": h})
}

fn lookup(api_version: &'static str, kind: &'static str, name: &str, namespace: Option<&str>) -> Lookup {
    Lookup {
        api_version,
        kind,
        name: name.into(),
        namespace: namespace.map(String::from),
        disable_cache: false,
        field_masks: OWNER_MASKS,
    }
}

fn ns_lookup(name: &str) -> Lookup {
    Lookup {
        field_masks: &["metadata.annotations"],
        ..lookup("v1", "Namespace", name, None)
    }
}

fn cm_lookup() -> Lookup {
    Lookup {
        field_masks: &["data"],
        ..lookup("v1", "ConfigMap", "linkerd-identity-trust-roots", Some("linkerd"))
    }
}

fn values_lookup() -> Lookup {
    Lookup {
        field_masks: &["data"],
        ..lookup("v1", "ConfigMap", "linkerd-config", Some("linkerd"))
    }
}

/// Where Linkerd's values come from (`policy.valuesFrom`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Values {
    /// The default: the `linkerd-config` ConfigMap, read after the Namespace when the answer
    /// depends on it.
    LinkerdConfig,
    /// `policy.valuesFrom: settings`: no lookup.
    SettingsOnly,
}

/// How the control plane's ConfigMaps are read (`policy.configMapLookup`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reads {
    /// The default: one list of the control-plane namespace's ConfigMaps serves every read.
    List,
    /// One get per ConfigMap.
    Get,
}

fn list_call() -> Call {
    Call::List(ListLookup {
        api_version: "v1",
        kind: "ConfigMap",
        namespace: "linkerd".into(),
        field_masks: &["data"],
    })
}

/// The calls of an injected pod: the Namespace, the values when they come from the cluster, the
/// trust roots when `reads_trust`, then `after` (the owner lookups). Under `Reads::List` the
/// first ConfigMap read lists them and the second costs nothing.
fn expected_calls(
    values: Values,
    reads: Reads,
    ns: Lookup,
    reads_trust: bool,
    after: &[Lookup],
) -> Vec<Call> {
    let reads_values = values == Values::LinkerdConfig;
    let mut calls = vec![Call::Get(ns)];
    match reads {
        Reads::Get => {
            calls.extend(reads_values.then(|| Call::Get(values_lookup())));
            calls.extend(reads_trust.then(|| Call::Get(cm_lookup())));
        }
        Reads::List => calls.extend((reads_values || reads_trust).then(list_call)),
    }
    calls.extend(after.iter().cloned().map(Call::Get));
    calls
}

fn rs_lookup(name: &str) -> Lookup {
    lookup("apps/v1", "ReplicaSet", name, Some(NS))
}

fn job_lookup(name: &str) -> Lookup {
    lookup("batch/v1", "Job", name, Some(NS))
}

/// Where the trust bundle comes from.
#[derive(Debug, Clone, Copy)]
enum Trust {
    /// Default settings: no inline PEM, so the ConfigMap.
    ConfigMap,
    /// `identityTrustAnchorsPEM` set: no lookup.
    Inline,
    /// `policy.trustAnchors: configMap` wins over an inline PEM.
    ForcedConfigMap,
}

fn settings(how: OwnerResolution, trust: Trust) -> Settings {
    settings_with(how, trust, Values::LinkerdConfig, Reads::List)
}

fn settings_with(how: OwnerResolution, trust: Trust, values: Values, reads: Reads) -> Settings {
    let mut s = json!({"policy": {}});
    if values == Values::SettingsOnly {
        s["policy"]["valuesFrom"] = json!("settings");
    }
    if reads == Reads::Get {
        s["policy"]["configMapLookup"] = json!("get");
    }
    if how == ByLookup {
        s["policy"]["ownerResolution"] = json!("lookup");
    }
    match trust {
        Trust::ConfigMap => {}
        Trust::Inline => s["identityTrustAnchorsPEM"] = json!(PEM),
        Trust::ForcedConfigMap => {
            s["identityTrustAnchorsPEM"] =
                json!("-----BEGIN CERTIFICATE-----\nunused\n-----END CERTIFICATE-----\n");
            s["policy"]["trustAnchors"] = json!("configMap");
        }
    }
    Settings::from_value(s).expect("valid settings")
}

/// What one owner path costs and yields under one `ownerResolution`.
#[derive(Debug, Clone)]
struct Expect {
    owner_lookups: Vec<Lookup>,
    label: Option<(&'static str, &'static str)>,
    audit_owner: &'static str,
}

fn expect(
    owner_lookups: Vec<Lookup>,
    label: Option<(&'static str, &'static str)>,
    audit_owner: &'static str,
) -> Expect {
    Expect {
        owner_lookups,
        label,
        audit_owner,
    }
}

/// The `linkerd.io/proxy-<kind>` labels of an admitted pod.
fn owner_labels(pod: &Value) -> BTreeMap<String, String> {
    pod["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("linkerd.io/proxy-"))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// Injected pods: the values, the Namespace, the trust ConfigMap (unless inline), then the owner
/// lookups.
#[rstest]
#[case::bare_pod(pod(None, json!({"app": "x"})),
    expect(vec![], None, "pod/p (from the pod's ownerReferences)"),
    expect(vec![], None, "pod/p (from the pod's ownerReferences)"))]
#[case::deployment_pod(pod(Some(("ReplicaSet", "web-7d9c6b5f4")), hash("7d9c6b5f4")),
    expect(vec![], Some(("linkerd.io/proxy-deployment", "web")), "deployment/web (pod-template-hash naming rule)"),
    expect(vec![rs_lookup("web-7d9c6b5f4")], Some(("linkerd.io/proxy-deployment", "web")), "deployment/web (owner lookup)"))]
#[case::argo_rollout_pod(
    pod(Some(("ReplicaSet", "canary-6c8b9d7f5")), json!({"rollouts-pod-template-hash": "6c8b9d7f5"})),
    expect(vec![rs_lookup("canary-6c8b9d7f5")], Some(("linkerd.io/proxy-replicaset", "canary-6c8b9d7f5")), "replicaset/canary-6c8b9d7f5 (owner lookup)"),
    expect(vec![rs_lookup("canary-6c8b9d7f5")], Some(("linkerd.io/proxy-replicaset", "canary-6c8b9d7f5")), "replicaset/canary-6c8b9d7f5 (owner lookup)"))]
#[case::bare_replicaset(pod(Some(("ReplicaSet", "static")), json!({"app": "x"})),
    expect(vec![rs_lookup("static")], Some(("linkerd.io/proxy-replicaset", "static")), "replicaset/static (owner lookup)"),
    expect(vec![rs_lookup("static")], Some(("linkerd.io/proxy-replicaset", "static")), "replicaset/static (owner lookup)"))]
#[case::rs_name_not_ending_in_hash(pod(Some(("ReplicaSet", "web-legacy")), hash("7d9c6b5f4")),
    expect(vec![rs_lookup("web-legacy")], Some(("linkerd.io/proxy-deployment", "web")), "deployment/web (owner lookup)"),
    expect(vec![rs_lookup("web-legacy")], Some(("linkerd.io/proxy-deployment", "web")), "deployment/web (owner lookup)"))]
#[case::orphaned_rs_with_deployment_naming(pod(Some(("ReplicaSet", "old-5f7c9b8d6")), hash("5f7c9b8d6")),
    expect(vec![], Some(("linkerd.io/proxy-deployment", "old")), "deployment/old (pod-template-hash naming rule)"),
    expect(vec![rs_lookup("old-5f7c9b8d6")], Some(("linkerd.io/proxy-replicaset", "old-5f7c9b8d6")), "replicaset/old-5f7c9b8d6 (owner lookup)"))]
#[case::job_of_cronjob(pod(Some(("Job", "backup-2901")), json!({"job-name": "backup-2901"})),
    expect(vec![job_lookup("backup-2901")], None, "cronjob/backup (owner lookup)"),
    expect(vec![job_lookup("backup-2901")], None, "cronjob/backup (owner lookup)"))]
#[case::job_without_owner(pod(Some(("Job", "migrate")), json!({"job-name": "migrate"})),
    expect(vec![job_lookup("migrate")], Some(("linkerd.io/proxy-job", "migrate")), "job/migrate (owner lookup)"),
    expect(vec![job_lookup("migrate")], Some(("linkerd.io/proxy-job", "migrate")), "job/migrate (owner lookup)"))]
#[case::daemonset_pod(pod(Some(("DaemonSet", "agent")), json!({"app": "x"})),
    expect(vec![], Some(("linkerd.io/proxy-daemonset", "agent")), "daemonset/agent (from the pod's ownerReferences)"),
    expect(vec![], Some(("linkerd.io/proxy-daemonset", "agent")), "daemonset/agent (from the pod's ownerReferences)"))]
#[case::statefulset_pod(pod(Some(("StatefulSet", "db")), json!({"app": "x"})),
    expect(vec![], Some(("linkerd.io/proxy-statefulset", "db")), "statefulset/db (from the pod's ownerReferences)"),
    expect(vec![], Some(("linkerd.io/proxy-statefulset", "db")), "statefulset/db (from the pod's ownerReferences)"))]
fn injected_pod_host_calls(
    #[case] object: Value,
    #[case] by_hash: Expect,
    #[case] by_lookup: Expect,
    #[values(TemplateHash, ByLookup)] how: OwnerResolution,
    #[values(Trust::ConfigMap, Trust::Inline, Trust::ForcedConfigMap)] trust: Trust,
    #[values(Values::LinkerdConfig, Values::SettingsOnly)] values: Values,
    #[values(Reads::List, Reads::Get)] reads: Reads,
) {
    let want = if how == TemplateHash { by_hash } else { by_lookup };
    let cluster = cluster();
    let out = admit(
        "Pod",
        &object,
        NS,
        &settings_with(how, trust, values, reads),
        &cluster,
    );
    assert!(
        matches!(out.verdict, Verdict::Injected { .. }),
        "{:?}",
        out.verdict
    );

    let reads_trust = !matches!(trust, Trust::Inline);
    let expected = expected_calls(values, reads, ns_lookup(NS), reads_trust, &want.owner_lookups);
    let made = cluster.calls();
    assert_eq!(made, expected, "{how:?} {trust:?} {values:?} {reads:?}");
    assert_eq!(made.len(), expected.len());

    let admitted = out.mutated.expect("an injected pod is mutated");
    let labels: BTreeMap<String, String> = want
        .label
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(owner_labels(&admitted), labels);
    assert_eq!(
        out.audit_annotations.get("owner").map(String::as_str),
        Some(want.audit_owner)
    );
    assert_eq!(out.warnings, Vec::<String>::new(), "no path here is a fallback");
}

/// Admissions that never reach the owner or the trust anchors, whatever the settings. Linkerd's
/// values are read after the Namespace only when the answer depends on them: the default
/// opaque-ports list, for an object with a port it may name (the Service here); a pod without
/// ports, or that its annotations already skip, never reads them.
#[rstest]
#[case::namespace_without_inject_annotation("Pod",
    pod_in("plain", Some(("ReplicaSet", "web-7d9c6b5f4")), hash("7d9c6b5f4")), vec![ns_lookup("plain")], false)]
#[case::pod_inject_disabled("Pod",
    {
        let mut p = pod(Some(("ReplicaSet", "canary-6c8b9d7f5")), json!({}));
        p["metadata"]["annotations"] = json!({"linkerd.io/inject": "disabled"});
        p
    },
    vec![ns_lookup(NS)], false)]
#[case::service("Service",
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": NS},
        "spec": {"ports": [{"port": 3306}]}}),
    vec![ns_lookup(NS)], true)]
#[case::service_with_opaque_ports("Service",
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": NS, "annotations": {"config.linkerd.io/opaque-ports": "3306"}},
        "spec": {"ports": [{"port": 3306}]}}),
    vec![], false)]
fn not_injected_host_calls(
    #[case] kind: &str,
    #[case] object: Value,
    #[case] expected: Vec<Lookup>,
    #[case] needs_values: bool,
    #[values(TemplateHash, ByLookup)] how: OwnerResolution,
    #[values(Trust::ConfigMap, Trust::Inline)] trust: Trust,
    #[values(
        (Values::LinkerdConfig, Reads::List),
        (Values::LinkerdConfig, Reads::Get),
        (Values::SettingsOnly, Reads::List),
        (Values::SettingsOnly, Reads::Get)
    )]
    source: (Values, Reads),
) {
    let (values, reads) = source;
    let ns = object["metadata"]["namespace"]
        .as_str()
        .expect("the object's namespace");
    let cluster = cluster();
    let out = admit(
        kind,
        &object,
        ns,
        &settings_with(how, trust, values, reads),
        &cluster,
    );
    assert!(
        !matches!(out.verdict, Verdict::Injected { .. } | Verdict::Rejected(_)),
        "{:?}",
        out.verdict
    );
    let reads_values = match (values, reads) {
        _ if !needs_values => None,
        (Values::SettingsOnly, _) => None,
        (Values::LinkerdConfig, Reads::Get) => Some(Call::Get(values_lookup())),
        (Values::LinkerdConfig, Reads::List) => Some(list_call()),
    };
    let expected: Vec<Call> = expected.into_iter().map(Call::Get).chain(reads_values).collect();
    assert_eq!(
        cluster.calls(),
        expected,
        "{how:?} {trust:?} {values:?} {reads:?}"
    );
    assert_eq!(cluster.calls().len(), expected.len());
}

/// A workload manifest is injected in its template: its owner is itself, no owner lookup.
#[rstest]
fn deployment_manifest_needs_no_owner_lookup(
    #[values(TemplateHash, ByLookup)] how: OwnerResolution,
    #[values(Trust::ConfigMap, Trust::Inline)] trust: Trust,
    #[values(Values::LinkerdConfig, Values::SettingsOnly)] values: Values,
    #[values(Reads::List, Reads::Get)] reads: Reads,
) {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}});
    let cluster = cluster();
    let out = admit(
        "Deployment",
        &deployment,
        NS,
        &settings_with(how, trust, values, reads),
        &cluster,
    );
    let reads_trust = matches!(trust, Trust::ConfigMap);
    assert_eq!(
        cluster.calls(),
        expected_calls(values, reads, ns_lookup(NS), reads_trust, &[])
    );
    let template = &out.mutated.expect("injected")["spec"]["template"];
    assert_eq!(
        owner_labels(template),
        BTreeMap::from([("linkerd.io/proxy-deployment".to_string(), "web".to_string())])
    );
}

/// Settings that need the namespace's labels ask for them in the same single lookup.
#[rstest]
fn exempt_label_adds_a_field_mask_not_a_lookup(#[values(TemplateHash, ByLookup)] how: OwnerResolution) {
    let mut s = settings(how, Trust::Inline);
    s.policy.restricted_annotations_exempt_label = "team=a".into();
    let cluster = cluster();
    let object = pod(Some(("ReplicaSet", "web-7d9c6b5f4")), hash("7d9c6b5f4"));
    let out = admit("Pod", &object, NS, &s, &cluster);
    assert!(
        matches!(out.verdict, Verdict::Injected { .. }),
        "{:?}",
        out.verdict
    );
    let ns = Lookup {
        field_masks: &["metadata.annotations", "metadata.labels"],
        ..ns_lookup(NS)
    };
    let owner: &[Lookup] = if how == ByLookup {
        &[rs_lookup("web-7d9c6b5f4")]
    } else {
        &[]
    };
    let expected = expected_calls(Values::LinkerdConfig, Reads::List, ns, false, owner);
    assert_eq!(cluster.calls(), expected);
}

/// Verify mode reads the Namespace, then the values for a pod that asks for a proxy (the token
/// rule, the control plane's version): it never injects, so it needs no owner nor bundle.
#[rstest]
fn verify_mode_reads_only_the_namespace(#[values(TemplateHash, ByLookup)] how: OwnerResolution) {
    let mut s = settings(how, Trust::ConfigMap);
    s.policy.mode = linkerd_injector_policy::settings::Mode::Verify;
    let cluster = cluster();
    let object = pod(Some(("ReplicaSet", "static")), json!({}));
    let out = admit("Pod", &object, NS, &s, &cluster);
    assert!(matches!(out.verdict, Verdict::Rejected(_)), "{:?}", out.verdict);
    assert_eq!(cluster.calls(), vec![Call::Get(ns_lookup(NS)), list_call()]);
}

/// A rollout of Deployment pods: per pod, the calls the defaults save. By the naming rule and
/// with the ConfigMaps listed: one list (values and trust roots) and the Namespace; the
/// ReplicaSet too by lookup; one more each when the ConfigMaps are got one by one.
#[test]
fn a_rollout_of_deployment_pods_saves_one_lookup_per_pod() {
    let count = |how, reads| {
        let cluster = cluster();
        let s = settings_with(how, Trust::ConfigMap, Values::LinkerdConfig, reads);
        for _ in 0..100 {
            let object = pod(Some(("ReplicaSet", "web-7d9c6b5f4")), hash("7d9c6b5f4"));
            let out = admit("Pod", &object, NS, &s, &cluster);
            assert!(
                matches!(out.verdict, Verdict::Injected { .. }),
                "{:?}",
                out.verdict
            );
        }
        cluster.calls().len()
    };
    assert_eq!(
        [
            count(TemplateHash, Reads::List),
            count(ByLookup, Reads::List),
            count(TemplateHash, Reads::Get),
            count(ByLookup, Reads::Get)
        ],
        [200, 300, 300, 400]
    );
}
