//! The security contexts of `linkerd-proxy` and `linkerd-init`, typed: written straight into
//! the answer, fields in the order of their JSON names (the order a JSON map writes them in).

use super::Context;
use serde::Serialize;
use serde_json::Value;

/// The proxy's: the one `proxy.securityContext` gives, or the chart's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(super) enum ProxySecurity {
    Given(Value),
    Made(MadeProxySecurity),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MadeProxySecurity {
    allow_privilege_escalation: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    capabilities: Option<Capabilities>,
    read_only_root_filesystem: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_as_group: Option<i64>,
    run_as_non_root: bool,
    run_as_user: i64,
    seccomp_profile: Seccomp,
}

/// `linkerd-init`'s: the capabilities iptables needs, as root or as nobody.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InitSecurity {
    allow_privilege_escalation: bool,
    capabilities: Capabilities,
    privileged: bool,
    read_only_root_filesystem: bool,
    run_as_group: i64,
    run_as_non_root: bool,
    run_as_user: i64,
    seccomp_profile: Seccomp,
}

/// `add` and `drop`, each written when not empty.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Capabilities {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    add: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    drop: Vec<Value>,
}

/// `{"type": "RuntimeDefault"}`
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Seccomp {
    r#type: &'static str,
}

const RUNTIME_DEFAULT: Seccomp = Seccomp {
    r#type: "RuntimeDefault",
};

/// `capabilities.add` / `.drop` of the pod's first container, when it sets capabilities.
fn first_container_caps(cx: &Context<'_>) -> Option<Capabilities> {
    let caps = cx.first_capabilities?;
    let list = |k: &str| caps.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    Some(Capabilities {
        add: list("add"),
        drop: list("drop"),
    })
}

pub(super) fn proxy(cx: &Context<'_>) -> ProxySecurity {
    let p = &cx.config.values.proxy;
    if p.security_context.as_object().is_some_and(|m| !m.is_empty()) {
        return ProxySecurity::Given(p.security_context.clone());
    }
    ProxySecurity::Made(MadeProxySecurity {
        allow_privilege_escalation: false,
        capabilities: first_container_caps(cx),
        read_only_root_filesystem: true,
        run_as_group: (p.gid >= 0).then_some(p.gid),
        run_as_non_root: true,
        run_as_user: p.uid,
        seccomp_profile: RUNTIME_DEFAULT,
    })
}

pub(super) fn init(cx: &Context<'_>) -> InitSecurity {
    let pi = &cx.config.values.proxy_init;
    let privileged = cx.config.close_wait_secs > 0 || pi.privileged;
    let mut capabilities = Capabilities {
        add: vec!["NET_ADMIN".into(), "NET_RAW".into()],
        drop: Vec::new(),
    };
    if let Some(first) = first_container_caps(cx) {
        capabilities.add.extend(first.add);
        capabilities.drop = first
            .drop
            .into_iter()
            .filter(|d| !matches!(d.as_str(), Some("NET_RAW" | "NET_ADMIN")))
            .collect();
    }
    let or_nobody = |id: i64| if id == 0 { 65534 } else { id };
    let (group, user) = match pi.run_as_root {
        true => (0, 0),
        false => (or_nobody(pi.run_as_group), or_nobody(pi.run_as_user)),
    };
    InitSecurity {
        allow_privilege_escalation: privileged,
        capabilities,
        privileged,
        read_only_root_filesystem: true,
        run_as_group: group,
        run_as_non_root: !pi.run_as_root,
        run_as_user: user,
        seccomp_profile: RUNTIME_DEFAULT,
    }
}
