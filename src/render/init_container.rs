//! The `linkerd-init` container, typed: written straight into the answer, fields in the order
//! of their JSON names (the order a JSON map writes them in).

use super::Context;
use super::containers::{Mount, resources, sa_mount_copy};
use super::security_context::{self, InitSecurity};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitContainer {
    args: Vec<String>,
    command: [&'static str; 1],
    image: String,
    image_pull_policy: String,
    name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<Value>,
    security_context: InitSecurity,
    termination_message_policy: &'static str,
    volume_mounts: Vec<Mount>,
}

pub fn init_container(cx: &Context<'_>) -> InitContainer {
    let pi = &cx.config.values.proxy_init;
    let mut volume_mounts = vec![Mount::Linkerd {
        mount_path: pi.xt_mount_path.mount_path.clone(),
        name: pi.xt_mount_path.name.clone(),
    }];
    volume_mounts.extend(sa_mount_copy(cx).map(Mount::Copied));
    InitContainer {
        args: args(cx),
        command: ["/usr/lib/linkerd/linkerd2-proxy-init"],
        image: cx.proxy_image(),
        image_pull_policy: cx.pull_policy().to_owned(),
        name: "linkerd-init",
        resources: resources(cx),
        security_context: security_context::init(cx),
        termination_message_policy: "FallbackToLogsOnError",
        volume_mounts,
    }
}

/// proxy-init's flags, in the chart's order.
fn args(cx: &Context<'_>) -> Vec<String> {
    let v = &cx.config.values;
    let (p, pi) = (&v.proxy, &v.proxy_init);
    let mut args: Vec<String> = Vec::new();
    if pi.iptables_mode == "nft" {
        args.extend(
            [
                "--firewall-bin-path",
                "iptables-nft",
                "--firewall-save-bin-path",
                "iptables-nft-save",
            ]
            .map(String::from),
        );
    }
    if v.disable_ipv6 {
        args.push("--ipv6=false".into());
    }
    let mut pair = |flag: &str, value: String| {
        args.push(flag.into());
        args.push(value);
    };
    pair("--incoming-proxy-port", p.ports.inbound.to_string());
    pair("--outgoing-proxy-port", p.ports.outbound.to_string());
    pair("--proxy-uid", p.uid.to_string());
    if p.gid >= 0 {
        pair("--proxy-gid", p.gid.to_string());
    }
    let (control, admin) = (p.ports.control.to_string(), p.ports.admin.to_string());
    let mut ignore_in = [&*control, ",", &admin].concat();
    if !pi.ignore_inbound_ports.is_empty() {
        ignore_in = [&*ignore_in, ",", &pi.ignore_inbound_ports].concat();
    }
    pair("--inbound-ports-to-ignore", ignore_in);
    if !pi.ignore_outbound_ports.is_empty() {
        pair("--outbound-ports-to-ignore", pi.ignore_outbound_ports.to_string());
    }
    if cx.config.close_wait_secs > 0 {
        pair("--timeout-close-wait-secs", cx.config.close_wait_secs.to_string());
    }
    if !pi.log_format.is_empty() {
        pair("--log-format", pi.log_format.to_string());
    }
    if !pi.log_level.is_empty() {
        pair("--log-level", pi.log_level.to_string());
    }
    if !pi.skip_subnets.is_empty() {
        pair("--subnets-to-ignore", pi.skip_subnets.to_string());
    }
    args
}
