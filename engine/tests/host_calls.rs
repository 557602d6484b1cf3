//! Every host operation, through a real waPC guest.

mod common;

use common::*;
use serde_json::json;

const ALL: &[(&str, &str)] = &[("v1", "Namespace"), ("apps/v1", "ReplicaSet")];

#[test]
fn get_resource_returns_the_object() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(ALL, state(CLUSTER));
    let out = host_calls(
        &policy,
        &host,
        json!([get_resource("v1", "Namespace", "emojivoto", None, false)]),
    );
    let ns = ok_json(&out[0]);
    assert_eq!(ns["metadata"]["annotations"]["linkerd.io/inject"], "enabled");
    assert_eq!(ns["kind"], "Namespace");
}

#[test]
fn get_resource_not_found_and_scope_errors_use_policy_server_texts() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(ALL, state(CLUSTER));
    let out = host_calls(
        &policy,
        &host,
        json!([
            get_resource("v1", "Namespace", "missing", None, false),
            get_resource("apps/v1", "ReplicaSet", "nope", Some("emojivoto"), false),
            get_resource("apps/v1", "ReplicaSet", "web-5d8f", None, false),
        ]),
    );
    assert_eq!(
        out[0],
        "err:Host error: Callback evaluation failure: Cannot find v1/Namespace named 'missing' inside of namespace 'None'"
    );
    assert_eq!(
        out[1],
        r#"err:Host error: Callback evaluation failure: Cannot find apps/v1/ReplicaSet named 'nope' inside of namespace 'Some("emojivoto")'"#
    );
    assert_eq!(
        out[2],
        "err:Host error: Callback evaluation failure: Resource apps/v1/ReplicaSet is namespaced, but no namespace was provided"
    );
}

#[test]
fn field_masks_prune_everything_but_metadata() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(ALL, state(CLUSTER));
    let mut call = get_resource("apps/v1", "ReplicaSet", "web-5d8f", Some("emojivoto"), false);
    call["payload"]["field_masks"] = json!(["metadata.ownerReferences", "spec.replicas"]);
    let out = host_calls(&policy, &host, json!([call]));
    let rs = ok_json(&out[0]);
    assert_eq!(rs["spec"], json!({"replicas": 3}));
    assert!(rs.get("status").is_none(), "{rs}");
    // policy-server prunes only the non-metadata part of the object
    assert_eq!(rs["metadata"]["labels"]["app"], "web");
    assert_eq!(rs["metadata"]["ownerReferences"][0]["name"], "web");
}

#[test]
fn lists_by_namespace_and_all() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(ALL, state(CLUSTER));
    let out = host_calls(
        &policy,
        &host,
        json!([
            {"binding": "kubewarden", "namespace": "kubernetes", "operation": "list_resources_by_namespace",
             "payload": {"api_version": "apps/v1", "kind": "ReplicaSet", "namespace": "emojivoto",
                         "label_selector": "app=web", "field_selector": null, "field_masks": ["spec.replicas"]}},
            {"binding": "kubewarden", "namespace": "kubernetes", "operation": "list_resources_all",
             "payload": {"api_version": "apps/v1", "kind": "ReplicaSet", "label_selector": "app in (web)",
                         "field_selector": "metadata.namespace!=emojivoto", "field_masks": null}},
            {"binding": "kubewarden", "namespace": "kubernetes", "operation": "list_resources_by_namespace",
             "payload": {"api_version": "v1", "kind": "Namespace", "namespace": "x",
                         "label_selector": null, "field_selector": null, "field_masks": null}},
        ]),
    );
    let list = ok_json(&out[0]);
    assert_eq!(list["kind"], "ReplicaSetList");
    assert_eq!(list["apiVersion"], "apps/v1");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"]["name"], "web-5d8f");
    assert!(
        items[0]["metadata"].get("managedFields").is_none(),
        "reflectors strip managedFields"
    );
    assert_eq!(items[0]["spec"], json!({"replicas": 3}));
    let all = ok_json(&out[1]);
    let names: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["other"]);
    assert_eq!(
        out[2],
        "err:Host error: Callback evaluation failure: resource v1/Namespace is cluster wide. Cannot search for it inside of a namespace"
    );
    assert_eq!(host.stats().lists, 3);
}

#[test]
fn can_i_answers_from_subject_access_reviews_without_allow_list() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(&[], state(CLUSTER));
    let review = |user: &str| {
        json!({"binding": "kubewarden", "namespace": "kubernetes", "operation": "can_i",
            "payload": {"subject_access_review": {"groups": null, "user": user,
                "resource_attributes": {"group": null, "name": null, "namespace": "emojivoto", "resource": "pods",
                                        "subresource": null, "verb": "get", "version": null}},
                "disable_cache": false}})
    };
    let out = host_calls(
        &policy,
        &host,
        json!([review("alice"), review("bob"), review("alice")]),
    );
    assert_eq!(
        ok_json(&out[0]),
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding"})
    );
    assert_eq!(ok_json(&out[1]), json!({"allowed": false}));
    let stats = host.stats();
    assert_eq!((stats.made, stats.cached), (2, 1));
}

#[test]
fn allow_list_refuses_undeclared_resources() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(&[("v1", "Namespace")], state(CLUSTER));
    let out = host_calls(
        &policy,
        &host,
        json!([
            get_resource("apps/v1", "ReplicaSet", "web-5d8f", Some("emojivoto"), false),
            get_resource("v1", "Namespace", "emojivoto", None, false),
            // exact match: another version of the kind is not granted
            get_resource("apps/v1beta1", "Namespace", "emojivoto", None, false),
        ]),
    );
    assert_eq!(
        out[0],
        "err:Host error: Policy has not been granted access to Kubernetes apps/v1/ReplicaSet resources. The violation has been reported."
    );
    assert!(out[1].starts_with("ok:"));
    assert!(out[2].contains("apps/v1beta1/Namespace resources"), "{}", out[2]);
    assert_eq!(host.stats().made, 1, "refused calls are not lookups");
}

#[test]
fn unknown_bindings_namespaces_operations_and_other_capabilities_are_refused() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(ALL, state(CLUSTER));
    let call =
        |b: &str, n: &str, o: &str| json!({"binding": b, "namespace": n, "operation": o, "payload": "x"});
    let out = host_calls(
        &policy,
        &host,
        json!([
            call("other", "kubernetes", "get_resource"),
            call("kubewarden", "nope", "x"),
            call("kubewarden", "kubernetes", "delete_everything"),
            call("kubewarden", "tracing", "trace"),
            call("kubewarden", "oci", "v1/manifest_digest"),
            call("kubewarden", "net", "v1/dns_lookup_host"),
        ]),
    );
    assert_eq!(out[0], "err:Host error: unknown binding: other");
    assert_eq!(out[1], "err:Host error: unknown namespace: nope");
    assert_eq!(out[2], "err:Host error: unknown operation: delete_everything");
    assert_eq!(out[3], "err:Host error: unknown operation: trace");
    assert_eq!(
        out[4],
        "err:Host error: Policy has not been granted access to the 'oci/v1/manifest_digest' host capability. The violation has been reported."
    );
    assert!(
        out[5].contains("'net/v1/dns_lookup_host' host capability"),
        "{}",
        out[5]
    );
}

#[test]
fn the_host_capability_allow_list_gates_every_namespace_but_tracing() {
    use kubewarden_engine::hostcalls::capabilities::HostCapabilities;
    use kubewarden_engine::{
        HostContext, LogSink,
        hostcalls::lookup::{ClusterLookup, LookupSource, Lookups},
    };
    let engine = engine();
    let policy = guest(&engine);
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(
        state(CLUSTER),
        kubewarden_engine::FaultPlan::new(),
    )));
    let only_lists = HostCapabilities::new(["kubernetes/list_resources_all", "oci/*"]).unwrap();
    let host = std::sync::Arc::new(
        HostContext::new("test", resources(ALL), lookups, LogSink::capture()).with_capabilities(only_lists),
    );
    let out = host_calls(
        &policy,
        &host,
        json!([
            get_resource("v1", "Namespace", "emojivoto", None, false),
            {"binding": "kubewarden", "namespace": "kubernetes", "operation": "list_resources_all",
             "payload": {"api_version": "v1", "kind": "Namespace", "label_selector": null,
                         "field_selector": null, "field_masks": null}},
            {"binding": "kubewarden", "namespace": "tracing", "operation": "log",
             "payload": {"level": "info", "message": "still served"}},
        ]),
    );
    assert_eq!(
        out[0],
        "err:Host error: Policy has not been granted access to the 'kubernetes/get_resource' host capability. The violation has been reported."
    );
    assert!(out[1].starts_with("ok:"), "{}", out[1]);
    assert!(out[2].starts_with("ok"), "{}", out[2]);
    assert_eq!(host.stats().made, 0, "a refused get_resource is not a lookup");
}

#[test]
fn malformed_payloads_are_reported() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(ALL, state(CLUSTER));
    let out = host_calls(
        &policy,
        &host,
        json!([
            {"binding": "kubewarden", "namespace": "kubernetes", "operation": "get_resource", "payload_raw": "{not json"},
            {"binding": "kubewarden", "namespace": "kubernetes", "operation": "get_resource", "payload": {"api_version": "v1"}},
        ]),
    );
    assert!(
        out[0].starts_with("err:Host error: key must be a string"),
        "{}",
        out[0]
    );
    assert!(
        out[1].starts_with("err:Host error: missing field `kind`"),
        "{}",
        out[1]
    );
}

#[test]
fn tracing_log_records_are_served() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(ALL, state(CLUSTER));
    let resp = run_guest(&policy, &host, json!({"log": "hello from the guest"}));
    assert!(resp.allowed);
    let logs = host.logs();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0]["message"], "hello from the guest");
    assert_eq!(host.log_count(), 1);
    let line = kubewarden_engine::runtime::callback::format_log("p", &logs[0]);
    assert!(line.starts_with("INFO policy=p hello from the guest"), "{line}");
    assert!(line.contains("component=test-guest"), "{line}");
}
