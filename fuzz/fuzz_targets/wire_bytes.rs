//! Raw bytes into the module's payload decoding: `validate` and `validate_settings` must answer
//! with JSON, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkerd_injector_policy::cluster::MemoryCluster;
use linkerd_injector_policy::wire;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let cluster = MemoryCluster::new(vec![json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "shop", "annotations": {"linkerd.io/inject": "enabled"}}
    })]);
    let answer: Value = serde_json::from_slice(&wire::validate(data, &cluster)).expect("validate answers JSON");
    assert!(answer["accepted"].is_boolean());
    let settings: Value = serde_json::from_slice(&wire::validate_settings(data)).expect("settings answer JSON");
    assert!(settings["valid"].is_boolean());
});
