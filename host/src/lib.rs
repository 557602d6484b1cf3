//! The commands of `injector-host`, on the Kubewarden engine of the `kubewarden-engine` crate
//! (`engine/`: wire types, module loading and evaluation, the answers to host calls).
//!
//! [`commands`] holds the generic ones (`run`, `annotate`), [`linkerd`] those that only make sense
//! for this policy (`rollout`, `inject`), and [`cli`] the command line that joins them
//! (docs/development.md, "Layout"). Pushing, pulling and `scaffold artifacthub` are kwctl's.
#![forbid(unsafe_code)]

pub mod cli;
pub mod commands;
pub mod linkerd;
