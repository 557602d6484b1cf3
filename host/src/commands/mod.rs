//! The generic commands of `injector-host`: `run`, `push`/`pull`, `annotate` and `scaffold
//! artifacthub`, and manifest streams. Linkerd's commands are in [`crate::linkerd`]; the command
//! line that joins both is [`crate::cli`].

pub mod annotate;
pub mod artifacthub;
pub mod generic;
pub mod manifests;
