//! The module's edges: the waPC payloads in and out, and the [`Cluster`](crate::cluster::Cluster)
//! over Kubewarden's host capabilities.

mod json_out;
pub mod kubewarden_cluster;
mod masked;
mod payload;
mod rewrite;
mod scan;
pub mod wire;
