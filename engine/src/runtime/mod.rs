//! Module loading and evaluation: the wasmtime/waPC engine, the host-call dispatcher and the
//! peak-memory probe.

pub mod callback;
pub mod engine;
pub mod memory;
