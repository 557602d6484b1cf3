//! The 5-second `get_resource` cache, lookup counters and fault injection.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use kubewarden_engine::hostcalls::cache::{Clock, DEFAULT_TTL, ManualClock};
use kubewarden_engine::hostcalls::fault::{FaultPlan, FaultRule};
use serde_json::json;

const ALL: &[(&str, &str)] = &[("v1", "Namespace"), ("apps/v1", "ReplicaSet")];

#[test]
fn default_ttl_is_policy_servers() {
    assert_eq!(DEFAULT_TTL, Duration::from_secs(5));
}

#[test]
fn hits_and_misses_are_counted_and_disable_cache_bypasses() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(ALL, state(CLUSTER));
    let ns = get_resource("v1", "Namespace", "emojivoto", None, false);
    let ns_uncached = get_resource("v1", "Namespace", "emojivoto", None, true);
    let rs = get_resource("apps/v1", "ReplicaSet", "web-5d8f", Some("emojivoto"), false);
    host_calls(&policy, &host, json!([ns, ns, rs, ns_uncached, ns_uncached, rs]));
    // a second evaluation (fresh instance) shares the cache
    host_calls(&policy, &host, json!([ns, rs]));
    let stats = host.stats();
    assert_eq!(stats.made, 4, "{stats:?}"); // ns miss, rs miss, 2 x disable_cache
    assert_eq!(stats.cached, 4, "{stats:?}");
    assert_eq!(stats.by_resource["v1/Namespace"].made, 3);
    assert_eq!(stats.by_resource["v1/Namespace"].cached, 2);
    assert_eq!(stats.by_resource["apps/v1/ReplicaSet"].made, 1);
    assert_eq!(stats.by_resource["apps/v1/ReplicaSet"].cached, 2);
}

#[test]
fn field_masks_are_not_part_of_the_cache_key() {
    let engine = engine();
    let policy = guest(&engine);
    let host = host(ALL, state(CLUSTER));
    let full = get_resource("apps/v1", "ReplicaSet", "web-5d8f", Some("emojivoto"), false);
    let mut masked = full.clone();
    masked["payload"]["field_masks"] = json!(["spec.replicas"]);
    let out = host_calls(&policy, &host, json!([masked, full, masked, full]));
    assert!(ok_json(&out[0]).get("status").is_none());
    assert_eq!(
        ok_json(&out[1])["status"],
        json!({"replicas": 3}),
        "the cache keeps the whole object"
    );
    // each mask set keeps its own serialised answer
    assert_eq!(out[2], out[0]);
    assert_eq!(out[3], out[1]);
    assert_eq!((host.stats().made, host.stats().cached), (1, 3));
}

#[test]
fn entries_expire_after_the_ttl_and_errors_are_not_cached() {
    let engine = engine();
    let policy = guest(&engine);
    // the test moves the cache's time itself, so how long evaluation takes cannot matter
    let clock = Arc::new(ManualClock::new());
    let host = host_with_clock(
        ALL,
        state(CLUSTER),
        FaultPlan::new(),
        DEFAULT_TTL,
        Clock::Manual(clock.clone()),
    );
    let ns = get_resource("v1", "Namespace", "emojivoto", None, false);
    let missing = get_resource("v1", "Namespace", "missing", None, false);
    host_calls(&policy, &host, json!([ns, ns, missing, missing]));
    let s = host.stats();
    assert_eq!((s.made, s.cached, s.failed), (3, 1, 2), "{s:?}");
    clock.advance(DEFAULT_TTL - Duration::from_nanos(1));
    host_calls(&policy, &host, json!([ns]));
    let s = host.stats();
    assert_eq!(
        (s.made, s.cached),
        (3, 2),
        "still cached just before the TTL: {s:?}"
    );
    clock.advance(Duration::from_nanos(1));
    host_calls(&policy, &host, json!([ns]));
    let s = host.stats();
    assert_eq!((s.made, s.cached), (4, 2), "expired at the TTL: {s:?}");
}

#[test]
fn faults_error_notfound_malformed() {
    let engine = engine();
    let policy = guest(&engine);
    let faults = FaultPlan::new()
        .with_rule(FaultRule::parse("ReplicaSet=error").unwrap())
        .with_rule(FaultRule::parse("Namespace/emojivoto=notfound").unwrap())
        .with_rule(FaultRule::parse("Namespace/other=malformed").unwrap())
        .with_rule(FaultRule::parse("Namespace/third=error:API server is overloaded").unwrap());
    let mut cluster = CLUSTER.to_owned();
    cluster.push_str("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n");
    let host = host_with(ALL, state(&cluster), faults, Duration::from_secs(5));
    let out = host_calls(
        &policy,
        &host,
        json!([
            get_resource("apps/v1", "ReplicaSet", "web-5d8f", Some("emojivoto"), false),
            get_resource("v1", "Namespace", "emojivoto", None, false),
            get_resource("v1", "Namespace", "other", None, false),
            get_resource("v1", "Namespace", "other", None, false),
            get_resource("v1", "Namespace", "third", None, false),
        ]),
    );
    assert_eq!(
        out[0],
        "err:Host error: Callback evaluation failure: injected fault: the API server failed to answer the lookup of ReplicaSet emojivoto/web-5d8f"
    );
    assert_eq!(
        out[1],
        "err:Host error: Callback evaluation failure: Cannot find v1/Namespace named 'emojivoto' inside of namespace 'None'"
    );
    let body = out[2].strip_prefix("ok:").unwrap();
    assert!(
        serde_json::from_str::<serde_json::Value>(body).is_err(),
        "malformed answer must not parse: {body}"
    );
    assert_eq!(out[2], out[3]);
    assert_eq!(
        out[4],
        "err:Host error: Callback evaluation failure: API server is overloaded"
    );
    let s = host.stats();
    assert_eq!(
        (s.made, s.cached, s.failed),
        (5, 0, 3),
        "malformed answers are not cached: {s:?}"
    );
}

#[test]
fn fail_first_then_success_is_cached() {
    let engine = engine();
    let policy = guest(&engine);
    let faults = FaultPlan::new().with_rule(FaultRule::parse("ReplicaSet=fail-first:1").unwrap());
    let host = host_with(ALL, state(CLUSTER), faults, Duration::from_secs(5));
    let rs = get_resource("apps/v1", "ReplicaSet", "web-5d8f", Some("emojivoto"), false);
    let out = host_calls(&policy, &host, json!([rs, rs, rs]));
    assert!(out[0].starts_with("err:"), "{}", out[0]);
    assert!(out[1].starts_with("ok:") && out[2].starts_with("ok:"));
    let s = host.stats();
    assert_eq!((s.made, s.cached, s.failed), (2, 1, 1), "{s:?}");
}

#[test]
fn latency_applies_to_lookups_not_cache_hits() {
    let engine = engine();
    let policy = guest(&engine);
    let faults = FaultPlan::new()
        .with_latency(Duration::from_millis(100))
        .with_rule(FaultRule::parse("Namespace=latency:50").unwrap());
    let host = host_with(ALL, state(CLUSTER), faults, Duration::from_secs(5));
    let ns = get_resource("v1", "Namespace", "emojivoto", None, false);
    let t0 = Instant::now();
    host_calls(&policy, &host, json!([ns]));
    assert!(t0.elapsed() >= Duration::from_millis(150), "{:?}", t0.elapsed());
    host_calls(&policy, &host, json!([ns, ns, ns]));
    assert_eq!((host.stats().made, host.stats().cached), (1, 3));
}
