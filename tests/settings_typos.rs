//! Typos in settings are errors: a key in none of Linkerd's values documents is rejected with its
//! path and the nearest known key; keys Linkerd has but the injector ignores, and anything under
//! free-form maps, are accepted, so whole values documents can be pasted.

use linkerd_injector_policy::cluster::MemoryCluster;
use linkerd_injector_policy::settings::Settings;
use linkerd_injector_policy::wire;
use rstest::rstest;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn error_of(settings: Value) -> String {
    Settings::from_value(settings)
        .expect_err("settings must be rejected")
        .to_string()
}

#[rstest]
#[case::top_level(
    json!({"clusterDomian": "example.org"}),
    "settings.clusterDomian: unknown field `clusterDomian`; did you mean `clusterDomain`?"
)]
#[case::nested(
    json!({"proxy": {"logLvl": "debug"}}),
    "settings.proxy.logLvl: unknown field `logLvl`; did you mean `proxy.logLevel`?"
)]
#[case::two_levels_down(
    json!({"proxy": {"ports": {"admn": 4191}}}),
    "settings.proxy.ports.admn: unknown field `admn`; did you mean `proxy.ports.admin`?"
)]
#[case::three_levels_down(
    json!({"proxy": {"resources": {"cpu": {"requst": "100m"}}}}),
    "settings.proxy.resources.cpu.requst: unknown field `requst`; did you mean `proxy.resources.cpu.request`?"
)]
#[case::wrong_case(
    json!({"proxy": {"nativesidecar": false}}),
    "settings.proxy.nativesidecar: unknown field `nativesidecar`; did you mean `proxy.nativeSidecar`?"
)]
#[case::misspelt_block(
    json!({"proxyInt": {"iptablesMode": "legacy"}}),
    "settings.proxyInt: unknown field `proxyInt`; did you mean `proxyInit`?"
)]
#[case::key_under_the_wrong_block(
    json!({"proxy": {"iptablesMode": "legacy"}}),
    "settings.proxy.iptablesMode: unknown field `iptablesMode`; did you mean `proxyInit.iptablesMode`?"
)]
#[case::kubernetes_style_resources(
    json!({"proxy": {"resources": {"requests": {"cpu": "100m"}}}}),
    "settings.proxy.resources.requests: unknown field `requests`; did you mean `proxy.resources.cpu.request`?"
)]
#[case::in_the_policy_block(
    json!({"policy": {"trustAnchor": "configMap"}}),
    "settings.policy.trustAnchor: unknown field `trustAnchor`; did you mean `policy.trustAnchors`?"
)]
#[case::nothing_close(
    json!({"proxy": {"sidecarFlavour": "vanilla"}}),
    "settings.proxy.sidecarFlavour: unknown field `sidecarFlavour`"
)]
#[case::dotted_key(
    json!({"proxy": {"ports.admin": 4191}}),
    "settings.proxy.ports.admin: unknown field `ports.admin`"
)]
#[case::every_typo_sorted_by_path(
    json!({"proxy": {"ports": {"admn": 1}, "logLvl": "debug"}, "policy": {"modee": "verify"}, "clusterDomian": "x"}),
    "settings.clusterDomian: unknown field `clusterDomian`; did you mean `clusterDomain`?; \
     settings.policy.modee: unknown field `modee`; did you mean `policy.mode`?; \
     settings.proxy.logLvl: unknown field `logLvl`; did you mean `proxy.logLevel`?; \
     settings.proxy.ports.admn: unknown field `admn`; did you mean `proxy.ports.admin`?"
)]
fn a_typo_is_rejected_with_the_nearest_key(#[case] settings: Value, #[case] expected: &str) {
    assert_eq!(error_of(settings), expected);
}

#[rstest]
#[case::read_by_other_components(json!({
    "controllerReplicas": 3,
    "enablePodAntiAffinity": true,
    "webhookFailurePolicy": "Fail",
    "proxyInjector": {"timeoutSeconds": 5, "externalSecret": true},
    "podMonitor": {"proxy": {"enabled": true, "honorTimestamps": false}},
    "identity": {"issuer": {"scheme": "kubernetes.io/tls"}}
}))]
#[case::only_in_linkerd_config(json!({"cliVersion": "linkerd/cli edge-26.8.3", "proxyContainerName": "linkerd-proxy"}))]
#[case::documented_only_in_comments(json!({"heartbeatSchedule": "0 0 * * *", "destinationResources": {"cpu": {"request": "100m"}}}))]
#[case::only_at_edge_26_8_3(json!({"podMonitor": {"controller": {"honorTimestamps": true}}}))]
#[case::ha_overlay_only(json!({"controllerResources": {"memory": {"limit": "250Mi"}}, "highAvailability": true}))]
#[case::labels_and_annotations(json!({
    "podAnnotations": {"example.com/owner": "team-a"},
    "podLabels": {"team": "a"},
    "commonLabels": {"app.kubernetes.io/part-of": "mesh"},
    "nodeSelector": {"kubernetes.io/os": "linux", "disktype": "ssd"},
    "proxy": {"tracing": {"labels": {"team": "a"}}}
}))]
#[case::kubernetes_objects(json!({
    "tolerations": [{"key": "dedicated", "operator": "Exists"}],
    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}},
    "deploymentStrategy": {"type": "Recreate"},
    "proxyInjector": {"namespaceSelector": {"matchLabels": {"mesh": "on"}}},
    "networkValidator": {"securityContext": {"runAsNonRoot": true, "procMount": "Default"}},
    "destinationController": {"meshedHttp2ClientProtobuf": {"max_concurrent_streams": 100}}
}))]
#[case::env_lists(json!({"proxy": {"additionalEnv": [{"name": "A", "value": "b", "anything": 1}]}}))]
#[case::null_defaults_take_any_value(json!({"heartbeat": {"schedule": "x"}, "proxyInit": {"resources": {"cpu": {"request": "10m"}}}}))]
#[case::a_null_typo_means_unset(json!({"proxy": {"logLvl": null}}))]
fn keys_linkerd_has_are_accepted(#[case] settings: Value) {
    if let Err(e) = Settings::from_value(settings) {
        panic!("rejected: {e}");
    }
}

#[test]
fn every_shipped_settings_file_is_accepted() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("deploy/settings"))
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|f| f.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    for file in files {
        if let Err(e) = Settings::from_value(yaml(&file)) {
            panic!("{}: {e}", file.display());
        }
    }
}

#[rstest]
#[case::edge_26_5_1_default("edge-26.5.1", "install_default")]
#[case::edge_26_5_1_ha("edge-26.5.1", "install_ha_output")]
#[case::edge_26_5_1_helm("edge-26.5.1", "install_helm_control_plane_output")]
#[case::edge_26_8_3_default("edge-26.8.3", "install_default")]
#[case::edge_26_8_3_ha("edge-26.8.3", "install_ha_output")]
#[case::edge_26_8_3_helm("edge-26.8.3", "install_helm_control_plane_output")]
fn linkerd_config_values_are_accepted_as_settings(#[case] tag: &str, #[case] golden: &str) {
    let file = root().join(format!("tests/fixtures/linkerd-config/{tag}/{golden}.yaml"));
    let text = yaml(&file)["data"]["values"].as_str().unwrap().to_owned();
    let values: Value = serde_yaml_ng::from_str(&text).unwrap();
    if let Err(e) = Settings::from_value(values) {
        panic!("{}: {e}", file.display());
    }
}

#[test]
fn edge_26_5_1_chart_values_are_accepted() {
    let mut values = yaml(&root().join("tests/fixtures/linkerd-versions/edge-26.5.1/values.yaml"));
    values["identityTrustAnchorsPEM"] = json!("PEM");
    if let Err(e) = Settings::from_value(values) {
        panic!("{e}");
    }
}

#[test]
fn validate_settings_answers_the_typo() {
    let answer: Value =
        serde_json::from_slice(&wire::validate_settings(br#"{"proxy": {"logLvl": "debug"}}"#)).unwrap();
    assert_eq!(
        answer,
        json!({"valid": false, "message": "settings.proxy.logLvl: unknown field `logLvl`; did you mean `proxy.logLevel`?"})
    );
}

#[test]
fn validate_rejects_a_request_whose_settings_have_a_typo() {
    let cluster = MemoryCluster::new(vec![json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "shop", "annotations": {"linkerd.io/inject": "enabled"}}})]);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    let request = json!({"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE", "namespace": "shop", "object": pod});
    let settings = json!({"identityTrustAnchorsPEM": "PEM", "proxy": {"ports": {"admn": 1}}});
    let payload = serde_json::to_vec(&json!({"request": request, "settings": settings})).unwrap();
    let answer: Value = serde_json::from_slice(&wire::validate(&payload, &cluster)).unwrap();
    assert_eq!(answer["accepted"], json!(false), "{answer}");
    assert_eq!(
        answer["message"],
        json!("settings.proxy.ports.admn: unknown field `admn`; did you mean `proxy.ports.admin`?")
    );
}
