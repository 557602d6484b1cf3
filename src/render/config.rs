//! The effective proxy configuration of one pod: settings < namespace < pod annotations.
//!
//! Mirrors Linkerd's "overridden values": every recognised `config.linkerd.io/*` annotation
//! overrides its key in a copy of the settings, made only when one applies (most pods have
//! none). Unparsable values keep the default and
//! produce a warning naming the annotation (Linkerd only logs them); two values make Linkerd
//! fail the render and are rejected here too, with the annotation named.

use crate::annotations as ann;
use crate::parse::{duration, go, ports, quantity::Quantity};
use crate::pod;
use crate::values::settings::{Settings, Text, VersionOutsideWindow};
use crate::version::{self, Rendering};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("annotation {key}: must be \"insecure\" or \"off\", got \"{0}\"", key = ann::LOG_HTTP_HEADERS)]
    LogHttpHeaders(String),
    #[error("annotation {key}: requires proxyInit.runAsRoot: true in the policy settings", key = ann::CLOSE_WAIT_TIMEOUT)]
    CloseWaitNeedsRoot,
    #[error("linkerdVersion {0} is outside the Linkerd releases this policy renders exactly ({window}) and policy.versionOutsideWindow is reject; pin one with policy.renderVersion, or use a policy release that knows {0}", window = version::window())]
    VersionOutsideWindow(String),
}

/// Settings with the pod's overrides applied, plus what only annotations can switch on.
#[derive(Debug, Clone)]
pub struct ProxyConfig<'s> {
    /// The settings in effect, borrowed when no annotation changes them.
    pub values: Cow<'s, Settings>,
    pub debug_sidecar: bool,
    pub close_wait_secs: i64,
    /// Which release's injector renders this pod.
    pub rendering: Rendering,
    pub warnings: Vec<String>,
}

/// Inputs: the pod's own annotations, the namespace's annotations, and the pod spec (for named
/// ports). Keys a namespace does not pass down are read from the pod only.
pub struct Layers<'a> {
    pub pod: &'a BTreeMap<String, String>,
    pub namespace: &'a BTreeMap<String, String>,
    pub spec: &'a Value,
    pub labels: &'a BTreeMap<String, String>,
    /// Whether either map has a `config.` key: every annotation the render reads is one, and
    /// most pods and namespaces have none, which spares the sixty-odd lookups.
    any_config: bool,
}

impl<'a> Layers<'a> {
    pub fn new(
        pod: &'a BTreeMap<String, String>,
        namespace: &'a BTreeMap<String, String>,
        spec: &'a Value,
        labels: &'a BTreeMap<String, String>,
    ) -> Self {
        Self {
            pod,
            namespace,
            spec,
            labels,
            any_config: has_config_key(pod) || has_config_key(namespace),
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        if !self.any_config && is_config_key(key) {
            return None;
        }
        // the namespace's few annotations looked up before the list of inherited keys, which
        // a lookup of each of the sixty-odd keys the render reads would otherwise scan
        let inherited = || {
            self.namespace
                .get(key)
                .filter(|_| ann::INHERITED_FROM_NAMESPACE.contains(&key))
        };
        self.pod.get(key).or_else(inherited).map(String::as_str)
    }
}

/// `config.` keys sort together: the first at or after the prefix tells.
fn has_config_key(map: &BTreeMap<String, String>) -> bool {
    use std::ops::Bound;
    map.range::<str, _>((Bound::Included("config."), Bound::Unbounded))
        .next()
        .is_some_and(|(k, _)| is_config_key(k))
}

fn is_config_key(key: &str) -> bool {
    key.starts_with("config.")
}

impl ProxyConfig<'_> {
    /// The configuration with its settings owned.
    pub fn into_owned(self) -> ProxyConfig<'static> {
        ProxyConfig {
            values: Cow::Owned(self.values.into_owned()),
            debug_sidecar: self.debug_sidecar,
            close_wait_secs: self.close_wait_secs,
            rendering: self.rendering,
            warnings: self.warnings,
        }
    }
}

/// The settings an annotation writes to: copied on the first write.
type Values<'v, 's> = &'v mut Cow<'s, Settings>;

/// Applies the annotations to the settings, one kind of value at a time; a step's warnings
/// come in the order of the steps below, and the two render errors stop at once.
pub fn effective<'s>(
    settings: &'s Settings,
    layers: &Layers<'_>,
    ingress: bool,
) -> Result<ProxyConfig<'s>, ConfigError> {
    let mut v = Cow::Borrowed(settings);
    let mut warnings = Vec::new();
    let rendering = rendering(settings, &mut warnings)?;
    apply_strings(&mut v, layers);
    let debug_sidecar = layers
        .get(ann::ENABLE_DEBUG_SIDECAR)
        .and_then(go::parse_bool)
        .unwrap_or(false);
    apply_ports(&mut v, layers, &mut warnings);
    apply_resources(&mut v, layers, &mut warnings);
    apply_cpu_ratio(&mut v, layers, &mut warnings);
    apply_ids(&mut v, layers, &mut warnings);
    apply_log_http_headers(&mut v, layers)?;
    apply_switches(&mut v, layers, &mut warnings);
    apply_bools(&mut v, layers, &mut warnings);
    apply_timeouts(&mut v, layers, &mut warnings);
    apply_inbound_policy(&mut v, layers, &mut warnings);
    apply_native_sidecar(&mut v, layers, &mut warnings);
    apply_wait_before_exit(&mut v, layers, &mut warnings);
    let close_wait_secs = close_wait_secs(&v, layers, &mut warnings)?;
    if ingress {
        v.to_mut().proxy.is_ingress = true;
    }
    apply_additional_env(&mut v, layers, &rendering, &mut warnings);
    apply_tracing_labels(&mut v, layers);
    Ok(ProxyConfig {
        values: v,
        debug_sidecar,
        close_wait_secs,
        rendering,
        warnings,
    })
}

/// The rendering for the settings' `linkerdVersion`; a release outside the window renders as
/// the newest with a warning, or is refused when the settings say so.
fn rendering(settings: &Settings, warnings: &mut Vec<String>) -> Result<Rendering, ConfigError> {
    let r = Rendering::of(&settings.linkerd_version, settings.policy.render_version);
    if let Some(theirs) = r.outside_window() {
        if settings.policy.version_outside_window == VersionOutsideWindow::Reject {
            return Err(ConfigError::VersionOutsideWindow(theirs.to_string()));
        }
        warnings.push(format!(
            "linkerdVersion {theirs} is outside the Linkerd releases this policy renders exactly ({}); the proxy is rendered as {}'s injector renders it (policy.versionOutsideWindow: renderNewest)",
            version::window(),
            r.version
        ));
    }
    Ok(r)
}

/// Where an annotation's value goes in the settings.
type Field<T> = fn(&mut Settings) -> &mut T;
type StringField = Field<Text>;

/// The annotations whose value replaces a string setting as written: Linkerd checks none of
/// them (a bad value shows up in the rendered proxy, as with Linkerd). Each is read through
/// [`Layers::get`], which holds the layer order: the pod's value, else the namespace's for the
/// keys a namespace passes down. They are independent, so the order here is the file's only.
const STRING_ANNOTATIONS: [(&str, StringField); 14] = [
    (ann::PROXY_IMAGE, |v| &mut v.proxy.image.name),
    (ann::PROXY_VERSION_OVERRIDE, |v| &mut v.proxy.image.version),
    (ann::IMAGE_PULL_POLICY, |v| &mut v.proxy.image.pull_policy),
    (ann::DEBUG_IMAGE, |v| &mut v.debug_container.image.name),
    (ann::DEBUG_IMAGE_VERSION, |v| &mut v.debug_container.image.version),
    (ann::DEBUG_IMAGE_PULL_POLICY, |v| {
        &mut v.debug_container.image.pull_policy
    }),
    (ann::POD_INBOUND_PORTS, |v| &mut v.proxy.pod_inbound_ports),
    (ann::SKIP_INBOUND_PORTS, |v| {
        &mut v.proxy_init.ignore_inbound_ports
    }),
    (ann::SKIP_OUTBOUND_PORTS, |v| {
        &mut v.proxy_init.ignore_outbound_ports
    }),
    (ann::SKIP_SUBNETS, |v| &mut v.proxy_init.skip_subnets),
    (ann::LOG_LEVEL, |v| &mut v.proxy.log_level),
    (ann::LOG_FORMAT, |v| &mut v.proxy.log_format),
    (ann::REQUIRE_IDENTITY_PORTS, |v| {
        &mut v.proxy.require_identity_on_inbound_ports
    }),
    (ann::ACCESS_LOG, |v| &mut v.proxy.access_log),
];

fn apply_strings(v: Values<'_, '_>, layers: &Layers<'_>) {
    for (key, field) in STRING_ANNOTATIONS {
        if let Some(x) = layers.get(key) {
            *field(v.to_mut()) = x.to_string().into();
        }
    }
}

/// The warning for a value Linkerd would log and ignore.
fn invalid(warnings: &mut Vec<String>, key: &str, value: &str, expected: &str, kept: String) {
    warnings.push(format!(
        "annotation {key}: invalid value \"{value}\" ({expected}); using {kept}"
    ));
}

/// The proxy's four ports, then the opaque ports (named ports resolve against the pod spec).
fn apply_ports(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    for (key, slot) in [
        (ann::CONTROL_PORT, (|s| &mut s.proxy.ports.control) as Field<i64>),
        (ann::ADMIN_PORT, |s| &mut s.proxy.ports.admin),
        (ann::INBOUND_PORT, |s| &mut s.proxy.ports.inbound),
        (ann::OUTBOUND_PORT, |s| &mut s.proxy.ports.outbound),
    ] {
        if let Some(x) = layers.get(key) {
            let slot = slot(v.to_mut());
            match go::parse_int32(x).filter(|p| (1..=65535).contains(p)) {
                Some(p) => *slot = i64::from(p),
                None => invalid(warnings, key, x, "a port 1-65535", slot.to_string()),
            }
        }
    }
    if let Some(x) = layers.get(ann::OPAQUE_PORTS) {
        let ranges = ports::parse_opaque_ports(x, |name| pod::named_port(layers.spec, name));
        v.to_mut().proxy.opaque_ports = ports::format_port_ranges(&ranges).into();
    }
}

fn apply_resources(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    type Cores = Option<Field<Option<i64>>>;
    for (key, slot, cores) in [
        (
            ann::CPU_REQUEST,
            (|s| &mut s.proxy.resources.cpu.request) as StringField,
            Some((|s| &mut s.proxy.runtime.workers.minimum) as Field<Option<i64>>),
        ),
        (
            ann::CPU_LIMIT,
            |s| &mut s.proxy.resources.cpu.limit,
            Some(|s| &mut s.proxy.runtime.workers.maximum),
        ),
        (
            ann::MEMORY_REQUEST,
            |s| &mut s.proxy.resources.memory.request,
            None as Cores,
        ),
        (ann::MEMORY_LIMIT, |s| &mut s.proxy.resources.memory.limit, None),
        (
            ann::EPHEMERAL_REQUEST,
            |s| &mut s.proxy.resources.ephemeral_storage.request,
            None,
        ),
        (
            ann::EPHEMERAL_LIMIT,
            |s| &mut s.proxy.resources.ephemeral_storage.limit,
            None,
        ),
    ] {
        let Some(x) = layers.get(key) else { continue };
        let settings = v.to_mut();
        match Quantity::parse(x) {
            Ok(q) => {
                *slot(settings) = x.to_string().into();
                // Linkerd converts to whole cores the way Kubernetes does; quantities it cannot
                // convert leave the worker count as it was.
                if let (Some(cores), Some(n)) = (cores, q.to_whole_cpu_cores()) {
                    *cores(settings) = Some(n);
                }
            }
            Err(_) => invalid(
                warnings,
                key,
                x,
                "a Kubernetes quantity such as \"100m\" or \"64Mi\"",
                quoted(slot(settings)),
            ),
        }
    }
}

fn apply_cpu_ratio(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    let Some(x) = layers.get(ann::CPU_RATIO_LIMIT) else {
        return;
    };
    match go::parse_float(x).filter(|r| *r > 0.0 && *r < 1.0) {
        Some(r) => v.to_mut().proxy.runtime.workers.maximum_cpu_ratio = Some(r),
        None => invalid(
            warnings,
            ann::CPU_RATIO_LIMIT,
            x,
            "a number between 0 and 1, exclusive",
            "no ratio".into(),
        ),
    }
}

fn apply_ids(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    for (key, slot, min) in [
        (ann::PROXY_UID, (|s| &mut s.proxy.uid) as Field<i64>, 0),
        (ann::PROXY_GID, |s| &mut s.proxy.gid, -1),
    ] {
        if let Some(x) = layers.get(key) {
            let slot = slot(v.to_mut());
            match go::parse_int(x).filter(|n| *n >= min) {
                Some(n) => *slot = n,
                None => invalid(
                    warnings,
                    key,
                    x,
                    &format!("an integer >= {min}"),
                    slot.to_string(),
                ),
            }
        }
    }
}

/// One of the two values that make Linkerd's render fail.
fn apply_log_http_headers(v: Values<'_, '_>, layers: &Layers<'_>) -> Result<(), ConfigError> {
    if let Some(x) = layers.get(ann::LOG_HTTP_HEADERS) {
        if !matches!(x, "" | "off" | "insecure") {
            return Err(ConfigError::LogHttpHeaders(x.to_string()));
        }
        v.to_mut().proxy.log_http_headers = x.to_string().into();
    }
    Ok(())
}

/// Booleans Linkerd spells `enabled` / `disabled`.
fn apply_switches(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    for (key, slot) in [
        (
            ann::ADMIN_SHUTDOWN,
            (|s| &mut s.proxy.enable_shutdown_endpoint) as Field<bool>,
        ),
        (ann::PROXY_AWAIT, |s| &mut s.proxy.r#await),
    ] {
        let Some(x) = layers.get(key) else { continue };
        let slot = slot(v.to_mut());
        match x {
            "enabled" => *slot = true,
            "disabled" => *slot = false,
            _ => invalid(warnings, key, x, "\"enabled\" or \"disabled\"", slot.to_string()),
        }
    }
}

/// Booleans read with Go's `strconv.ParseBool`.
fn apply_bools(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    for (key, slot) in [
        (
            ann::EXTERNAL_PROFILES,
            (|s| &mut s.proxy.enable_external_profiles) as Field<bool>,
        ),
        (ann::HOSTNAME_LABELS, |s| &mut s.proxy.metrics.hostname_labels),
        (ann::DISABLE_OUTBOUND_DETECT, |s| {
            &mut s.proxy.disable_outbound_protocol_detect_timeout
        }),
        (ann::DISABLE_INBOUND_DETECT, |s| {
            &mut s.proxy.disable_inbound_protocol_detect_timeout
        }),
        (ann::ENABLE_GATEWAY, |s| &mut s.proxy.is_gateway),
    ] {
        if let Some(x) = layers.get(key) {
            set_bool(warnings, key, x, slot(v.to_mut()));
        }
    }
}

fn set_bool(warnings: &mut Vec<String>, key: &str, x: &str, slot: &mut bool) {
    match go::parse_bool(x) {
        Some(b) => *slot = b,
        None => invalid(
            warnings,
            key,
            x,
            "a boolean such as \"true\" or \"false\"",
            slot.to_string(),
        ),
    }
}

/// Go durations, stored the way Linkerd's values print them (milliseconds or seconds).
fn apply_timeouts(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    for (key, slot, format) in [
        (
            ann::OUTBOUND_CONNECT_TIMEOUT,
            (|s| &mut s.proxy.outbound_connect_timeout) as StringField,
            duration::format_millis as fn(i64) -> String,
        ),
        (
            ann::INBOUND_CONNECT_TIMEOUT,
            |s| &mut s.proxy.inbound_connect_timeout,
            duration::format_millis,
        ),
        (
            ann::OUTBOUND_DISCOVERY_TIMEOUT,
            |s| &mut s.proxy.outbound_discovery_cache_unused_timeout,
            duration::format_seconds,
        ),
        (
            ann::INBOUND_DISCOVERY_TIMEOUT,
            |s| &mut s.proxy.inbound_discovery_cache_unused_timeout,
            duration::format_seconds,
        ),
        (
            ann::SHUTDOWN_GRACE_PERIOD,
            |s| &mut s.proxy.shutdown_grace_period,
            duration::format_millis,
        ),
    ] {
        if let Some(x) = layers.get(key) {
            let slot = slot(v.to_mut());
            match duration::parse_go_duration(x) {
                Ok(nanos) => *slot = format(nanos).into(),
                Err(_) => invalid(
                    warnings,
                    key,
                    x,
                    "a duration such as \"500ms\" or \"5s\"",
                    quoted(slot),
                ),
            }
        }
    }
}

fn apply_inbound_policy(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    let Some(x) = layers.get(ann::DEFAULT_INBOUND_POLICY) else {
        return;
    };
    let p = &mut v.to_mut().proxy;
    if crate::values::settings::INBOUND_POLICIES.contains(&x) {
        p.default_inbound_policy = x.to_string().into();
    } else {
        let expected = format!("one of {}", crate::values::settings::INBOUND_POLICIES.join(", "));
        invalid(
            warnings,
            ann::DEFAULT_INBOUND_POLICY,
            x,
            &expected,
            quoted(&p.default_inbound_policy),
        );
    }
}

/// The GA key wins whenever present, then the deprecated beta and alpha keys.
fn apply_native_sidecar(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    if let Some((key, x)) = [
        ann::NATIVE_SIDECAR,
        ann::NATIVE_SIDECAR_BETA,
        ann::NATIVE_SIDECAR_ALPHA,
    ]
    .into_iter()
    .find_map(|k| layers.get(k).map(|x| (k, x)))
    {
        set_bool(warnings, key, x, &mut v.to_mut().proxy.native_sidecar);
    }
}

fn apply_wait_before_exit(v: Values<'_, '_>, layers: &Layers<'_>, warnings: &mut Vec<String>) {
    let Some(x) = layers.get(ann::WAIT_BEFORE_EXIT) else {
        return;
    };
    let slot = &mut v.to_mut().proxy.wait_before_exit_seconds;
    match go::parse_uint(x).and_then(|n| i64::try_from(n).ok()) {
        Some(n) => *slot = n,
        None => invalid(
            warnings,
            ann::WAIT_BEFORE_EXIT,
            x,
            "a whole number of seconds",
            slot.to_string(),
        ),
    }
}

/// proxy-init's close-wait timeout: the other value that makes Linkerd's render fail.
fn close_wait_secs(
    v: &Settings,
    layers: &Layers<'_>,
    warnings: &mut Vec<String>,
) -> Result<i64, ConfigError> {
    let secs = v.proxy_init.close_wait_timeout_secs;
    let Some(x) = layers.get(ann::CLOSE_WAIT_TIMEOUT) else {
        return Ok(secs);
    };
    match duration::parse_go_duration(x) {
        Ok(nanos) if !v.proxy_init.run_as_root && nanos != 0 => Err(ConfigError::CloseWaitNeedsRoot),
        Ok(nanos) => Ok(nanos / 1_000_000_000),
        Err(_) => {
            invalid(
                warnings,
                ann::CLOSE_WAIT_TIMEOUT,
                x,
                "a duration such as \"60s\"",
                secs.to_string(),
            );
            Ok(secs)
        }
    }
}

/// `config.linkerd.io/proxy-additional-env`: the namespace's list, then the pod's, merged by
/// name into the settings' list (the only annotation both layers contribute to); releases
/// whose injector does not read it ignore it.
fn apply_additional_env(
    v: Values<'_, '_>,
    layers: &Layers<'_>,
    rendering: &Rendering,
    warnings: &mut Vec<String>,
) {
    if !rendering.version.reads_additional_env_annotation() {
        return;
    }
    for (layer, source) in [
        (layers.namespace.get(ann::ADDITIONAL_ENV), "namespace"),
        (layers.pod.get(ann::ADDITIONAL_ENV), "pod"),
    ] {
        let Some(raw) = layer else { continue };
        match parse_env_list(raw) {
            Some(list) => merge_env(&mut v.to_mut().proxy.additional_env, list),
            None => warnings.push(format!(
                "annotation {} on the {source}: not a JSON array of EnvVar objects with a name; ignored",
                ann::ADDITIONAL_ENV
            )),
        }
    }
}

/// With tracing on: the pod's `resource.opentelemetry.io/*` annotations and its service name.
fn apply_tracing_labels(v: Values<'_, '_>, layers: &Layers<'_>) {
    if !v.proxy.tracing.enabled {
        return;
    }
    let tracing = &mut v.to_mut().proxy.tracing;
    for (k, val) in layers.pod {
        if let Some(label) = k.strip_prefix("resource.opentelemetry.io/") {
            tracing
                .labels
                .insert(label.to_string().into(), val.clone().into());
        }
    }
    if let Some(name) = layers
        .labels
        .get("app.kubernetes.io/instance")
        .or_else(|| layers.labels.get("app.kubernetes.io/name"))
    {
        tracing.labels.insert("service.name".into(), name.clone().into());
    }
}

fn quoted(s: &str) -> String {
    format!("\"{s}\"")
}

fn parse_env_list(raw: &str) -> Option<Vec<Value>> {
    let list: Vec<Value> = serde_json::from_str(raw).ok()?;
    list.iter()
        .all(|e| e.get("name").and_then(Value::as_str).is_some())
        .then_some(list)
}

/// Later layers replace entries of the same name in place; new names are appended.
fn merge_env(base: &mut Vec<Value>, layer: Vec<Value>) {
    for entry in layer {
        let name = entry.get("name").cloned();
        match base.iter_mut().find(|e| e.get("name") == name.as_ref()) {
            Some(slot) => *slot = entry,
            None => base.push(entry),
        }
    }
}
