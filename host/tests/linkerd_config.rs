//! The control plane's `linkerd-config` ConfigMap through the compiled module and this engine:
//! each of Linkerd's own renderings in the cluster yields the same AdmissionResponse, byte for
//! byte, as settings holding the same values (`policy.valuesFrom: settings`); the rollout's
//! default control plane sets the proxy version; and every way the ConfigMap can be unusable
//! gives the exact rejection under `policy.linkerdConfigFailure: reject` and the settings alone,
//! a warning and the `values` audit annotation under `settings`.

mod common;
mod policy_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use kubewarden_engine::ClusterState;
use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::protocol::response::{AdmissionResponse, AdmissionResponseStatus};
use kubewarden_engine::runtime::callback::HostContext;
use policy_support::*;
use rstest::rstest;
use serde_json::{Value, json};

const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const AT: &str = "ConfigMap linkerd/linkerd-config";
const FALLBACK: &str =
    "; the Linkerd values in effect are this policy's settings alone (policy.linkerdConfigFailure: settings)";

fn meshed_namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "shop", "annotations": {"linkerd.io/inject": "enabled"}}})
}

fn trust_roots(namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "linkerd-identity-trust-roots", "namespace": namespace},
        "data": {"ca-bundle.crt": PEM}})
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 8080}]}]}})
}

fn state_of(objects: Vec<Value>) -> ClusterState {
    let mut state = ClusterState::new();
    for o in objects {
        state.insert(o).unwrap();
    }
    state
}

/// One pod CREATE through the module on `host`.
fn admit(host: &Arc<HostContext>, s: Value) -> AdmissionResponse {
    let request = create_request("Pod", "shop", "linkerd-config", pod());
    evaluate(host, &request, &settings(s))
}

/// Host calls that read ConfigMaps: gets (made or cached) and lists (the module lists only
/// ConfigMaps).
fn config_map_lookups(host: &HostContext) -> u64 {
    let stats = host.stats();
    let s = stats.by_resource.get("v1/ConfigMap").copied().unwrap_or_default();
    s.made + s.cached + stats.lists
}

fn proxy_version(response: &AdmissionResponse) -> Value {
    patched(&pod(), response)["metadata"]["annotations"]["linkerd.io/proxy-version"].clone()
}

/// Each of Linkerd's `linkerd-config` renderings, read from the cluster, gives exactly the
/// response that settings holding the same values give.
#[rstest]
fn cluster_values_answer_what_the_same_settings_answer(
    #[values("edge-26.5.1", "edge-26.8.3")] tag: &str,
    #[values(
        "install_default.yaml",
        "install_ha_output.yaml",
        "install_helm_control_plane_output.yaml"
    )]
    golden: &str,
) {
    let config_map = load(&format!("tests/fixtures/linkerd-config/{tag}"), golden);
    let control_plane = config_map["metadata"]["namespace"]
        .as_str()
        .expect("metadata.namespace")
        .to_owned();
    if golden.starts_with("install_helm") {
        assert_eq!(control_plane, "linkerd-dev", "the helm golden's own namespace");
    }
    let values: Value = serde_yaml_ng::from_str(config_map["data"]["values"].as_str().expect("data.values"))
        .expect("the golden's values are YAML");
    let policy = json!({"trustAnchors": "configMap", "controlPlaneNamespace": control_plane});
    let state = || {
        state_of(vec![
            meshed_namespace(),
            trust_roots(&control_plane),
            config_map.clone(),
        ])
    };

    let from_cluster = cluster_host(state(), FaultPlan::new());
    let a = admit(&from_cluster, json!({ "policy": policy }));
    let mut pasted = values.clone();
    pasted["policy"] = policy.clone();
    pasted["policy"]["valuesFrom"] = json!("settings");
    let from_settings = cluster_host(state(), FaultPlan::new());
    let b = admit(&from_settings, pasted);

    let text = serde_json::to_string(&a).unwrap();
    assert!(a.allowed && a.patch.is_some(), "{tag} {golden}: {text}");
    assert_eq!(text, serde_json::to_string(&b).unwrap(), "{tag} {golden}");
    assert_eq!(
        Some(&proxy_version(&a)),
        values.pointer("/proxy/image/version"),
        "{tag} {golden}"
    );
    // linkerd-config and the trust roots with one list, as the trust roots alone
    assert_eq!(
        (
            config_map_lookups(&from_cluster),
            config_map_lookups(&from_settings)
        ),
        (1, 1)
    );
}

/// The rollout's default control plane carries a default install's values: read from
/// `linkerd/linkerd-config`, they answer what the same values in the settings answer, with that
/// install's proxy version.
#[test]
fn the_default_control_plane_values_are_read_from_linkerd_config() {
    let values: Value =
        serde_yaml_ng::from_str(injector_host::linkerd::rollout::DEFAULT_LINKERD_VALUES).unwrap();
    let from_cluster = common::policy_host();
    from_cluster.lookups().insert_object(meshed_namespace()).unwrap();
    let a = admit(&from_cluster, json!({}));
    let mut pasted = values.clone();
    // the bundle comes from the trust-roots ConfigMap, never from linkerd-config (as in Linkerd)
    pasted
        .as_object_mut()
        .unwrap()
        .remove("identityTrustAnchorsPEM")
        .expect("a default install's values hold the bundle");
    pasted["policy"] = json!({"valuesFrom": "settings"});
    let from_settings = common::policy_host();
    from_settings.lookups().insert_object(meshed_namespace()).unwrap();
    let b = admit(&from_settings, pasted);
    let text = serde_json::to_string(&a).unwrap();
    assert!(a.allowed && a.patch.is_some(), "{text}");
    assert_eq!(text, serde_json::to_string(&b).unwrap());
    assert_eq!(proxy_version(&a), json!("edge-26.8.3"));
    // one list of the control plane's ConfigMaps either way
    assert_eq!(
        (
            config_map_lookups(&from_cluster),
            config_map_lookups(&from_settings)
        ),
        (1, 1)
    );
}

fn config_map_with(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "linkerd-config", "namespace": "linkerd"}, "data": data})
}

fn not_yaml(text: &str) -> String {
    let e = serde_yaml_ng::from_str::<Value>(text).unwrap_err();
    format!("{AT}, key \"values\": not YAML: {e}")
}

const MALFORMED: &str = "proxy:\n  logLevel: [unclosed\n";
const WRONG_TYPES: &str = "proxy:\n  ports:\n    admin: lots\n";
const INVALID_OPAQUE_PORTS: &str = "proxy:\n  opaquePorts: \"3306,no way\"\n";

/// An unusable `linkerd-config` by name: the ConfigMap (if any), the fault rules and the exact
/// reason the module gives.
fn unusable(case: &str) -> (Option<Value>, &'static [&'static str], String) {
    match case {
        "missing" => (
            None,
            &[],
            format!(
                "{AT} not found: is Linkerd's control plane installed there? (policy.controlPlaneNamespace, policy.linkerdConfigMap; policy.valuesFrom: settings reads no ConfigMap)"
            ),
        ),
        "lookup error" => (
            Some(neutral_linkerd_config()),
            &["ConfigMap=error:etcdserver: request timed out"],
            format!(
                "could not read {AT}: lookup of ConfigMaps in namespace linkerd failed: Host error: Callback evaluation failure: etcdserver: request timed out (usually transient; the API server will retry)"
            ),
        ),
        "no values key" => (
            Some(config_map_with(json!({"global": "x"}))),
            &[],
            format!("{AT} has no data key \"values\""),
        ),
        "malformed yaml" => (Some(linkerd_config(MALFORMED)), &[], not_yaml(MALFORMED)),
        "wrong types" => (
            Some(linkerd_config(WRONG_TYPES)),
            &[],
            format!(
                "{AT}, key \"values\", under this policy's settings: settings.proxy.ports.admin: invalid type: string \"lots\", expected i64"
            ),
        ),
        "invalid opaque ports" => (
            Some(linkerd_config(INVALID_OPAQUE_PORTS)),
            &[],
            format!(
                "{AT}, key \"values\", under this policy's settings: settings.proxy.opaquePorts: \"no way\" is neither a port, a range \"lo-hi\" nor a port name"
            ),
        ),
        other => panic!("no unusable linkerd-config named {other}"),
    }
}

/// Every unusable `linkerd-config`, with the exact reason the module gives: `reject` refuses the
/// pod with it; `settings` injects exactly what the settings alone inject, and says why.
#[rstest]
fn unusable_linkerd_config(
    #[values("missing", "lookup error", "no values key", "malformed yaml", "wrong types")] case: &str,
) {
    let (config_map, fault_rules, reason) = unusable(case);
    let host = || {
        let mut objects = vec![meshed_namespace()];
        objects.extend(config_map.clone());
        cluster_host(state_of(objects), faults(fault_rules))
    };

    let rejected = admit(&host(), json!({"identityTrustAnchorsPEM": PEM}));
    assert_eq!(
        rejected,
        AdmissionResponse {
            uid: "linkerd-config".into(),
            allowed: false,
            status: Some(AdmissionResponseStatus {
                message: Some(reason.clone()),
                code: None,
            }),
            ..Default::default()
        }
    );

    let fallback = admit(
        &host(),
        json!({"identityTrustAnchorsPEM": PEM, "policy": {"linkerdConfigFailure": "settings"}}),
    );
    let alone = admit(
        &host(),
        json!({"identityTrustAnchorsPEM": PEM, "policy": {"valuesFrom": "settings"}}),
    );
    assert!(fallback.allowed, "{fallback:?}");
    assert_eq!(fallback.patch, alone.patch, "the settings alone");
    assert!(fallback.patch.is_some(), "injected");
    assert_eq!(
        fallback.warnings.clone().unwrap_or_default(),
        vec![format!("{reason}{FALLBACK}")]
    );
    let mut audit: BTreeMap<String, String> = alone.audit_annotations.clone().unwrap_or_default();
    audit.insert("values".into(), "settings only: linkerd-config unusable".into());
    assert_eq!(fallback.audit_annotations.unwrap_or_default(), audit);
}

fn plain_namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
}

/// What asks for no proxy: a pod with a port Linkerd's default list names, the same pod without
/// ports, and a Service on that port.
fn outside_the_mesh(what: &str) -> (&'static str, Value) {
    let pod = |ports: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-1", "namespace": "shop"},
            "spec": {"containers": [{"name": "db", "image": "mysql", "ports": ports}]}})
    };
    match what {
        "pod" => ("Pod", pod(json!([{"containerPort": 3306}]))),
        "pod without ports" => ("Pod", pod(json!([]))),
        _ => (
            "Service",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "shop"},
                "spec": {"ports": [{"port": 3306}]}}),
        ),
    }
}

const LEFT_OUT: &str = "; admitted without the default config.linkerd.io/opaque-ports annotation (proxy.opaquePorts) (an unusable linkerd-config rejects only pods that get a proxy)";

/// Through the module: a pod that asks for no proxy and a Service are never rejected over an
/// unusable `linkerd-config` (here unreadable or invalid).
/// Under `reject` they are admitted unchanged with the warning (a pod without ports reads no
/// ConfigMap and gets none); under `settings` they get the settings' default list, `3306`, with
/// that choice's warning.
#[rstest]
fn nothing_outside_the_mesh_fails_over_linkerd_config(
    #[values(
        "missing",
        "lookup error",
        "no values key",
        "malformed yaml",
        "invalid opaque ports"
    )]
    case: &str,
    #[values("pod", "pod without ports", "service")] what: &str,
    #[values("reject", "settings")] failure: &str,
) {
    let (config_map, fault_rules, reason) = unusable(case);
    let mut objects = vec![plain_namespace()];
    objects.extend(config_map.clone());
    let host = cluster_host(state_of(objects), faults(fault_rules));
    let (kind, object) = outside_the_mesh(what);
    let request = create_request(kind, "shop", "outside", object.clone());
    let s = json!({"policy": {"linkerdConfigFailure": failure}});
    let response = evaluate(&host, &request, &settings(s));
    assert!(response.allowed, "{what} under {failure}: {response:?}");
    let annotation =
        patched(&object, &response)["metadata"]["annotations"]["config.linkerd.io/opaque-ports"].clone();
    let warnings = response.warnings.clone().unwrap_or_default();
    let values_audit = response
        .audit_annotations
        .clone()
        .unwrap_or_default()
        .get("values")
        .cloned();
    match (what, failure) {
        ("pod without ports", _) => {
            assert_eq!((response.patch, warnings, values_audit), (None, vec![], None));
            assert_eq!(config_map_lookups(&host), 0, "no ConfigMap read");
        }
        (_, "reject") => {
            assert_eq!(response.patch, None, "{what}");
            assert_eq!(warnings, vec![format!("{reason}{LEFT_OUT}")]);
            assert_eq!(values_audit.as_deref(), Some("not used: linkerd-config unusable"));
        }
        _ => {
            assert_eq!(annotation, json!("3306"), "{what}");
            assert_eq!(warnings, vec![format!("{reason}{FALLBACK}")]);
            assert_eq!(
                values_audit.as_deref(),
                Some("settings only: linkerd-config unusable")
            );
        }
    }
}

/// Through the module: a mistake anywhere in `linkerd-config` (here a mistyped admin port, which
/// refuses every pod that gets a proxy) makes it unusable for objects outside the mesh too: they
/// read the same whole document, so they are admitted without the default annotation, with the
/// warning that names the mistake.
#[rstest]
fn a_mistake_anywhere_leaves_out_the_default_annotation(#[values("pod", "service")] what: &str) {
    let host = cluster_host(
        state_of(vec![plain_namespace(), linkerd_config(WRONG_TYPES)]),
        faults(&[]),
    );
    let (kind, object) = outside_the_mesh(what);
    let request = create_request(kind, "shop", "outside", object.clone());
    let response = evaluate(&host, &request, &settings(json!({})));
    assert!(response.allowed, "{response:?}");
    assert_eq!(response.patch, None);
    let (_, _, reason) = unusable("wrong types");
    assert_eq!(response.warnings, Some(vec![format!("{reason}{LEFT_OUT}")]));
    assert_eq!(
        response
            .audit_annotations
            .unwrap_or_default()
            .get("values")
            .map(String::as_str),
        Some("not used: linkerd-config unusable")
    );
}
