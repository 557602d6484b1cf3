//! Owner resolution of the compiled module under the engine, with context files, the fault plan
//! (error, latency, not found, malformed, fail-first) and replay sessions: the exact owner label,
//! warning and `owner` audit annotation the policy returns, and the lookups it makes (a not-found
//! is final: 1 lookup; an error is retried once with `disable_cache`). Also the Namespace lookup
//! failure, the trust roots read from the ConfigMap, and invalid settings (library and CLI).
//! The control plane's `linkerd/linkerd-config` (neutral values) is in every cluster state and
//! session: the module reads it first for every pod, with one list of the control plane's
//! ConfigMaps (`policy.configMapLookup: list`, the default).
//! The ReplicaSet paths run with `policy.ownerResolution: lookup` (Linkerd's behaviour); the
//! default `templateHash` resolves a Deployment's pod without the lookup, faults or not.

mod common;
mod policy_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::hostcalls::lookup::ResourceStats;
use kubewarden_engine::hostcalls::replay::ReplaySession;
use kubewarden_engine::protocol::response::AdmissionResponseStatus;
use kubewarden_engine::runtime::callback::HostContext;
use kubewarden_engine::{AdmissionResponse, ClusterState};
use policy_support::*;
use rstest::rstest;
use serde_json::{Value, json};

const NS: &str = "emojivoto";
const RS: &str = "web-5d8f9c7b4";
const HASH: &str = "5d8f9c7b4";
const RS_KEY: &str = "apps/v1/ReplicaSet";
const JOB_KEY: &str = "batch/v1/Job";
const NS_KEY: &str = "v1/Namespace";
const CM_KEY: &str = "v1/ConfigMap";

/// Linkerd's `valid-trust-anchors.pem` (cli testdata) and its documented sha256.
const BUNDLE: &str = include_str!("../../tests/fixtures/linkerd/cli/cmd/testdata/valid-trust-anchors.pem");
const BUNDLE_SHA256: &str = "8dc603abd4e755c25c94da05abbf29b9b283a784733651020d72f97ca8ab98e4";

/// The cluster: `host/tests/data/emojivoto.yaml`.
const CONTEXT: &str = include_str!("data/emojivoto.yaml");

/// The inline trust anchors used wherever the ConfigMap is not the point, and the ReplicaSet
/// lookup these tests are about (the default would resolve `rs_pod(RS, HASH)` by its name).
fn inline_settings() -> Value {
    json!({"identityTrustAnchorsPEM": BUNDLE, "policy": {"ownerResolution": "lookup"}})
}

/// The same trust anchors with the default `policy.ownerResolution` (`templateHash`).
fn default_resolution_settings() -> Value {
    json!({"identityTrustAnchorsPEM": BUNDLE})
}

fn context() -> ClusterState {
    cluster(CONTEXT)
}

fn context_with_trust_roots() -> ClusterState {
    let mut state = context();
    state
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "linkerd-identity-trust-roots", "namespace": "linkerd"},
            "data": {"ca-bundle.crt": BUNDLE}}))
        .unwrap();
    state
}

/// A pod created by ReplicaSet `rs` with this `pod-template-hash` label.
fn rs_pod(rs: &str, hash: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": format!("{rs}-"), "namespace": NS,
            "labels": {"app": "web", "pod-template-hash": hash},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                "uid": "9f6c1a52-0000-4000-8000-000000000003", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {"containers": [{"name": "web", "image": "buoyantio/emojivoto-web:v11",
            "ports": [{"name": "http", "containerPort": 8080}]}]}
    })
}

/// A pod created by Job `job`.
fn job_pod(job: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": format!("{job}-"), "namespace": NS,
            "labels": {"batch.kubernetes.io/job-name": job},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                "uid": "9f6c1a52-0000-4000-8000-000000000004", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {"restartPolicy": "Never",
            "containers": [{"name": "migrate", "image": "example/migrate:1"}]}
    })
}

/// One admission of `pod` through the module on `host`.
fn admit(host: &Arc<HostContext>, pod: &Value, s: Value) -> (AdmissionResponse, Value) {
    let request = create_request("Pod", NS, "owner-faults", pod.clone());
    let response = evaluate(host, &request, &settings(s));
    assert_eq!(response.uid, "owner-faults");
    let admitted = patched(pod, &response);
    (response, admitted)
}

fn stats(host: &HostContext, key: &str) -> ResourceStats {
    host.stats().by_resource.get(key).copied().unwrap_or_default()
}

fn rs_stats(made: u64, cached: u64, failed: u64) -> ResourceStats {
    ResourceStats { made, cached, failed }
}

/// What an injected pod's admission must show.
struct Expect<'a> {
    label: Option<(&'a str, &'a str)>,
    audit_owner: String,
    warnings: Vec<String>,
}

#[track_caller]
fn assert_injected(response: &AdmissionResponse, admitted: &Value, expect: &Expect<'_>) {
    let text = serde_json::to_string(response).unwrap();
    assert!(response.allowed, "{text}");
    assert!(response.patch.is_some(), "{text}");
    assert!(
        container_names(admitted).contains(&"linkerd-proxy".to_owned()),
        "no proxy: {}",
        pretty(admitted)
    );
    let expected_labels: BTreeMap<String, String> = expect
        .label
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(owner_labels(admitted), expected_labels, "{text}");
    let audit = response.audit_annotations.clone().unwrap_or_default();
    assert_eq!(
        audit,
        BTreeMap::from([
            ("injection".to_owned(), "injected".to_owned()),
            ("owner".to_owned(), expect.audit_owner.clone()),
        ]),
        "{text}"
    );
    assert_eq!(
        response.warnings.clone().unwrap_or_default(),
        expect.warnings,
        "{text}"
    );
}

/// The message the guest gets for a fault-plan error, wrapped by the host and the waPC guest,
/// as the policy words a failed lookup.
fn failed_lookup(what: &str, host_message: &str) -> String {
    format!("lookup of {what} failed: Host error: Callback evaluation failure: {host_message}")
}

fn injected_fault(target: &str) -> String {
    format!("injected fault: the API server failed to answer the lookup of {target}")
}

fn rs_fault() -> String {
    failed_lookup(
        &format!("ReplicaSet {NS}/{RS}"),
        &injected_fault(&format!("ReplicaSet {NS}/{RS}")),
    )
}

fn hash_rule_warning(error: &str) -> String {
    format!(
        "owner of this pod resolved by pod-template-hash naming rule after: {error}: labelled linkerd.io/proxy-deployment=web"
    )
}

// ---------------------------------------------------------------------------------------------
// ReplicaSet owners

/// An owner resolved by its lookup: the label and audit annotation of the pod, one lookup of the
/// owner, the Namespace and the control plane's ConfigMaps; the next pod of the same owner asks
/// the same way and is served by the engine's cache. A CronJob's Job: the owner is the CronJob,
/// which gets no proxy label (as in Linkerd).
#[rstest]
#[case::deployment(rs_pod(RS, HASH), RS_KEY, Some(("linkerd.io/proxy-deployment", "web")), "deployment/web")]
#[case::job(job_pod("migrate"), JOB_KEY, Some(("linkerd.io/proxy-job", "migrate")), "job/migrate")]
#[case::cronjob(job_pod("backup-29017440"), JOB_KEY, None, "cronjob/backup")]
fn owner_via_lookup(
    #[case] object: Value,
    #[case] key: &str,
    #[case] label: Option<(&'static str, &'static str)>,
    #[case] owner: &str,
) {
    let host = cluster_host(context(), FaultPlan::new());
    let expect = Expect {
        label,
        audit_owner: format!("{owner} (owner lookup)"),
        warnings: vec![],
    };
    let (resp, pod) = admit(&host, &object, inline_settings());
    assert_injected(&resp, &pod, &expect);
    assert_eq!(stats(&host, key), rs_stats(1, 0, 0));
    assert_eq!(stats(&host, NS_KEY), rs_stats(1, 0, 0));
    assert_eq!(
        (stats(&host, CM_KEY), host.stats().lists),
        (rs_stats(0, 0, 0), 1),
        "linkerd-config, listed with the control plane's ConfigMaps"
    );

    let (resp, pod) = admit(&host, &object, inline_settings());
    assert_injected(&resp, &pod, &expect);
    assert_eq!(stats(&host, key), rs_stats(1, 1, 0));
    assert_eq!(stats(&host, NS_KEY), rs_stats(1, 1, 0));
}

/// How a ReplicaSet pod's owner was resolved, as its admission must show it.
enum Owner {
    /// `deployment/web` by a lookup that answered first time.
    Lookup,
    /// `deployment/web` by the pod-template-hash naming rule, no lookup made.
    TemplateHash,
    /// `deployment/web` by the uncached retry after this error.
    Uncached(String),
    /// `deployment/web` by the pod-template-hash rule after this error.
    HashRule(String),
    /// Linkerd's fallback, `replicaset/<RS>`, after this error.
    Fallback(String),
}

impl Owner {
    fn expect(&self) -> Expect<'static> {
        let deployment = Some(("linkerd.io/proxy-deployment", "web"));
        match self {
            Owner::Lookup => Expect {
                label: deployment,
                audit_owner: "deployment/web (owner lookup)".into(),
                warnings: vec![],
            },
            Owner::TemplateHash => Expect {
                label: deployment,
                audit_owner: "deployment/web (pod-template-hash naming rule)".into(),
                warnings: vec![],
            },
            Owner::Uncached(error) => Expect {
                label: deployment,
                audit_owner: format!("deployment/web (uncached owner lookup after: {error})"),
                warnings: vec![],
            },
            Owner::HashRule(error) => Expect {
                label: deployment,
                audit_owner: format!("deployment/web (pod-template-hash naming rule after: {error})"),
                warnings: vec![hash_rule_warning(error)],
            },
            Owner::Fallback(error) => Expect {
                label: Some(("linkerd.io/proxy-replicaset", RS)),
                audit_owner: format!("replicaset/{RS} (fallback to the direct owner after: {error})"),
                warnings: vec![format!(
                    "owner of this pod resolved by fallback to the direct owner after: {error}: labelled linkerd.io/proxy-replicaset={RS}"
                )],
            },
        }
    }
}

/// One ReplicaSet pod's admission under a fault of its ReplicaSet lookup: the owner it is
/// labelled with, and the ReplicaSet lookups made, cached and failed. An error is retried once
/// uncached; a pod whose hash label does not match its ReplicaSet's name takes the lookup even
/// under the default `templateHash`, with the same answers.
#[rstest]
#[case::slow_lookup_still_resolves(&["ReplicaSet=latency:30"], HASH, inline_settings(), Owner::Lookup, (1, 0, 0))]
#[case::error_falls_back_to_the_hash_rule(&["ReplicaSet=error"], HASH, inline_settings(),
    Owner::HashRule(rs_fault()), (2, 0, 2))]
#[case::custom_error_carried_into_the_warning(
    &["ReplicaSet/emojivoto/web-5d8f9c7b4=error:etcdserver: request timed out"], HASH, inline_settings(),
    Owner::HashRule(failed_lookup(&format!("ReplicaSet {NS}/{RS}"), "etcdserver: request timed out")), (2, 0, 2))]
#[case::hash_mismatch_falls_back_to_the_replicaset(&["ReplicaSet=error"], "0000000000", inline_settings(),
    Owner::Fallback(rs_fault()), (2, 0, 2))]
#[case::default_looks_up_a_hash_mismatch(&["ReplicaSet=error"], "0000000000", default_resolution_settings(),
    Owner::Fallback(rs_fault()), (2, 0, 2))]
#[case::default_retries_a_hash_mismatch_uncached(&["ReplicaSet=fail-first:1"], "0000000000",
    default_resolution_settings(), Owner::Uncached(rs_fault()), (2, 0, 1))]
#[case::fail_first_resolved_by_the_uncached_retry(&["ReplicaSet=fail-first:1"], HASH, inline_settings(),
    Owner::Uncached(rs_fault()), (2, 0, 1))]
fn replicaset_owner_under_a_fault(
    #[case] fault_rules: &[&str],
    #[case] hash: &str,
    #[case] settings: Value,
    #[case] owner: Owner,
    #[case] lookups: (u64, u64, u64),
) {
    let host = cluster_host(context(), faults(fault_rules));
    let (resp, pod) = admit(&host, &rs_pod(RS, hash), settings);
    assert_injected(&resp, &pod, &owner.expect());
    let (made, cached, failed) = lookups;
    assert_eq!(stats(&host, RS_KEY), rs_stats(made, cached, failed));
}

#[test]
fn fail_first_is_resolved_by_the_uncached_retry() {
    let host = cluster_host(context(), faults(&["ReplicaSet=fail-first:1"]));
    let (resp, pod) = admit(&host, &rs_pod(RS, HASH), inline_settings());
    assert_injected(&resp, &pod, &Owner::Uncached(rs_fault()).expect());
    assert_eq!(stats(&host, RS_KEY), rs_stats(2, 0, 1));

    // the retry bypassed the cache (disable_cache): nothing was cached by it, so the next
    // admission's cached lookup reaches the cluster again
    let (resp, pod) = admit(&host, &rs_pod(RS, HASH), inline_settings());
    assert_injected(&resp, &pod, &Owner::Lookup.expect());
    assert_eq!(stats(&host, RS_KEY), rs_stats(3, 0, 1));
}

#[test]
fn not_found_is_final_and_falls_back_to_the_hash_rule() {
    let error = format!("ReplicaSet {NS}/{RS} not found");
    // by fault rule, and because the context lacks the ReplicaSet
    let mut without_rs = ClusterState::new();
    without_rs
        .insert(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": NS, "annotations": {"linkerd.io/inject": "enabled"}}}))
        .unwrap();
    without_rs.insert(neutral_linkerd_config()).unwrap();
    for (host, how) in [
        (cluster_host(context(), faults(&["ReplicaSet=notfound"])), "fault"),
        (cluster_host(without_rs, FaultPlan::new()), "context"),
    ] {
        let (resp, pod) = admit(&host, &rs_pod(RS, HASH), inline_settings());
        assert_injected(&resp, &pod, &Owner::HashRule(error.clone()).expect());
        assert_eq!(
            stats(&host, RS_KEY),
            rs_stats(1, 0, 1),
            "{how}: not found must not be retried"
        );
    }
}

#[test]
fn malformed_answers_are_errors_retried_once() {
    let host = cluster_host(context(), faults(&["ReplicaSet=malformed"]));
    let (resp, pod) = admit(&host, &rs_pod(RS, HASH), inline_settings());
    // the host sends the first half of the object's JSON; the guest's parser says why it stops
    let full = serde_json::to_vec(context().get("apps/v1", "ReplicaSet", RS, Some(NS)).unwrap()).unwrap();
    let parse_error = serde_json::from_slice::<Value>(&full[..full.len().div_ceil(2)])
        .unwrap_err()
        .to_string();
    let error = format!("lookup of ReplicaSet {NS}/{RS}: malformed answer: {parse_error}");
    assert_injected(&resp, &pod, &Owner::HashRule(error).expect());
    // a malformed answer is an answer for the host (not counted failed), an error for the policy
    assert_eq!(stats(&host, RS_KEY), rs_stats(2, 0, 0));
}

#[test]
fn template_hash_default_resolves_without_the_replicaset_lookup() {
    // faults on every ReplicaSet lookup cannot matter: none is made
    for fault in [&[][..], &["ReplicaSet=error"][..], &["ReplicaSet=notfound"][..]] {
        let host = cluster_host(context(), faults(fault));
        let (resp, pod) = admit(&host, &rs_pod(RS, HASH), default_resolution_settings());
        assert_injected(&resp, &pod, &Owner::TemplateHash.expect());
        assert_eq!(stats(&host, RS_KEY), rs_stats(0, 0, 0), "{fault:?}");
        assert_eq!(stats(&host, NS_KEY), rs_stats(1, 0, 0), "{fault:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Job owners

#[test]
fn job_fail_first_is_resolved_by_the_uncached_retry() {
    let host = cluster_host(context(), faults(&["Job=fail-first:1"]));
    let (resp, pod) = admit(&host, &job_pod("backup-29017440"), inline_settings());
    let what = format!("Job {NS}/backup-29017440");
    assert_injected(
        &resp,
        &pod,
        &Expect {
            label: None,
            audit_owner: format!(
                "cronjob/backup (uncached owner lookup after: {})",
                failed_lookup(&what, &injected_fault(&what))
            ),
            warnings: vec![],
        },
    );
    assert_eq!(stats(&host, JOB_KEY), rs_stats(2, 0, 1));
}

#[test]
fn job_lookup_failures_fall_back_to_the_job() {
    let job = "backup-29017440";
    let what = format!("Job {NS}/{job}");
    let fallback = |error: &str| Expect {
        label: Some(("linkerd.io/proxy-job", job)),
        audit_owner: format!("job/{job} (fallback to the direct owner after: {error})"),
        warnings: vec![format!(
            "owner of this pod resolved by fallback to the direct owner after: {error}: labelled linkerd.io/proxy-job={job}"
        )],
    };

    let host = cluster_host(context(), faults(&["Job=error"]));
    let (resp, pod) = admit(&host, &job_pod(job), inline_settings());
    assert_injected(
        &resp,
        &pod,
        &fallback(&failed_lookup(&what, &injected_fault(&what))),
    );
    assert_eq!(stats(&host, JOB_KEY), rs_stats(2, 0, 2), "error → one retry");

    let host = cluster_host(context(), faults(&["Job=notfound"]));
    let (resp, pod) = admit(&host, &job_pod(job), inline_settings());
    assert_injected(&resp, &pod, &fallback(&format!("{what} not found")));
    assert_eq!(stats(&host, JOB_KEY), rs_stats(1, 0, 1), "not found is final");
}

// ---------------------------------------------------------------------------------------------
// The exact requests, through kwctl replay sessions

/// The list of the control plane's ConfigMaps an injected pod's admission makes after the
/// Namespace, answered with `linkerd-config`'s neutral values.
fn values_exchange() -> String {
    r#"
- type: Exchange
  request: |
    !KubernetesListResourceNamespace
    api_version: v1
    kind: ConfigMap
    namespace: linkerd
    label_selector: null
    field_selector: null
    field_masks: [data]
  response:
    type: Success
    payload: '{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"linkerd-config","namespace":"linkerd"},"data":{"values":"linkerdVersion: edge-26.8.3\n"}}]}'
"#
    .to_owned()
}

fn ns_exchange() -> String {
    r#"
- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: v1
    kind: Namespace
    name: emojivoto
    namespace: null
    disable_cache: false
    field_masks: [metadata.annotations]
  response:
    type: Success
    payload: '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"emojivoto","annotations":{"linkerd.io/inject":"enabled"}}}'
"#
    .to_owned()
}

fn rs_exchange(disable_cache: bool, response: &str) -> String {
    format!(
        r#"
- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: apps/v1
    kind: ReplicaSet
    name: web-5d8f9c7b4
    namespace: emojivoto
    disable_cache: {disable_cache}
    field_masks: [metadata.name, metadata.ownerReferences]
  response:
{response}"#
    )
}

const RS_PAYLOAD: &str = r#"    type: Success
    payload: '{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-5d8f9c7b4","namespace":"emojivoto","ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"9f6c1a52-0000-4000-8000-000000000001","controller":true}]}}'"#;

fn session(text: &str) -> ReplaySession {
    ReplaySession::from_str(text, Path::new("session.yml")).expect("session")
}

#[test]
fn error_is_retried_with_disable_cache_exactly_once() {
    let text = ns_exchange()
        + &values_exchange()
        + &rs_exchange(
            false,
            "    type: Error\n    message: 'Get \"https://10.96.0.1:443/apis/apps/v1/namespaces/emojivoto/replicasets/web-5d8f9c7b4\": dial tcp 10.96.0.1:443: connect: connection refused'",
        )
        + &rs_exchange(true, RS_PAYLOAD);
    let host = replay_host(session(&text));
    let (resp, pod) = admit(&host, &rs_pod(RS, HASH), inline_settings());
    let error = failed_lookup(
        &format!("ReplicaSet {NS}/{RS}"),
        "Get \"https://10.96.0.1:443/apis/apps/v1/namespaces/emojivoto/replicasets/web-5d8f9c7b4\": dial tcp 10.96.0.1:443: connect: connection refused",
    );
    assert_injected(
        &resp,
        &pod,
        &Expect {
            label: Some(("linkerd.io/proxy-deployment", "web")),
            audit_owner: format!("deployment/web (uncached owner lookup after: {error})"),
            warnings: vec![],
        },
    );
    assert_eq!(replay_leftovers(&host), 0, "every recorded lookup was made");
    assert_eq!(stats(&host, RS_KEY), rs_stats(2, 0, 1));
}

#[test]
fn not_found_is_not_retried_even_uncached() {
    // one recorded ReplicaSet exchange: a retry would find the session empty and the audit
    // annotation would name that error instead of the not-found
    let text = ns_exchange()
        + &values_exchange()
        + &rs_exchange(
            false,
            "    type: Error\n    message: Cannot find apps/v1/ReplicaSet named 'web-5d8f9c7b4' inside of namespace 'Some(\"emojivoto\")'",
        );
    let host = replay_host(session(&text));
    let (resp, pod) = admit(&host, &rs_pod(RS, HASH), inline_settings());
    let error = format!("ReplicaSet {NS}/{RS} not found");
    assert_injected(
        &resp,
        &pod,
        &Expect {
            label: Some(("linkerd.io/proxy-deployment", "web")),
            audit_owner: format!("deployment/web (pod-template-hash naming rule after: {error})"),
            warnings: vec![hash_rule_warning(&error)],
        },
    );
    assert_eq!(replay_leftovers(&host), 0);
    assert_eq!(stats(&host, RS_KEY), rs_stats(1, 0, 1));
}

// ---------------------------------------------------------------------------------------------
// Namespace, trust roots, settings

#[test]
fn namespace_lookup_error_rejects_with_the_transient_message() {
    let host = cluster_host(context(), faults(&["Namespace=error"]));
    let (resp, pod) = admit(&host, &rs_pod(RS, HASH), inline_settings());
    let ns_fault = failed_lookup(
        &format!("Namespace {NS}"),
        &injected_fault(&format!("Namespace/{NS}")),
    );
    assert_eq!(
        resp,
        AdmissionResponse {
            uid: "owner-faults".into(),
            allowed: false,
            status: Some(AdmissionResponseStatus {
                message: Some(format!(
                    "could not read Namespace {NS} to decide on proxy injection: {ns_fault} (usually transient; the API server will retry)"
                )),
                code: None,
            }),
            ..Default::default()
        }
    );
    assert_eq!(pod, rs_pod(RS, HASH), "no patch");
    assert_eq!(stats(&host, NS_KEY), rs_stats(1, 0, 1), "not retried");
    assert_eq!(stats(&host, RS_KEY), rs_stats(0, 0, 0), "no owner lookup");
}

#[test]
fn trust_roots_come_from_the_configmap_without_inline_pem() {
    let host = cluster_host(context_with_trust_roots(), FaultPlan::new());
    let (resp, pod) = admit(&host, &rs_pod(RS, HASH), json!({}));
    // default settings: the owner by the pod-template-hash naming rule, no RS lookup
    assert_injected(&resp, &pod, &Owner::TemplateHash.expect());
    assert_eq!(stats(&host, RS_KEY), rs_stats(0, 0, 0));
    assert_eq!(
        pod.pointer("/metadata/annotations/linkerd.io~1trust-root-sha256"),
        Some(&json!(BUNDLE_SHA256))
    );
    let proxy = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| pod["spec"][k].as_array())
        .flatten()
        .find(|c| c["name"] == "linkerd-proxy")
        .expect("linkerd-proxy");
    let anchors = proxy["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == "LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS")
        .expect("trust anchors env");
    assert_eq!(anchors["value"], json!(BUNDLE));
    // linkerd-config and the trust roots: one list, no get
    assert_eq!((stats(&host, CM_KEY), host.stats().lists), (rs_stats(0, 0, 0), 1));

    // asked the same way every time: the next pod's values and bundle come from a list again
    admit(&host, &rs_pod(RS, HASH), json!({}));
    assert_eq!((stats(&host, CM_KEY), host.stats().lists), (rs_stats(0, 0, 0), 2));

    // by name under `policy.configMapLookup: get`: two gets, then two cached
    let host = cluster_host(context_with_trust_roots(), FaultPlan::new());
    let by_name = json!({"policy": {"configMapLookup": "get"}});
    let (got, _) = admit(&host, &rs_pod(RS, HASH), by_name.clone());
    assert_eq!(got.patch, resp.patch);
    admit(&host, &rs_pod(RS, HASH), by_name);
    assert_eq!((stats(&host, CM_KEY), host.stats().lists), (rs_stats(2, 2, 0), 0));

    // without the ConfigMap the pod cannot be injected correctly: a transient rejection
    let host = cluster_host(context(), FaultPlan::new());
    let (resp, _) = admit(&host, &rs_pod(RS, HASH), json!({}));
    assert!(!resp.allowed);
    assert_eq!(
        resp.status.and_then(|s| s.message).as_deref(),
        Some(
            "could not read the trust anchors from ConfigMap linkerd/linkerd-identity-trust-roots: ConfigMap linkerd/linkerd-identity-trust-roots not found (usually transient; the API server will retry)"
        )
    );
}

const BAD_SETTINGS: &str = r#"{"proxy":{"ports":{"admin":0}}}"#;
const BAD_SETTINGS_MESSAGE: &str = "settings.proxy.ports.admin: must be 1-65535, got 0";

#[test]
fn invalid_settings_are_rejected_by_the_library() {
    let host = cluster_host(context(), FaultPlan::new());
    let bad: Value = serde_json::from_str(BAD_SETTINGS).unwrap();
    assert_eq!(
        settings_verdict(&host, &settings(bad)),
        (false, Some(BAD_SETTINGS_MESSAGE.to_owned()))
    );
    assert_eq!(settings_verdict(&host, &settings(json!({}))), (true, None));
    assert_eq!(host.stats().made + host.stats().cached, 0, "no lookups");
}

#[test]
fn invalid_settings_are_rejected_by_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let request = dir.path().join("request.json");
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": create_request("Pod", NS, "cli", rs_pod(RS, HASH))});
    std::fs::write(&request, serde_json::to_vec(&review).unwrap()).unwrap();
    let context_file = dir.path().join("context.yaml");
    std::fs::write(&context_file, CONTEXT).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_injector-host"))
        .args(["run", "--allow-context-aware", "--metadata-path"])
        .arg(common::policy_yaml_path())
        .arg("--request-path")
        .arg(&request)
        .arg("--context")
        .arg(&context_file)
        .args(["--settings-json", BAD_SETTINGS])
        .arg(common::policy_wasm_path())
        .output()
        .expect("run injector-host");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("Error: Provided settings are not valid: {BAD_SETTINGS_MESSAGE}\n")
    );

    // the same run with valid settings prints the AdmissionResponse
    let out = Command::new(env!("CARGO_BIN_EXE_injector-host"))
        .args(["run", "--allow-context-aware", "--metadata-path"])
        .arg(common::policy_yaml_path())
        .arg("--request-path")
        .arg(&request)
        .arg("--context")
        .arg(&context_file)
        .args(["--settings-json", &inline_settings().to_string()])
        .arg(common::policy_wasm_path())
        .output()
        .expect("run injector-host");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let resp: AdmissionResponse = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert!(resp.allowed);
    assert_eq!(
        resp.audit_annotations.unwrap_or_default().get("owner"),
        Some(&"deployment/web (owner lookup)".to_owned())
    );
}
