//! Linkerd's values from the control plane's `linkerd-config` ConfigMap (the default): settings
//! overriding them key by key, and every way the ConfigMap can be unusable, under both
//! `policy.linkerdConfigFailure` choices. That each of Linkerd's own renderings gives the same
//! answer as settings holding the same values is proved through the module
//! (host/tests/linkerd_config.rs).

mod common;

use common::{linkerd_config, linkerd_config_goldens, namespace};
use linkerd_injector_policy::cluster::{Call, LookupError, MemoryCluster};
use linkerd_injector_policy::linkerd_config::{Read, Values, ValuesError};
use linkerd_injector_policy::outcome::{Outcome, Verdict};
use linkerd_injector_policy::settings::Settings;
use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};

const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

fn trust_roots() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "linkerd-identity-trust-roots", "namespace": "linkerd"},
        "data": {"ca-bundle.crt": PEM}})
}

fn meshed_namespace() -> Value {
    namespace("shop", json!({"linkerd.io/inject": "enabled"}))
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 8080}]}]}})
}

fn settings(doc: Value) -> Settings {
    Settings::from_value(doc).expect("valid settings")
}

fn admit(settings: &Settings, objects: Vec<Value>) -> (Outcome, MemoryCluster) {
    let cluster = MemoryCluster::new(objects);
    let out = common::admit("Pod", &pod(), "shop", settings, &cluster);
    (out, cluster)
}

fn proxy_env<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    let all = pod["spec"]["initContainers"].as_array().into_iter().flatten();
    let all = all.chain(pod["spec"]["containers"].as_array().into_iter().flatten());
    all.filter(|c| c["name"] == "linkerd-proxy")
        .flat_map(|c| c["env"].as_array().into_iter().flatten())
        .find(|e| e["name"] == name)
        .map(|e| &e["value"])
}

/// The settings override the control plane's values key by key; keys they do not set come from
/// the ConfigMap, and the rest from the chart defaults.
#[test]
fn settings_override_cluster_values_key_by_key() {
    let values = "linkerdVersion: edge-26.8.1\nproxy:\n  logLevel: debug\n  logFormat: json\n";
    let s = settings(json!({"identityTrustAnchorsPEM": PEM, "proxy": {"logLevel": "info"}}));
    let (out, _) = admit(&s, vec![meshed_namespace(), linkerd_config(values)]);
    let pod = out.mutated.expect("injected");
    assert_eq!(
        proxy_env(&pod, "LINKERD2_PROXY_LOG"),
        Some(&json!("info,[{headers}]=off,[{request}]=off"))
    );
    assert_eq!(proxy_env(&pod, "LINKERD2_PROXY_LOG_FORMAT"), Some(&json!("json")));
    assert_eq!(
        pod["metadata"]["annotations"]["linkerd.io/proxy-version"],
        json!("edge-26.8.1")
    );
    assert_eq!(
        proxy_env(&pod, "LINKERD2_PROXY_OUTBOUND_CONNECT_TIMEOUT"),
        Some(&json!("1000ms"))
    );
}

/// A `helm upgrade` of Linkerd changes the next pod without touching the policy.
#[test]
fn a_new_control_plane_version_takes_effect_at_once() {
    let s = settings(json!({"identityTrustAnchorsPEM": PEM}));
    let version = |values: &str| {
        let (out, _) = admit(&s, vec![meshed_namespace(), linkerd_config(values)]);
        out.mutated.expect("injected")["metadata"]["annotations"]["linkerd.io/proxy-version"].clone()
    };
    assert_eq!(version("linkerdVersion: edge-26.7.1\n"), json!("edge-26.7.1"));
    assert_eq!(version("linkerdVersion: edge-26.8.3\n"), json!("edge-26.8.3"));
}

/// The ConfigMap cannot set this policy's own options nor, as in Linkerd, the trust bundle: those
/// come from the settings and the trust-roots ConfigMap.
#[test]
fn cluster_values_set_neither_policy_options_nor_the_trust_bundle() {
    let values = "policy:\n  mode: verify\nidentityTrustAnchorsPEM: from-linkerd-config\n";
    let (out, cluster) = admit(
        &settings(json!({})),
        vec![meshed_namespace(), trust_roots(), linkerd_config(values)],
    );
    let pod = out.mutated.expect("still the mutating policy");
    assert_eq!(
        proxy_env(&pod, "LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS"),
        Some(&json!(PEM))
    );
    let calls: Vec<String> = cluster.calls().iter().map(Call::describe).collect();
    assert_eq!(
        calls,
        ["get Namespace shop", "list ConfigMaps in namespace linkerd"]
    );
}

/// The ConfigMap's name and namespace are settings.
#[test]
fn the_config_map_is_found_where_the_settings_say() {
    let mut config_map = linkerd_config("linkerdVersion: edge-26.8.2\n");
    config_map["metadata"] = json!({"name": "l5d-values", "namespace": "mesh"});
    let objects = vec![meshed_namespace(), config_map];
    let policy = json!({"controlPlaneNamespace": "mesh", "linkerdConfigMap": "l5d-values"});
    let s = settings(json!({"identityTrustAnchorsPEM": PEM, "policy": policy}));
    let (out, cluster) = admit(&s, objects.clone());
    let pod = out.mutated.clone().expect("injected");
    assert_eq!(
        pod["metadata"]["annotations"]["linkerd.io/proxy-version"],
        json!("edge-26.8.2")
    );
    assert_eq!(cluster.calls()[1].describe(), "list ConfigMaps in namespace mesh");

    let mut by_name = policy;
    by_name["configMapLookup"] = json!("get");
    let (again, cluster) = admit(
        &settings(json!({"identityTrustAnchorsPEM": PEM, "policy": by_name})),
        objects,
    );
    assert_eq!(again, out, "a get finds what the list found");
    assert_eq!(cluster.calls()[1].describe(), "get ConfigMap mesh/l5d-values");
}

const AT: &str = "ConfigMap linkerd/linkerd-config";

/// Every unusable ConfigMap: the reason names the ConfigMap and the key; `reject` refuses the
/// admission (the API server retries), `settings` injects from the settings alone and says so.
#[rstest]
#[case::missing(vec![], None,
    format!("{AT} not found: is Linkerd's control plane installed there? (policy.controlPlaneNamespace, policy.linkerdConfigMap; policy.valuesFrom: settings reads no ConfigMap)"))]
#[case::lookup_error(vec![linkerd_config("{}")],
    Some(LookupError::Failed("lookup of ConfigMap linkerd/linkerd-config failed: connection refused".into())),
    format!("could not read {AT}: lookup of ConfigMap linkerd/linkerd-config failed: connection refused (usually transient; the API server will retry)"))]
#[case::no_values_key(vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "linkerd-config", "namespace": "linkerd"}, "data": {"global": "x"}})], None,
    format!("{AT} has no data key \"values\""))]
#[case::values_not_a_string(vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "linkerd-config", "namespace": "linkerd"}, "data": {"values": 3}})], None,
    format!("{AT} has no data key \"values\""))]
#[case::malformed_yaml(vec![linkerd_config("proxy:\n  logLevel: [unclosed\n")], None,
    format!("{AT}, key \"values\": not YAML: "))]
#[case::not_a_mapping(vec![linkerd_config("- proxy\n")], None,
    format!("{AT}, key \"values\", under this policy's settings: settings: must be a mapping, got array"))]
#[case::empty(vec![linkerd_config("")], None,
    format!("{AT}, key \"values\", under this policy's settings: settings: must be a mapping, got null"))]
#[case::wrong_type(vec![linkerd_config("proxy:\n  ports:\n    admin: lots\n")], None,
    format!("{AT}, key \"values\", under this policy's settings: settings.proxy.ports.admin: "))]
#[case::block_of_wrong_shape(vec![linkerd_config("proxy:\n  image: cr.l5d.io/linkerd/proxy\n")], None,
    format!("{AT}, key \"values\", under this policy's settings: settings.proxy.image: must be an object, got string"))]
#[case::invalid_value(vec![linkerd_config("proxy:\n  ports:\n    admin: 0\n")], None,
    format!("{AT}, key \"values\", under this policy's settings: settings.proxy.ports.admin: must be 1-65535, got 0"))]
fn unusable_linkerd_config(
    #[case] objects: Vec<Value>,
    #[case] failure: Option<LookupError>,
    #[case] reason: String,
) {
    let cluster_of = || {
        let mut all = vec![meshed_namespace()];
        all.extend(objects.clone());
        let c = MemoryCluster::new(all);
        match failure.clone() {
            Some(e) => c.fail("ConfigMap", e),
            None => c,
        }
    };
    let reject = settings(json!({"identityTrustAnchorsPEM": PEM}));
    let c = cluster_of();
    let out = common::admit("Pod", &pod(), "shop", &reject, &c);
    let Verdict::Rejected(message) = &out.verdict else {
        panic!("rejected, got {:?}", out.verdict)
    };
    assert!(message.starts_with(&reason), "{message}\nwanted: {reason}");
    assert_eq!(out.mutated, None, "never a half-parsed configuration");

    let fallback =
        settings(json!({"identityTrustAnchorsPEM": PEM, "policy": {"linkerdConfigFailure": "settings"}}));
    let c = cluster_of();
    let out = common::admit("Pod", &pod(), "shop", &fallback, &c);
    let alone = settings(json!({"identityTrustAnchorsPEM": PEM, "policy": {"valuesFrom": "settings"}}));
    let expected = common::admit("Pod", &pod(), "shop", &alone, &cluster_of());
    assert_eq!(out.mutated, expected.mutated, "the settings alone");
    assert_eq!(
        out.audit_annotations["values"],
        "settings only: linkerd-config unusable"
    );
    let warning = out.warnings.last().expect("a warning");
    assert!(warning.starts_with(&reason), "{warning}");
    assert!(
        warning.ends_with(
            "; the Linkerd values in effect are this policy's settings alone (policy.linkerdConfigFailure: settings)"
        ),
        "{warning}"
    );
}

/// With the values from the settings alone, no ConfigMap is read and none is needed.
#[test]
fn settings_only_values_read_no_config_map() {
    let s = settings(json!({"identityTrustAnchorsPEM": PEM, "policy": {"valuesFrom": "settings"}}));
    let (out, cluster) = admit(&s, vec![meshed_namespace()]);
    assert!(
        matches!(out.verdict, Verdict::Injected { .. }),
        "{:?}",
        out.verdict
    );
    let kinds: Vec<&str> = cluster.lookups().iter().map(|l| l.kind).collect();
    assert_eq!(kinds, ["Namespace"]);
}

/// The default opaque ports an object outside the mesh gets are those a pod that gets a proxy is
/// rendered with: each of Linkerd's `linkerd-config` renderings under each shipped settings
/// file, and documents that set, null or mistype the key.
#[rstest]
fn the_opaque_ports_outside_the_mesh_are_those_of_an_injection(
    #[values("{}", "cni.yaml", "defaults.yaml", "ha.yaml", "hardened.yaml")] settings_file: &str,
) {
    let goldens = linkerd_config_goldens();
    assert_eq!(goldens.len(), 6, "two Linkerd versions, three renderings each");
    for (golden, config_map) in goldens {
        opaque_ports_agree(&golden, config_map, settings_file);
    }
}

fn opaque_ports_agree(golden: &str, config_map: Value, settings_file: &str) {
    let mut doc: Value = match settings_file {
        "{}" => json!({}),
        file => {
            let text =
                std::fs::read_to_string(format!("{}/deploy/settings/{file}", env!("CARGO_MANIFEST_DIR")))
                    .expect("shipped settings");
            serde_yaml_ng::from_str(&text).expect("settings are YAML")
        }
    };
    doc["policy"]["controlPlaneNamespace"] = config_map["metadata"]["namespace"].clone();
    let s = settings(doc);
    let cluster = MemoryCluster::new(vec![config_map]);
    let whole = Values::new(&s, &cluster)
        .required()
        .expect("usable")
        .proxy
        .opaque_ports
        .to_string();
    assert_eq!(
        Values::new(&s, &cluster).opaque_ports(),
        Some(whole),
        "{golden} {settings_file}"
    );
}

#[rstest]
#[case::absent("linkerdVersion: edge-26.8.3\n")]
#[case::null_proxy("proxy: null\n")]
#[case::null_key("proxy:\n  opaquePorts: null\n")]
#[case::set("proxy:\n  opaquePorts: \"3306,http, 4000-4100\"\n")]
#[case::empty("proxy:\n  opaquePorts: \"\"\n")]
#[case::quoted_single("proxy:\n  opaquePorts: '25,587'\n")]
fn opaque_ports_alone_agree_with_the_whole_read(#[case] values: &str) {
    let s = settings(json!({}));
    let cluster = MemoryCluster::new(vec![linkerd_config(values)]);
    let whole = Values::new(&s, &cluster)
        .required()
        .expect("usable")
        .proxy
        .opaque_ports
        .to_string();
    assert_eq!(Values::new(&s, &cluster).opaque_ports(), Some(whole), "{values}");
}

/// A mistyped or invalid `proxy.opaquePorts`, and a document the fast reader declines, are
/// read whole, which says what is wrong.
#[rstest]
#[case::a_number("proxy:\n  opaquePorts: 3306\n")]
#[case::invalid("proxy:\n  opaquePorts: \"no way\"\n")]
#[case::proxy_not_a_mapping("proxy: [1]\n")]
fn a_doubtful_opaque_ports_key_takes_the_whole_read(#[case] values: &str) {
    let s = settings(json!({}));
    let cluster = MemoryCluster::new(vec![linkerd_config(values)]);
    assert_eq!(Values::new(&s, &cluster).opaque_ports(), None, "{values}");
    let values = Values::new(&s, &cluster);
    values.opaque_ports();
    assert!(
        matches!(values.read(), Read::Unusable(ValuesError::Invalid { .. }, _)),
        "{:?}",
        values.read()
    );
}
