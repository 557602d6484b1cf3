//! Every looked-up object (Namespace, ReplicaSet, Job, the trust-roots ConfigMap and the
//! `linkerd-config` ConfigMap) under every fault (error, not found, slow answer, malformed
//! answer), through the compiled module: the outcome docs/design.md's rules promise. Namespace
//! and trust-root failures reject (transient); owner failures never do (fallback owner); a slow
//! answer changes nothing; an unusable `linkerd-config` rejects under the default
//! `policy.linkerdConfigFailure: reject` and injects from the settings alone, with a warning and
//! the `values` audit annotation, under `settings`. Under both `policy.ownerResolution`
//! values: `lookup` reaches the ReplicaSet (and its faults), the default `templateHash` resolves
//! this Deployment pod by its name and makes no ReplicaSet lookup at all. A fault on one named
//! ConfigMap is a fault of its get (`policy.configMapLookup: get`); under the default `list` one
//! list answers both ConfigMaps, so its fault (target `ConfigMap`) reaches both.

mod common;
mod policy_support;

use kubewarden_engine::hostcalls::fault::NOT_UTF8_LIST;
use policy_support::*;
use rstest::rstest;
use serde_json::{Value, json};

/// The cluster: `host/tests/data/shop.yaml`.
const CONTEXT: &str = include_str!("data/shop.yaml");

/// The fault-plan targets of the two ConfigMaps' gets; a bare `ConfigMap` hits both, and the
/// list of both.
const TRUST_ROOTS: &str = "ConfigMap/linkerd/linkerd-identity-trust-roots";
const LINKERD_CONFIG: &str = "ConfigMap/linkerd/linkerd-config";
const CONFIG_MAPS: &str = "ConfigMap";

fn pod(owner_kind: &str, owner: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": format!("{owner}-"), "namespace": "shop",
            "labels": {"pod-template-hash": "5d8f9c7b4"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner_kind, "name": owner, "uid": "u2", "controller": true}]},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}
    })
}

enum Outcome {
    /// Injected, with this owner label.
    Injected(&'static str, &'static str),
    /// Rejected with a message starting like this.
    Rejected(&'static str),
}
use Outcome::*;

const NS_FAIL: &str = "could not read Namespace shop to decide on proxy injection: ";
const CM_FAIL: &str =
    "could not read the trust anchors from ConfigMap linkerd/linkerd-identity-trust-roots: ";
const VALUES_FAIL: &str = "could not read ConfigMap linkerd/linkerd-config: ";

#[rstest]
#[case::linkerd_config_slow(
    LINKERD_CONFIG,
    "latency:40",
    "ReplicaSet",
    Injected("linkerd.io/proxy-deployment", "web")
)]
#[case::namespace_error("Namespace", "error", "ReplicaSet", Rejected(NS_FAIL))]
#[case::namespace_notfound("Namespace", "notfound", "ReplicaSet", Rejected(NS_FAIL))]
#[case::namespace_malformed("Namespace", "malformed", "ReplicaSet", Rejected(NS_FAIL))]
#[case::namespace_slow(
    "Namespace",
    "latency:40",
    "ReplicaSet",
    Injected("linkerd.io/proxy-deployment", "web")
)]
#[case::replicaset_error(
    "ReplicaSet",
    "error",
    "ReplicaSet",
    Injected("linkerd.io/proxy-deployment", "web")
)]
#[case::replicaset_notfound(
    "ReplicaSet",
    "notfound",
    "ReplicaSet",
    Injected("linkerd.io/proxy-deployment", "web")
)]
#[case::replicaset_malformed(
    "ReplicaSet",
    "malformed",
    "ReplicaSet",
    Injected("linkerd.io/proxy-deployment", "web")
)]
#[case::replicaset_slow(
    "ReplicaSet",
    "latency:40",
    "ReplicaSet",
    Injected("linkerd.io/proxy-deployment", "web")
)]
#[case::job_error("Job", "error", "Job", Injected("linkerd.io/proxy-job", "migrate"))]
#[case::job_notfound("Job", "notfound", "Job", Injected("linkerd.io/proxy-job", "migrate"))]
#[case::job_malformed("Job", "malformed", "Job", Injected("linkerd.io/proxy-job", "migrate"))]
#[case::job_slow("Job", "latency:40", "Job", Injected("linkerd.io/proxy-job", "migrate"))]
#[case::trust_roots_error(TRUST_ROOTS, "error", "ReplicaSet", Rejected(CM_FAIL))]
#[case::trust_roots_notfound(TRUST_ROOTS, "notfound", "ReplicaSet", Rejected(CM_FAIL))]
#[case::trust_roots_malformed(TRUST_ROOTS, "malformed", "ReplicaSet", Rejected(CM_FAIL))]
#[case::trust_roots_slow(
    TRUST_ROOTS,
    "latency:40",
    "ReplicaSet",
    Injected("linkerd.io/proxy-deployment", "web")
)]
#[case::config_map_list_error(CONFIG_MAPS, "error", "ReplicaSet", Rejected(VALUES_FAIL))]
#[case::config_map_list_notfound(CONFIG_MAPS, "notfound", "ReplicaSet", Rejected(VALUES_FAIL))]
#[case::config_map_list_malformed(CONFIG_MAPS, "malformed", "ReplicaSet", Rejected(VALUES_FAIL))]
#[case::config_map_list_slow(
    CONFIG_MAPS,
    "latency:40",
    "ReplicaSet",
    Injected("linkerd.io/proxy-deployment", "web")
)]
fn every_lookup_under_every_fault(
    #[case] kind: &str,
    #[case] fault: &str,
    #[case] owner_kind: &str,
    #[case] expected: Outcome,
    #[values("templateHash", "lookup")] owner_resolution: &str,
) {
    let host = cluster_host(cluster(CONTEXT), faults(&[&format!("{kind}={fault}")]));
    let owner = if owner_kind == "Job" {
        "migrate"
    } else {
        "web-5d8f9c7b4"
    };
    let object = pod(owner_kind, owner);
    let request = create_request("Pod", "shop", "fault-matrix", object.clone());
    // Trust roots from the ConfigMap, so its lookup is exercised; a named ConfigMap's fault is
    // its get's.
    let reads = if kind.starts_with("ConfigMap/") {
        "get"
    } else {
        "list"
    };
    let response = evaluate(
        &host,
        &request,
        &settings(
            json!({"policy": {"trustAnchors": "configMap", "ownerResolution": owner_resolution,
            "configMapLookup": reads}}),
        ),
    );
    let text = serde_json::to_string(&response).unwrap();
    let rs_lookups = host
        .stats()
        .by_resource
        .get("apps/v1/ReplicaSet")
        .map_or(0, |s| s.made + s.cached);
    // the owner is resolved last: only an injected ReplicaSet pod under `lookup` asks for it
    let asks_for_rs =
        matches!(expected, Injected(..)) && owner_kind == "ReplicaSet" && owner_resolution == "lookup";
    assert_eq!(
        rs_lookups > 0,
        asks_for_rs,
        "{kind}={fault} {owner_resolution}: {rs_lookups} RS lookups"
    );
    match expected {
        Injected(key, value) => {
            assert!(response.allowed, "{kind}={fault}: {text}");
            let admitted = patched(&object, &response);
            assert!(
                container_names(&admitted).contains(&"linkerd-proxy".to_string()),
                "{kind}={fault}: {text}"
            );
            assert_eq!(
                admitted["metadata"]["labels"][key],
                json!(value),
                "{kind}={fault}: {text}"
            );
        }
        Rejected(prefix) => {
            assert!(!response.allowed, "{kind}={fault}: {text}");
            assert!(response.patch.is_none(), "{kind}={fault}");
            let message = response
                .status
                .as_ref()
                .and_then(|s| s.message.clone())
                .unwrap_or_default();
            assert!(message.starts_with(prefix), "{kind}={fault}: {message}");
            assert!(
                message.ends_with("(usually transient; the API server will retry)"),
                "{message}"
            );
        }
    }
}

const AT: &str = "ConfigMap linkerd/linkerd-config";
const TRANSIENT: &str = " (usually transient; the API server will retry)";
const FALLBACK: &str =
    "; the Linkerd values in effect are this policy's settings alone (policy.linkerdConfigFailure: settings)";

/// Why `linkerd-config` is unusable under `fault`, as the module words it.
fn values_reason(fault: &str) -> String {
    match fault {
        "error" => format!(
            "could not read {AT}: lookup of {AT} failed: Host error: Callback evaluation failure: injected fault: the API server failed to answer the lookup of {AT}{TRANSIENT}"
        ),
        "notfound" => format!(
            "{AT} not found: is Linkerd's control plane installed there? (policy.controlPlaneNamespace, policy.linkerdConfigMap; policy.valuesFrom: settings reads no ConfigMap)"
        ),
        "malformed" => {
            // the host sends the first half of the object's JSON; the guest's parser says why
            let state = cluster(CONTEXT);
            let object = state
                .get("v1", "ConfigMap", "linkerd-config", Some("linkerd"))
                .unwrap();
            let full = serde_json::to_vec(object).unwrap();
            let parse_error = serde_json::from_slice::<Value>(&full[..full.len().div_ceil(2)])
                .unwrap_err()
                .to_string();
            format!("could not read {AT}: lookup of {AT}: malformed answer: {parse_error}{TRANSIENT}")
        }
        other => panic!("no reason for {other}"),
    }
}

/// Lookups made per resource key, served or not.
fn lookups_by_resource(host: &kubewarden_engine::runtime::callback::HostContext) -> Vec<(String, u64)> {
    host.stats()
        .by_resource
        .iter()
        .map(|(k, s)| (k.clone(), s.made + s.cached))
        .collect()
}

/// An unusable `linkerd-config` (its get under `policy.configMapLookup: get`) under both
/// `policy.linkerdConfigFailure` values: `reject` refuses with the exact reason and reads nothing
/// after it (the Namespace came first: it says the pod asks for a proxy); `settings` injects exactly the pod the settings alone inject, with the reason as a
/// warning and the `values` audit annotation.
#[rstest]
fn linkerd_config_under_every_fault(
    #[values("error", "notfound", "malformed")] fault: &str,
    #[values("reject", "settings")] failure: &str,
    #[values("templateHash", "lookup")] owner_resolution: &str,
) {
    let host = cluster_host(cluster(CONTEXT), faults(&[&format!("{LINKERD_CONFIG}={fault}")]));
    let object = pod("ReplicaSet", "web-5d8f9c7b4");
    let request = create_request("Pod", "shop", "fault-matrix", object.clone());
    let policy = json!({"trustAnchors": "configMap", "ownerResolution": owner_resolution,
        "linkerdConfigFailure": failure, "configMapLookup": "get"});
    let response = evaluate(&host, &request, &settings(json!({ "policy": policy })));
    let text = serde_json::to_string(&response).unwrap();
    let reason = values_reason(fault);
    if failure == "reject" {
        assert!(!response.allowed, "{fault}: {text}");
        assert!(response.patch.is_none(), "{fault}: {text}");
        let message = response.status.as_ref().and_then(|s| s.message.clone());
        assert_eq!(message, Some(reason), "{fault}");
        assert_eq!(
            lookups_by_resource(&host),
            vec![("v1/ConfigMap".to_owned(), 1), ("v1/Namespace".to_owned(), 1)],
            "{fault}: the Namespace, then linkerd-config, and nothing after it"
        );
        return;
    }
    // the settings alone, on a cluster without faults
    let mut alone = policy.clone();
    alone["valuesFrom"] = json!("settings");
    alone.as_object_mut().unwrap().remove("linkerdConfigFailure");
    let clean = cluster_host(cluster(CONTEXT), faults(&[]));
    let expected = evaluate(&clean, &request, &settings(json!({ "policy": alone })));
    assert!(response.allowed, "{fault}: {text}");
    assert_eq!(response.patch, expected.patch, "{fault}: the settings alone");
    assert_eq!(
        response.warnings.clone().unwrap_or_default(),
        vec![format!("{reason}{FALLBACK}")],
        "{fault}"
    );
    let mut audit = expected.audit_annotations.clone().unwrap_or_default();
    audit.insert("values".into(), "settings only: linkerd-config unusable".into());
    assert_eq!(response.audit_annotations.unwrap_or_default(), audit, "{fault}");
}

/// Why the list of the control plane's ConfigMaps failed under `fault`, as the module words it.
fn list_reason(fault: &str) -> String {
    let what = "ConfigMaps in namespace linkerd";
    let failed = |e: &str| format!("lookup of {what} failed: Host error: Callback evaluation failure: {e}");
    match fault {
        "error" => failed("injected fault: the API server failed to answer the lookup of ConfigMap linkerd"),
        "notfound" => failed("Cannot find resource v1/ConfigMap"),
        "malformed" => {
            let parse_error = serde_json::from_slice::<Value>(br#"{"items":[{"#).unwrap_err();
            format!("lookup of {what}: malformed answer: {parse_error}")
        }
        "not-utf8" => {
            let parse_error = serde_json::from_slice::<Value>(NOT_UTF8_LIST).unwrap_err();
            format!("lookup of {what}: malformed answer: {parse_error}")
        }
        other => panic!("no reason for {other}"),
    }
}

/// A failed list of the control plane's ConfigMaps (`policy.configMapLookup: list`, the
/// default): made once, after the Namespace, it fails `linkerd-config` and the trust roots alike.
/// `reject` refuses with `linkerd-config`'s reason; `settings` falls back to the settings alone for
/// the values, then refuses for the trust roots, read from the same failed list and not read
/// again.
#[rstest]
fn config_map_list_under_every_fault(
    #[values("error", "notfound", "malformed", "not-utf8")] fault: &str,
    #[values("reject", "settings")] failure: &str,
) {
    let host = cluster_host(cluster(CONTEXT), faults(&[&format!("{CONFIG_MAPS}={fault}")]));
    let object = pod("ReplicaSet", "web-5d8f9c7b4");
    let request = create_request("Pod", "shop", "fault-matrix", object);
    let policy = json!({"trustAnchors": "configMap", "linkerdConfigFailure": failure});
    let response = evaluate(&host, &request, &settings(json!({ "policy": policy })));
    let text = serde_json::to_string(&response).unwrap();
    assert!(!response.allowed, "{fault}: {text}");
    assert!(response.patch.is_none(), "{fault}: {text}");
    let message = response.status.as_ref().and_then(|s| s.message.clone());
    let reason = list_reason(fault);
    let expected = if failure == "reject" {
        format!("{VALUES_FAIL}{reason}{TRANSIENT}")
    } else {
        format!("{CM_FAIL}{reason}{TRANSIENT}")
    };
    assert_eq!(message, Some(expected), "{fault} {failure}");
    assert_eq!(
        host.stats().lists,
        1,
        "{fault} {failure}: one list, whatever it answered"
    );
    assert_eq!(
        lookups_by_resource(&host),
        vec![("v1/Namespace".to_owned(), 1)],
        "{fault} {failure}: the Namespace first, whatever the list answers"
    );
}
