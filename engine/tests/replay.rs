//! kwctl replay sessions: consumed in order, exact match, kwctl's error texts.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use kubewarden_engine::hostcalls::lookup::{LookupSource, Lookups};
use kubewarden_engine::hostcalls::replay::ReplaySession;
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use serde_json::json;

fn replay_host(allow: &[(&str, &str)]) -> Arc<HostContext> {
    let session = ReplaySession::from_file(&engine_test_data("session.yml")).unwrap();
    Arc::new(HostContext::new(
        "t",
        resources(allow),
        Lookups::new(LookupSource::Replay(session)),
        LogSink::capture(),
    ))
}

const ALL: &[(&str, &str)] = &[("v1", "Namespace"), ("apps/v1", "ReplicaSet")];

#[test]
fn replays_in_order_with_recorded_errors() {
    let engine = engine();
    let policy = guest(&engine);
    let host = replay_host(ALL);
    let out = host_calls(
        &policy,
        &host,
        json!([
            get_resource("v1", "Namespace", "emojivoto", None, false),
            get_resource("apps/v1", "ReplicaSet", "web-5d8f", Some("emojivoto"), false),
            get_resource("v1", "Namespace", "emojivoto", None, false),
        ]),
    );
    assert_eq!(
        ok_json(&out[0])["metadata"]["annotations"]["linkerd.io/inject"],
        "enabled"
    );
    assert_eq!(
        out[1],
        r#"err:Host error: Callback evaluation failure: Cannot find apps/v1/ReplicaSet named 'web-5d8f' inside of namespace 'Some("emojivoto")'"#
    );
    assert_eq!(
        out[2],
        "err:Host error: Callback evaluation failure: the list of recorded responses is empty"
    );
    assert_eq!(host.stats().made, 3);
}

#[test]
fn a_different_request_is_a_replay_error_and_consumes_the_exchange() {
    let engine = engine();
    let policy = guest(&engine);
    let host = replay_host(ALL);
    let out = host_calls(
        &policy,
        &host,
        json!([
            get_resource("v1", "Namespace", "emojivoto", None, true),
            get_resource("apps/v1", "ReplicaSet", "web-5d8f", Some("emojivoto"), false),
        ]),
    );
    assert_eq!(
        out[0],
        r#"err:Host error: Callback evaluation failure: Replay error: unexpected request. Was expecting KubernetesGetResource { api_version: "v1", kind: "Namespace", name: "emojivoto", namespace: None, disable_cache: false, field_masks: None }, got KubernetesGetResource { api_version: "v1", kind: "Namespace", name: "emojivoto", namespace: None, disable_cache: true, field_masks: None } instead"#
    );
    assert!(out[1].contains("Cannot find apps/v1/ReplicaSet"), "{}", out[1]);
    if let LookupSource::Replay(s) = host.lookups().source() {
        assert_eq!(s.leftovers(), 0);
    }
}

#[test]
fn allow_list_is_checked_before_replaying() {
    let engine = engine();
    let policy = guest(&engine);
    let host = replay_host(&[]);
    let out = host_calls(
        &policy,
        &host,
        json!([get_resource("v1", "Namespace", "emojivoto", None, false)]),
    );
    assert!(
        out[0].contains("not been granted access to Kubernetes v1/Namespace"),
        "{}",
        out[0]
    );
    if let LookupSource::Replay(s) = host.lookups().source() {
        assert_eq!(s.leftovers(), 2, "a refused call consumes nothing");
    }
}

#[test]
fn unreadable_sessions_are_reported() {
    let err = ReplaySession::from_file(Path::new("/nonexistent/session.yml")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Cannot open host capabilities interactions file"),
        "{err}"
    );
    let err = ReplaySession::from_str("{}", Path::new("s.yml")).unwrap_err();
    assert!(
        err.to_string().starts_with("cannot deserialize contents of"),
        "{err}"
    );
}
