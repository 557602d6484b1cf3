//! Semantic checks of decoded settings; each failure names its key path and the accepted form.

use super::{FieldError, Settings, TrustAnchorsSource};
use crate::parse::{cidr, duration, ports, quantity::Quantity};
use serde_json::Value;
use std::fmt::Display;

const PULL_POLICIES: &[&str] = &["", "Always", "IfNotPresent", "Never"];
pub const INBOUND_POLICIES: &[&str] = &[
    "all-unauthenticated",
    "all-authenticated",
    "cluster-unauthenticated",
    "cluster-authenticated",
    "deny",
    "audit",
];

/// The failures of `s`, in the order of the keys checked.
pub fn validate(s: &Settings) -> Vec<FieldError> {
    let mut v = Checker(Vec::new());
    let p = &s.proxy;

    v.dns_label("policy.controlPlaneNamespace", &s.policy.control_plane_namespace);
    v.non_empty("policy.createdBy", &s.policy.created_by);
    v.non_empty("policy.trustAnchorsConfigMap", &s.policy.trust_anchors_config_map);
    v.non_empty("policy.linkerdConfigMap", &s.policy.linkerd_config_map);
    if s.policy.trust_anchors == TrustAnchorsSource::Inline && s.identity_trust_anchors_pem.trim().is_empty()
    {
        v.fail(
            "identityTrustAnchorsPEM",
            "must be set when policy.trustAnchors is \"inline\"",
        );
    }
    for (i, prefix) in s.policy.allowed_images.iter().enumerate() {
        v.non_empty(format_args!("policy.allowedImages[{i}]"), prefix);
    }
    for (i, key) in s.policy.restricted_annotations.iter().enumerate() {
        if !(key.starts_with("config.linkerd.io/")
            || key.starts_with("config.alpha.linkerd.io/")
            || key.starts_with("config.beta.linkerd.io/"))
        {
            v.fail(
                format_args!("policy.restrictedAnnotations[{i}]"),
                format!("must be a config.linkerd.io/* override annotation, got \"{key}\""),
            );
        }
    }
    if let Some((key, _)) = s.policy.exempt_label()
        && key.is_empty()
    {
        v.fail(
            "policy.restrictedAnnotationsExemptLabel",
            "must be \"key\" or \"key=value\"",
        );
    }
    if s.proxy.uid == 0 && !s.policy.allow_root_proxy {
        v.fail("proxy.uid", "must not be 0 unless policy.allowRootProxy is true");
    }
    // The debug image is checked at admission, only for pods that enable the debug sidecar.
    let image = &s.proxy.image.name;
    if !s.policy.image_allowed(image) {
        v.fail(
            "proxy.image.name",
            format!("image \"{image}\" is not under policy.allowedImages"),
        );
    }
    v.non_empty("linkerdVersion", &s.linkerd_version);
    v.non_empty("clusterDomain", &s.cluster_domain);
    v.cidrs("clusterNetworks", &s.cluster_networks, false);
    v.one_of("imagePullPolicy", &s.image_pull_policy, PULL_POLICIES);

    v.non_empty("proxy.image.name", &p.image.name);
    v.one_of("proxy.image.pullPolicy", &p.image.pull_policy, PULL_POLICIES);
    v.one_of(
        "debugContainer.image.pullPolicy",
        &s.debug_container.image.pull_policy,
        PULL_POLICIES,
    );
    v.non_empty("debugContainer.image.name", &s.debug_container.image.name);
    for (key, port) in [
        ("admin", p.ports.admin),
        ("control", p.ports.control),
        ("inbound", p.ports.inbound),
        ("outbound", p.ports.outbound),
    ] {
        v.port(format_args!("proxy.ports.{key}"), port);
    }
    v.one_of(
        "proxy.logHTTPHeaders",
        &p.log_http_headers,
        &["", "off", "insecure"],
    );
    v.one_of(
        "proxy.defaultInboundPolicy",
        &p.default_inbound_policy,
        INBOUND_POLICIES,
    );
    let streams = &p.control.streams;
    for (key, val) in [
        ("proxy.outboundConnectTimeout", &p.outbound_connect_timeout),
        ("proxy.inboundConnectTimeout", &p.inbound_connect_timeout),
        (
            "proxy.outboundDiscoveryCacheUnusedTimeout",
            &p.outbound_discovery_cache_unused_timeout,
        ),
        (
            "proxy.inboundDiscoveryCacheUnusedTimeout",
            &p.inbound_discovery_cache_unused_timeout,
        ),
        ("proxy.shutdownGracePeriod", &p.shutdown_grace_period),
        ("proxy.control.streams.initialTimeout", &streams.initial_timeout),
        ("proxy.control.streams.idleTimeout", &streams.idle_timeout),
        ("proxy.control.streams.lifetime", &streams.lifetime),
        ("networkValidator.timeout", &s.network_validator.timeout),
    ] {
        v.duration(key, val);
    }
    let r = &p.resources;
    for (key, val) in [
        ("proxy.resources.cpu.request", &r.cpu.request),
        ("proxy.resources.cpu.limit", &r.cpu.limit),
        ("proxy.resources.memory.request", &r.memory.request),
        ("proxy.resources.memory.limit", &r.memory.limit),
        (
            "proxy.resources.ephemeral-storage.request",
            &r.ephemeral_storage.request,
        ),
        (
            "proxy.resources.ephemeral-storage.limit",
            &r.ephemeral_storage.limit,
        ),
    ] {
        v.quantity(key, val);
    }
    if let Some(cores) = p.cores {
        v.at_least("proxy.cores", cores, 0);
    }
    let w = &p.runtime.workers;
    if let Some(min) = w.minimum {
        v.at_least("proxy.runtime.workers.minimum", min, 0);
    }
    if let Some(max) = w.maximum {
        v.at_least("proxy.runtime.workers.maximum", max, 0);
    }
    if let Some(r) = w.maximum_cpu_ratio
        && !(r > 0.0 && r <= 1.0)
    {
        v.fail(
            "proxy.runtime.workers.maximumCPURatio",
            format!("must be a number in (0, 1], got {r}"),
        );
    }
    v.at_least("proxy.uid", p.uid, 0);
    v.at_least("proxy.gid", p.gid, -1);
    v.at_least("proxy.waitBeforeExitSeconds", p.wait_before_exit_seconds, 0);
    v.object("proxy.securityContext", &p.security_context);
    // a block not given is its chart default, an object (`defaults_pass_validation`)
    v.given_object(
        "networkValidator.securityContext",
        s.network_validator.security_context.given(),
    );
    v.given_object("proxy.inbound", p.inbound.given());
    v.given_object("proxy.outbound", p.outbound.given());
    v.opaque_ports("proxy.opaquePorts", &p.opaque_ports);
    v.port_list(
        "proxy.requireIdentityOnInboundPorts",
        &p.require_identity_on_inbound_ports,
    );
    v.port_list("proxy.podInboundPorts", &p.pod_inbound_ports);
    for (key, list) in [
        ("proxy.additionalEnv", &p.additional_env),
        ("proxy.experimentalEnv", &p.experimental_env),
    ] {
        v.env_list(key, list);
    }
    for (key, probe) in [
        ("proxy.livenessProbe", &p.liveness_probe),
        ("proxy.readinessProbe", &p.readiness_probe),
    ] {
        v.at_least(
            format_args!("{key}.initialDelaySeconds"),
            probe.initial_delay_seconds,
            0,
        );
        v.at_least(format_args!("{key}.timeoutSeconds"), probe.timeout_seconds, 1);
    }
    v.at_least(
        "proxy.startupProbe.initialDelaySeconds",
        p.startup_probe.initial_delay_seconds,
        0,
    );
    v.at_least(
        "proxy.startupProbe.periodSeconds",
        p.startup_probe.period_seconds,
        1,
    );
    v.at_least(
        "proxy.startupProbe.failureThreshold",
        p.startup_probe.failure_threshold,
        1,
    );
    if p.tracing.enabled {
        let c = &p.tracing.collector;
        v.non_empty("proxy.tracing.collector.endpoint", &c.endpoint);
        v.non_empty(
            "proxy.tracing.collector.meshIdentity.serviceAccountName",
            &c.mesh_identity.service_account_name,
        );
        v.non_empty(
            "proxy.tracing.collector.meshIdentity.namespace",
            &c.mesh_identity.namespace,
        );
    }

    let pi = &s.proxy_init;
    v.one_of(
        "proxyInit.iptablesMode",
        &pi.iptables_mode,
        &["", "nft", "legacy"],
    );
    v.port_list("proxyInit.ignoreInboundPorts", &pi.ignore_inbound_ports);
    v.port_list("proxyInit.ignoreOutboundPorts", &pi.ignore_outbound_ports);
    v.cidrs("proxyInit.skipSubnets", &pi.skip_subnets, true);
    v.at_least("proxyInit.closeWaitTimeoutSecs", pi.close_wait_timeout_secs, 0);
    if pi.close_wait_timeout_secs > 0 && !pi.run_as_root {
        v.fail(
            "proxyInit.closeWaitTimeoutSecs",
            "requires proxyInit.runAsRoot: true",
        );
    }
    v.at_least("proxyInit.runAsUser", pi.run_as_user, 0);
    v.at_least("proxyInit.runAsGroup", pi.run_as_group, 0);
    v.non_empty("proxyInit.xtMountPath.name", &pi.xt_mount_path.name);
    v.non_empty("proxyInit.xtMountPath.mountPath", &pi.xt_mount_path.mount_path);
    v.0
}

/// The checks; a key path is any `Display` (a `format_args!` for an indexed key), written out
/// only when its check fails.
struct Checker(Vec<FieldError>);

impl Checker {
    fn fail(&mut self, path: impl Display, message: impl Into<String>) {
        self.0.push(FieldError::new(path.to_string(), message));
    }

    fn non_empty(&mut self, path: impl Display, val: &str) {
        if val.trim().is_empty() {
            self.fail(path, "must not be empty");
        }
    }

    fn one_of(&mut self, path: impl Display, val: &str, allowed: &[&str]) {
        if !allowed.contains(&val) {
            let list: Vec<String> = allowed
                .iter()
                .filter(|a| !a.is_empty())
                .map(|a| format!("\"{a}\""))
                .collect();
            self.fail(path, format!("must be one of {}, got \"{val}\"", list.join(", ")));
        }
    }

    fn port(&mut self, path: impl Display, port: i64) {
        if !(1..=65535).contains(&port) {
            self.fail(path, format!("must be 1-65535, got {port}"));
        }
    }

    fn at_least(&mut self, path: impl Display, val: i64, min: i64) {
        if val < min {
            self.fail(path, format!("must be at least {min}, got {val}"));
        }
    }

    fn duration(&mut self, path: impl Display, val: &str) {
        if !val.is_empty()
            && let Err(e) = duration::parse_go_duration(val)
        {
            self.fail(
                path,
                format!("{e} (a duration such as \"100ms\", \"5s\" or \"1h\")"),
            );
        }
    }

    fn quantity(&mut self, path: impl Display, val: &str) {
        if !val.is_empty()
            && let Err(e) = Quantity::parse(val)
        {
            self.fail(
                path,
                format!("{e} (a Kubernetes quantity such as \"100m\", \"1\" or \"20Mi\")"),
            );
        }
    }

    fn cidrs(&mut self, path: impl Display, val: &str, allow_empty: bool) {
        if val.trim().is_empty() {
            if !allow_empty {
                self.fail(path, "must list at least one CIDR, e.g. \"10.0.0.0/8,fd00::/8\"");
            }
            return;
        }
        if let Err((i, entry, e)) = cidr::parse_cidr_list(val) {
            self.fail(
                path,
                format!("entry {i} \"{entry}\": {e} (comma-separated CIDRs such as \"10.0.0.0/8\")"),
            );
        }
    }

    fn port_list(&mut self, path: impl Display, val: &str) {
        if let Err((entry, e)) = ports::parse_port_ranges(val) {
            self.fail(
                path,
                format!("\"{entry}\": {e} (comma-separated ports or ranges such as \"25,4000-4100\")"),
            );
        }
    }

    /// Opaque ports may also name container ports, which are resolved per pod.
    fn opaque_ports(&mut self, path: impl Display, val: &str) {
        for entry in invalid_opaque_ports(val) {
            self.fail(
                &path,
                format!("\"{entry}\" is neither a port, a range \"lo-hi\" nor a port name"),
            );
        }
    }

    fn object(&mut self, path: impl Display, val: &Value) {
        if !val.is_object() {
            self.fail(path, "must be an object");
        }
    }

    fn given_object(&mut self, path: impl Display, val: Option<&Value>) {
        if let Some(val) = val {
            self.object(path, val);
        }
    }

    fn env_list(&mut self, path: &str, list: &[Value]) {
        for (i, item) in list.iter().enumerate() {
            let named = item
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !named {
                self.fail(
                    format_args!("{path}[{i}]"),
                    "must be an EnvVar object with a non-empty \"name\"",
                );
            }
        }
    }

    fn dns_label(&mut self, path: impl Display, val: &str) {
        let ok = !val.is_empty()
            && val.len() <= 63
            && val
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !val.starts_with('-')
            && !val.ends_with('-');
        if !ok {
            self.fail(
                path,
                format!("must be a DNS-1123 label (a namespace name), got \"{val}\""),
            );
        }
    }
}

/// A Kubernetes container port name (IANA_SVC_NAME): 1-15 lowercase alphanumerics or '-',
/// with at least one letter.
pub fn is_port_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 15
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.bytes().any(|b| b.is_ascii_lowercase())
}

/// The entries of an opaque-ports list that are neither a port, a range nor a port name.
fn invalid_opaque_ports(val: &str) -> impl Iterator<Item = &str> {
    val.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .filter(|e| ports::parse_port_range(e).is_err() && !is_port_name(e))
}

/// Whether `proxy.opaquePorts` would pass validation.
pub fn opaque_ports_are_valid(val: &str) -> bool {
    invalid_opaque_ports(val).next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type TextField = fn(&mut Settings) -> &mut super::super::Text;

    /// The text fields, each with a valid value other than its default and an invalid one.
    const TEXTS: [(TextField, &str, &str); 22] = [
        (|s| &mut s.proxy.outbound_connect_timeout, "2s", "2x"),
        (|s| &mut s.proxy.inbound_connect_timeout, "2s", "s"),
        (
            |s| &mut s.proxy.outbound_discovery_cache_unused_timeout,
            "1m",
            "1",
        ),
        (
            |s| &mut s.proxy.inbound_discovery_cache_unused_timeout,
            "1h",
            "h1",
        ),
        (|s| &mut s.proxy.shutdown_grace_period, "10s", "-"),
        (|s| &mut s.proxy.control.streams.initial_timeout, "4s", "4"),
        (|s| &mut s.proxy.control.streams.idle_timeout, "6m", "6q"),
        (|s| &mut s.proxy.control.streams.lifetime, "2h", "two"),
        (|s| &mut s.network_validator.timeout, "5s", "5 s"),
        (|s| &mut s.proxy.resources.cpu.request, "200m", "2c"),
        (|s| &mut s.proxy.resources.cpu.limit, "1", "1.2.3"),
        (|s| &mut s.proxy.resources.memory.request, "20Mi", "20MiB"),
        (|s| &mut s.proxy.resources.memory.limit, "1Gi", "1GB"),
        (|s| &mut s.proxy.resources.ephemeral_storage.request, "1Mi", "x"),
        (|s| &mut s.proxy.resources.ephemeral_storage.limit, "2Gi", "--"),
        (|s| &mut s.proxy.require_identity_on_inbound_ports, "25", "70000"),
        (|s| &mut s.proxy.pod_inbound_ports, "80,443", "a"),
        (|s| &mut s.proxy_init.ignore_inbound_ports, "4000-4100", "5-"),
        (|s| &mut s.proxy_init.ignore_outbound_ports, "25", "0-"),
        (|s| &mut s.cluster_networks, "10.0.0.0/8", "10.0.0.0/33"),
        (|s| &mut s.proxy_init.skip_subnets, "fd00::/8", "fd00::/129"),
        (|s| &mut s.proxy.opaque_ports, "http,25", "99999"),
    ];

    /// Settings with each field at its default (0), its valid alternative (1) or its invalid
    /// value (2).
    fn with(choices: &[u8]) -> Settings {
        let mut s = Settings::default();
        for ((field, valid, invalid), choice) in TEXTS.iter().zip(choices) {
            match choice {
                1 => *field(&mut s) = valid.to_string().into(),
                2 => *field(&mut s) = invalid.to_string().into(),
                _ => {}
            }
        }
        s
    }

    #[test]
    fn every_invalid_value_is_refused() {
        for i in 0..TEXTS.len() {
            let mut choices = [0; TEXTS.len()];
            choices[i] = 2;
            assert_eq!(validate(&with(&choices)).len(), 1, "field {i}");
            choices[i] = 1;
            assert_eq!(validate(&with(&choices)), vec![], "field {i}");
        }
    }

    /// Failures come in the order of the keys checked.
    #[test]
    fn failures_keep_their_order() {
        let mut s = with(&[0; TEXTS.len()]);
        s.proxy.additional_env = vec![Value::Null];
        s.proxy_init.iptables_mode = "x".into();
        s.proxy_init.ignore_inbound_ports = "5-".into();
        let paths: Vec<_> = validate(&s).into_iter().map(|e| e.path).collect();
        assert_eq!(
            paths,
            [
                "proxy.additionalEnv[0]",
                "proxyInit.iptablesMode",
                "proxyInit.ignoreInboundPorts"
            ]
        );
    }

    proptest! {
        /// Any mix of default, valid and invalid values fails once for each invalid one.
        #[test]
        fn each_invalid_value_fails_once_in_any_mix(
            choices in proptest::collection::vec(0u8..3, TEXTS.len()),
        ) {
            let invalid = choices.iter().filter(|&&c| c == 2).count();
            prop_assert_eq!(validate(&with(&choices)).len(), invalid);
        }
    }
}
