//! The generic commands of `injector-host`: the command line itself, `run`, `push`/`pull`,
//! `annotate` and `scaffold artifacthub`. Linkerd's commands are in [`crate::linkerd`].

pub mod annotate;
pub mod artifacthub;
pub mod cli;
pub mod manifests;
