//! Pure, panic-free parsers that read annotation and setting strings exactly like Go, Kubernetes
//! and Linkerd do, so that the policy accepts and rejects the same values as the Linkerd injector.

pub mod cidr;
pub mod duration;
pub mod go;
pub mod ports;
pub mod quantity;

pub use cidr::{Cidr, CidrError, parse_cidr, parse_cidr_list};
pub use duration::{
    DurationError, format_millis, format_seconds, parse_go_duration, whole_millis, whole_seconds,
};
pub use go::{format_float, parse_bool, parse_float, parse_int, parse_int32, parse_uint};
pub use ports::{
    PortError, PortRange, format_port_ranges, parse_opaque_ports, parse_port, parse_port_nonzero,
    parse_port_range, parse_port_ranges,
};
pub use quantity::{Quantity, QuantityError};
