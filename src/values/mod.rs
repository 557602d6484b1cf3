//! The values a pod is injected with: the policy's settings, layered over the control plane's
//! `linkerd-config` (read through one list of its ConfigMaps, parsed by a reader of the
//! YAML Helm writes), and the trust anchors.
#![forbid(unsafe_code)]

pub mod config_maps;
pub mod helm_yaml;
pub mod linkerd_config;
pub mod settings;
pub mod trust;
