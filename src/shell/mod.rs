//! The module's edges: the waPC payloads in and out, and the [`Cluster`](crate::cluster::Cluster)
//! over Kubewarden's host capabilities. Every input is read, and every answer written, by
//! serde_json.
#![forbid(unsafe_code)]

pub mod kubewarden_cluster;
mod masked;
mod payload;
pub mod wire;
