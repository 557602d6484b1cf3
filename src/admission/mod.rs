//! One admission: the request's kind and operation, the namespace, Linkerd's decision, then a
//! skip, an injection or (verify mode) a check, and the outcome the shell encodes.
#![forbid(unsafe_code)]

pub mod admit;
pub mod decide;
pub mod guard;
pub mod opaque;
pub mod outcome;
pub mod owner;
pub mod verify;
