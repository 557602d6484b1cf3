//! What injection adds to a pod: containers, init containers and volumes. What every injection
//! adds is built typed ([`ProxyContainer`], linkerd-init, [`Volume`]); the CNI validator and
//! the debug sidecar are JSON values.
#![forbid(unsafe_code)]

pub mod additions;
pub mod config;
mod containers;
mod env;
mod inbound_ports;
mod init_container;
pub mod inject;
mod security_context;
mod volumes;

pub use containers::{ProxyContainer, debug_container, network_validator, proxy_container};
pub use inbound_ports::inbound_ports;
pub use init_container::init_container;
pub use volumes::{Volume, end_entity_volume, podinfo_volume, token_volume, xtables_volume};

use crate::pod;
use crate::render::config::ProxyConfig;
use serde_json::Value;

/// Everything rendering needs, computed once per pod.
pub struct Context<'a> {
    pub config: &'a ProxyConfig<'a>,
    /// The trust bundle as read (untrimmed).
    pub trust_anchors: &'a str,
    /// Value of `LINKERD2_PROXY_INBOUND_PORTS`.
    pub inbound_ports: String,
    /// The first container's service-account token mount, which the proxy and `linkerd-init`
    /// both copy (found once).
    pub sa_token_mount: Option<&'a Value>,
    /// The first container's `securityContext.capabilities`, which both security contexts
    /// read (found once).
    pub first_capabilities: Option<&'a Value>,
}

impl<'a> Context<'a> {
    pub fn new(config: &'a ProxyConfig<'a>, spec: &'a Value, trust_anchors: &'a str) -> Self {
        let inbound_ports = if config.values.proxy.pod_inbound_ports.is_empty() {
            inbound_ports(spec)
        } else {
            config.values.proxy.pod_inbound_ports.to_string()
        };
        let first_capabilities = pod::containers(spec)
            .first()
            .and_then(|c| c.get("securityContext")?.get("capabilities"));
        Self {
            config,
            trust_anchors,
            inbound_ports,
            sa_token_mount: pod::sa_token_mount(spec),
            first_capabilities,
        }
    }

    /// `<image>:<tag>` of the proxy (also used by linkerd-init and the validator).
    pub fn proxy_image(&self) -> String {
        let v = &self.config.values;
        [&*v.proxy.image.name, ":", self.proxy_version()].concat()
    }

    pub fn proxy_version(&self) -> &str {
        let v = &self.config.values;
        if v.proxy.image.version.is_empty() {
            &v.linkerd_version
        } else {
            &v.proxy.image.version
        }
    }

    /// `<image>:<tag>` of the debug sidecar.
    pub fn debug_image(&self) -> String {
        let v = &self.config.values;
        let d = &v.debug_container.image;
        let tag = if d.version.is_empty() {
            &v.linkerd_version
        } else {
            &d.version
        };
        [&*d.name, ":", tag].concat()
    }

    pub fn pull_policy(&self) -> &str {
        let v = &self.config.values;
        if v.proxy.image.pull_policy.is_empty() {
            &v.image_pull_policy
        } else {
            &v.proxy.image.pull_policy
        }
    }
}
