//! Annotation and label keys Linkerd reads and writes, and which ones a namespace passes down.
#![forbid(unsafe_code)]

pub const INJECT: &str = "linkerd.io/inject";
pub const CREATED_BY: &str = "linkerd.io/created-by";
pub const PROXY_VERSION: &str = "linkerd.io/proxy-version";
pub const TRUST_ROOT_SHA256: &str = "linkerd.io/trust-root-sha256";
/// Written by this policy when a pod asked for a proxy but did not get one (Linkerd #3253).
pub const SKIP_REASONS: &str = "linkerd.io/injection-skipped";

pub const CONTROL_PLANE_NS_LABEL: &str = "linkerd.io/control-plane-ns";
pub const WORKLOAD_NS_LABEL: &str = "linkerd.io/workload-ns";

pub const PROXY_IMAGE: &str = "config.linkerd.io/proxy-image";
pub const PROXY_VERSION_OVERRIDE: &str = "config.linkerd.io/proxy-version";
pub const IMAGE_PULL_POLICY: &str = "config.linkerd.io/image-pull-policy";
pub const DEBUG_IMAGE: &str = "config.linkerd.io/debug-image";
pub const DEBUG_IMAGE_VERSION: &str = "config.linkerd.io/debug-image-version";
pub const DEBUG_IMAGE_PULL_POLICY: &str = "config.linkerd.io/debug-image-pull-policy";
pub const ENABLE_DEBUG_SIDECAR: &str = "config.linkerd.io/enable-debug-sidecar";
pub const CONTROL_PORT: &str = "config.linkerd.io/control-port";
pub const ADMIN_PORT: &str = "config.linkerd.io/admin-port";
pub const INBOUND_PORT: &str = "config.linkerd.io/inbound-port";
pub const OUTBOUND_PORT: &str = "config.linkerd.io/outbound-port";
pub const POD_INBOUND_PORTS: &str = "config.linkerd.io/pod-inbound-ports";
pub const SKIP_INBOUND_PORTS: &str = "config.linkerd.io/skip-inbound-ports";
pub const SKIP_OUTBOUND_PORTS: &str = "config.linkerd.io/skip-outbound-ports";
pub const SKIP_SUBNETS: &str = "config.linkerd.io/skip-subnets";
pub const OPAQUE_PORTS: &str = "config.linkerd.io/opaque-ports";
pub const CPU_REQUEST: &str = "config.linkerd.io/proxy-cpu-request";
pub const CPU_LIMIT: &str = "config.linkerd.io/proxy-cpu-limit";
pub const CPU_RATIO_LIMIT: &str = "config.linkerd.io/proxy-cpu-ratio-limit";
pub const MEMORY_REQUEST: &str = "config.linkerd.io/proxy-memory-request";
pub const MEMORY_LIMIT: &str = "config.linkerd.io/proxy-memory-limit";
pub const EPHEMERAL_REQUEST: &str = "config.linkerd.io/proxy-ephemeral-storage-request";
pub const EPHEMERAL_LIMIT: &str = "config.linkerd.io/proxy-ephemeral-storage-limit";
pub const PROXY_UID: &str = "config.linkerd.io/proxy-uid";
pub const PROXY_GID: &str = "config.linkerd.io/proxy-gid";
pub const LOG_LEVEL: &str = "config.linkerd.io/proxy-log-level";
pub const LOG_FORMAT: &str = "config.linkerd.io/proxy-log-format";
pub const LOG_HTTP_HEADERS: &str = "config.linkerd.io/proxy-log-http-headers";
pub const ADMIN_SHUTDOWN: &str = "config.linkerd.io/proxy-admin-shutdown";
pub const EXTERNAL_PROFILES: &str = "config.linkerd.io/enable-external-profiles";
pub const REQUIRE_IDENTITY_PORTS: &str = "config.linkerd.io/proxy-require-identity-inbound-ports";
pub const HOSTNAME_LABELS: &str = "config.linkerd.io/proxy-metrics-hostname-labels";
pub const OUTBOUND_CONNECT_TIMEOUT: &str = "config.linkerd.io/proxy-outbound-connect-timeout";
pub const INBOUND_CONNECT_TIMEOUT: &str = "config.linkerd.io/proxy-inbound-connect-timeout";
pub const OUTBOUND_DISCOVERY_TIMEOUT: &str =
    "config.linkerd.io/proxy-outbound-discovery-cache-unused-timeout";
pub const INBOUND_DISCOVERY_TIMEOUT: &str = "config.linkerd.io/proxy-inbound-discovery-cache-unused-timeout";
pub const DISABLE_OUTBOUND_DETECT: &str = "config.linkerd.io/proxy-disable-outbound-protocol-detect-timeout";
pub const DISABLE_INBOUND_DETECT: &str = "config.linkerd.io/proxy-disable-inbound-protocol-detect-timeout";
pub const SHUTDOWN_GRACE_PERIOD: &str = "config.linkerd.io/shutdown-grace-period";
pub const PROXY_AWAIT: &str = "config.linkerd.io/proxy-await";
pub const DEFAULT_INBOUND_POLICY: &str = "config.linkerd.io/default-inbound-policy";
pub const ACCESS_LOG: &str = "config.linkerd.io/access-log";
pub const ENABLE_GATEWAY: &str = "config.linkerd.io/enable-gateway";
pub const NATIVE_SIDECAR: &str = "config.linkerd.io/proxy-enable-native-sidecar";
pub const NATIVE_SIDECAR_BETA: &str = "config.beta.linkerd.io/proxy-enable-native-sidecar";
pub const NATIVE_SIDECAR_ALPHA: &str = "config.alpha.linkerd.io/proxy-enable-native-sidecar";
pub const WAIT_BEFORE_EXIT: &str = "config.alpha.linkerd.io/proxy-wait-before-exit-seconds";
pub const CLOSE_WAIT_TIMEOUT: &str = "config.linkerd.io/close-wait-timeout";
pub const ADDITIONAL_ENV: &str = "config.linkerd.io/proxy-additional-env";

/// Keys a pod inherits from its namespace (written onto the pod when it lacks them).
/// Sorted (`inherited_keys_are_sorted_and_unique`): a namespace's keys are looked up in it by
/// binary search.
pub const INHERITED_FROM_NAMESPACE: &[&str] = &[
    NATIVE_SIDECAR_ALPHA,
    WAIT_BEFORE_EXIT,
    ACCESS_LOG,
    ADMIN_PORT,
    CONTROL_PORT,
    DEFAULT_INBOUND_POLICY,
    ENABLE_DEBUG_SIDECAR,
    EXTERNAL_PROFILES,
    IMAGE_PULL_POLICY,
    INBOUND_PORT,
    OPAQUE_PORTS,
    OUTBOUND_PORT,
    POD_INBOUND_PORTS,
    ADDITIONAL_ENV,
    ADMIN_SHUTDOWN,
    PROXY_AWAIT,
    CPU_LIMIT,
    CPU_REQUEST,
    DISABLE_INBOUND_DETECT,
    DISABLE_OUTBOUND_DETECT,
    NATIVE_SIDECAR,
    EPHEMERAL_LIMIT,
    EPHEMERAL_REQUEST,
    PROXY_GID,
    PROXY_IMAGE,
    INBOUND_CONNECT_TIMEOUT,
    INBOUND_DISCOVERY_TIMEOUT,
    LOG_FORMAT,
    LOG_HTTP_HEADERS,
    LOG_LEVEL,
    MEMORY_LIMIT,
    MEMORY_REQUEST,
    HOSTNAME_LABELS,
    OUTBOUND_CONNECT_TIMEOUT,
    OUTBOUND_DISCOVERY_TIMEOUT,
    REQUIRE_IDENTITY_PORTS,
    PROXY_UID,
    PROXY_VERSION_OVERRIDE,
    SHUTDOWN_GRACE_PERIOD,
    SKIP_INBOUND_PORTS,
    SKIP_OUTBOUND_PORTS,
    SKIP_SUBNETS,
    INJECT,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inherited_keys_are_sorted_and_unique() {
        let mut sorted = INHERITED_FROM_NAMESPACE.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, INHERITED_FROM_NAMESPACE);
    }

    #[test]
    fn pod_only_keys_are_not_inherited() {
        for key in [
            CPU_RATIO_LIMIT,
            ENABLE_GATEWAY,
            NATIVE_SIDECAR_BETA,
            CLOSE_WAIT_TIMEOUT,
            DEBUG_IMAGE,
            DEBUG_IMAGE_VERSION,
            DEBUG_IMAGE_PULL_POLICY,
        ] {
            assert!(!INHERITED_FROM_NAMESPACE.contains(&key), "{key}");
        }
    }
}
