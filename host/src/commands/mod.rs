//! The generic commands of `injector-host`: `run` and `annotate`, and manifest streams. Linkerd's
//! commands are in [`crate::linkerd`]; the command line that joins both is [`crate::cli`]. What
//! kwctl does for every Kubewarden user (`push`, `pull`, `scaffold artifacthub`) stays kwctl's.

pub mod annotate;
pub mod generic;
pub mod manifests;
