//! What every command of `injector-host` shares: the settings, metadata, lookup and deadline
//! flags ([`CommonArgs`]) and their reading, the error of the generic commands
//! ([`CommandError`]) and what a command hands the command line to print ([`Output`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde_json::Value;
use thiserror::Error;

use crate::commands::annotate::AnnotateError;
use kubewarden_engine::hostcalls::capabilities::CapabilityError;
use kubewarden_engine::hostcalls::cluster::ClusterStateError;
use kubewarden_engine::hostcalls::fault::{FaultParseError, FaultPlan, FaultRule};
use kubewarden_engine::hostcalls::replay::ReplayError;
use kubewarden_engine::protocol::metadata::{Metadata, MetadataError};
use kubewarden_engine::protocol::request::{PolicySettings, RequestError};
use kubewarden_engine::protocol::response::SettingsRejected;
use kubewarden_engine::runtime::callback::LogSink;
use kubewarden_engine::runtime::engine::{EngineConfig, EngineError, Policy};

#[derive(Debug, Error)]
pub enum CommandError {
    #[error("Cannot open settings file {path}: {source}")]
    OpenSettings {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("Cannot parse settings file {path}: {source}")]
    ParseSettings {
        path: String,
        #[source]
        source: serde_yaml_ng::Error,
    },
    #[error("Cannot parse settings JSON: {0}")]
    ParseSettingsJson(#[source] serde_json::Error),
    #[error("cannot open request file {path}: {source}")]
    OpenRequest {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse request file {path}: {source}")]
    ParseRequest {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    #[error(transparent)]
    Context(#[from] ClusterStateError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Fault(#[from] FaultParseError),
    #[error(transparent)]
    Annotate(#[from] AnnotateError),
    #[error("{what} {path}: {source}")]
    File {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    InvalidSettings(#[from] SettingsRejected),
    #[error("cannot write the output: {0}")]
    Output(String),
    #[error(transparent)]
    Capabilities(#[from] CapabilityError),
    #[error(
        "execution mode `{0}` is not supported: injector-host runs Kubewarden waPC policies (`kubewarden`) only"
    )]
    ExecutionMode(String),
}

/// PolicySettings, metadata and lookup options shared by both commands.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// YAML or JSON file with the policy settings
    #[arg(long, conflicts_with = "settings_json")]
    pub settings_path: Option<PathBuf>,
    /// Policy settings as a JSON string
    #[arg(long)]
    pub settings_json: Option<String>,
    /// Policy metadata file (e.g. policy.yaml) to read contextAwareResources from, instead of the
    /// module's `io.kubewarden.metadata` section
    #[arg(long)]
    pub metadata_path: Option<PathBuf>,
    /// Add latency to every lookup that reaches the cluster state (not cache hits)
    #[arg(long, value_name = "MILLIS", default_value_t = 0)]
    pub lookup_latency_ms: u64,
    /// Fault rule TARGET=EFFECT, e.g. `ReplicaSet=error`, `Namespace/emojivoto=notfound`,
    /// `Job=malformed`, `ConfigMap=not-utf8`, `ReplicaSet=latency:200`, `ReplicaSet=fail-first:1`
    /// (repeatable)
    #[arg(long = "fault", value_name = "RULE")]
    pub faults: Vec<String>,
    /// Evaluation deadline in seconds, like policy-server's --policy-timeout
    #[arg(long, value_name = "SECONDS")]
    pub policy_timeout: Option<f64>,
    /// Print the lookup counters to stderr as JSON after the evaluation(s)
    #[arg(long)]
    pub print_stats: bool,
    /// Drop the guest's log records instead of printing them on stderr
    #[arg(long)]
    pub quiet_policy_logs: bool,
}

pub(crate) fn read_settings(common: &CommonArgs) -> Result<PolicySettings, CommandError> {
    settings_from(common.settings_path.as_deref(), common.settings_json.as_deref())
}

pub(crate) fn settings_from(
    settings_path: Option<&Path>,
    settings_json: Option<&str>,
) -> Result<PolicySettings, CommandError> {
    if let Some(path) = settings_path {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| CommandError::OpenSettings {
            path: p.clone(),
            source,
        })?;
        let value: Value = serde_yaml_ng::from_str(&text)
            .map_err(|source| CommandError::ParseSettings { path: p, source })?;
        Ok(PolicySettings::from_value(&value)?)
    } else if let Some(json) = settings_json {
        let value: Value = serde_json::from_str(json).map_err(CommandError::ParseSettingsJson)?;
        Ok(PolicySettings::from_value(&value)?)
    } else {
        Ok(PolicySettings::default())
    }
}

/// The settings given as a whole Kubewarden policy manifest (`ClusterAdmissionPolicy` /
/// `AdmissionPolicy`) are its `spec.settings`, so `inject` can use the deployed policy's file.
pub(crate) fn policy_settings(settings: PolicySettings) -> Result<PolicySettings, CommandError> {
    let map = &settings.0;
    let is_policy = map.get("apiVersion").and_then(Value::as_str) == Some("policies.kubewarden.io/v1")
        && matches!(
            map.get("kind").and_then(Value::as_str),
            Some("ClusterAdmissionPolicy" | "AdmissionPolicy")
        );
    if !is_policy {
        return Ok(settings);
    }
    let inner = map
        .get("spec")
        .and_then(|s| s.get("settings"))
        .cloned()
        .unwrap_or(Value::Null);
    Ok(PolicySettings::from_value(&inner)?)
}

pub(crate) fn fault_plan(common: &CommonArgs) -> Result<FaultPlan, CommandError> {
    let mut plan = FaultPlan::new().with_latency(Duration::from_millis(common.lookup_latency_ms));
    for rule in &common.faults {
        plan = plan.with_rule(FaultRule::parse(rule)?);
    }
    Ok(plan)
}

pub(crate) fn metadata(
    common: &CommonArgs,
    policy: &Policy,
    fallback: Option<&Path>,
) -> Result<Option<Metadata>, CommandError> {
    if let Some(path) = &common.metadata_path {
        return Ok(Some(Metadata::from_file(path)?));
    }
    if let Some(md) = policy.embedded_metadata() {
        return Ok(Some(md.clone()));
    }
    match fallback {
        Some(p) if p.exists() => Ok(Some(Metadata::from_file(p)?)),
        _ => Ok(None),
    }
}

pub(crate) fn engine_config(common: &CommonArgs, default: Option<Duration>) -> EngineConfig {
    let deadline = common
        .policy_timeout
        .map(Duration::from_secs_f64)
        .or(default)
        .filter(|d| !d.is_zero());
    EngineConfig {
        deadline,
        epoch_tick: Duration::from_secs(1),
        max_memory: None,
    }
}

pub(crate) fn log_sink(common: &CommonArgs) -> LogSink {
    if common.quiet_policy_logs {
        LogSink::Discard
    } else {
        LogSink::Stderr
    }
}

/// What a command printed, and whether it failed after printing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// What goes to stdout.
    pub stdout: String,
    /// Lines for stderr, in order, which the command line prints before stdout: warnings, and
    /// the lookup counters of `run --print-stats`. The commands print nothing themselves, so
    /// that what they say can be tested and the command line alone owns the streams.
    pub stderr: Vec<String>,
    /// Set when the command ran to the end but its outcome is a failure (the exit status is
    /// then 1 and this is printed on stderr): a rollout with rejected or failed admissions.
    pub failure: Option<String>,
}

impl From<String> for Output {
    fn from(stdout: String) -> Self {
        Self {
            stdout,
            ..Self::default()
        }
    }
}
