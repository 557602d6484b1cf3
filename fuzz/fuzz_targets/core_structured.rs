//! Structured pods, namespaces and owners through the core: no panic, nothing lost, and a
//! second pass over an injected pod changes nothing.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use linkerd_injector_policy::admit::{Request, admit};
use linkerd_injector_policy::cluster::{LookupError, MemoryCluster};
use linkerd_injector_policy::settings::Settings;
use serde_json::{Map, Value, json};

const KEYS: &[&str] = &[
    "linkerd.io/inject",
    "config.linkerd.io/opaque-ports",
    "config.linkerd.io/proxy-cpu-request",
    "config.linkerd.io/proxy-cpu-limit",
    "config.linkerd.io/proxy-cpu-ratio-limit",
    "config.linkerd.io/admin-port",
    "config.linkerd.io/proxy-uid",
    "config.linkerd.io/proxy-gid",
    "config.linkerd.io/proxy-enable-native-sidecar",
    "config.linkerd.io/proxy-await",
    "config.linkerd.io/enable-debug-sidecar",
    "config.linkerd.io/proxy-additional-env",
    "config.linkerd.io/proxy-outbound-connect-timeout",
    "config.linkerd.io/shutdown-grace-period",
    "config.linkerd.io/close-wait-timeout",
    "config.linkerd.io/default-inbound-policy",
    "config.linkerd.io/proxy-log-http-headers",
    "config.alpha.linkerd.io/proxy-wait-before-exit-seconds",
    "config.linkerd.io/pod-inbound-ports",
];
const VALUES: &[&str] = &["enabled", "disabled", "ingress", "true", "0", "1.5", "100m", "-1", "65536", "80,443", "memcached", "1s", ""];

#[derive(Arbitrary, Debug)]
struct Container {
    name: u8,
    ports: Vec<(Option<u8>, i32)>,
    probe_port: Option<i32>,
    caps: Option<(Vec<u8>, Vec<u8>)>,
    token_mount: bool,
}

#[derive(Arbitrary, Debug)]
struct Input {
    kind: u8,
    pod_annotations: Vec<(u8, u8, Option<String>)>,
    ns_annotations: Vec<(u8, u8, Option<String>)>,
    containers: Vec<Container>,
    inits: Vec<Container>,
    host_network: Option<bool>,
    automount: Option<bool>,
    owner: Option<(u8, String)>,
    hash: Option<String>,
    rs_parent: Option<u8>,
    lookup_fails: Option<bool>,
    cni: bool,
    native: bool,
    projection: bool,
}

fn annotations(list: &[(u8, u8, Option<String>)]) -> Map<String, Value> {
    list.iter()
        .map(|(k, v, raw)| {
            let key = KEYS[*k as usize % KEYS.len()].to_string();
            let value = raw.clone().unwrap_or_else(|| VALUES[*v as usize % VALUES.len()].to_string());
            (key, Value::String(value))
        })
        .collect()
}

fn container(c: &Container, prefix: &str) -> Value {
    let mut v = json!({"name": format!("{prefix}{}", c.name), "image": "img"});
    if !c.ports.is_empty() {
        v["ports"] = c.ports.iter().map(|(n, p)| match n {
            Some(n) => json!({"containerPort": p, "name": format!("p{n}")}),
            None => json!({"containerPort": p}),
        }).collect();
    }
    if let Some(p) = c.probe_port {
        v["livenessProbe"] = json!({"httpGet": {"port": p}});
    }
    if let Some((add, drop)) = &c.caps {
        v["securityContext"] = json!({"capabilities": {"add": add.iter().map(|a| format!("C{a}")).collect::<Vec<_>>(),
            "drop": drop.iter().map(|a| format!("C{a}")).collect::<Vec<_>>()}});
    }
    if c.token_mount {
        v["volumeMounts"] = json!([{"name": "tok", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]);
    }
    v
}

fn lost(input: &Value, output: &Value) -> bool {
    match (input, output) {
        (Value::Object(a), Value::Object(b)) => a.iter().any(|(k, v)| b.get(k).is_none_or(|w| lost(v, w))),
        (Value::Array(a), Value::Array(b)) => {
            let mut rest = b.iter();
            a.iter().any(|item| !rest.any(|o| o == item))
        }
        (a, b) => a != b,
    }
}

fuzz_target!(|input: Input| {
    let mut spec = json!({"containers": input.containers.iter().map(|c| container(c, "c")).collect::<Vec<_>>()});
    if !input.inits.is_empty() {
        spec["initContainers"] = input.inits.iter().map(|c| container(c, "i")).collect();
    }
    if let Some(h) = input.host_network {
        spec["hostNetwork"] = json!(h);
    }
    if let Some(a) = input.automount {
        spec["automountServiceAccountToken"] = json!(a);
    }
    let mut meta = json!({"name": "p", "annotations": annotations(&input.pod_annotations), "labels": {}});
    if let Some(h) = &input.hash {
        meta["labels"]["pod-template-hash"] = json!(h);
    }
    if let Some((k, name)) = &input.owner {
        let kinds = ["ReplicaSet", "Job", "StatefulSet", "Rollout"];
        let kind = kinds[*k as usize % kinds.len()];
        meta["ownerReferences"] = json!([{"kind": kind, "name": name, "apiVersion": "apps/v1"}]);
    }
    let pod = json!({"metadata": meta, "spec": spec});
    let (kind, object) = match input.kind % 3 {
        0 => ("Pod", pod),
        1 => ("Deployment", json!({"metadata": {"name": "d"}, "spec": {"template": pod}})),
        _ => ("CronJob", json!({"metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": {"template": pod}}}})),
    };
    let mut objects = vec![json!({"kind": "Namespace", "metadata": {"name": "shop", "annotations": annotations(&input.ns_annotations)}})];
    if let Some((_, name)) = &input.owner {
        let parent = input.rs_parent.map(|p| {
            let kind = ["Deployment", "CronJob", "Rollout"][p as usize % 3];
            json!([{"kind": kind, "name": "top"}])
        });
        for k in ["ReplicaSet", "Job"] {
            objects.push(json!({"kind": k, "metadata": {"name": name, "namespace": "shop", "ownerReferences": parent.clone()}}));
        }
    }
    let mut cluster = MemoryCluster::new(objects);
    if let Some(hard) = input.lookup_fails {
        for k in ["ReplicaSet", "Job"] {
            let err = if hard { LookupError::NotFound(k.into()) } else { LookupError::Failed("boom".into()) };
            cluster = cluster.fail(k, err.clone()).fail(k, err);
        }
    }
    let Ok(settings) = Settings::from_value(json!({
        "identityTrustAnchorsPEM": "PEM", "cniEnabled": input.cni,
        "proxy": {"nativeSidecar": input.native},
        "identity": {"serviceAccountTokenProjection": input.projection}
    })) else { return };
    let req = Request { kind, operation: "CREATE", namespace: "shop", object: &object };
    let out = admit(&req, &settings, &cluster);
    if let Some(m) = &out.mutated {
        assert!(!lost(&object, m), "input field lost");
        let again = Request { kind, operation: "CREATE", namespace: "shop", object: m };
        let second = admit(&again, &settings, &MemoryCluster::new(vec![json!({"kind": "Namespace",
            "metadata": {"name": "shop", "annotations": annotations(&input.ns_annotations)}})]));
        if matches!(out.verdict, linkerd_injector_policy::outcome::Verdict::Injected { .. }) {
            assert!(second.mutated.is_none(), "second pass changed an injected object");
        }
    }
});
