//! Properties over generated pods: nothing lost, the engine's patch only adds (apart from
//! Linkerd's own output annotations), injecting twice changes nothing, same input same bytes.

mod common;

use common::{lost_path, namespace};
use linkerd_injector_policy::cluster::MemoryCluster;
use linkerd_injector_policy::wire;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,10}"
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[ -~]{0,12}".prop_map(Value::String),
    ]
}

/// Unknown fields anywhere must survive.
fn extra_fields() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("x[A-Za-z]{1,6}", scalar(), 0..3).prop_map(|m| m.into_iter().collect())
}

fn container() -> impl Strategy<Value = Value> {
    (
        name(),
        prop::collection::vec(1..70000i64, 0..3),
        extra_fields(),
        any::<bool>(),
    )
        .prop_map(|(n, ports, extra, probe)| {
            let mut c = json!({"name": n, "image": "img"});
            if !ports.is_empty() {
                c["ports"] = ports.iter().map(|p| json!({"containerPort": p})).collect();
            }
            if probe {
                c["readinessProbe"] = json!({"httpGet": {"port": 8081, "path": "/"}});
            }
            c.as_object_mut().unwrap().extend(extra);
            c
        })
}

const ANNOTATION_KEYS: &[&str] = &[
    "linkerd.io/inject",
    "config.linkerd.io/proxy-cpu-request",
    "config.linkerd.io/opaque-ports",
    "config.linkerd.io/admin-port",
    "config.linkerd.io/proxy-enable-native-sidecar",
    "config.linkerd.io/proxy-await",
    "config.linkerd.io/enable-debug-sidecar",
    "config.linkerd.io/skip-outbound-ports",
    "custom/annotation",
];

fn annotation_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("enabled".to_string()),
        Just("disabled".to_string()),
        Just("ingress".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        Just("100m".to_string()),
        Just("9000".to_string()),
        "[ -~]{0,8}",
    ]
}

fn pod() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(container(), 1..4),
        prop::collection::vec(container(), 0..2),
        prop::collection::btree_map(prop::sample::select(ANNOTATION_KEYS), annotation_value(), 0..5),
        extra_fields(),
        any::<bool>(),
        prop::option::of(name()),
    )
        .prop_map(|(containers, inits, annotations, extra, host_network, owner)| {
            let mut seen = std::collections::BTreeSet::new();
            let unique = |list: Vec<Value>, seen: &mut std::collections::BTreeSet<String>| -> Vec<Value> {
                list.into_iter()
                    .filter(|c| seen.insert(c["name"].as_str().unwrap().to_string()))
                    .collect()
            };
            let containers = unique(containers, &mut seen);
            let inits = unique(inits, &mut seen);
            let mut p = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"generateName": "web-", "namespace": "shop", "annotations": annotations,
                    "creationTimestamp": null, "labels": {"app": "web"}},
                "spec": {"containers": containers, "hostNetwork": host_network},
                "status": {}
            });
            if !inits.is_empty() {
                p["spec"]["initContainers"] = json!(inits);
            }
            if let Some(o) = owner {
                p["metadata"]["ownerReferences"] =
                    json!([{"kind": "ReplicaSet", "name": o, "apiVersion": "apps/v1"}]);
            }
            p["spec"].as_object_mut().unwrap().extend(extra);
            p
        })
}

fn ns_annotations() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(prop::sample::select(ANNOTATION_KEYS), annotation_value(), 0..3)
        .prop_map(|m| json!(m))
}

fn validate(object: &Value, ns: &Value) -> (Vec<u8>, Value) {
    let payload = json!({
        "request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
            "namespace": "shop", "object": object},
        "settings": {"identityTrustAnchorsPEM": "PEM"}
    });
    let cluster = MemoryCluster::new(vec![namespace("shop", ns.clone())]);
    let bytes = wire::validate(&serde_json::to_vec(&payload).unwrap(), &cluster);
    let answer = serde_json::from_slice(&bytes).unwrap();
    (bytes, answer)
}

/// Annotations Linkerd writes whatever the pod had.
const OUTPUTS: &[&str] = &[
    "/metadata/annotations/linkerd.io~1created-by",
    "/metadata/annotations/linkerd.io~1proxy-version",
    "/metadata/annotations/linkerd.io~1trust-root-sha256",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn nothing_lost_and_patch_only_adds(p in pod(), ns in ns_annotations()) {
        let (_, answer) = validate(&p, &ns);
        if let Some(m) = answer.get("mutated_object").filter(|m| !m.is_null()) {
            prop_assert_eq!(lost_path(&p, m, ""), None);
            let patch = json_patch::diff(&p, m);
            for op in patch.0.iter() {
                let v = serde_json::to_value(op).unwrap();
                let path = v["path"].as_str().unwrap().to_string();
                // Inserting before existing (init) containers shifts them: json-patch's positional
                // diff reports the shifted elements as replacements (documented).
                let shifted = path.starts_with("/spec/initContainers/") || path.starts_with("/spec/containers/");
                prop_assert!(v["op"] == "add" || OUTPUTS.contains(&path.as_str()) || shifted, "non-add op {}", v);
            }
        }
    }

    #[test]
    fn injecting_twice_changes_nothing(p in pod(), ns in ns_annotations()) {
        let (_, first) = validate(&p, &ns);
        if let Some(m) = first.get("mutated_object").filter(|m| !m.is_null()) {
            let injected = m["spec"]["initContainers"].as_array().is_some_and(|a| a.iter().any(|c| c["name"] == "linkerd-proxy"))
                || m["spec"]["containers"].as_array().is_some_and(|a| a.iter().any(|c| c["name"] == "linkerd-proxy"));
            let (_, second) = validate(m, &ns);
            if injected {
                prop_assert!(second["mutated_object"].is_null(), "second pass changed an injected pod");
            } else {
                // A skipped pod's annotations are stable too.
                let again = second.get("mutated_object").filter(|x| !x.is_null()).unwrap_or(m);
                prop_assert_eq!(again, m);
            }
        }
    }

    #[test]
    fn same_input_same_bytes(p in pod(), ns in ns_annotations()) {
        prop_assert_eq!(validate(&p, &ns).0, validate(&p, &ns).0);
    }
}
