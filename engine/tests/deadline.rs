//! Epoch-deadline interruption: clean `allowed: false`, instance reset, engine keeps working.

mod common;

use common::*;
use kubewarden_engine::protocol::response::DEADLINE_MESSAGE;
use serde_json::json;

const ENDLESS_WAT: &str = r#"
(module
  (memory (export "memory") 1)
  (func (export "wapc_init"))
  (func (export "__guest_call") (param i32 i32) (result i32)
    (loop $forever (br $forever))
    (i32.const 0)))
"#;

const ENDLESS_INIT_WAT: &str = r#"
(module
  (memory (export "memory") 1)
  (func (export "wapc_init") (loop $forever (br $forever)))
  (func (export "__guest_call") (param i32 i32) (result i32) (i32.const 1)))
"#;

#[test]
fn endless_wat_guest_is_interrupted() {
    let engine = engine_with_deadline(100);
    let policy = engine.load_policy("endless.wat", ENDLESS_WAT.as_bytes()).unwrap();
    let host = host(&[], state(""));
    let req = pod_request(json!({"kind": "Pod"}));
    let resp = policy.evaluate(&host, &req, &settings(json!({}))).unwrap();
    assert_eq!(
        serde_json::to_string(&resp).unwrap(),
        format!(
            r#"{{"uid":"req-1","allowed":false,"status":{{"message":"{DEADLINE_MESSAGE}","code":500}},"auditAnnotations":null,"warnings":null}}"#
        )
    );
}

#[test]
fn endless_init_fails_instantiation() {
    let engine = engine_with_deadline(100);
    let policy = engine
        .load_policy("endless-init.wat", ENDLESS_INIT_WAT.as_bytes())
        .unwrap();
    let host = host(&[], state(""));
    let err = policy.instantiate(&host).err().expect("instantiation must fail");
    assert!(
        err.to_string()
            .contains("cannot instantiate module endless-init.wat"),
        "{err}"
    );
}

#[test]
fn interrupted_instance_is_reset_and_keeps_working() {
    let engine = engine_with_deadline(200);
    let policy = guest(&engine);
    let host = host(&[], state(""));
    let req = pod_request(json!({"kind": "Pod"}));
    let mut inst = policy.instantiate(&host).unwrap();
    assert_eq!(
        inst.validate(&req, &settings(json!({"counter": true})))
            .unwrap()
            .message(),
        "1"
    );
    let resp = inst.validate(&req, &settings(json!({"spin": true}))).unwrap();
    assert!(!resp.allowed);
    assert_eq!(resp.message(), DEADLINE_MESSAGE);
    assert_eq!(resp.status.unwrap().code, Some(500));
    // the instance was rebuilt: its state starts over, and it answers normally
    let resp = inst.validate(&req, &settings(json!({"counter": true}))).unwrap();
    assert!(resp.allowed);
    assert_eq!(resp.message(), "1");
    // other evaluations on the same engine are unaffected
    let resp = policy.evaluate(&host, &req, &settings(json!({}))).unwrap();
    assert!(resp.allowed);
}
