//! Properties over generated pods: nothing lost, the engine's patch only adds (apart from
//! Linkerd's own output annotations and the shifts of Linkerd's insertions), injecting twice
//! changes nothing, same input same bytes, and the answer's object (the proxy container written
//! typed into it by the shell) is the core's own tree. The first two count the pods that were
//! injected and fail when too few were: a property that never sees a mutation checks nothing.

mod common;

use common::{cluster, lost_path, namespace};
use linkerd_injector_policy::{admit, outcome::Outcome, settings::Settings, wire};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value, json};
use std::cell::Cell;

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

/// Fields the shell's reader leaves out of the core's tree (a container's environment,
/// arguments and resources), in any shape: the answer holds them as they came.
fn unread_fields() -> impl Strategy<Value = Map<String, Value>> {
    let key = prop::sample::select(&["env", "envFrom", "args", "command", "resources"][..]);
    let value = prop_oneof![
        scalar(),
        prop::collection::vec(scalar(), 0..3).prop_map(Value::Array),
        Just(
            json!([{"name": "A", "value": "x\n\"y\""}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])
        ),
        Just(json!({"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}})),
    ];
    prop::collection::btree_map(key, value, 0..3)
        .prop_map(|m| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A pod spec's fields the shell's reader leaves out of the core's tree, or keeps only in part
/// (a volume's name): the answer holds them as they came.
fn unread_spec() -> impl Strategy<Value = Map<String, Value>> {
    let entries = prop_oneof![
        Just((
            "tolerations",
            json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300}])
        )),
        Just((
            "affinity",
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}})
        )),
        Just(("topologySpreadConstraints", json!([{"maxSkew": 1}]))),
        Just((
            "volumes",
            json!([{"name": "cfg", "configMap": {"name": "c", "items": [{"key": "k", "path": "p"}]}}, {"emptyDir": {}}])
        )),
    ];
    prop::collection::vec(entries, 0..3)
        .prop_map(|v| v.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
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
        unread_fields(),
        any::<bool>(),
    )
        .prop_map(|(n, ports, extra, unread, probe)| {
            let mut c = json!({"name": n, "image": "img"});
            if !ports.is_empty() {
                c["ports"] = ports.iter().map(|p| json!({"containerPort": p})).collect();
            }
            if probe {
                c["readinessProbe"] = json!({"httpGet": {"port": 8081, "path": "/"}});
            }
            c.as_object_mut().unwrap().extend(extra);
            c.as_object_mut().unwrap().extend(unread);
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

/// Half of the pods ask for a proxy outright, so that injection is common (see [`MIN_SHARE`]).
fn inject_request() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop::sample::select(&["enabled", "ingress"][..]))
}

fn pod_annotations() -> impl Strategy<Value = std::collections::BTreeMap<&'static str, String>> {
    (
        prop::collection::btree_map(prop::sample::select(ANNOTATION_KEYS), annotation_value(), 0..5),
        inject_request(),
    )
        .prop_map(|(mut annotations, inject)| {
            if let Some(value) = inject {
                annotations.insert("linkerd.io/inject", value.to_string());
            }
            annotations
        })
}

fn pod() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(container(), 1..4),
        prop::collection::vec(container(), 0..2),
        pod_annotations(),
        extra_fields(),
        unread_spec(),
        any::<bool>(),
        prop::option::of(name()),
    )
        .prop_map(|(containers, inits, annotations, extra, unread, host_network, owner)| {
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
                    "creationTimestamp": null, "labels": {"app": "web"},
                    "managedFields": [{"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {}}}]},
                "spec": {"containers": containers, "hostNetwork": host_network},
                "status": {"phase": "Pending", "conditions": [{"type": "x"}]}
            });
            if !inits.is_empty() {
                p["spec"]["initContainers"] = json!(inits);
            }
            if let Some(o) = owner {
                p["metadata"]["ownerReferences"] =
                    json!([{"kind": "ReplicaSet", "name": o, "apiVersion": "apps/v1"}]);
            }
            p["spec"].as_object_mut().unwrap().extend(extra);
            p["spec"].as_object_mut().unwrap().extend(unread);
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
        "settings": settings_json()
    });
    let cluster = cluster(vec![namespace("shop", ns.clone())]);
    let bytes = wire::validate(&serde_json::to_vec(&payload).unwrap(), &cluster);
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    // the shell writes the proxy container into the answer's bytes; the core's tree is the same
    let tree = core(object, ns).mutated;
    assert_eq!(answer["mutated_object"], tree.unwrap_or(Value::Null));
    (bytes, answer)
}

fn settings_json() -> Value {
    json!({"identityTrustAnchorsPEM": "PEM"})
}

/// The core's outcome for the request [`validate`] sends.
fn core(object: &Value, ns: &Value) -> Outcome {
    let cluster = cluster(vec![namespace("shop", ns.clone())]);
    let settings = Settings::from_value(settings_json()).unwrap();
    let request = admit::Request {
        kind: "Pod",
        operation: "CREATE",
        namespace: "shop",
        object,
    };
    admit::admit(&request, &settings, &cluster)
}

/// The answer's audit annotations in the order it writes them (a map type would re-order them).
fn audit_as_written(answer: &[u8]) -> Option<Vec<(String, String)>> {
    struct Written(Vec<(String, String)>);
    impl<'de> Deserialize<'de> for Written {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Pairs;
            impl<'de> Visitor<'de> for Pairs {
                type Value = Written;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a map of strings")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Written, A::Error> {
                    let mut pairs = Vec::new();
                    while let Some(pair) = map.next_entry()? {
                        pairs.push(pair);
                    }
                    Ok(Written(pairs))
                }
            }
            d.deserialize_map(Pairs)
        }
    }
    #[derive(Deserialize)]
    struct Answer {
        audit_annotations: Option<Written>,
    }
    let answer: Answer = serde_json::from_slice(answer).unwrap();
    answer.audit_annotations.map(|w| w.0)
}

/// Annotations Linkerd writes whatever the pod had.
const OUTPUTS: &[&str] = &[
    "/metadata/annotations/linkerd.io~1created-by",
    "/metadata/annotations/linkerd.io~1proxy-version",
    "/metadata/annotations/linkerd.io~1trust-root-sha256",
];

/// The only places the policy inserts into an existing list rather than appending to it, as
/// (list under `spec`, index, container name), in the order they are undone: with native
/// sidecars `linkerd-init` goes to `initContainers[0]` and the proxy to `initContainers[1]`;
/// otherwise, with proxy-await (the default), the proxy goes to `containers[0]`. Each shifts
/// the existing entries after it by one, which json-patch's positional diff reports as
/// replacements; nothing else may shift. (Generated names have at most 11 characters, so an
/// application container cannot carry one of these names.)
const INSERTIONS: &[(&str, usize, &str)] = &[
    ("initContainers", 1, "linkerd-proxy"),
    ("initContainers", 0, "linkerd-init"),
    ("containers", 0, "linkerd-proxy"),
];

/// `mutated` with the containers Linkerd inserted at [`INSERTIONS`] taken out again, so that
/// the existing entries are back at their own indexes.
fn undo_insertions(mutated: &Value) -> Value {
    let mut m = mutated.clone();
    for (list, index, name) in INSERTIONS {
        if let Some(entries) = m["spec"].get_mut(*list).and_then(Value::as_array_mut)
            && entries.get(*index).is_some_and(|c| c["name"] == *name)
        {
            entries.remove(*index);
        }
    }
    m
}

/// The module put its proxy into the pod.
fn has_proxy(m: &Value) -> bool {
    ["initContainers", "containers"].iter().any(|list| {
        m["spec"][list]
            .as_array()
            .is_some_and(|a| a.iter().any(|c| c["name"] == "linkerd-proxy"))
    })
}

const CASES: u32 = 512;

/// The least share of cases that must be injected, as a fraction `1 / MIN_SHARE`.
///
/// A pod is injected whenever it asks for a proxy (`linkerd.io/inject: enabled` or `ingress`),
/// does not use the host network and its namespace has no invalid `linkerd.io/inject` value
/// (Linkerd skips a pod whose namespace has one): the generator never writes an existing proxy,
/// a value that fails Linkerd's render (log-http-headers, close-wait-timeout) or a setting that
/// restricts anything, and its other annotations' bad values only warn (6000 cases checked with
/// that as an assertion, when this was written). [`inject_request`] asks with probability 1/2,
/// `hostNetwork` is false with probability 1/2, and a namespace of 0, 1 or 2 of the 9
/// annotation keys has no `linkerd.io/inject` at all with probability at least
/// (1 + 8/9 + 7/9) / 3 = 8/9, independently: at least 2/9 of the cases are injected on
/// average, 113 of 512 (a quarter was measured). A tenth (52) fails by chance with probability
/// below e^-17 (Chernoff bound at 0.55 below the mean), about 4e-8.
const MIN_SHARE: usize = 10;

/// Runs `check` on [`CASES`] generated pods and their namespaces (the seeds saved in
/// `properties.proptest-regressions` first) and asserts that at least `1 / MIN_SHARE` of the
/// runs were injected; `check` says whether its case was.
fn run_counting(check: impl Fn(&Value, &Value) -> Result<bool, TestCaseError>) {
    let config = ProptestConfig {
        cases: CASES,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let (runs, injected) = (Cell::new(0usize), Cell::new(0usize));
    let result = TestRunner::new(config).run(&(pod(), ns_annotations()), |(p, ns)| {
        runs.set(runs.get() + 1);
        if check(&p, &ns)? {
            injected.set(injected.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (runs, injected) = (runs.get(), injected.get());
    assert!(
        injected * MIN_SHARE >= runs,
        "only {injected} of {runs} generated pods were injected; the property checked too little"
    );
}

#[test]
fn nothing_lost_and_patch_only_adds() {
    run_counting(|p, ns| {
        let (_, answer) = validate(p, ns);
        let Some(m) = answer.get("mutated_object").filter(|m| !m.is_null()) else {
            return Ok(false);
        };
        prop_assert_eq!(lost_path(p, m, ""), None);
        let unshifted = undo_insertions(m);
        for op in json_patch::diff(p, &unshifted).0.iter() {
            let v = serde_json::to_value(op).unwrap();
            let path = v["path"].as_str().unwrap();
            prop_assert!(v["op"] == "add" || OUTPUTS.contains(&path), "non-add op {}", v);
        }
        Ok(has_proxy(m))
    });
}

#[test]
fn injecting_twice_changes_nothing() {
    run_counting(|p, ns| {
        let (_, first) = validate(p, ns);
        let Some(m) = first.get("mutated_object").filter(|m| !m.is_null()) else {
            return Ok(false);
        };
        let injected = has_proxy(m);
        let (_, second) = validate(m, ns);
        if injected {
            prop_assert!(
                second["mutated_object"].is_null(),
                "second pass changed an injected pod"
            );
        } else {
            // A skipped pod's annotations are stable too.
            let again = second.get("mutated_object").filter(|x| !x.is_null()).unwrap_or(m);
            prop_assert_eq!(again, m);
        }
        Ok(injected)
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    /// The same input gives the same answer, byte for byte, audit annotations included: the
    /// answer writes them in the core's key order, so policy-server passes on the same bytes
    /// every time.
    #[test]
    fn same_input_same_bytes(p in pod(), ns in ns_annotations()) {
        let (first, second) = (validate(&p, &ns), validate(&p, &ns));
        prop_assert_eq!(String::from_utf8_lossy(&first.0), String::from_utf8_lossy(&second.0));
        let sorted = core(&p, &ns).audit_annotations;
        let expected = (!sorted.is_empty()).then(|| sorted.into_iter().collect::<Vec<_>>());
        prop_assert_eq!(audit_as_written(&first.0), expected);
    }
}
