//! The module's edges: the waPC payloads in and out, and the [`Cluster`](crate::cluster::Cluster)
//! over Kubewarden's host capabilities.

// the policy module's allocator over its linear memory
#[cfg(all(target_arch = "wasm32", target_os = "wasi", not(target_feature = "atomics")))]
pub(crate) mod allocator;
// its logic (tested natively)
#[cfg(any(
    test,
    all(target_arch = "wasm32", target_os = "wasi", not(target_feature = "atomics"))
))]
mod arena;
mod json_out;
pub mod kubewarden_cluster;
mod masked;
// the policy module's own `memcmp` (tested natively)
#[cfg(any(test, all(target_arch = "wasm32", target_os = "wasi")))]
mod memcmp;
mod payload;
mod rewrite;
mod scan;
pub mod wire;
