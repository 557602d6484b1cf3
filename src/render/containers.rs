//! The containers injection adds: `linkerd-proxy`, `linkerd-init` or
//! `linkerd-network-validator`, and the optional `linkerd-debug`.

use super::{Context, env};
use crate::admission::pod;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

/// The `linkerd-proxy` container: its typed `env` and the rest of it as JSON. Written as one
/// object whose first key is `env`, which is where a JSON map puts it too (first in sorted order,
/// and first inserted).
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyContainer {
    pub env: Vec<env::EnvVar>,
    /// Every other key (never `env`).
    pub rest: Map<String, Value>,
}

impl ProxyContainer {
    /// The container as a JSON value, the same as its serialisation.
    pub fn into_value(self) -> Value {
        let env = self
            .env
            .iter()
            .map(|e| serde_json::to_value(e).unwrap_or(Value::Null));
        let mut c = Map::with_capacity(self.rest.len() + 1);
        c.insert("env".into(), Value::Array(env.collect()));
        c.extend(self.rest);
        Value::Object(c)
    }
}

impl Serialize for ProxyContainer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(Some(self.rest.len() + 1))?;
        m.serialize_entry("env", &self.env)?;
        for (k, v) in &self.rest {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

const RUNTIME_DEFAULT: &str = "RuntimeDefault";

/// `requests`/`limits` from `proxy.resources`, only non-empty entries; `None` when all empty.
fn resources(cx: &Context<'_>) -> Option<Value> {
    let r = &cx.config.values.proxy.resources;
    let mut requests = Map::new();
    let mut limits = Map::new();
    for (name, pair) in [
        ("cpu", &r.cpu),
        ("memory", &r.memory),
        ("ephemeral-storage", &r.ephemeral_storage),
    ] {
        if !pair.request.is_empty() {
            requests.insert(name.into(), Value::String(pair.request.to_string()));
        }
        if !pair.limit.is_empty() {
            limits.insert(name.into(), Value::String(pair.limit.to_string()));
        }
    }
    let mut out = Map::new();
    if !limits.is_empty() {
        out.insert("limits".into(), Value::Object(limits));
    }
    if !requests.is_empty() {
        out.insert("requests".into(), Value::Object(requests));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// `capabilities.add` / `.drop` of the pod's first container, when it sets capabilities.
fn first_container_caps(spec: &Value) -> Option<(Vec<Value>, Vec<Value>)> {
    let caps = pod::containers(spec)
        .first()?
        .pointer("/securityContext/capabilities")?;
    let list = |k: &str| caps.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    Some((list("add"), list("drop")))
}

/// A copy of the service-account token mount (name, path, read-only), if the pod has one.
fn sa_mount_copy(spec: &Value) -> Option<Value> {
    let m = pod::sa_token_mount(spec)?;
    let mut out = Map::new();
    for key in ["mountPath", "name", "readOnly"] {
        if let Some(v) = m.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    Some(Value::Object(out))
}

fn set_resources(container: &mut Value, cx: &Context<'_>) {
    if let Some(obj) = container.as_object_mut() {
        insert_resources(obj, cx);
    }
}

fn insert_resources(container: &mut Map<String, Value>, cx: &Context<'_>) {
    if let Some(res) = resources(cx) {
        container.insert("resources".into(), res);
    }
}

fn http_probe(path: &str, port: i64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("httpGet".into(), json!({"path": path, "port": port}));
    m
}

pub fn proxy_container(cx: &Context<'_>) -> ProxyContainer {
    let v = &cx.config.values;
    let p = &v.proxy;
    let admin = p.ports.admin;
    let native = p.native_sidecar;

    let mut liveness = http_probe("/live", admin);
    liveness.insert(
        "initialDelaySeconds".into(),
        json!(p.liveness_probe.initial_delay_seconds),
    );
    liveness.insert("timeoutSeconds".into(), json!(p.liveness_probe.timeout_seconds));
    let mut readiness = http_probe("/ready", admin);
    readiness.insert(
        "initialDelaySeconds".into(),
        json!(p.readiness_probe.initial_delay_seconds),
    );
    readiness.insert("timeoutSeconds".into(), json!(p.readiness_probe.timeout_seconds));
    for (probe, src) in [
        (&mut liveness, &p.liveness_probe),
        (&mut readiness, &p.readiness_probe),
    ] {
        if let Some(n) = src.period_seconds {
            probe.insert("periodSeconds".into(), json!(n));
        }
        if let Some(n) = src.failure_threshold {
            probe.insert("failureThreshold".into(), json!(n));
        }
    }

    let mut mounts = vec![
        json!({"mountPath": "/var/run/linkerd/identity/end-entity", "name": "linkerd-identity-end-entity"}),
    ];
    if p.tracing.enabled {
        mounts.push(json!({"mountPath": "/var/run/linkerd/podinfo", "name": "linkerd-podinfo"}));
    }
    if v.identity.service_account_token_projection {
        mounts.push(json!({"mountPath": "/var/run/secrets/tokens", "name": "linkerd-identity-token"}));
    }
    mounts.extend(sa_mount_copy(cx.spec));

    let mut rest = super::map([
        ("image", Value::String(cx.proxy_image())),
        ("imagePullPolicy", Value::String(cx.pull_policy().to_owned())),
        ("livenessProbe", Value::Object(liveness)),
        ("name", Value::String("linkerd-proxy".into())),
        (
            "ports",
            json!([
                {"containerPort": p.ports.inbound, "name": "linkerd-proxy"},
                {"containerPort": admin, "name": "linkerd-admin"}
            ]),
        ),
        ("readinessProbe", Value::Object(readiness)),
        ("securityContext", proxy_security_context(cx)),
        (
            "terminationMessagePolicy",
            Value::String("FallbackToLogsOnError".into()),
        ),
        ("volumeMounts", Value::Array(mounts)),
    ]);
    insert_resources(&mut rest, cx);
    let obj = &mut rest;
    if native {
        obj.insert("restartPolicy".into(), json!("Always"));
        if p.r#await {
            let s = &p.startup_probe;
            let mut startup = http_probe("/ready", admin);
            startup.insert("initialDelaySeconds".into(), json!(s.initial_delay_seconds));
            startup.insert("periodSeconds".into(), json!(s.period_seconds));
            startup.insert("failureThreshold".into(), json!(s.failure_threshold));
            obj.insert("startupProbe".into(), Value::Object(startup));
        }
    } else {
        let mut lifecycle = Map::new();
        if p.r#await {
            lifecycle.insert(
                "postStart".into(),
                json!({"exec": {"command": ["/usr/lib/linkerd/linkerd-await", "--timeout=2m", format!("--port={admin}")]}}),
            );
        }
        if p.wait_before_exit_seconds > 0 {
            lifecycle.insert(
                "preStop".into(),
                json!({"exec": {"command": ["/bin/sleep", p.wait_before_exit_seconds.to_string()]}}),
            );
        }
        if !lifecycle.is_empty() {
            obj.insert("lifecycle".into(), Value::Object(lifecycle));
        }
    }
    ProxyContainer {
        env: env::proxy_env(cx),
        rest,
    }
}

fn proxy_security_context(cx: &Context<'_>) -> Value {
    let p = &cx.config.values.proxy;
    if p.security_context.as_object().is_some_and(|m| !m.is_empty()) {
        return p.security_context.clone();
    }
    let mut sc = Map::new();
    sc.insert("allowPrivilegeEscalation".into(), json!(false));
    if let Some((add, drop)) = first_container_caps(cx.spec) {
        let mut caps = Map::new();
        if !add.is_empty() {
            caps.insert("add".into(), Value::Array(add));
        }
        if !drop.is_empty() {
            caps.insert("drop".into(), Value::Array(drop));
        }
        sc.insert("capabilities".into(), Value::Object(caps));
    }
    sc.insert("readOnlyRootFilesystem".into(), json!(true));
    sc.insert("runAsNonRoot".into(), json!(true));
    sc.insert("runAsUser".into(), json!(p.uid));
    if p.gid >= 0 {
        sc.insert("runAsGroup".into(), json!(p.gid));
    }
    sc.insert("seccompProfile".into(), json!({"type": RUNTIME_DEFAULT}));
    Value::Object(sc)
}

pub fn init_container(cx: &Context<'_>) -> Value {
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
    let mut ignore_in = format!("{},{}", p.ports.control, p.ports.admin);
    if !pi.ignore_inbound_ports.is_empty() {
        ignore_in = format!("{ignore_in},{}", pi.ignore_inbound_ports);
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

    let privileged = cx.config.close_wait_secs > 0 || pi.privileged;
    let mut add = vec![json!("NET_ADMIN"), json!("NET_RAW")];
    let mut caps = Map::new();
    if let Some((extra_add, drop)) = first_container_caps(cx.spec) {
        add.extend(extra_add);
        let drop: Vec<Value> = drop
            .into_iter()
            .filter(|d| !matches!(d.as_str(), Some("NET_RAW" | "NET_ADMIN")))
            .collect();
        if !drop.is_empty() {
            caps.insert("drop".into(), Value::Array(drop));
        }
    }
    caps.insert("add".into(), Value::Array(add));
    let mut sc = Map::new();
    sc.insert("allowPrivilegeEscalation".into(), json!(privileged));
    sc.insert("capabilities".into(), Value::Object(caps));
    sc.insert("privileged".into(), json!(privileged));
    if pi.run_as_root {
        sc.insert("runAsGroup".into(), json!(0));
        sc.insert("runAsNonRoot".into(), json!(false));
        sc.insert("runAsUser".into(), json!(0));
    } else {
        let or_nobody = |id: i64| if id == 0 { 65534 } else { id };
        sc.insert("runAsNonRoot".into(), json!(true));
        sc.insert("runAsUser".into(), json!(or_nobody(pi.run_as_user)));
        sc.insert("runAsGroup".into(), json!(or_nobody(pi.run_as_group)));
    }
    sc.insert("readOnlyRootFilesystem".into(), json!(true));
    sc.insert("seccompProfile".into(), json!({"type": RUNTIME_DEFAULT}));

    let mut mounts = vec![json!({"mountPath": pi.xt_mount_path.mount_path, "name": pi.xt_mount_path.name})];
    mounts.extend(sa_mount_copy(cx.spec));
    let mut c = super::object([
        (
            "args",
            Value::Array(args.into_iter().map(Value::String).collect()),
        ),
        ("command", json!(["/usr/lib/linkerd/linkerd2-proxy-init"])),
        ("image", Value::String(cx.proxy_image())),
        ("imagePullPolicy", Value::String(cx.pull_policy().to_owned())),
        ("name", Value::String("linkerd-init".into())),
        ("securityContext", Value::Object(sc)),
        (
            "terminationMessagePolicy",
            Value::String("FallbackToLogsOnError".into()),
        ),
        ("volumeMounts", Value::Array(mounts)),
    ]);
    set_resources(&mut c, cx);
    c
}

pub fn network_validator(cx: &Context<'_>) -> Value {
    let v = &cx.config.values;
    let nv = &v.network_validator;
    let connect = if !nv.connect_addr.is_empty() {
        nv.connect_addr.to_string()
    } else if v.disable_ipv6 {
        "1.1.1.1:20001".into()
    } else {
        "[fd00::1]:20001".into()
    };
    let listen = if !nv.listen_addr.is_empty() {
        nv.listen_addr.to_string()
    } else if v.disable_ipv6 {
        format!("0.0.0.0:{}", v.proxy.ports.outbound)
    } else {
        format!("[::]:{}", v.proxy.ports.outbound)
    };
    let mut c = json!({
        "args": ["--log-format", nv.log_format, "--log-level", nv.log_level,
                 "--connect-addr", connect, "--listen-addr", listen, "--timeout", nv.timeout],
        "command": ["/usr/lib/linkerd/linkerd2-network-validator"],
        "image": cx.proxy_image(),
        "imagePullPolicy": cx.pull_policy(),
        "name": "linkerd-network-validator",
        "securityContext": nv.security_context.get(),
    });
    set_resources(&mut c, cx);
    c
}

pub fn debug_container(cx: &Context<'_>) -> Value {
    let v = &cx.config.values;
    let d = &v.debug_container.image;
    let pull = if d.pull_policy.is_empty() {
        &v.image_pull_policy
    } else {
        &d.pull_policy
    };
    json!({
        "image": cx.debug_image(),
        "imagePullPolicy": pull,
        "livenessProbe": {"exec": {"command": ["true"]}},
        "name": "linkerd-debug",
        "readinessProbe": {"exec": {"command": ["true"]}},
        "terminationMessagePolicy": "FallbackToLogsOnError",
    })
}
