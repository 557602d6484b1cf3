use kubewarden_policy_sdk::wapc_guest as guest;
use guest::prelude::*;

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("protocol_version", kubewarden_policy_sdk::protocol_version_guest);
}
