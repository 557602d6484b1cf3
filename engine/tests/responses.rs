//! Guest answers → AdmissionResponse: patches, pass-through fields, guest errors, payload shape.

mod common;

use common::*;
use kubewarden_engine::protocol::response::DELETE_MUTATION_MESSAGE;
use serde_json::{Value, json};

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "web-", "namespace": "emojivoto", "creationTimestamp": null},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

#[test]
fn protocol_version_and_settings_validation() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(&[], state(""));
    let mut inst = policy.instantiate(&host).unwrap();
    assert_eq!(inst.protocol_version().unwrap(), "v1");
    assert!(inst.validate_settings(&settings(json!(null))).valid);
    let bad = inst.validate_settings(&settings(json!({"invalid": "proxy image is empty"})));
    assert_eq!(
        (bad.valid, bad.message.as_deref()),
        (false, Some("proxy image is empty"))
    );
    let err = inst.validate_settings(&settings(json!({"settings_error": "boom"})));
    assert!(!err.valid);
    assert_eq!(
        err.message.as_deref(),
        Some(r#"Error invoking settings validation callback: GuestCallFailure("boom")"#)
    );
}

#[test]
fn validate_payload_is_request_and_settings() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(&[], state(""));
    let req = pod_request(pod());
    let resp = policy
        .evaluate(&host, &req, &settings(json!({"echo": true})))
        .unwrap();
    let payload: Value = serde_json::from_str(resp.message()).unwrap();
    assert_eq!(payload["settings"], json!({"echo": true}));
    assert_eq!(
        payload["request"]["userInfo"],
        json!({"username": "kubernetes-admin"})
    );
    assert_eq!(
        payload["request"]["object"]["metadata"]["creationTimestamp"],
        Value::Null
    );
    assert!(payload["request"].get("oldObject").is_none());
    assert_eq!(payload["request"]["kind"]["kind"], "Pod");
}

#[test]
fn mutation_becomes_a_base64_json_patch() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(&[], state(""));
    let mut mutated = pod();
    mutated["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "linkerd-proxy"}));
    mutated["metadata"]["annotations"] = json!({"linkerd.io/inject": "enabled"});
    let resp = policy
        .evaluate(
            &host,
            &pod_request(pod()),
            &settings(json!({"response": {"accepted": true, "mutated_object": mutated,
                "warnings": ["w1"], "audit_annotations": {"linkerd.io/owner": "Deployment/web"}}})),
        )
        .unwrap();
    assert!(resp.allowed);
    let line = serde_json::to_value(&resp).unwrap();
    assert_eq!(line["patchType"], "JSONPatch");
    assert_eq!(line["warnings"], json!(["w1"]));
    assert_eq!(
        line["auditAnnotations"],
        json!({"linkerd.io/owner": "Deployment/web"})
    );
    assert!(line.get("status").is_none());
    let patch = serde_json::to_value(resp.decoded_patch().unwrap().unwrap()).unwrap();
    assert_eq!(
        patch,
        json!([
            {"op": "add", "path": "/metadata/annotations", "value": {"linkerd.io/inject": "enabled"}},
            {"op": "add", "path": "/spec/containers/1", "value": {"name": "linkerd-proxy"}}
        ])
    );
}

#[test]
fn unchanged_object_means_no_patch() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(&[], state(""));
    let resp = policy
        .evaluate(
            &host,
            &pod_request(pod()),
            &settings(json!({"response": {"accepted": true, "mutated_object": pod()}})),
        )
        .unwrap();
    let line = serde_json::to_string(&resp).unwrap();
    assert_eq!(
        line,
        r#"{"uid":"req-1","allowed":true,"auditAnnotations":null,"warnings":null}"#
    );
}

#[test]
fn mutating_a_delete_is_rejected() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(&[], state(""));
    let mut req = pod_request(pod());
    req.operation = "DELETE".into();
    req.old_object = req.object.take();
    let resp = policy
        .evaluate(
            &host,
            &req,
            &settings(json!({"response": {"accepted": true, "mutated_object": pod()}})),
        )
        .unwrap();
    assert!(!resp.allowed);
    assert_eq!(resp.message(), DELETE_MUTATION_MESSAGE);
    assert_eq!(resp.patch, None);
}

#[test]
fn rejection_status_and_guest_errors() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(&[], state(""));
    let req = pod_request(pod());
    let resp = policy
        .evaluate(
            &host,
            &req,
            &settings(json!({"response": {"accepted": false, "message": "no", "code": 403}})),
        )
        .unwrap();
    assert_eq!(
        serde_json::to_string(&resp).unwrap(),
        r#"{"uid":"req-1","allowed":false,"status":{"message":"no","code":403},"auditAnnotations":null,"warnings":null}"#
    );
    let resp = policy
        .evaluate(&host, &req, &settings(json!({"fail": "lookup failed"})))
        .unwrap();
    assert!(!resp.allowed);
    assert_eq!(
        resp.message(),
        "internal server error: Guest call failure: lookup failed"
    );
    assert_eq!(resp.status.as_ref().unwrap().code, Some(500));
    let resp = policy
        .evaluate(&host, &req, &settings(json!({"raw_response": "{\"nope\": 1}"})))
        .unwrap();
    assert!(!resp.allowed);
    assert!(
        resp.message()
            .starts_with("internal server error: invalid response from policy: missing field `accepted`"),
        "{}",
        resp.message()
    );
}

#[test]
fn every_evaluation_gets_a_fresh_instance() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(&[], state(""));
    let req = pod_request(pod());
    for _ in 0..3 {
        let resp = policy
            .evaluate(&host, &req, &settings(json!({"counter": true})))
            .unwrap();
        assert_eq!(resp.message(), "1");
    }
    let mut inst = policy.instantiate(&host).unwrap();
    inst.validate(&req, &settings(json!({"counter": true}))).unwrap();
    let resp = inst.validate(&req, &settings(json!({"counter": true}))).unwrap();
    assert_eq!(resp.message(), "2", "a kept instance keeps its state");
}
