//! Test guest for kubewarden-engine (and injector-host's command tests). `validate` does what
//! `settings` says:
//! * `"spin": true` loops forever (deadline tests);
//! * `"fail": "msg"` returns a guest error;
//! * `"raw_response": "..."` returns these bytes as the answer;
//! * `"host_calls": [{"binding", "namespace", "operation", "payload" | "payload_raw"}]` makes the
//!   calls and reports each as a warning `ok:<answer>` or `err:<host error>`;
//! * `"log": "msg"` sends a `tracing/log` record;
//! * `"echo": true` puts the whole payload into `message`;
//! * `"counter": true` puts a per-instance call counter into `message`;
//! * `"response": {...}` is the base of the answer (`accepted` defaults to true).
//!
//! `validate_settings`: `{"invalid": "msg"}` → `valid: false`; `{"settings_error": "msg"}` → error.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use wapc_guest::{CallResult, host_call, register_function};

static CALLS: AtomicU64 = AtomicU64::new(0);

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("protocol_version", |_| Ok(b"\"v1\"".to_vec()));
    register_function("validate_settings", validate_settings);
    register_function("validate", validate);
}

fn validate_settings(payload: &[u8]) -> CallResult {
    let settings: Value = serde_json::from_slice(payload)?;
    if let Some(msg) = settings.get("settings_error").and_then(Value::as_str) {
        return Err(msg.into());
    }
    let resp = match settings.get("invalid").and_then(Value::as_str) {
        Some(msg) => json!({"valid": false, "message": msg}),
        None => json!({"valid": true, "message": null}),
    };
    Ok(serde_json::to_vec(&resp)?)
}

fn validate(payload: &[u8]) -> CallResult {
    let n = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    let input: Value = serde_json::from_slice(payload)?;
    let settings = input.get("settings").cloned().unwrap_or(Value::Null);
    if settings.get("spin").and_then(Value::as_bool) == Some(true) {
        let mut x: u64 = 0;
        loop {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }
    if let Some(msg) = settings.get("fail").and_then(Value::as_str) {
        return Err(msg.into());
    }
    if let Some(raw) = settings.get("raw_response").and_then(Value::as_str) {
        return Ok(raw.as_bytes().to_vec());
    }
    if let Some(msg) = settings.get("log").and_then(Value::as_str) {
        let record = json!({"level": "info", "message": msg, "line": 1, "file": "lib.rs", "component": "test-guest"});
        host_call(
            "kubewarden",
            "tracing",
            "log",
            &serde_json::to_vec(&record)?,
        )?;
    }
    let mut resp = settings
        .get("response")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if resp.get("accepted").is_none() {
        resp["accepted"] = json!(true);
    }
    if let Some(calls) = settings.get("host_calls").and_then(Value::as_array) {
        let mut warnings = Vec::new();
        for call in calls {
            let s = |k: &str| call.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            let payload = match call.get("payload_raw").and_then(Value::as_str) {
                Some(raw) => raw.as_bytes().to_vec(),
                None => serde_json::to_vec(call.get("payload").unwrap_or(&Value::Null))?,
            };
            let line = match host_call(&s("binding"), &s("namespace"), &s("operation"), &payload) {
                Ok(answer) => format!("ok:{}", String::from_utf8_lossy(&answer)),
                Err(e) => format!("err:{e}"),
            };
            warnings.push(Value::String(line));
        }
        resp["warnings"] = Value::Array(warnings);
    }
    if settings.get("echo").and_then(Value::as_bool) == Some(true) {
        resp["message"] = Value::String(String::from_utf8_lossy(payload).into_owned());
    }
    if settings.get("counter").and_then(Value::as_bool) == Some(true) {
        resp["message"] = Value::String(n.to_string());
    }
    Ok(serde_json::to_vec(&resp)?)
}
