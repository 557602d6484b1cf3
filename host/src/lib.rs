//! A small Kubewarden-compatible (waPC) policy engine.
//!
//! It loads a policy module once (compiled ahead of time), instantiates it afresh for every
//! evaluation as policy-server does, calls `protocol_version`, `validate_settings` and `validate`,
//! serves the `kubewarden/kubernetes/*` host capabilities from a file of Kubernetes objects (or
//! from a kwctl replay session), and builds the AdmissionResponse exactly like policy-evaluator:
//! JSON patch from `json_patch::diff(object, mutated_object)` over key-sorted values (kwctl's
//! serde_json keeps objects sorted, so its patch walks keys in order), base64, `patchType: JSONPatch`.
//!
//! Layout:
//! * [`engine`]: wasmtime engine with epoch deadlines, compiled [`engine::Policy`], per-evaluation
//!   [`engine::Instance`].
//! * [`callback`]: the host-call dispatcher (binding / namespace / operation routing, allow-list).
//! * [`lookup`]: where answers come from: the cluster state (with [`cache`] and [`fault`]s) or a
//!   [`replay`] session; counts lookups.
//! * [`memory`]: the peak linear memory of an evaluation (bisection over memory caps).
//! * [`context`]: the cluster state (objects loaded from YAML/JSON).
//! * [`request`], [`response`]: AdmissionRequest / AdmissionResponse wire types.
//! * [`rollout`]: the Deployment rollout simulation of linkerd2#3358.
//! * [`inject`]: manual injection of manifests (`injector-host inject`, like
//!   `linkerd inject --manual`).
//! * [`annotate`]: the `io.kubewarden.metadata` section (`injector-host annotate`, like
//!   `kwctl annotate`).
//! * [`artifacthub`]: `artifacthub-pkg.yml` from the metadata (`injector-host scaffold
//!   artifacthub`, like `kwctl scaffold artifacthub`).
//! * [`capabilities`]: the host-capability allow-list (`--allowed-host-capabilities`).
//! * [`registry`]: `registry://` modules: push and pull Kubewarden's OCI artifact.
//! * [`cli`]: the `injector-host` command line.
#![forbid(unsafe_code)]

pub mod annotate;
pub mod artifacthub;
pub mod cache;
pub mod callback;
pub mod capabilities;
pub mod cli;
pub mod context;
pub mod engine;
pub mod fault;
pub mod field_mask;
pub mod inject;
pub mod lookup;
pub mod memory;
pub mod metadata;
pub mod registry;
pub mod replay;
pub mod request;
pub mod response;
pub mod rollout;
pub mod selector;

pub use callback::{HostContext, LogSink};
pub use context::ClusterState;
pub use engine::{Engine, EngineConfig, Instance, Policy};
pub use fault::{Fault, FaultPlan};
pub use lookup::{LookupSource, LookupStats};
pub use metadata::{ContextAwareResource, PolicyMetadata};
pub use request::{AdmissionRequest, Settings};
pub use response::{AdmissionResponse, SettingsValidationResponse, ValidationResponse};
