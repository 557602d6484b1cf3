//! A small Kubewarden-compatible (waPC) policy engine.
//!
//! It loads a policy module once (compiled ahead of time), instantiates it afresh for every
//! evaluation as policy-server does, calls `protocol_version`, `validate_settings` and `validate`,
//! serves the `kubewarden/kubernetes/*` host capabilities from a file of Kubernetes objects (or
//! from a kwctl replay session), and builds the AdmissionResponse exactly like policy-evaluator:
//! JSON patch from `json_patch::diff(object, mutated_object)` over key-sorted values (kwctl's
//! serde_json keeps objects sorted, so its patch walks keys in order), base64, `patchType: JSONPatch`.
//!
//! Layout (docs/development.md, "Layout"); the engine knows no policy in particular:
//! * [`protocol`]: the wire types (AdmissionRequest, the guest's answers, AdmissionResponse and
//!   patch) and a module's metadata and custom sections;
//! * [`runtime`]: module loading and evaluation (wasmtime, epoch deadlines, host-call dispatch,
//!   peak memory);
//! * [`hostcalls`]: the answers to host calls: cluster state, cache, faults, replay, field masks,
//!   selectors, the capability allow-list.
//!
//! The commands built on it (`run`, `annotate`, ...) are another crate's, `injector-host`; this one
//! depends on no policy.
#![forbid(unsafe_code)]

pub mod hostcalls;
pub mod protocol;
pub mod runtime;

pub use hostcalls::cluster::ClusterState;
pub use hostcalls::fault::{Fault, FaultPlan};
pub use hostcalls::lookup::{LookupSource, LookupStats};
pub use protocol::metadata::{ContextAwareResource, Metadata};
pub use protocol::request::{AdmissionRequest, PolicySettings};
pub use protocol::response::{AdmissionResponse, SettingsValidationResponse, ValidationResponse};
pub use runtime::callback::{HostContext, LogSink};
pub use runtime::engine::{Engine, EngineConfig, Instance, Policy};
