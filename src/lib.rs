//! Linkerd's proxy injector as a Kubewarden policy.
//!
//! This file is the waPC shell: it registers the guest functions and hands payloads to
//! [`wire`]; everything else is a pure core that also compiles natively (see docs/design.md).
// `unsafe` only where the module meets its host: the exported entry point (every module below
// forbids it)
#![deny(rust_2018_idioms, unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

// The layers, bottom up: a module reads only those listed before it.
// The base: Linkerd's annotation keys and release tags, read-only views of a raw pod, text
// parsers, and the lookups of cluster objects.
pub mod annotations;
pub mod cluster;
mod parse;
pub mod pod;
mod version;
// The stages, in the order an admission goes through them.
mod admission;
mod render;
mod shell;
mod values;

// The public surface: what the host, the playground, the benchmarks and the tests use.
pub use admission::{admit, decide, opaque, outcome, owner};
pub use render::config;
pub use shell::wire;
pub use values::{helm_yaml, linkerd_config, settings, trust};

use kubewarden_policy_sdk::wapc_guest::{self as guest, CallResult};

// talc, in the policy module and in the browser playground alike: a maintained allocator
// that gives back what an admission freed, so one instance serves many admissions.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

#[expect(unsafe_code, reason = "the waPC entry point the engine calls by name")]
#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings);
    guest::register_function("protocol_version", kubewarden_policy_sdk::protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    Ok(wire::validate(
        payload,
        &shell::kubewarden_cluster::KubewardenCluster,
    ))
}

fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(wire::validate_settings(payload))
}
