//! The answers to the `kubewarden/kubernetes/*` host calls, whose payloads are the SDK's
//! `host_capabilities::kubernetes` requests: the sources they come from (a cluster state behind
//! policy-server's cache, with faults, or a kwctl replay session), field masks, selectors and the
//! host-capability allow-list.
//!
//! Dependencies run one way: `lookup` (the front the dispatcher calls) uses `cluster`, `cache`,
//! `fault`, `field_mask` and `replay`; `cluster` uses `selector`. Nothing here uses `runtime`.

pub mod cache;
pub mod capabilities;
pub mod cluster;
pub mod fault;
pub mod field_mask;
pub mod lookup;
pub mod replay;
pub mod selector;
