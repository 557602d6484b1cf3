//! Host calls per admission through the compiled module (`../policy.wasm`) and this engine:
//! the exact `kubernetes/get_resource` and `list_resources_by_namespace` calls one admission
//! makes (recorded as kwctl records them) and the engine's counters, for the main scenarios
//! under both `policy.ownerResolution` values, both trust-anchor sources, both
//! `policy.valuesFrom` values (`linkerdConfig` reads `linkerd/linkerd-config` before anything
//! else; `settings` reads no such ConfigMap) and both `policy.configMapLookup` values (`list`
//! reads both control-plane ConfigMaps with one list; `get` reads each). Counts, never timings:
//! in policy-server each host call costs 0.1-0.5 ms of wall time even when served from its cache.

mod common;
mod policy_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups, ResourceStats};
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use policy_support::*;
use rstest::rstest;
use serde_json::{Value, json};

const NS: &str = "shop";
const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

/// The cluster: `host/tests/data/shop.yaml`.
const CONTEXT: &str = include_str!("data/shop.yaml");

/// A host on `CONTEXT` that records every host call in order.
fn recording_host() -> Arc<HostContext> {
    let source = LookupSource::Cluster(ClusterLookup::new(cluster(CONTEXT), FaultPlan::new()));
    Arc::new(HostContext::new(
        "policy.wasm",
        metadata().context_aware_resources,
        Lookups::new(source).recording(),
        LogSink::capture(),
    ))
}

/// One cached `get_resource` call, as the engine names a recorded call.
fn call(kind: &str, name: &str, namespace: Option<&str>, masks: &[&str]) -> String {
    let target = namespace.map_or(name.to_owned(), |ns| format!("{ns}/{name}"));
    format!("get {kind} {target} masks [{}]", masks.join(", "))
}

fn ns_call(name: &str) -> String {
    call("v1/Namespace", name, None, &["metadata.annotations"])
}

fn cm_call() -> String {
    call(
        "v1/ConfigMap",
        "linkerd-identity-trust-roots",
        Some("linkerd"),
        &["data"],
    )
}

/// The control plane's values, read after the Namespace when the answer depends on them.
fn values_call() -> String {
    call("v1/ConfigMap", "linkerd-config", Some("linkerd"), &["data"])
}

/// The one list of the control plane's ConfigMaps (`policy.configMapLookup: list`).
fn list_call() -> String {
    "list v1/ConfigMap in linkerd masks [data]".to_owned()
}

/// `expected` (the calls under `valuesFrom: linkerdConfig` and `configMapLookup: get`) for these
/// values: without the values lookup when they come from the settings; under `list` the first
/// ConfigMap read becomes the list and the other costs nothing.
fn with_values_call(values_from: &str, reads: &str, expected: Vec<String>) -> Vec<String> {
    let all: Vec<String> = expected
        .into_iter()
        .filter(|c| values_from == "linkerdConfig" || *c != values_call())
        .collect();
    if reads == "get" {
        return all;
    }
    let mut listed = false;
    let mut calls = Vec::new();
    for c in all {
        if c == values_call() || c == cm_call() {
            if !listed {
                calls.push(list_call());
            }
            listed = true;
        } else {
            calls.push(c);
        }
    }
    calls
}

/// `s` with `policy.valuesFrom` and `policy.configMapLookup` set.
fn values_from_in(mut s: Value, values_from: &str, reads: &str) -> Value {
    s["policy"]["valuesFrom"] = json!(values_from);
    s["policy"]["configMapLookup"] = json!(reads);
    s
}

fn rs_call(name: &str) -> String {
    call(
        "apps/v1/ReplicaSet",
        name,
        Some(NS),
        &["metadata.name", "metadata.ownerReferences"],
    )
}

/// The host calls recorded so far, in `call`'s shape.
fn recorded_calls(host: &HostContext) -> Vec<String> {
    host.lookups()
        .recorded()
        .iter()
        .map(|exchange| exchange.request.to_string())
        .collect()
}

fn pod(ns: &str, rs: &str, hash: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": format!("{rs}-"), "namespace": ns,
            "labels": {"app": "web", "pod-template-hash": hash},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": "u2", "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}
    })
}

fn deployment_pod() -> Value {
    pod(NS, "web-5d8f9c7b4", "5d8f9c7b4")
}

fn service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": NS},
        "spec": {"ports": [{"port": 3306}]}})
}

fn policy_settings(owner_resolution: Option<&str>, inline: bool) -> Value {
    let mut s = json!({});
    if let Some(how) = owner_resolution {
        s["policy"] = json!({"ownerResolution": how});
    }
    if inline {
        s["identityTrustAnchorsPEM"] = json!(PEM);
    }
    s
}

fn label(key: &str, value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(key.to_owned(), value.to_owned())])
}

#[rstest]
#[case::deployment_pod_default_is_template_hash("Pod", deployment_pod(), NS, policy_settings(None, false),
    vec![ns_call(NS), values_call(), cm_call()], label("linkerd.io/proxy-deployment", "web"))]
#[case::deployment_pod_template_hash("Pod", deployment_pod(), NS, policy_settings(Some("templateHash"), false),
    vec![ns_call(NS), values_call(), cm_call()], label("linkerd.io/proxy-deployment", "web"))]
#[case::deployment_pod_lookup("Pod", deployment_pod(), NS, policy_settings(Some("lookup"), false),
    vec![ns_call(NS), values_call(), cm_call(), rs_call("web-5d8f9c7b4")], label("linkerd.io/proxy-deployment", "web"))]
#[case::deployment_pod_template_hash_inline("Pod", deployment_pod(), NS, policy_settings(None, true),
    vec![ns_call(NS), values_call()], label("linkerd.io/proxy-deployment", "web"))]
#[case::deployment_pod_lookup_inline("Pod", deployment_pod(), NS, policy_settings(Some("lookup"), true),
    vec![ns_call(NS), values_call(), rs_call("web-5d8f9c7b4")], label("linkerd.io/proxy-deployment", "web"))]
#[case::orphaned_rs_template_hash("Pod", pod(NS, "old-5f7c9b8d6", "5f7c9b8d6"), NS, policy_settings(None, true),
    vec![ns_call(NS), values_call()], label("linkerd.io/proxy-deployment", "old"))]
#[case::orphaned_rs_lookup_is_linkerds_answer("Pod", pod(NS, "old-5f7c9b8d6", "5f7c9b8d6"), NS,
    policy_settings(Some("lookup"), true),
    vec![ns_call(NS), values_call(), rs_call("old-5f7c9b8d6")], label("linkerd.io/proxy-replicaset", "old-5f7c9b8d6"))]
#[case::unannotated_namespace("Pod", pod("plain", "web-5d8f9c7b4", "5d8f9c7b4"), "plain",
    policy_settings(Some("lookup"), false), vec![ns_call("plain")], BTreeMap::new())]
#[case::service("Service", service(), NS, policy_settings(Some("lookup"), false), vec![ns_call(NS), values_call()],
    BTreeMap::new())]
fn host_calls_of_one_admission(
    #[case] kind: &str,
    #[case] object: Value,
    #[case] ns: &str,
    #[case] s: Value,
    #[case] expected: Vec<String>,
    #[case] labels: BTreeMap<String, String>,
    // (`policy.valuesFrom`, `policy.configMapLookup`)
    #[values(("linkerdConfig", "list"), ("linkerdConfig", "get"), ("settings", "list"), ("settings", "get"))]
    source: (&str, &str),
) {
    let (values_from, reads) = source;
    let host = recording_host();
    let request = create_request(kind, ns, "host-calls", object.clone());
    let response = evaluate(&host, &request, &settings(values_from_in(s, values_from, reads)));
    assert!(response.allowed, "{}", serde_json::to_string(&response).unwrap());
    let expected = with_values_call(values_from, reads, expected);
    assert_eq!(recorded_calls(&host), expected);
    let lists = expected.iter().filter(|c| **c == list_call()).count() as u64;
    let stats = host.stats();
    assert_eq!(
        (stats.made, stats.cached, stats.failed, stats.lists),
        (expected.len() as u64 - lists, 0, 0, lists)
    );
    assert_eq!(owner_labels(&patched(&object, &response)), labels);
}

/// The next pods of a rollout ask the same way: every get is served from the engine's cache,
/// and each still costs a host call, as each list does (policy-server serves lists from a
/// reflector, this engine from its cluster state). Under `get`, the values lookup is one of the
/// gets under `linkerdConfig`; under `list`, one list per pod reads both ConfigMaps.
#[rstest]
#[case::template_hash_linkerd_config(None, "linkerdConfig", "list", 1, 1)]
#[case::lookup_linkerd_config(Some("lookup"), "linkerdConfig", "list", 2, 1)]
#[case::template_hash_settings(None, "settings", "list", 1, 1)]
#[case::lookup_settings(Some("lookup"), "settings", "list", 2, 1)]
#[case::template_hash_linkerd_config_get(None, "linkerdConfig", "get", 3, 0)]
#[case::lookup_linkerd_config_get(Some("lookup"), "linkerdConfig", "get", 4, 0)]
#[case::template_hash_settings_get(None, "settings", "get", 2, 0)]
#[case::lookup_settings_get(Some("lookup"), "settings", "get", 3, 0)]
fn host_calls_per_pod_of_a_rollout(
    #[case] how: Option<&str>,
    #[case] values_from: &str,
    #[case] reads: &str,
    #[case] gets_per_pod: u64,
    #[case] lists_per_pod: u64,
) {
    let host = recording_host();
    let s = settings(values_from_in(policy_settings(how, false), values_from, reads));
    for i in 0..10 {
        let request = create_request("Pod", NS, &format!("pod-{i}"), deployment_pod());
        assert!(evaluate(&host, &request, &s).allowed);
    }
    let stats = host.stats();
    assert_eq!(
        (stats.made, stats.cached, stats.lists),
        (gets_per_pod, 9 * gets_per_pod, 10 * lists_per_pod)
    );
    assert_eq!(
        host.lookups().recorded().len() as u64,
        10 * (gets_per_pod + lists_per_pod)
    );
    let rs = stats
        .by_resource
        .get("apps/v1/ReplicaSet")
        .copied()
        .unwrap_or_default();
    let rs_expected = if how.is_some() {
        ResourceStats {
            made: 1,
            cached: 9,
            failed: 0,
        }
    } else {
        ResourceStats::default()
    };
    assert_eq!(rs, rs_expected);
    let config_maps = stats.by_resource.get("v1/ConfigMap").copied().unwrap_or_default();
    // gets of the trust roots, and of linkerd-config when the values come from it; none listed
    let per_pod_config_maps = match (reads, values_from) {
        ("list", _) => 0,
        (_, "linkerdConfig") => 2,
        _ => 1,
    };
    assert_eq!(
        config_maps,
        ResourceStats {
            made: per_pod_config_maps,
            cached: 9 * per_pod_config_maps,
            failed: 0,
        }
    );
}
