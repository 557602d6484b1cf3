//! The containers injection adds: `linkerd-proxy`, `linkerd-network-validator` (in place of
//! `linkerd-init`, `init_container.rs`, with the CNI plugin) and the optional `linkerd-debug`.

use super::security_context::{self, ProxySecurity};
use super::{Context, env};
use crate::values::settings::Text;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The `linkerd-proxy` container, typed, its fields in the order of their JSON names.
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
    security_context: ProxySecurity,
    #[serde(skip_serializing_if = "Option::is_none")]
    startup_probe: Option<Probe>,
    termination_message_policy: &'static str,
    volume_mounts: Vec<Mount>,
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
pub(super) enum Mount {
    #[serde(rename_all = "camelCase")]
    Linkerd {
        mount_path: Text,
        name: Text,
    },
    Copied(CopiedMount),
}

/// The service-account token mount's path, name and read-only flag, as the pod has them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CopiedMount {
    #[serde(skip_serializing_if = "Option::is_none")]
    mount_path: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_only: Option<Value>,
}

/// `requests`/`limits` from `proxy.resources`, only non-empty entries; `None` when all empty.
pub(super) fn resources(cx: &Context<'_>) -> Option<Value> {
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

/// A copy of the service-account token mount (name, path, read-only), if the pod has one.
pub(super) fn sa_mount_copy(cx: &Context<'_>) -> Option<CopiedMount> {
    let m = cx.sa_token_mount?;
    let copy = |key| m.get(key).cloned();
    Some(CopiedMount {
        mount_path: copy("mountPath"),
        name: copy("name"),
        read_only: copy("readOnly"),
    })
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
    let mount = |mount_path: &'static str, name: &'static str| Mount::Linkerd {
        mount_path: mount_path.into(),
        name: name.into(),
    };
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
    mounts.extend(sa_mount_copy(cx).map(Mount::Copied));
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
        security_context: security_context::proxy(cx),
        startup_probe,
        termination_message_policy: "FallbackToLogsOnError",
        volume_mounts: mounts,
    }
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
