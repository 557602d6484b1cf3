//! The containers injection adds: `linkerd-proxy`, `linkerd-init` or
//! `linkerd-network-validator`, and the optional `linkerd-debug`.

use super::{Context, env};
use crate::admission::pod;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The `linkerd-proxy` container, typed: written straight into the answer by the shell. Its
/// fields are in the order of their JSON names, which is the order a JSON map writes them in,
/// so the answer's bytes are those of the container built as a map.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyContainer {
    pub env: Vec<env::EnvVar>,
    image: String,
    image_pull_policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    lifecycle: Option<Lifecycle>,
    liveness_probe: Probe,
    name: &'static str,
    ports: [Port; 2],
    readiness_probe: Probe,
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    restart_policy: Option<&'static str>,
    security_context: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    startup_probe: Option<Probe>,
    termination_message_policy: &'static str,
    volume_mounts: Vec<Mount>,
}

impl ProxyContainer {
    /// The container as a JSON value, the same as its serialisation.
    pub fn into_value(self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// A container with every field at its zero, for the shell's tests of where it is written.
    #[cfg(test)]
    pub(crate) fn blank() -> Self {
        let probe = Probe {
            failure_threshold: None,
            http_get: HttpGet { path: "/", port: 0 },
            initial_delay_seconds: 0,
            period_seconds: None,
            timeout_seconds: None,
        };
        let port = |name| Port {
            container_port: 0,
            name,
        };
        Self {
            env: Vec::new(),
            image: String::new(),
            image_pull_policy: String::new(),
            lifecycle: None,
            liveness_probe: probe.clone(),
            name: "linkerd-proxy",
            ports: [port("a"), port("b")],
            readiness_probe: probe,
            resources: None,
            restart_policy: None,
            security_context: Value::Null,
            startup_probe: None,
            termination_message_policy: "",
            volume_mounts: Vec::new(),
        }
    }
}

/// An HTTP probe of the proxy's admin port.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Probe {
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_threshold: Option<i64>,
    http_get: HttpGet,
    initial_delay_seconds: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    period_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_seconds: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct HttpGet {
    path: &'static str,
    port: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Port {
    container_port: i64,
    name: &'static str,
}

/// `postStart` (proxy-await) and `preStop` (wait before exit) hooks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Lifecycle {
    #[serde(skip_serializing_if = "Option::is_none")]
    post_start: Option<Exec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pre_stop: Option<Exec>,
}

/// `{"exec": {"command": [...]}}`
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Exec {
    exec: Command,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Command {
    command: Vec<Cow<'static, str>>,
}

impl Exec {
    fn new(command: Vec<Cow<'static, str>>) -> Self {
        Self {
            exec: Command { command },
        }
    }
}

/// A volume mount: one of Linkerd's, or the pod's service-account token mount as copied.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
enum Mount {
    #[serde(rename_all = "camelCase")]
    Linkerd {
        mount_path: &'static str,
        name: &'static str,
    },
    Copied(Value),
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
        .get("securityContext")?
        .get("capabilities")?;
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
    if let (Some(res), Some(obj)) = (resources(cx), container.as_object_mut()) {
        obj.insert("resources".into(), res);
    }
}

pub fn proxy_container(cx: &Context<'_>) -> ProxyContainer {
    let v = &cx.config.values;
    let p = &v.proxy;
    let admin = p.ports.admin;
    let native = p.native_sidecar;
    let probe = |path, src: &crate::values::settings::Probe| Probe {
        failure_threshold: src.failure_threshold,
        http_get: HttpGet { path, port: admin },
        initial_delay_seconds: src.initial_delay_seconds,
        period_seconds: src.period_seconds,
        timeout_seconds: Some(src.timeout_seconds),
    };
    let mount = |mount_path, name| Mount::Linkerd { mount_path, name };
    let mut mounts = vec![mount(
        "/var/run/linkerd/identity/end-entity",
        "linkerd-identity-end-entity",
    )];
    if p.tracing.enabled {
        mounts.push(mount("/var/run/linkerd/podinfo", "linkerd-podinfo"));
    }
    if v.identity.service_account_token_projection {
        mounts.push(mount("/var/run/secrets/tokens", "linkerd-identity-token"));
    }
    mounts.extend(sa_mount_copy(cx.spec).map(Mount::Copied));
    let (restart_policy, startup_probe, lifecycle) = if native {
        let s = &p.startup_probe;
        let startup = p.r#await.then_some(Probe {
            failure_threshold: Some(s.failure_threshold),
            http_get: HttpGet {
                path: "/ready",
                port: admin,
            },
            initial_delay_seconds: s.initial_delay_seconds,
            period_seconds: Some(s.period_seconds),
            timeout_seconds: None,
        });
        (Some("Always"), startup, None)
    } else {
        let lifecycle = Lifecycle {
            post_start: p.r#await.then(|| {
                Exec::new(vec![
                    "/usr/lib/linkerd/linkerd-await".into(),
                    "--timeout=2m".into(),
                    format!("--port={admin}").into(),
                ])
            }),
            pre_stop: (p.wait_before_exit_seconds > 0).then(|| {
                Exec::new(vec![
                    "/bin/sleep".into(),
                    p.wait_before_exit_seconds.to_string().into(),
                ])
            }),
        };
        let any = lifecycle.post_start.is_some() || lifecycle.pre_stop.is_some();
        (None, None, any.then_some(lifecycle))
    };
    ProxyContainer {
        env: env::proxy_env(cx),
        image: cx.proxy_image(),
        image_pull_policy: cx.pull_policy().to_owned(),
        lifecycle,
        liveness_probe: probe("/live", &p.liveness_probe),
        name: "linkerd-proxy",
        ports: [
            Port {
                container_port: p.ports.inbound,
                name: "linkerd-proxy",
            },
            Port {
                container_port: admin,
                name: "linkerd-admin",
            },
        ],
        readiness_probe: probe("/ready", &p.readiness_probe),
        resources: resources(cx),
        restart_policy,
        security_context: proxy_security_context(cx),
        startup_probe,
        termination_message_policy: "FallbackToLogsOnError",
        volume_mounts: mounts,
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
