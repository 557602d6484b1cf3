//! Every looked-up kind (Namespace, ReplicaSet, Job, ConfigMap) under every fault (error, not
//! found, slow answer, malformed answer), through the compiled module: the outcome DESIGN.md's
//! failure rules promise. Namespace and trust-root failures reject (transient); owner failures
//! never do (fallback owner); a slow answer changes nothing. Under both `policy.ownerResolution`
//! values: `lookup` reaches the ReplicaSet (and its faults), the default `templateHash` resolves
//! this Deployment pod by its name and makes no ReplicaSet lookup at all.

mod common;
mod policy_support;

use policy_support::*;
use rstest::rstest;
use serde_json::{Value, json};

const CONTEXT: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: shop, annotations: {linkerd.io/inject: enabled}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d8f9c7b4
  namespace: shop
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: u1, controller: true}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: linkerd-identity-trust-roots, namespace: linkerd}
data: {ca-bundle.crt: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}
"#;

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

#[rstest]
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
#[case::configmap_error("ConfigMap", "error", "ReplicaSet", Rejected(CM_FAIL))]
#[case::configmap_notfound("ConfigMap", "notfound", "ReplicaSet", Rejected(CM_FAIL))]
#[case::configmap_malformed("ConfigMap", "malformed", "ReplicaSet", Rejected(CM_FAIL))]
#[case::configmap_slow(
    "ConfigMap",
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
    // Trust roots from the ConfigMap, so its lookup is exercised.
    let response = evaluate(
        &host,
        &request,
        &settings(json!({"policy": {"trustAnchors": "configMap", "ownerResolution": owner_resolution}})),
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
