//! The module's edges: the waPC payloads in and out, and the [`Cluster`](crate::cluster::Cluster)
//! over Kubewarden's host capabilities.

mod answer_scan;
mod json_out;
pub mod kubewarden_cluster;
mod masked;
mod payload;
mod spliced;
pub mod wire;
