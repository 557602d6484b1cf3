//! The subset of Linkerd's Helm values the injector reads, with the chart's defaults.
//!
//! Keys and nesting follow `charts/linkerd-control-plane/values.yaml`, so a platform team can
//! paste their values document; keys the injector does not read are ignored.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use super::block::{Block, ChartDefault};
use super::policy::PolicyOptions;

/// A setting's text: the chart's defaults are borrowed, so building the defaults on every
/// admission (a fresh instance each) allocates none of them; values read from a document are
/// owned.
pub type Text = std::borrow::Cow<'static, str>;

/// The Linkerd release whose proxy this policy renders by default.
pub const DEFAULT_LINKERD_VERSION: &str = "edge-26.8.3";

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Settings {
    /// Options that exist only in this policy (not in Linkerd's values).
    pub policy: PolicyOptions,
    pub linkerd_version: Text,
    pub cluster_domain: Text,
    pub cluster_networks: Text,
    pub image_pull_policy: Text,
    pub cni_enabled: bool,
    #[serde(rename = "disableIPv6")]
    pub disable_ipv6: bool,
    #[serde(rename = "identityTrustAnchorsPEM")]
    pub identity_trust_anchors_pem: Text,
    pub identity_trust_domain: Text,
    pub identity: Identity,
    pub proxy: Proxy,
    pub proxy_init: ProxyInit,
    pub network_validator: NetworkValidator,
    pub debug_container: DebugContainer,
    /// The settings document as given (nulls removed; `Null` when empty): it overrides the
    /// control plane's values key by key ([`Settings::over_values`]).
    #[serde(skip)]
    pub overrides: Value,
}

impl Settings {
    /// The top-level keys these settings read (their serde names). A values document's other
    /// keys change nothing, so `linkerd-config`'s are never built
    /// (`helm_yaml::from_str_keeping`); a unit test keeps the list equal to the fields.
    pub const TOP_LEVEL_KEYS: &[&str] = &[
        "policy",
        "linkerdVersion",
        "clusterDomain",
        "clusterNetworks",
        "imagePullPolicy",
        "cniEnabled",
        "disableIPv6",
        "identityTrustAnchorsPEM",
        "identityTrustDomain",
        "identity",
        "proxy",
        "proxyInit",
        "networkValidator",
        "debugContainer",
    ];

    /// Top-level keys of the control plane's values that [`Settings::over_values`] drops: the
    /// policy's own block, and the trust bundle, which comes from the trust-roots ConfigMap or
    /// the settings, as in Linkerd's injector.
    pub const NOT_FROM_VALUES: &[&str] = &["policy", "identityTrustAnchorsPEM"];

    /// Whether `key` is one of [`Settings::TOP_LEVEL_KEYS`].
    pub fn reads_top_level_key(key: &str) -> bool {
        Self::TOP_LEVEL_KEYS.contains(&key)
    }

    /// Whether a values document's top-level `key` can change these settings: one of
    /// [`Settings::TOP_LEVEL_KEYS`] and none of [`Settings::NOT_FROM_VALUES`]. The reader never
    /// builds the others (the trust bundle alone is a tenth of `linkerd-config`'s values).
    pub fn reads_from_values(key: &str) -> bool {
        Self::reads_top_level_key(key) && !Self::NOT_FROM_VALUES.contains(&key)
    }
}

/// The chart's `proxy.opaquePorts`.
pub const DEFAULT_OPAQUE_PORTS: &str = "25,587,3306,4444,5432,6379,9300,11211";

impl Default for Settings {
    fn default() -> Self {
        Self {
            policy: PolicyOptions::default(),
            linkerd_version: DEFAULT_LINKERD_VERSION.into(),
            cluster_domain: "cluster.local".into(),
            cluster_networks: "10.0.0.0/8,100.64.0.0/10,172.16.0.0/12,192.168.0.0/16,fd00::/8".into(),
            image_pull_policy: "IfNotPresent".into(),
            cni_enabled: false,
            disable_ipv6: true,
            identity_trust_anchors_pem: Text::Borrowed(""),
            identity_trust_domain: Text::Borrowed(""),
            identity: Identity::default(),
            proxy: Proxy::default(),
            proxy_init: ProxyInit::default(),
            network_validator: NetworkValidator::default(),
            debug_container: DebugContainer::default(),
            overrides: Value::Null,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Identity {
    pub service_account_token_projection: bool,
}

impl Default for Identity {
    fn default() -> Self {
        Self {
            service_account_token_projection: true,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Image {
    pub name: Text,
    pub pull_policy: Text,
    pub version: Text,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Ports {
    pub admin: i64,
    pub control: i64,
    pub inbound: i64,
    pub outbound: i64,
}

impl Default for Ports {
    fn default() -> Self {
        Self {
            admin: 4191,
            control: 4190,
            inbound: 4143,
            outbound: 4140,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Workers {
    pub minimum: Option<i64>,
    pub maximum: Option<i64>,
    #[serde(rename = "maximumCPURatio")]
    pub maximum_cpu_ratio: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Runtime {
    pub workers: Workers,
}

impl Default for Runtime {
    fn default() -> Self {
        Self {
            workers: Workers {
                minimum: Some(1),
                maximum: None,
                maximum_cpu_ratio: None,
            },
        }
    }
}

/// A request/limit pair; values are Kubernetes quantities kept as the user wrote them.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct RequestLimit {
    #[serde(deserialize_with = "super::scalar::string_or_number")]
    pub request: Text,
    #[serde(deserialize_with = "super::scalar::string_or_number")]
    pub limit: Text,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Resources {
    pub cpu: RequestLimit,
    pub memory: RequestLimit,
    #[serde(rename = "ephemeral-storage")]
    pub ephemeral_storage: RequestLimit,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Probe {
    pub initial_delay_seconds: i64,
    pub timeout_seconds: i64,
    pub period_seconds: Option<i64>,
    pub failure_threshold: Option<i64>,
}

impl Probe {
    fn new(initial_delay_seconds: i64, timeout_seconds: i64) -> Self {
        Self {
            initial_delay_seconds,
            timeout_seconds,
            period_seconds: None,
            failure_threshold: None,
        }
    }
}

impl Default for Probe {
    fn default() -> Self {
        Self::new(0, 1)
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct StartupProbe {
    pub initial_delay_seconds: i64,
    pub period_seconds: i64,
    pub failure_threshold: i64,
}

impl Default for StartupProbe {
    fn default() -> Self {
        Self {
            initial_delay_seconds: 0,
            period_seconds: 1,
            failure_threshold: 120,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Streams {
    pub initial_timeout: Text,
    pub idle_timeout: Text,
    pub lifetime: Text,
}

impl Default for Streams {
    fn default() -> Self {
        Self {
            initial_timeout: "3s".into(),
            idle_timeout: "5m".into(),
            lifetime: "1h".into(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Control {
    pub streams: Streams,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Metrics {
    pub hostname_labels: bool,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct MeshIdentity {
    pub service_account_name: Text,
    pub namespace: Text,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Collector {
    pub endpoint: Text,
    pub mesh_identity: MeshIdentity,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Tracing {
    pub enabled: bool,
    pub protocol: Text,
    pub trace_service_name: Text,
    // `Text`: the three default labels borrowed, since serde builds this default for every
    // `Proxy` it decodes
    pub labels: BTreeMap<Text, Text>,
    pub collector: Collector,
}

impl Default for Tracing {
    fn default() -> Self {
        let labels = [
            ("k8s.pod.ip", "$(_pod_ip)"),
            ("k8s.pod.uid", "$(_pod_uid)"),
            ("k8s.container.name", "$(_pod_containerName)"),
        ];
        Self {
            enabled: false,
            protocol: Text::Borrowed(""),
            trace_service_name: "linkerd-proxy".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (Text::Borrowed(k), Text::Borrowed(v)))
                .collect(),
            collector: Collector::default(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct Proxy {
    pub enable_external_profiles: bool,
    pub outbound_connect_timeout: Text,
    pub inbound_connect_timeout: Text,
    pub outbound_discovery_cache_unused_timeout: Text,
    pub inbound_discovery_cache_unused_timeout: Text,
    pub disable_outbound_protocol_detect_timeout: bool,
    pub disable_inbound_protocol_detect_timeout: bool,
    pub image: Image,
    pub enable_shutdown_endpoint: bool,
    pub log_level: Text,
    pub log_format: Text,
    #[serde(rename = "logHTTPHeaders")]
    pub log_http_headers: Text,
    pub ports: Ports,
    /// Deprecated in Linkerd in favour of `runtime.workers`, still honoured.
    pub cores: Option<i64>,
    pub runtime: Runtime,
    pub resources: Resources,
    pub uid: i64,
    pub gid: i64,
    pub security_context: Value,
    pub wait_before_exit_seconds: i64,
    pub r#await: bool,
    pub require_identity_on_inbound_ports: Text,
    pub opaque_ports: Text,
    pub pod_inbound_ports: Text,
    pub shutdown_grace_period: Text,
    pub default_inbound_policy: Text,
    pub access_log: Text,
    pub native_sidecar: bool,
    pub is_ingress: bool,
    pub is_gateway: bool,
    pub liveness_probe: Probe,
    pub readiness_probe: Probe,
    pub startup_probe: StartupProbe,
    pub control: Control,
    pub metrics: Metrics,
    pub tracing: Tracing,
    pub inbound: Block<Http2KeepAlive>,
    pub outbound: Block<Http2KeepAlive>,
    pub additional_env: Vec<Value>,
    pub experimental_env: Vec<Value>,
}

/// The chart's `proxy.image`.
fn proxy_image() -> Image {
    Image {
        name: "cr.l5d.io/linkerd/proxy".into(),
        ..Image::default()
    }
}

fn liveness_probe() -> Probe {
    Probe::new(10, 1)
}

fn readiness_probe() -> Probe {
    Probe::new(2, 1)
}

/// The chart's `proxy.inbound` and `proxy.outbound`.
pub struct Http2KeepAlive;
impl ChartDefault for Http2KeepAlive {
    fn value() -> Value {
        serde_json::json!({"server": {"http2": {"keepAliveInterval": "10s", "keepAliveTimeout": "3s"}}})
    }
}

impl Default for Proxy {
    fn default() -> Self {
        Self {
            enable_external_profiles: false,
            outbound_connect_timeout: "1000ms".into(),
            inbound_connect_timeout: "100ms".into(),
            outbound_discovery_cache_unused_timeout: "5s".into(),
            inbound_discovery_cache_unused_timeout: "90s".into(),
            disable_outbound_protocol_detect_timeout: false,
            disable_inbound_protocol_detect_timeout: false,
            image: proxy_image(),
            enable_shutdown_endpoint: false,
            log_level: "warn,linkerd=info,hickory=error".into(),
            log_format: "plain".into(),
            log_http_headers: "off".into(),
            ports: Ports::default(),
            cores: None,
            runtime: Runtime::default(),
            resources: Resources::default(),
            uid: 2102,
            gid: -1,
            security_context: Value::Object(Default::default()),
            wait_before_exit_seconds: 0,
            r#await: true,
            require_identity_on_inbound_ports: Text::Borrowed(""),
            opaque_ports: DEFAULT_OPAQUE_PORTS.into(),
            pod_inbound_ports: Text::Borrowed(""),
            shutdown_grace_period: Text::Borrowed(""),
            default_inbound_policy: "all-unauthenticated".into(),
            access_log: Text::Borrowed(""),
            native_sidecar: true,
            is_ingress: false,
            is_gateway: false,
            liveness_probe: liveness_probe(),
            readiness_probe: readiness_probe(),
            startup_probe: StartupProbe::default(),
            control: Control::default(),
            metrics: Metrics::default(),
            tracing: Tracing::default(),
            inbound: Block::default(),
            outbound: Block::default(),
            additional_env: Vec::new(),
            experimental_env: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct XtMountPath {
    pub name: Text,
    pub mount_path: Text,
}

impl Default for XtMountPath {
    fn default() -> Self {
        Self {
            name: "linkerd-proxy-init-xtables-lock".into(),
            mount_path: "/run".into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct ProxyInit {
    pub iptables_mode: Text,
    #[serde(deserialize_with = "super::scalar::string_or_number")]
    pub ignore_inbound_ports: Text,
    #[serde(deserialize_with = "super::scalar::string_or_number")]
    pub ignore_outbound_ports: Text,
    pub skip_subnets: Text,
    pub log_level: Text,
    pub log_format: Text,
    pub close_wait_timeout_secs: i64,
    pub privileged: bool,
    pub run_as_root: bool,
    pub run_as_user: i64,
    pub run_as_group: i64,
    pub xt_mount_path: XtMountPath,
}

impl Default for ProxyInit {
    fn default() -> Self {
        Self {
            iptables_mode: "nft".into(),
            ignore_inbound_ports: "4567,4568".into(),
            ignore_outbound_ports: "4567,4568".into(),
            skip_subnets: Text::Borrowed(""),
            log_level: Text::Borrowed(""),
            log_format: Text::Borrowed(""),
            close_wait_timeout_secs: 0,
            privileged: false,
            run_as_root: false,
            run_as_user: 65534,
            run_as_group: 65534,
            xt_mount_path: XtMountPath::default(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct NetworkValidator {
    pub log_level: Text,
    pub log_format: Text,
    pub connect_addr: Text,
    pub listen_addr: Text,
    pub timeout: Text,
    pub security_context: Block<NetworkValidatorSecurityContext>,
}

impl Default for NetworkValidator {
    fn default() -> Self {
        Self {
            log_level: "debug".into(),
            log_format: "plain".into(),
            connect_addr: Text::Borrowed(""),
            listen_addr: Text::Borrowed(""),
            timeout: "10s".into(),
            security_context: Block::default(),
        }
    }
}

/// The chart's `networkValidator.securityContext`.
pub struct NetworkValidatorSecurityContext;
impl ChartDefault for NetworkValidatorSecurityContext {
    fn value() -> Value {
        serde_json::json!({
            "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": true,
            "runAsGroup": 65534,
            "runAsNonRoot": true,
            "runAsUser": 65534,
            "seccompProfile": {"type": "RuntimeDefault"}
        })
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct DebugContainer {
    pub image: Image,
}

impl Default for DebugContainer {
    fn default() -> Self {
        Self {
            image: Image {
                name: "cr.l5d.io/linkerd/debug".into(),
                ..Image::default()
            },
        }
    }
}
