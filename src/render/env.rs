//! The `linkerd-proxy` container's environment, in Linkerd's exact order, as typed entries.

use super::Context;
use crate::parse::go;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use std::borrow::Cow;

type Text = Cow<'static, str>;

/// One entry of the proxy's `env`.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvVar {
    /// `{"name": .., "value": ..}`
    Plain { name: Text, value: Text },
    /// `{"name": .., "valueFrom": {"fieldRef": {"fieldPath": ..}}}`
    Field { name: &'static str, path: &'static str },
    /// An entry from the settings (`proxy.additionalEnv`, `proxy.experimentalEnv`), as given.
    Given(Value),
}

impl Serialize for EnvVar {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// `{"fieldRef": {"fieldPath": path}}`
        struct FieldRef(&'static str);
        impl Serialize for FieldRef {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut m = serializer.serialize_map(Some(1))?;
                m.serialize_entry("fieldRef", &FieldPath(self.0))?;
                m.end()
            }
        }
        struct FieldPath(&'static str);
        impl Serialize for FieldPath {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut m = serializer.serialize_map(Some(1))?;
                m.serialize_entry("fieldPath", self.0)?;
                m.end()
            }
        }
        match self {
            EnvVar::Plain { name, value } => {
                let mut m = serializer.serialize_map(Some(2))?;
                m.serialize_entry("name", name)?;
                m.serialize_entry("value", value)?;
                m.end()
            }
            EnvVar::Field { name, path } => {
                let mut m = serializer.serialize_map(Some(2))?;
                m.serialize_entry("name", name)?;
                m.serialize_entry("valueFrom", &FieldRef(path))?;
                m.end()
            }
            EnvVar::Given(value) => value.serialize(serializer),
        }
    }
}

fn var(name: impl Into<Text>, value: impl Into<Text>) -> EnvVar {
    EnvVar::Plain {
        name: name.into(),
        value: value.into(),
    }
}

fn field(name: &'static str, path: &'static str) -> EnvVar {
    EnvVar::Field { name, path }
}

fn flag(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

pub fn proxy_env(cx: &Context<'_>) -> Vec<EnvVar> {
    let v = &cx.config.values;
    let p = &v.proxy;
    let ns = &v.policy.control_plane_namespace;
    let cd = &v.cluster_domain;
    let td = v.trust_domain();
    let bind = if v.disable_ipv6 { "0.0.0.0" } else { "[::]" };
    let mut env = vec![
        field("_pod_name", "metadata.name"),
        field("_pod_ns", "metadata.namespace"),
        field("_pod_uid", "metadata.uid"),
        field("_pod_ip", "status.podIP"),
        field("_pod_nodeName", "spec.nodeName"),
        var("_pod_containerName", "linkerd-proxy"),
    ];
    let w = &p.runtime.workers;
    if let Some(cores) = p.cores.filter(|c| *c != 0) {
        env.push(var("LINKERD2_PROXY_CORES", cores.to_string()));
        env.push(var("LINKERD2_PROXY_CORES_MIN", cores.to_string()));
    } else if w.minimum.unwrap_or(0) != 0
        || w.maximum.unwrap_or(0) != 0
        || w.maximum_cpu_ratio.unwrap_or(0.0) != 0.0
    {
        let min = w.minimum.filter(|m| *m != 0).unwrap_or(1).to_string();
        env.push(var("LINKERD2_PROXY_CORES", min.clone()));
        env.push(var("LINKERD2_PROXY_CORES_MIN", min));
    }
    if let Some(max) = w.maximum.filter(|m| *m != 0) {
        env.push(var("LINKERD2_PROXY_CORES_MAX", max.to_string()));
    }
    if let Some(ratio) = w.maximum_cpu_ratio.filter(|r| *r != 0.0) {
        env.push(var("LINKERD2_PROXY_CORES_MAX_RATIO", go::format_float(ratio)));
    }
    if !p.require_identity_on_inbound_ports.is_empty() {
        env.push(var(
            "LINKERD2_PROXY_INBOUND_PORTS_REQUIRE_IDENTITY",
            p.require_identity_on_inbound_ports.clone(),
        ));
    }
    env.push(var(
        "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED",
        flag(p.enable_shutdown_endpoint),
    ));
    let log = if p.log_http_headers == "insecure" {
        p.log_level.to_string()
    } else {
        [&*p.log_level, ",[{headers}]=off,[{request}]=off"].concat()
    };
    env.push(var("LINKERD2_PROXY_LOG", log));
    env.push(var("LINKERD2_PROXY_LOG_FORMAT", p.log_format.clone()));
    env.push(var(
        "LINKERD2_PROXY_DESTINATION_SVC_ADDR",
        ["linkerd-dst-headless.", ns, ".svc.", cd, ".:8086"].concat(),
    ));
    env.push(var(
        "LINKERD2_PROXY_DESTINATION_PROFILE_NETWORKS",
        v.cluster_networks.clone(),
    ));
    env.push(var(
        "LINKERD2_PROXY_POLICY_SVC_ADDR",
        ["linkerd-policy.", ns, ".svc.", cd, ".:8090"].concat(),
    ));
    env.push(var(
        "LINKERD2_PROXY_POLICY_WORKLOAD",
        "{\"ns\":\"$(_pod_ns)\", \"pod\":\"$(_pod_name)\"}\n",
    ));
    env.push(var(
        "LINKERD2_PROXY_INBOUND_DEFAULT_POLICY",
        p.default_inbound_policy.clone(),
    ));
    env.push(var(
        "LINKERD2_PROXY_POLICY_CLUSTER_NETWORKS",
        v.cluster_networks.clone(),
    ));
    let s = &p.control.streams;
    env.push(var(
        "LINKERD2_PROXY_CONTROL_STREAM_INITIAL_TIMEOUT",
        s.initial_timeout.clone(),
    ));
    env.push(var(
        "LINKERD2_PROXY_CONTROL_STREAM_IDLE_TIMEOUT",
        s.idle_timeout.clone(),
    ));
    env.push(var("LINKERD2_PROXY_CONTROL_STREAM_LIFETIME", s.lifetime.clone()));
    for (name, val) in [
        (
            "LINKERD2_PROXY_INBOUND_CONNECT_TIMEOUT",
            &p.inbound_connect_timeout,
        ),
        (
            "LINKERD2_PROXY_OUTBOUND_CONNECT_TIMEOUT",
            &p.outbound_connect_timeout,
        ),
        (
            "LINKERD2_PROXY_OUTBOUND_DISCOVERY_IDLE_TIMEOUT",
            &p.outbound_discovery_cache_unused_timeout,
        ),
        (
            "LINKERD2_PROXY_INBOUND_DISCOVERY_IDLE_TIMEOUT",
            &p.inbound_discovery_cache_unused_timeout,
        ),
    ] {
        if !val.is_empty() {
            env.push(var(name, val.clone()));
        }
    }
    if p.disable_outbound_protocol_detect_timeout {
        env.push(var("LINKERD2_PROXY_OUTBOUND_DETECT_TIMEOUT", "365d"));
    }
    if p.disable_inbound_protocol_detect_timeout {
        env.push(var("LINKERD2_PROXY_INBOUND_DETECT_TIMEOUT", "365d"));
    }
    let ports = &p.ports;
    env.push(var(
        "LINKERD2_PROXY_CONTROL_LISTEN_ADDR",
        [bind, ":", &ports.control.to_string()].concat(),
    ));
    env.push(var(
        "LINKERD2_PROXY_ADMIN_LISTEN_ADDR",
        [bind, ":", &ports.admin.to_string()].concat(),
    ));
    let outbound = ["127.0.0.1:", &ports.outbound.to_string()].concat();
    env.push(var("LINKERD2_PROXY_OUTBOUND_LISTEN_ADDR", outbound.clone()));
    let outbound_addrs = if v.disable_ipv6 {
        outbound
    } else {
        [&*outbound, ",[::1]:", &ports.outbound.to_string()].concat()
    };
    env.push(var("LINKERD2_PROXY_OUTBOUND_LISTEN_ADDRS", outbound_addrs));
    env.push(var(
        "LINKERD2_PROXY_INBOUND_LISTEN_ADDR",
        [bind, ":", &ports.inbound.to_string()].concat(),
    ));
    env.push(field("LINKERD2_PROXY_INBOUND_IPS", "status.podIPs"));
    env.push(var("LINKERD2_PROXY_INBOUND_PORTS", cx.inbound_ports.clone()));
    if p.is_gateway {
        env.push(var(
            "LINKERD2_PROXY_INBOUND_GATEWAY_SUFFIXES",
            ["svc.", cd, "."].concat(),
        ));
    }
    if p.is_ingress {
        env.push(var("LINKERD2_PROXY_INGRESS_MODE", "true"));
    }
    let suffixes = if p.enable_external_profiles {
        ".".to_string()
    } else {
        ["svc.", cd, "."].concat()
    };
    env.push(var("LINKERD2_PROXY_DESTINATION_PROFILE_SUFFIXES", suffixes));
    env.push(var("LINKERD2_PROXY_INBOUND_ACCEPT_KEEPALIVE", "10000ms"));
    env.push(var("LINKERD2_PROXY_OUTBOUND_CONNECT_KEEPALIVE", "10000ms"));
    env.push(var("LINKERD2_PROXY_INBOUND_ACCEPT_USER_TIMEOUT", "30s"));
    env.push(var("LINKERD2_PROXY_OUTBOUND_CONNECT_USER_TIMEOUT", "30s"));
    env.push(var(
        "LINKERD2_PROXY_OUTBOUND_METRICS_HOSTNAME_LABELS",
        flag(p.metrics.hostname_labels),
    ));
    if p.tracing.enabled {
        tracing_env(cx, &mut env);
    }
    nested_params("LINKERD2_PROXY_INBOUND", &p.inbound.get(), &mut env);
    nested_params("LINKERD2_PROXY_OUTBOUND", &p.outbound.get(), &mut env);
    if !p.opaque_ports.is_empty() {
        env.push(var(
            "LINKERD2_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION",
            p.opaque_ports.clone(),
        ));
    }
    env.push(var(
        "LINKERD2_PROXY_DESTINATION_CONTEXT",
        "{\"ns\":\"$(_pod_ns)\", \"nodeName\":\"$(_pod_nodeName)\", \"pod\":\"$(_pod_name)\"}\n",
    ));
    env.push(field("_pod_sa", "spec.serviceAccountName"));
    env.push(var("_l5d_ns", ns.clone()));
    env.push(var("_l5d_trustdomain", td.to_owned()));
    env.push(var(
        "LINKERD2_PROXY_IDENTITY_DIR",
        "/var/run/linkerd/identity/end-entity",
    ));
    env.push(var(
        "LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS",
        [cx.trust_anchors.trim(), "\n"].concat(),
    ));
    let token = if v.identity.service_account_token_projection {
        "/var/run/secrets/tokens/linkerd-identity-token"
    } else {
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    };
    env.push(var("LINKERD2_PROXY_IDENTITY_TOKEN_FILE", token));
    env.push(var(
        "LINKERD2_PROXY_IDENTITY_SVC_ADDR",
        ["linkerd-identity-headless.", ns, ".svc.", cd, ".:8080"].concat(),
    ));
    env.push(var(
        "LINKERD2_PROXY_IDENTITY_LOCAL_NAME",
        ["$(_pod_sa).$(_pod_ns).serviceaccount.identity.", ns, ".", td].concat(),
    ));
    let svc_name = |sa: &str| [sa, ".", ns, ".serviceaccount.identity.", ns, ".", td].concat();
    env.push(var(
        "LINKERD2_PROXY_IDENTITY_SVC_NAME",
        svc_name("linkerd-identity"),
    ));
    env.push(var(
        "LINKERD2_PROXY_DESTINATION_SVC_NAME",
        svc_name("linkerd-destination"),
    ));
    env.push(var(
        "LINKERD2_PROXY_POLICY_SVC_NAME",
        svc_name("linkerd-destination"),
    ));
    if !p.access_log.is_empty() {
        env.push(var("LINKERD2_PROXY_ACCESS_LOG", p.access_log.clone()));
    }
    if !p.shutdown_grace_period.is_empty() {
        env.push(var(
            "LINKERD2_PROXY_SHUTDOWN_GRACE_PERIOD",
            p.shutdown_grace_period.clone(),
        ));
    }
    env.extend(p.additional_env.iter().cloned().map(EnvVar::Given));
    env.extend(p.experimental_env.iter().cloned().map(EnvVar::Given));
    env
}

fn tracing_env(cx: &Context<'_>, env: &mut Vec<EnvVar>) {
    let v = &cx.config.values;
    let t = &v.proxy.tracing;
    let or = |given: &Text, default: &'static str| match given.is_empty() {
        true => Text::Borrowed(default),
        false => given.clone(),
    };
    let protocol = or(&t.protocol, "opentelemetry");
    let service = or(&t.trace_service_name, "linkerd-proxy");
    let id = &t.collector.mesh_identity;
    let extra: String = t.labels.iter().map(|(k, val)| format!("{k}={val}\n")).collect();
    env.push(var(
        "LINKERD2_PROXY_TRACE_ATTRIBUTES_PATH",
        "/var/run/linkerd/podinfo/labels",
    ));
    env.push(var(
        "LINKERD2_PROXY_TRACE_ANNOTATIONS_PATH",
        "/var/run/linkerd/podinfo/annotations",
    ));
    env.push(var("LINKERD2_PROXY_TRACE_PROTOCOL", protocol));
    env.push(var("LINKERD2_PROXY_TRACE_SERVICE_NAME", service));
    env.push(var(
        "LINKERD2_PROXY_TRACE_COLLECTOR_SVC_ADDR",
        t.collector.endpoint.clone(),
    ));
    // Before edge-26.7.1 the collector's identity ended in the cluster domain.
    let domain = if cx
        .config
        .rendering
        .version
        .trace_collector_identity_from_trust_domain()
    {
        v.trust_domain()
    } else {
        &v.cluster_domain
    };
    env.push(var(
        "LINKERD2_PROXY_TRACE_COLLECTOR_SVC_NAME",
        format!(
            "{}.{}.serviceaccount.identity.{}.{domain}",
            id.service_account_name, id.namespace, v.policy.control_plane_namespace,
        ),
    ));
    env.push(var("LINKERD2_PROXY_TRACE_EXTRA_ATTRIBUTES", extra));
}

/// One variable per leaf of `proxy.inbound` / `proxy.outbound`, keys upper-snake-cased and
/// visited in sorted order.
fn nested_params(prefix: &str, value: &Value, env: &mut Vec<EnvVar>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by_key(|(k, _)| *k);
            for (k, v) in entries {
                let mut name = String::with_capacity(prefix.len() + k.len() + 4);
                name.push_str(prefix);
                name.push('_');
                upper_snake_into(k, &mut name);
                nested_params(&name, v, env);
            }
        }
        Value::String(s) => env.push(var(prefix.to_owned(), s.clone())),
        Value::Null => {}
        other => env.push(var(prefix.to_owned(), other.to_string())),
    }
}

/// Appends `key` upper-snake-cased: `keepAliveInterval` → `KEEP_ALIVE_INTERVAL`, `http2` → `HTTP2`.
fn upper_snake_into(key: &str, out: &mut String) {
    for (i, ch) in key.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(ch.to_uppercase());
    }
}
