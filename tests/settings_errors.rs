//! Settings: defaults are the chart's, pasted values are accepted, every invalid value is
//! rejected with a message naming its key path and the accepted form.

use linkerd_injector_policy::settings::{LookupFailure, OwnerResolution, Settings, TrustAnchorsSource};
use linkerd_injector_policy::wire;
use rstest::rstest;
use serde_json::{Value, json};

fn error_of(v: Value) -> String {
    Settings::from_value(v)
        .expect_err("settings must be rejected")
        .to_string()
}

#[test]
fn empty_and_null_settings_are_the_chart_defaults() {
    let s = Settings::from_value(json!({})).unwrap();
    assert_eq!(s, Settings::from_value(Value::Null).unwrap());
    assert_eq!(s.proxy.ports.admin, 4191);
    assert_eq!(s.proxy.opaque_ports, "25,587,3306,4444,5432,6379,9300,11211");
    assert_eq!(s.proxy_init.ignore_inbound_ports, "4567,4568");
    assert!(s.proxy.native_sidecar);
    assert!(s.disable_ipv6);
    assert_eq!(s.policy.control_plane_namespace, "linkerd");
    assert_eq!(s.policy.trust_anchors, TrustAnchorsSource::Auto);
    assert_eq!(s.policy.namespace_lookup_failure, LookupFailure::Reject);
    assert_eq!(s.policy.owner_resolution, OwnerResolution::TemplateHash);
    assert!(s.policy.created_by.starts_with("linkerd-injector-policy "));
}

#[test]
fn linkerds_values_files_can_be_pasted() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/linkerd/charts/linkerd-control-plane"
    );
    for file in ["values.yaml", "values-ha.yaml"] {
        let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        let mut values: Value = serde_yaml_ng::from_str(&text).unwrap();
        // The chart ships a placeholder version and no trust anchors.
        values["linkerdVersion"] = json!("edge-26.8.3");
        let s = Settings::from_value(values).unwrap_or_else(|e| panic!("{file}: {e}"));
        if file == "values-ha.yaml" {
            assert_eq!(s.proxy.resources.cpu.request, "100m");
            assert_eq!(s.proxy.resources.memory.limit, "250Mi");
        }
    }
}

#[test]
fn numbers_are_accepted_where_helm_allows_them() {
    let s = Settings::from_value(json!({
        "proxy": {"resources": {"cpu": {"request": 1}}, "cores": null},
        "proxyInit": {"ignoreInboundPorts": 4567}
    }))
    .unwrap();
    assert_eq!(s.proxy.resources.cpu.request, "1");
    assert_eq!(s.proxy_init.ignore_inbound_ports, "4567");
}

#[rstest]
#[case::not_an_object(json!([1]), "settings: must be an object, got array")]
#[case::admin_port_zero(json!({"proxy": {"ports": {"admin": 0}}}), "settings.proxy.ports.admin: must be 1-65535, got 0")]
#[case::inbound_port_too_big(json!({"proxy": {"ports": {"inbound": 65536}}}), "settings.proxy.ports.inbound: must be 1-65535, got 65536")]
#[case::port_wrong_type(json!({"proxy": {"ports": {"control": "4190"}}}), "settings.proxy.ports.control: invalid type: string \"4190\", expected i64")]
#[case::bool_wrong_type(json!({"cniEnabled": "yes"}), "settings.cniEnabled: invalid type: string \"yes\", expected a boolean")]
#[case::bad_cidr(json!({"clusterNetworks": "10.0.0.0/8,10.0.0.0/33"}), "settings.clusterNetworks: entry 1 \"10.0.0.0/33\"")]
#[case::empty_cluster_networks(json!({"clusterNetworks": ""}), "settings.clusterNetworks: must list at least one CIDR")]
#[case::bad_quantity(json!({"proxy": {"resources": {"memory": {"limit": "20Mb"}}}}), "settings.proxy.resources.memory.limit:")]
#[case::bad_duration(json!({"proxy": {"outboundConnectTimeout": "1000"}}), "settings.proxy.outboundConnectTimeout:")]
#[case::bad_inbound_policy(json!({"proxy": {"defaultInboundPolicy": "allow"}}), "settings.proxy.defaultInboundPolicy: must be one of \"all-unauthenticated\", \"all-authenticated\", \"cluster-unauthenticated\", \"cluster-authenticated\", \"deny\", \"audit\", got \"allow\"")]
#[case::bad_iptables_mode(json!({"proxyInit": {"iptablesMode": "ebpf"}}), "settings.proxyInit.iptablesMode: must be one of \"nft\", \"legacy\", got \"ebpf\"")]
#[case::bad_log_headers(json!({"proxy": {"logHTTPHeaders": "on"}}), "settings.proxy.logHTTPHeaders: must be one of \"off\", \"insecure\", got \"on\"")]
#[case::bad_pull_policy(json!({"imagePullPolicy": "Sometimes"}), "settings.imagePullPolicy: must be one of \"Always\", \"IfNotPresent\", \"Never\", got \"Sometimes\"")]
#[case::reversed_skip_range(json!({"proxyInit": {"ignoreOutboundPorts": "5000-4000"}}), "settings.proxyInit.ignoreOutboundPorts: \"5000-4000\"")]
#[case::bad_skip_subnets(json!({"proxyInit": {"skipSubnets": "10.0.0.0"}}), "settings.proxyInit.skipSubnets: entry 0 \"10.0.0.0\"")]
#[case::close_wait_needs_root(json!({"proxyInit": {"closeWaitTimeoutSecs": 60}}), "settings.proxyInit.closeWaitTimeoutSecs: requires proxyInit.runAsRoot: true")]
#[case::negative_uid(json!({"proxy": {"uid": -5}}), "settings.proxy.uid: must be at least 0, got -5")]
#[case::cpu_ratio(json!({"proxy": {"runtime": {"workers": {"maximumCPURatio": 1.5}}}}), "settings.proxy.runtime.workers.maximumCPURatio: must be a number in (0, 1], got 1.5")]
#[case::opaque_ports(json!({"proxy": {"opaquePorts": "25,70000"}}), "settings.proxy.opaquePorts: \"70000\" is neither a port, a range \"lo-hi\" nor a port name")]
#[case::env_without_name(json!({"proxy": {"additionalEnv": [{"value": "x"}]}}), "settings.proxy.additionalEnv[0]: must be an EnvVar object with a non-empty \"name\"")]
#[case::tracing_without_collector(json!({"proxy": {"tracing": {"enabled": true}}}), "settings.proxy.tracing.collector.endpoint: must not be empty")]
#[case::bad_namespace(json!({"policy": {"controlPlaneNamespace": "Linkerd"}}), "settings.policy.controlPlaneNamespace: must be a DNS-1123 label (a namespace name), got \"Linkerd\"")]
#[case::unknown_policy_key(json!({"policy": {"controlPlane": "x"}}), "settings.policy.controlPlane: unknown field `controlPlane`")]
#[case::bad_trust_source(json!({"policy": {"trustAnchors": "secret"}}), "settings.policy.trustAnchors: unknown variant `secret`, expected one of `auto`, `inline`, `configMap`")]
#[case::inline_without_pem(json!({"policy": {"trustAnchors": "inline"}}), "settings.identityTrustAnchorsPEM: must be set when policy.trustAnchors is \"inline\"")]
#[case::bad_lookup_failure(json!({"policy": {"namespaceLookupFailure": "ignore"}}), "settings.policy.namespaceLookupFailure: unknown variant `ignore`, expected `reject` or `skip`")]
#[case::bad_config_map_lookup(json!({"policy": {"configMapLookup": "watch"}}), "settings.policy.configMapLookup: unknown variant `watch`, expected `list` or `get`")]
#[case::bad_owner_resolution(json!({"policy": {"ownerResolution": "informer"}}), "settings.policy.ownerResolution: unknown variant `informer`, expected `templateHash` or `lookup`")]
#[case::owner_resolution_is_camel_case(json!({"policy": {"ownerResolution": "template-hash"}}), "settings.policy.ownerResolution: unknown variant `template-hash`, expected `templateHash` or `lookup`")]
#[case::owner_resolution_not_a_string(json!({"policy": {"ownerResolution": true}}), "settings.policy.ownerResolution: invalid type: boolean `true`")]
fn invalid_settings_name_their_key(#[case] settings: Value, #[case] expected: &str) {
    let msg = error_of(settings);
    assert!(msg.starts_with(expected), "got: {msg}\nwant prefix: {expected}");
}

#[rstest]
#[case::template_hash("templateHash", OwnerResolution::TemplateHash)]
#[case::lookup("lookup", OwnerResolution::Lookup)]
fn owner_resolution_values(#[case] value: &str, #[case] expected: OwnerResolution) {
    let s = Settings::from_value(json!({"policy": {"ownerResolution": value}})).unwrap();
    assert_eq!(s.policy.owner_resolution, expected);
}

#[test]
fn all_errors_are_reported_together() {
    let msg = error_of(json!({"proxy": {"ports": {"admin": 0, "control": 70000}}}));
    assert_eq!(
        msg,
        "settings.proxy.ports.admin: must be 1-65535, got 0; settings.proxy.ports.control: must be 1-65535, got 70000"
    );
}

#[test]
fn validate_settings_payload_answers_valid_or_message() {
    let ok: Value = serde_json::from_slice(&wire::validate_settings(b"{}")).unwrap();
    assert_eq!(ok, json!({"valid": true, "message": null}));
    let bad: Value = serde_json::from_slice(&wire::validate_settings(b"{\"proxy\":{\"uid\":-1}}")).unwrap();
    assert_eq!(
        bad,
        json!({"valid": false, "message": "settings.proxy.uid: must be at least 0, got -1"})
    );
    let junk: Value = serde_json::from_slice(&wire::validate_settings(b"{not json")).unwrap();
    assert_eq!(junk["valid"], json!(false));
    assert!(
        junk["message"]
            .as_str()
            .unwrap()
            .starts_with("settings: not valid JSON")
    );
}

#[test]
fn partial_blocks_keep_the_other_defaults_like_helm() {
    let s = Settings::from_value(json!({
        "proxy": {"image": {"version": "edge-1"}, "livenessProbe": {"timeoutSeconds": 3}},
        "debugContainer": {"image": {"version": "d"}},
        "networkValidator": {"securityContext": {"runAsUser": 1000}}
    }))
    .unwrap();
    assert_eq!(s.proxy.image.name, "cr.l5d.io/linkerd/proxy");
    assert_eq!(s.proxy.image.version, "edge-1");
    assert_eq!(
        (
            s.proxy.liveness_probe.initial_delay_seconds,
            s.proxy.liveness_probe.timeout_seconds
        ),
        (10, 3)
    );
    assert_eq!(s.debug_container.image.name, "cr.l5d.io/linkerd/debug");
    assert_eq!(
        s.network_validator.security_context.get()["runAsUser"],
        json!(1000)
    );
    assert_eq!(
        s.network_validator.security_context.get()["capabilities"],
        json!({"drop": ["ALL"]})
    );
    // Lists replace, as in Helm.
    let s = Settings::from_value(json!({"proxy": {"additionalEnv": [{"name": "A"}]}})).unwrap();
    assert_eq!(s.proxy.additional_env.len(), 1);
}
