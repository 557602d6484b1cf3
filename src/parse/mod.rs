//! Pure, panic-free parsers that read annotation and setting strings exactly like Go, Kubernetes
//! and Linkerd do, so that the policy accepts and rejects the same values as the Linkerd injector.
#![forbid(unsafe_code)]

pub mod cidr;
pub mod duration;
pub mod go;
pub mod ports;
pub mod quantity;
