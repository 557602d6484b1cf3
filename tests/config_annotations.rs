//! Every configuration annotation: valid values take effect, invalid ones keep the default with
//! a warning naming the annotation, two render errors reject, and the namespace layer.

use linkerd_injector_policy::config::{ConfigError, Layers, ProxyConfig, effective};
use linkerd_injector_policy::settings::Settings;
use rstest::rstest;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn spec() -> Value {
    json!({"containers": [{"name": "app", "ports": [{"name": "http", "containerPort": 8080}]}]})
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn run(pod: &[(&str, &str)], ns: &[(&str, &str)]) -> Result<ProxyConfig<'static>, ConfigError> {
    let (pod, ns, labels, spec) = (map(pod), map(ns), BTreeMap::new(), spec());
    effective(
        &Settings::default(),
        &Layers::new(&pod, &ns, &spec, &labels),
        false,
    )
    .map(ProxyConfig::into_owned)
}

#[rstest]
#[case::proxy_image("config.linkerd.io/proxy-image", "my/proxy", |c: &ProxyConfig| c.values.proxy.image.name.to_string(), "my/proxy")]
#[case::proxy_version("config.linkerd.io/proxy-version", "v9", |c: &ProxyConfig| c.values.proxy.image.version.to_string(), "v9")]
#[case::pull_policy("config.linkerd.io/image-pull-policy", "Always", |c: &ProxyConfig| c.values.proxy.image.pull_policy.to_string(), "Always")]
#[case::debug_image("config.linkerd.io/debug-image", "dbg", |c: &ProxyConfig| c.values.debug_container.image.name.to_string(), "dbg")]
#[case::debug_version("config.linkerd.io/debug-image-version", "d1", |c: &ProxyConfig| c.values.debug_container.image.version.to_string(), "d1")]
#[case::debug_pull("config.linkerd.io/debug-image-pull-policy", "Never", |c: &ProxyConfig| c.values.debug_container.image.pull_policy.to_string(), "Never")]
#[case::debug_sidecar_true("config.linkerd.io/enable-debug-sidecar", "T", |c: &ProxyConfig| c.debug_sidecar.to_string(), "true")]
#[case::debug_sidecar_invalid_is_false("config.linkerd.io/enable-debug-sidecar", "yes", |c: &ProxyConfig| c.debug_sidecar.to_string(), "false")]
#[case::control_port("config.linkerd.io/control-port", "9000", |c: &ProxyConfig| c.values.proxy.ports.control.to_string(), "9000")]
#[case::admin_port("config.linkerd.io/admin-port", "+9001", |c: &ProxyConfig| c.values.proxy.ports.admin.to_string(), "9001")]
#[case::inbound_port("config.linkerd.io/inbound-port", "9002", |c: &ProxyConfig| c.values.proxy.ports.inbound.to_string(), "9002")]
#[case::outbound_port("config.linkerd.io/outbound-port", "9003", |c: &ProxyConfig| c.values.proxy.ports.outbound.to_string(), "9003")]
#[case::pod_inbound_ports("config.linkerd.io/pod-inbound-ports", "80,81", |c: &ProxyConfig| c.values.proxy.pod_inbound_ports.to_string(), "80,81")]
#[case::skip_inbound("config.linkerd.io/skip-inbound-ports", "1-10", |c: &ProxyConfig| c.values.proxy_init.ignore_inbound_ports.to_string(), "1-10")]
#[case::skip_outbound("config.linkerd.io/skip-outbound-ports", "443", |c: &ProxyConfig| c.values.proxy_init.ignore_outbound_ports.to_string(), "443")]
#[case::skip_subnets("config.linkerd.io/skip-subnets", "10.0.0.0/8", |c: &ProxyConfig| c.values.proxy_init.skip_subnets.to_string(), "10.0.0.0/8")]
#[case::opaque_empty_disables("config.linkerd.io/opaque-ports", "", |c: &ProxyConfig| c.values.proxy.opaque_ports.to_string(), "")]
#[case::opaque_resolved("config.linkerd.io/opaque-ports", "http, 3306,4000-4100,bogus,", |c: &ProxyConfig| c.values.proxy.opaque_ports.to_string(), "8080,3306,4000-4100")]
#[case::cpu_request("config.linkerd.io/proxy-cpu-request", "1500m", |c: &ProxyConfig| format!("{} {:?}", c.values.proxy.resources.cpu.request, c.values.proxy.runtime.workers.minimum), "1500m Some(2)")]
#[case::cpu_limit("config.linkerd.io/proxy-cpu-limit", "3", |c: &ProxyConfig| format!("{} {:?}", c.values.proxy.resources.cpu.limit, c.values.proxy.runtime.workers.maximum), "3 Some(3)")]
#[case::cpu_ratio("config.linkerd.io/proxy-cpu-ratio-limit", "0.25", |c: &ProxyConfig| format!("{:?}", c.values.proxy.runtime.workers.maximum_cpu_ratio), "Some(0.25)")]
#[case::memory_request("config.linkerd.io/proxy-memory-request", "64Mi", |c: &ProxyConfig| c.values.proxy.resources.memory.request.to_string(), "64Mi")]
#[case::memory_limit("config.linkerd.io/proxy-memory-limit", "1Gi", |c: &ProxyConfig| c.values.proxy.resources.memory.limit.to_string(), "1Gi")]
#[case::eph_request("config.linkerd.io/proxy-ephemeral-storage-request", "1M", |c: &ProxyConfig| c.values.proxy.resources.ephemeral_storage.request.to_string(), "1M")]
#[case::eph_limit("config.linkerd.io/proxy-ephemeral-storage-limit", "2M", |c: &ProxyConfig| c.values.proxy.resources.ephemeral_storage.limit.to_string(), "2M")]
#[case::uid("config.linkerd.io/proxy-uid", "1000", |c: &ProxyConfig| c.values.proxy.uid.to_string(), "1000")]
#[case::gid("config.linkerd.io/proxy-gid", "3000", |c: &ProxyConfig| c.values.proxy.gid.to_string(), "3000")]
#[case::log_level("config.linkerd.io/proxy-log-level", "debug", |c: &ProxyConfig| c.values.proxy.log_level.to_string(), "debug")]
#[case::log_format("config.linkerd.io/proxy-log-format", "json", |c: &ProxyConfig| c.values.proxy.log_format.to_string(), "json")]
#[case::log_headers("config.linkerd.io/proxy-log-http-headers", "insecure", |c: &ProxyConfig| c.values.proxy.log_http_headers.to_string(), "insecure")]
#[case::admin_shutdown("config.linkerd.io/proxy-admin-shutdown", "enabled", |c: &ProxyConfig| c.values.proxy.enable_shutdown_endpoint.to_string(), "true")]
#[case::external_profiles("config.linkerd.io/enable-external-profiles", "true", |c: &ProxyConfig| c.values.proxy.enable_external_profiles.to_string(), "true")]
#[case::require_identity("config.linkerd.io/proxy-require-identity-inbound-ports", "8080", |c: &ProxyConfig| c.values.proxy.require_identity_on_inbound_ports.to_string(), "8080")]
#[case::hostname_labels("config.linkerd.io/proxy-metrics-hostname-labels", "1", |c: &ProxyConfig| c.values.proxy.metrics.hostname_labels.to_string(), "true")]
#[case::outbound_connect("config.linkerd.io/proxy-outbound-connect-timeout", "2s", |c: &ProxyConfig| c.values.proxy.outbound_connect_timeout.to_string(), "2000ms")]
#[case::inbound_connect("config.linkerd.io/proxy-inbound-connect-timeout", "1.5ms", |c: &ProxyConfig| c.values.proxy.inbound_connect_timeout.to_string(), "1ms")]
#[case::outbound_discovery("config.linkerd.io/proxy-outbound-discovery-cache-unused-timeout", "1m30s", |c: &ProxyConfig| c.values.proxy.outbound_discovery_cache_unused_timeout.to_string(), "90s")]
#[case::inbound_discovery_truncates("config.linkerd.io/proxy-inbound-discovery-cache-unused-timeout", "500ms", |c: &ProxyConfig| c.values.proxy.inbound_discovery_cache_unused_timeout.to_string(), "0s")]
#[case::disable_outbound_detect("config.linkerd.io/proxy-disable-outbound-protocol-detect-timeout", "true", |c: &ProxyConfig| c.values.proxy.disable_outbound_protocol_detect_timeout.to_string(), "true")]
#[case::disable_inbound_detect("config.linkerd.io/proxy-disable-inbound-protocol-detect-timeout", "TRUE", |c: &ProxyConfig| c.values.proxy.disable_inbound_protocol_detect_timeout.to_string(), "true")]
#[case::grace_period("config.linkerd.io/shutdown-grace-period", "1m", |c: &ProxyConfig| c.values.proxy.shutdown_grace_period.to_string(), "60000ms")]
#[case::await_disabled("config.linkerd.io/proxy-await", "disabled", |c: &ProxyConfig| c.values.proxy.r#await.to_string(), "false")]
#[case::inbound_policy("config.linkerd.io/default-inbound-policy", "deny", |c: &ProxyConfig| c.values.proxy.default_inbound_policy.to_string(), "deny")]
#[case::access_log("config.linkerd.io/access-log", "json", |c: &ProxyConfig| c.values.proxy.access_log.to_string(), "json")]
#[case::gateway("config.linkerd.io/enable-gateway", "true", |c: &ProxyConfig| c.values.proxy.is_gateway.to_string(), "true")]
#[case::native_off("config.linkerd.io/proxy-enable-native-sidecar", "false", |c: &ProxyConfig| c.values.proxy.native_sidecar.to_string(), "false")]
#[case::native_beta("config.beta.linkerd.io/proxy-enable-native-sidecar", "false", |c: &ProxyConfig| c.values.proxy.native_sidecar.to_string(), "false")]
#[case::native_alpha("config.alpha.linkerd.io/proxy-enable-native-sidecar", "false", |c: &ProxyConfig| c.values.proxy.native_sidecar.to_string(), "false")]
#[case::wait_before_exit("config.alpha.linkerd.io/proxy-wait-before-exit-seconds", "30", |c: &ProxyConfig| c.values.proxy.wait_before_exit_seconds.to_string(), "30")]
#[case::additional_env("config.linkerd.io/proxy-additional-env", r#"[{"name":"A","value":"1"}]"#, |c: &ProxyConfig| serde_json::to_string(&c.values.proxy.additional_env).unwrap(), r#"[{"name":"A","value":"1"}]"#)]
fn valid_annotation_takes_effect(
    #[case] key: &str,
    #[case] value: &str,
    #[case] get: impl Fn(&ProxyConfig) -> String,
    #[case] expected: &str,
) {
    let cfg = run(&[(key.trim(), value)], &[]).unwrap();
    assert_eq!(get(&cfg), expected, "{key}={value}");
    assert!(
        cfg.warnings.is_empty() || key.contains("debug-sidecar") || key.contains("opaque"),
        "{:?}",
        cfg.warnings
    );
}

#[rstest]
#[case::port_zero("config.linkerd.io/admin-port", "0", |c: &ProxyConfig| c.values.proxy.ports.admin.to_string(), "4191")]
#[case::port_too_big("config.linkerd.io/inbound-port", "65536", |c: &ProxyConfig| c.values.proxy.ports.inbound.to_string(), "4143")]
#[case::port_text("config.linkerd.io/control-port", "http", |c: &ProxyConfig| c.values.proxy.ports.control.to_string(), "4190")]
#[case::bad_quantity("config.linkerd.io/proxy-memory-limit", "1GB", |c: &ProxyConfig| c.values.proxy.resources.memory.limit.to_string(), "")]
#[case::bad_cpu_keeps_workers("config.linkerd.io/proxy-cpu-request", "lots", |c: &ProxyConfig| format!("{:?}", c.values.proxy.runtime.workers.minimum), "Some(1)")]
#[case::ratio_one_excluded("config.linkerd.io/proxy-cpu-ratio-limit", "1.0", |c: &ProxyConfig| format!("{:?}", c.values.proxy.runtime.workers.maximum_cpu_ratio), "None")]
#[case::ratio_zero("config.linkerd.io/proxy-cpu-ratio-limit", "0", |c: &ProxyConfig| format!("{:?}", c.values.proxy.runtime.workers.maximum_cpu_ratio), "None")]
#[case::negative_uid("config.linkerd.io/proxy-uid", "-1", |c: &ProxyConfig| c.values.proxy.uid.to_string(), "2102")]
#[case::gid_text("config.linkerd.io/proxy-gid", "root", |c: &ProxyConfig| c.values.proxy.gid.to_string(), "-1")]
#[case::shutdown_yes("config.linkerd.io/proxy-admin-shutdown", "yes", |c: &ProxyConfig| c.values.proxy.enable_shutdown_endpoint.to_string(), "false")]
#[case::bool_text("config.linkerd.io/enable-external-profiles", "on", |c: &ProxyConfig| c.values.proxy.enable_external_profiles.to_string(), "false")]
#[case::duration_without_unit("config.linkerd.io/proxy-outbound-connect-timeout", "1000", |c: &ProxyConfig| c.values.proxy.outbound_connect_timeout.to_string(), "1000ms")]
#[case::inbound_policy("config.linkerd.io/default-inbound-policy", "allow-all", |c: &ProxyConfig| c.values.proxy.default_inbound_policy.to_string(), "all-unauthenticated")]
#[case::native_unparsable_still_wins("config.linkerd.io/proxy-enable-native-sidecar", "maybe", |c: &ProxyConfig| c.values.proxy.native_sidecar.to_string(), "true")]
#[case::wait_negative("config.alpha.linkerd.io/proxy-wait-before-exit-seconds", "-3", |c: &ProxyConfig| c.values.proxy.wait_before_exit_seconds.to_string(), "0")]
#[case::env_not_json("config.linkerd.io/proxy-additional-env", "A=1", |c: &ProxyConfig| c.values.proxy.additional_env.len().to_string(), "0")]
fn invalid_annotation_keeps_default_and_warns(
    #[case] key: &str,
    #[case] value: &str,
    #[case] get: impl Fn(&ProxyConfig) -> String,
    #[case] expected: &str,
) {
    let cfg = run(&[(key, value)], &[]).unwrap();
    assert_eq!(get(&cfg), expected, "{key}={value}");
    assert_eq!(cfg.warnings.len(), 1, "{:?}", cfg.warnings);
    assert!(
        cfg.warnings[0].starts_with(&format!("annotation {key}")),
        "{}",
        cfg.warnings[0]
    );
}

#[test]
fn invalid_port_warning_text() {
    let cfg = run(&[("config.linkerd.io/admin-port", "0")], &[]).unwrap();
    assert_eq!(
        cfg.warnings,
        vec![
            "annotation config.linkerd.io/admin-port: invalid value \"0\" (a port 1-65535); using 4191"
                .to_string()
        ]
    );
}

#[test]
fn render_errors_reject() {
    let err = run(&[("config.linkerd.io/proxy-log-http-headers", "on")], &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "annotation config.linkerd.io/proxy-log-http-headers: must be \"insecure\" or \"off\", got \"on\""
    );
    let err = run(&[("config.linkerd.io/close-wait-timeout", "60s")], &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "annotation config.linkerd.io/close-wait-timeout: requires proxyInit.runAsRoot: true in the policy settings"
    );
}

#[test]
fn pod_beats_namespace_beats_settings() {
    let cfg = run(
        &[("config.linkerd.io/proxy-cpu-request", "600m")],
        &[
            ("config.linkerd.io/proxy-cpu-request", "200m"),
            ("config.linkerd.io/proxy-memory-request", "50Mi"),
        ],
    )
    .unwrap();
    assert_eq!(cfg.values.proxy.resources.cpu.request, "600m");
    assert_eq!(cfg.values.proxy.resources.memory.request, "50Mi");
}

#[rstest]
#[case::cpu_ratio("config.linkerd.io/proxy-cpu-ratio-limit", "0.5")]
#[case::gateway("config.linkerd.io/enable-gateway", "true")]
#[case::native_beta("config.beta.linkerd.io/proxy-enable-native-sidecar", "false")]
#[case::debug_image("config.linkerd.io/debug-image", "x")]
fn pod_only_annotations_are_not_inherited(#[case] key: &str, #[case] value: &str) {
    assert_eq!(
        format!("{:?}", run(&[], &[(key, value)]).unwrap().values),
        format!("{:?}", run(&[], &[]).unwrap().values)
    );
}

#[test]
fn native_sidecar_precedence_ga_then_beta_then_alpha() {
    let ga_false = run(
        &[
            ("config.linkerd.io/proxy-enable-native-sidecar", "false"),
            ("config.beta.linkerd.io/proxy-enable-native-sidecar", "true"),
        ],
        &[],
    )
    .unwrap();
    assert!(!ga_false.values.proxy.native_sidecar);
    let beta_over_alpha = run(
        &[
            ("config.beta.linkerd.io/proxy-enable-native-sidecar", "true"),
            ("config.alpha.linkerd.io/proxy-enable-native-sidecar", "false"),
        ],
        &[],
    )
    .unwrap();
    assert!(beta_over_alpha.values.proxy.native_sidecar);
}

#[test]
fn additional_env_merges_by_name_across_layers() {
    let cfg = run(
        &[(
            "config.linkerd.io/proxy-additional-env",
            r#"[{"name":"B","value":"pod"},{"name":"C","value":"pod"}]"#,
        )],
        &[(
            "config.linkerd.io/proxy-additional-env",
            r#"[{"name":"A","value":"ns"},{"name":"B","value":"ns"}]"#,
        )],
    )
    .unwrap();
    let names: Vec<String> = cfg
        .values
        .proxy
        .additional_env
        .iter()
        .map(|e| format!("{}={}", e["name"].as_str().unwrap(), e["value"].as_str().unwrap()))
        .collect();
    assert_eq!(names, vec!["A=ns", "B=pod", "C=pod"]);
}

#[test]
fn ingress_sets_ingress_mode() {
    let (pod, ns, labels, spec) = (map(&[]), map(&[]), BTreeMap::new(), spec());
    let layers = Layers::new(&pod, &ns, &spec, &labels);
    assert!(
        effective(&Settings::default(), &layers, true)
            .unwrap()
            .values
            .proxy
            .is_ingress
    );
}

/// The settings are copied only when a recognised annotation applies to the pod; otherwise the
/// configuration is the settings themselves.
#[rstest]
#[case::no_annotations(&[], &[], false)]
#[case::unrelated_annotations(&[("prometheus.io/scrape", "true")], &[("linkerd.io/inject", "enabled")], false)]
#[case::namespace_value_not_inherited(&[], &[("config.linkerd.io/debug-image", "dbg")], false)]
#[case::pod_override(&[("config.linkerd.io/proxy-uid", "7")], &[], true)]
#[case::config_key_among_others(&[("a", "1"), ("config.linkerd.io/proxy-uid", "7"), ("zz", "2")], &[("b", "3")], true)]
#[case::keys_beside_the_config_prefix(&[("config", "1"), ("config-x", "2"), ("configuration/x", "3")], &[("config", "4")], false)]
#[case::inherited_from_namespace(&[], &[("config.linkerd.io/proxy-log-level", "debug")], true)]
fn settings_are_copied_only_when_written(
    #[case] pod: &[(&str, &str)],
    #[case] ns: &[(&str, &str)],
    #[case] copied: bool,
) {
    let settings = Settings::default();
    let (pod, ns, labels, spec) = (map(pod), map(ns), BTreeMap::new(), spec());
    let layers = Layers::new(&pod, &ns, &spec, &labels);
    let config = effective(&settings, &layers, false).unwrap();
    assert_eq!(matches!(config.values, std::borrow::Cow::Owned(_)), copied);
    assert_eq!(*config.values == settings, !copied);
}
