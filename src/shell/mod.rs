//! The module's edges: the waPC payloads in and out, and the [`Cluster`](crate::cluster::Cluster)
//! over Kubewarden's host capabilities.

pub mod kubewarden_cluster;
mod masked;
mod payload;
mod spliced;
pub mod wire;
