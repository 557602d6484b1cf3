//! A small Kubewarden-compatible (waPC) policy engine, and the commands of `injector-host`.
//!
//! It loads a policy module once (compiled ahead of time), instantiates it afresh for every
//! evaluation as policy-server does, calls `protocol_version`, `validate_settings` and `validate`,
//! serves the `kubewarden/kubernetes/*` host capabilities from a file of Kubernetes objects (or
//! from a kwctl replay session), and builds the AdmissionResponse exactly like policy-evaluator:
//! JSON patch from `json_patch::diff(object, mutated_object)` over key-sorted values (kwctl's
//! serde_json keeps objects sorted, so its patch walks keys in order), base64, `patchType: JSONPatch`.
//!
//! Layout (docs/development.md, "Layout"): the generic engine knows nothing of Linkerd:
//! * [`protocol`]: the wire types (AdmissionRequest, the guest's answers, AdmissionResponse and
//!   patch) and a module's metadata and custom sections;
//! * [`runtime`]: module loading and evaluation (wasmtime, epoch deadlines, host-call dispatch,
//!   peak memory);
//! * [`hostcalls`]: the answers to host calls: cluster state, cache, faults, replay, field masks,
//!   selectors, the capability allow-list.
//!
//! The commands sit apart: [`commands`] holds the generic ones (`run`, `annotate`), [`linkerd`]
//! those that only make sense for this policy (`rollout`, `inject`), and [`cli`] the command line
//! that joins them. Pushing, pulling and `scaffold artifacthub` are kwctl's.
#![forbid(unsafe_code)]

pub mod cli;
pub mod commands;
pub mod hostcalls;
pub mod linkerd;
pub mod protocol;
pub mod runtime;

pub use hostcalls::cluster::ClusterState;
pub use hostcalls::fault::{Fault, FaultPlan};
pub use hostcalls::lookup::{LookupSource, LookupStats};
pub use protocol::metadata::{ContextAwareResource, PolicyMetadata};
pub use protocol::request::{AdmissionRequest, PolicySettings};
pub use protocol::response::{AdmissionResponse, SettingsValidationResponse, ValidationResponse};
pub use runtime::callback::{HostContext, LogSink};
pub use runtime::engine::{Engine, EngineConfig, Instance, Policy};

/// The paths the benchmarks (`benches/`) import, kept while they move into their own crate.
pub use hostcalls::lookup;
pub use linkerd::rollout;
pub use protocol::metadata;
pub use runtime::memory;
/// The former name of [`PolicySettings`], kept for the benchmarks.
pub type Settings = PolicySettings;
