//! The Kubewarden wire types: the AdmissionRequest the guest reads, the answers it gives and the
//! AdmissionResponse built from them, and a module's metadata.

pub mod metadata;
pub mod request;
pub mod response;
pub mod sections;
