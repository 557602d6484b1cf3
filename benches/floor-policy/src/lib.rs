//! The benchmark floor: the unavoidable work of a Kubewarden mutating policy and nothing else.
//!
//! `validate` parses `{"request", "settings"}` with the SDK's `ValidationRequest` and answers
//! with `mutated_object` = `request.object`, unchanged (the engine's diff is then empty: no
//! patch). The injector policy's cost divided by this module's cost, for the same requests in
//! the same engine, is the headline ratio of BENCHMARKS.md.

use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::settings::Validatable;
use kubewarden_policy_sdk::wapc_guest::CallResult;
use serde::{Deserialize, Serialize};

/// Accepts any settings object.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {}

impl Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Only in the module: natively the benchmarks link this crate next to the injector policy,
/// which exports its own `wapc_init`.
#[cfg(target_arch = "wasm32")]
#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    use kubewarden_policy_sdk::wapc_guest as guest;
    guest::register_function("validate", validate);
    guest::register_function(
        "validate_settings",
        kubewarden_policy_sdk::validate_settings::<Settings>,
    );
    guest::register_function("protocol_version", kubewarden_policy_sdk::protocol_version_guest);
}

/// Parses the request and returns its object unchanged as the mutated object.
pub fn validate(payload: &[u8]) -> CallResult {
    let request: ValidationRequest<Settings> = serde_json::from_slice(payload)?;
    kubewarden_policy_sdk::mutate_request(request.request.object)
}
