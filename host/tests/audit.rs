//! Kubewarden's background audit through the compiled module: the requests of
//! `tests/fixtures/audit/` are built exactly as the audit scanner builds them
//! (kubewarden-controller `internal/audit-scanner/scanner/admission_request.go`), evaluated under
//! the settings and the context-aware resources of each shipped policy, and the answers mapped as
//! the scanner maps them (`report/report.go`, `computePolicyResult`: allowed is `pass`, anything
//! else `fail` with the status message). `tests/fixtures/audit/expected.json` holds the same table
//! for the policy-server harness (`benches/kubewarden/`), which sends these requests to
//! policy-server's `/audit/<policy>` endpoint.

mod common;
mod policy_support;

use std::collections::BTreeSet;
use std::path::PathBuf;

use kubewarden_engine::ContextAwareResource;
use kubewarden_engine::hostcalls::cluster::ClusterState;
use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::protocol::request::AdmissionRequest;
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use policy_support::{evaluate, settings};
use rstest::rstest;
use serde_json::{Value, json};
use std::sync::Arc;

fn root() -> PathBuf {
    common::manifest_dir().join("..")
}

fn read_json(path: &str) -> Value {
    let path = root().join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn review(case: &str) -> Value {
    read_json(&format!("tests/fixtures/audit/{case}.json"))
}

/// The shipped policy manifest `deploy/<file>`.
fn manifest(file: &str) -> Value {
    let path = root().join("deploy").join(file);
    serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The control plane as a default edge-26.8.3 install leaves it (the harness's fake API server
/// serves the same `linkerd-config`), the trust roots, and the workloads of
/// `tests/fixtures/audit/cluster.json`.
fn cluster() -> ClusterState {
    let golden = std::fs::read_to_string(
        root().join("tests/fixtures/linkerd-config/edge-26.8.3/install_default.yaml"),
    )
    .unwrap();
    let config = [
        "install-control-plane-version",
        "install-proxy-version",
        "install-debug-version",
        "dev-undefined",
    ]
    .iter()
    .fold(golden, |text, placeholder| {
        text.replace(placeholder, "edge-26.8.3")
    });
    let pem = std::fs::read_to_string(
        root().join("tests/fixtures/linkerd/cli/cmd/testdata/valid-trust-anchors.pem"),
    )
    .unwrap();
    let mut state = ClusterState::new();
    state.insert(serde_yaml_ng::from_str(&config).unwrap()).unwrap();
    state
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "linkerd-identity-trust-roots", "namespace": "linkerd"},
            "data": {"ca-bundle.crt": pem}}))
        .unwrap();
    for object in read_json("tests/fixtures/audit/cluster.json").as_array().unwrap() {
        state.insert(object.clone()).unwrap();
    }
    state
}

/// The audit scanner's result for `case` under the policy of `deploy/<file>`: its settings, and
/// lookups allowed for its `contextAwareResources` only, as policy-server grants them.
fn audit(file: &str, case: &str) -> (String, String) {
    let policy = manifest(file);
    let allowed: BTreeSet<ContextAwareResource> = policy["spec"]["contextAwareResources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| ContextAwareResource::new(r["apiVersion"].as_str().unwrap(), r["kind"].as_str().unwrap()))
        .collect();
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(
        cluster(),
        FaultPlan::new(),
    )));
    let host = Arc::new(HostContext::new("audit", allowed, lookups, LogSink::Discard));
    // policy-server reads the AdmissionReview's `request` only
    let doc = review(case);
    let request: AdmissionRequest = serde_json::from_value(doc["request"].clone()).unwrap();
    let response = evaluate(&host, &request, &settings(policy["spec"]["settings"].clone()));
    assert_eq!(response.uid, doc["request"]["uid"], "{case}: the answer's uid");
    if response.allowed {
        ("pass".into(), String::new())
    } else {
        let message = response.status.and_then(|s| s.message).unwrap_or_default();
        ("fail".into(), message)
    }
}

const CASES: &[&str] = &[
    "not-meshed",
    "stale",
    "current",
    "outside-the-mesh",
    "inject-disabled",
    "host-network",
    "windows-os",
    "windows-node-selector",
];

const NOT_MESHED: &str = "pod is not meshed: linkerd.io/inject on namespace shop requires the Linkerd proxy, but the pod has \
     no linkerd-proxy container (injection was skipped or failed; check the injector policy)";
const STALE: &str = "pod's Linkerd proxy is stale: it runs edge-26.5.1, the control plane injects edge-26.8.3; restart \
     Deployment shop/web to update it (kubectl rollout restart deployment/web -n shop)";

/// Each request is exactly what the scanner sends: `newAdmissionRequest` serialised by Go's
/// encoding/json (empty optional fields left out, `RawExtension`s without a value as `null`),
/// wrapped in an AdmissionReview with no `apiVersion` or `kind`.
#[test]
fn the_requests_have_the_scanners_shape() {
    for case in CASES {
        let doc = review(case);
        let keys: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["request"], "{case}: the review holds the request only");
        let r = &doc["request"];
        let keys: BTreeSet<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            BTreeSet::from([
                "uid",
                "kind",
                "resource",
                "requestKind",
                "name",
                "namespace",
                "operation",
                "userInfo",
                "object",
                "oldObject",
                "options"
            ]),
            "{case}: no dryRun, requestResource or subresources"
        );
        let object = &r["object"];
        assert_eq!(
            r["uid"], object["metadata"]["uid"],
            "{case}: the object's own uid"
        );
        assert_eq!(
            r["kind"],
            json!({"group": "", "version": "v1", "kind": "Pod"}),
            "{case}"
        );
        assert_eq!(r["requestKind"], r["kind"], "{case}");
        assert_eq!(
            r["resource"],
            json!({"group": "", "version": "v1", "resource": "Pod"}),
            "{case}: the kind, not `pods`"
        );
        assert_eq!(r["operation"], "CREATE", "{case}");
        assert_eq!(r["userInfo"], json!({}), "{case}");
        assert_eq!(
            (&r["oldObject"], &r["options"]),
            (&Value::Null, &Value::Null),
            "{case}"
        );
        assert_eq!(r["name"], object["metadata"]["name"], "{case}");
        assert_eq!(r["namespace"], object["metadata"]["namespace"], "{case}");
        // a running pod, as the scanner lists it from the API server
        assert_eq!(object["status"]["phase"], "Running", "{case}");
    }
}

/// `deploy/audit-policy.yaml`: the two problems fail, with what to do; everything else passes.
#[rstest]
#[case::not_meshed("not-meshed", "fail", NOT_MESHED)]
#[case::stale("stale", "fail", STALE)]
#[case::current("current", "pass", "")]
#[case::outside_the_mesh("outside-the-mesh", "pass", "")]
#[case::inject_disabled("inject-disabled", "pass", "")]
#[case::host_network("host-network", "pass", "")]
#[case::windows_os("windows-os", "pass", "")]
#[case::windows_node_selector("windows-node-selector", "pass", "")]
fn the_audit_policy(#[case] case: &str, #[case] result: &str, #[case] message: &str) {
    assert_eq!(
        audit("audit-policy.yaml", case),
        (result.to_string(), message.to_string())
    );
}

/// `deploy/verify-policy.yaml` (`policy.staleProxy: warn`) would let a stale proxy pass: the
/// warning is not part of a report.
#[rstest]
#[case::not_meshed("not-meshed", "fail", NOT_MESHED)]
#[case::stale("stale", "pass", "")]
#[case::windows_os("windows-os", "pass", "")]
fn the_verify_policy(#[case] case: &str, #[case] result: &str, #[case] message: &str) {
    assert_eq!(
        audit("verify-policy.yaml", case),
        (result.to_string(), message.to_string())
    );
}

/// `deploy/cluster-admission-policy.yaml`, the injector, passes every pod: it admits a pod
/// without a proxy (with a patch), so its audit would report nothing.
#[test]
fn the_mutating_policy_passes_every_pod() {
    for case in CASES {
        assert_eq!(
            audit("cluster-admission-policy.yaml", case),
            ("pass".to_string(), String::new()),
            "{case}"
        );
    }
}

/// The harness compares policy-server's answers with this file: it must be what the module
/// answers.
#[test]
fn the_harness_expects_what_the_module_answers() {
    let expected = read_json("tests/fixtures/audit/expected.json");
    let policies = expected.as_object().unwrap();
    assert_eq!(
        policies.keys().collect::<Vec<_>>(),
        [
            "audit-policy.yaml",
            "cluster-admission-policy.yaml",
            "verify-policy.yaml"
        ]
    );
    for (file, cases) in policies {
        let cases = cases.as_object().unwrap();
        assert_eq!(
            cases.keys().map(String::as_str).collect::<BTreeSet<_>>(),
            CASES.iter().copied().collect::<BTreeSet<_>>(),
            "{file}"
        );
        for (case, want) in cases {
            let want = (
                want["result"].as_str().unwrap().to_string(),
                want["message"].as_str().unwrap().to_string(),
            );
            assert_eq!(audit(file, case), want, "{file} {case}");
        }
    }
}
