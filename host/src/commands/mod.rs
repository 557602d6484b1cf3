//! The generic commands of `injector-host`, any Kubewarden policy's, one file (or folder) each:
//! `run` ([`run`], with `kwctl run`'s flags) and `annotate` ([`annotate`], `kwctl annotate`'s
//! metadata section); the flags, errors and output every command shares ([`common`]); and
//! manifest streams kept byte for byte ([`manifests`]). Linkerd's commands are in
//! [`crate::linkerd`]; the command line that joins both is [`crate::cli`], and it alone prints:
//! these commands hand back what goes to stdout and stderr. What kwctl does for every Kubewarden
//! user (`push`, `pull`, `scaffold artifacthub`) stays kwctl's.

pub mod annotate;
pub mod common;
pub mod manifests;
pub mod run;
