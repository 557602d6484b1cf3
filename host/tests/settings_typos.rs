//! Through the real module (`../policy.wasm`): a settings typo is refused by `validate_settings`
//! with its key path and the nearest known key, and a pasted `linkerd-config` values document
//! is valid.

mod common;

use common::*;
use serde_json::{Value, json};

#[test]
fn validate_settings_names_the_typo_and_the_nearest_key() {
    let policy = engine()
        .load_policy_file(&policy_wasm_path())
        .expect("policy.wasm compiles");
    let mut instance = policy.instantiate(&policy_host()).unwrap();
    let answer = instance.validate_settings(&settings(json!({"proxy": {"logLvl": "debug"}})));
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"valid": false, "message": "settings.proxy.logLvl: unknown field `logLvl`; did you mean `proxy.logLevel`?"})
    );
}

#[test]
fn a_pasted_linkerd_config_values_document_is_valid() {
    let policy = engine()
        .load_policy_file(&policy_wasm_path())
        .expect("policy.wasm compiles");
    let mut instance = policy.instantiate(&policy_host()).unwrap();
    let file = manifest_dir().join("../tests/fixtures/linkerd-config/edge-26.8.3/install_ha_output.yaml");
    let config: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let values: Value = serde_yaml_ng::from_str(config["data"]["values"].as_str().unwrap()).unwrap();
    let answer = instance.validate_settings(&settings(values));
    assert!(answer.valid, "{:?}", answer.message);
}
