//! The answers to the `kubewarden/kubernetes/*` host calls: their payloads, the sources they come
//! from (a cluster state behind policy-server's cache, with faults, or a kwctl replay session),
//! field masks, selectors and the host-capability allow-list. Module order is dependency order:
//! each file uses only those above it.

pub mod cache;
pub mod capabilities;
pub mod cluster;
pub mod fault;
pub mod field_mask;
pub mod lookup;
pub mod payload;
pub mod replay;
pub mod selector;
