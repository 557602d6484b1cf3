//! The generic commands of `injector-host`, any Kubewarden policy's: `run` (flags follow
//! `kwctl run`) and `annotate`; and the flags and helpers every command shares (settings,
//! metadata, faults, engine limits). What kwctl does for every Kubewarden user (push, pull,
//! `scaffold artifacthub`) is left to kwctl.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde_json::Value;
use thiserror::Error;

use crate::commands::annotate::AnnotateError;
use crate::hostcalls::capabilities::{CapabilityError, HostCapabilities};
use crate::hostcalls::cluster::{ClusterState, ClusterStateError};
use crate::hostcalls::fault::{FaultParseError, FaultPlan, FaultRule};
use crate::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use crate::hostcalls::replay::{ReplayError, ReplaySession};
use crate::protocol::metadata::{ContextAwareResource, MetadataError, PolicyMetadata};
use crate::protocol::request::{AdmissionRequest, PolicySettings, RequestError};
use crate::runtime::callback::{HostContext, LogSink};
use crate::runtime::engine::{Engine, EngineConfig, EngineError, Policy};

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
    #[error("Provided settings are not valid: {0}")]
    InvalidSettings(String),
    #[error("cannot write the output: {0}")]
    Output(String),
    #[error(transparent)]
    Capabilities(#[from] CapabilityError),
    #[error(
        "execution mode `{0}` is not supported: injector-host runs Kubewarden waPC policies (`kubewarden`) only"
    )]
    ExecutionMode(String),
}

#[derive(Debug, Args)]
pub struct AnnotateArgs {
    /// Policy metadata YAML (policy.yaml / metadata.yml)
    #[arg(short = 'm', long)]
    pub metadata_path: PathBuf,
    /// Usage text embedded as io.kubewarden.policy.usage (e.g. README.md)
    #[arg(short = 'u', long)]
    pub usage_path: Option<PathBuf>,
    /// Where to write the annotated module
    #[arg(short = 'o', long)]
    pub output_path: PathBuf,
    /// The policy module (.wasm)
    pub module: PathBuf,
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
    /// `Job=malformed`, `ReplicaSet=latency:200`, `ReplicaSet=fail-first:1` (repeatable)
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

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// AdmissionReview or AdmissionRequest JSON file (`-` for stdin)
    #[arg(short = 'r', long)]
    pub request_path: String,
    /// Cluster state: YAML/JSON Kubernetes objects (several documents or a List)
    #[arg(long, conflicts_with = "replay_host_capabilities_interactions")]
    pub context: Option<PathBuf>,
    /// Replay a kwctl host-capabilities session instead of a cluster state
    #[arg(long)]
    pub replay_host_capabilities_interactions: Option<PathBuf>,
    /// Write every host-capability exchange to FILE as a kwctl replay session
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "replay_host_capabilities_interactions"
    )]
    pub record_host_capabilities_interactions: Option<PathBuf>,
    /// Grant the Kubernetes resources the policy metadata declares
    #[arg(long)]
    pub allow_context_aware: bool,
    /// Host capabilities the policy may call: `*`, a prefix like `kubernetes/*`, or exact paths
    #[arg(long, num_args = 0.., default_values = ["*"])]
    pub allowed_host_capabilities: Vec<String>,
    /// Validate a raw request: the document is sent as is, not as an AdmissionRequest
    #[arg(long)]
    pub raw: bool,
    /// The runtime to use; this host runs `kubewarden` (waPC) policies only
    #[arg(short = 'e', long, value_parser = ["opa", "gatekeeper", "kubewarden", "wasi"])]
    pub execution_mode: Option<String>,
    /// The policy module: a path or `file://PATH` (`kwctl pull` fetches one from a registry)
    pub module: String,
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

/// The request file as JSON (`-` is stdin).
fn read_document(path: &str) -> Result<Value, CommandError> {
    let text = if path == "-" {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .map_err(|source| CommandError::OpenRequest {
                path: path.into(),
                source,
            })?;
        buf
    } else {
        std::fs::read_to_string(path).map_err(|source| CommandError::OpenRequest {
            path: path.into(),
            source,
        })?
    };
    serde_json::from_str(&text).map_err(|source| CommandError::ParseRequest {
        path: path.into(),
        source,
    })
}

/// Loads a module from a path or a `file://` URI.
fn load_module(engine: &Engine, module: &str) -> Result<Policy, CommandError> {
    let path = module.strip_prefix("file://").unwrap_or(module);
    Ok(engine.load_policy_file(Path::new(path))?)
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
) -> Result<Option<PolicyMetadata>, CommandError> {
    if let Some(path) = &common.metadata_path {
        return Ok(Some(PolicyMetadata::from_file(path)?));
    }
    if let Some(md) = policy.embedded_metadata() {
        return Ok(Some(md.clone()));
    }
    match fallback {
        Some(p) if p.exists() => Ok(Some(PolicyMetadata::from_file(p)?)),
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

/// `injector-host run`: returns the JSON line to print.
pub fn run(args: &RunArgs) -> Result<String, CommandError> {
    if let Some(mode) = args.execution_mode.as_deref().filter(|m| *m != "kubewarden") {
        return Err(CommandError::ExecutionMode(mode.to_owned()));
    }
    let capabilities = HostCapabilities::new(&args.allowed_host_capabilities)?;
    let settings = read_settings(&args.common)?;
    let document = read_document(&args.request_path)?;
    let request = if args.raw {
        None
    } else {
        Some(AdmissionRequest::from_document(&document)?)
    };
    let faults = fault_plan(&args.common)?;
    let engine = Engine::new(engine_config(&args.common, None))?;
    let policy = load_module(&engine, &args.module)?;
    let md = metadata(&args.common, &policy, None)?;
    let declared: BTreeSet<ContextAwareResource> = md
        .as_ref()
        .map(|m| m.context_aware_resources.clone())
        .unwrap_or_default();
    let allow_list = if args.allow_context_aware {
        if md.is_none() {
            eprintln!("Policy is not annotated, access to Kubernetes resources is not allowed");
        }
        declared
    } else {
        if !declared.is_empty() {
            eprintln!(
                "Policy requires access to Kubernetes resources at evaluation time. During this execution the access to Kubernetes resources is denied. This can cause the policy to not behave properly"
            );
            eprintln!(
                "Carefully review which types of Kubernetes resources the policy needs via the `inspect` command, then run the policy using the `--allow-context-aware` flag."
            );
        }
        BTreeSet::new()
    };
    let source = if let Some(replay) = &args.replay_host_capabilities_interactions {
        LookupSource::Replay(ReplaySession::from_file(replay)?)
    } else {
        let state = match &args.context {
            Some(path) => ClusterState::from_file(path)?,
            None => ClusterState::new(),
        };
        LookupSource::Cluster(ClusterLookup::new(state, faults))
    };
    let lookups = match args.record_host_capabilities_interactions {
        Some(_) => Lookups::new(source).recording(),
        None => Lookups::new(source),
    };
    let host = Arc::new(
        HostContext::new(policy.name(), allow_list, lookups, log_sink(&args.common))
            .with_capabilities(capabilities),
    );
    let mut instance = policy.instantiate(&host)?;
    instance
        .validate_settings(&settings)
        .into_result()
        .map_err(CommandError::InvalidSettings)?;
    let response = match &request {
        Some(request) => instance.validate(request, &settings)?,
        None => instance.validate_raw(&document, &settings)?,
    };
    if let Some(path) = &args.record_host_capabilities_interactions {
        write_session(path, &host)?;
    }
    if let LookupSource::Replay(session) = host.lookups().source() {
        let left = session.leftovers();
        if left > 0 {
            eprintln!("WARN Some of the recorded exchanges have not been replayed: {left} left");
        }
    }
    if args.common.print_stats {
        eprintln!(
            "{}",
            serde_json::to_string(&host.stats()).map_err(|e| CommandError::Output(e.to_string()))?
        );
    }
    serde_json::to_string(&response).map_err(|e| CommandError::Output(e.to_string()))
}

/// Writes the recorded exchanges as a kwctl replay session.
fn write_session(path: &Path, host: &HostContext) -> Result<(), CommandError> {
    let text = crate::hostcalls::replay::ReplaySession::to_yaml(&host.lookups().recorded())
        .map_err(|e| CommandError::Output(e.to_string()))?;
    std::fs::write(path, text).map_err(|source| CommandError::File {
        what: "cannot write the session file",
        path: path.display().to_string(),
        source,
    })
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

/// `injector-host annotate`: writes the annotated module, prints warnings on stderr.
pub fn annotate(args: &AnnotateArgs) -> Result<String, CommandError> {
    let read = |what: &'static str, path: &Path| {
        std::fs::read(path).map_err(|source| CommandError::File {
            what,
            path: path.display().to_string(),
            source,
        })
    };
    let module = read("Error reading wasm file", &args.module)?;
    let metadata =
        String::from_utf8_lossy(&read("Error opening metadata file", &args.metadata_path)?).into_owned();
    let usage = match &args.usage_path {
        Some(p) => Some(String::from_utf8_lossy(&read("Error reading usage file", p)?).into_owned()),
        None => None,
    };
    let annotated = crate::commands::annotate::annotate(&module, &metadata, usage.as_deref())?;
    for w in &annotated.warnings {
        eprintln!("WARN {w}");
    }
    std::fs::write(&args.output_path, &annotated.module).map_err(|source| CommandError::File {
        what: "cannot write",
        path: args.output_path.display().to_string(),
        source,
    })?;
    Ok(String::new())
}

/// What a command printed, and whether it failed after printing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// What goes to stdout.
    pub stdout: String,
    /// Set when the command ran to the end but its outcome is a failure (the exit status is
    /// then 1 and this is printed on stderr): a rollout with rejected or failed admissions.
    pub failure: Option<String>,
}

impl From<String> for Output {
    fn from(stdout: String) -> Self {
        Self {
            stdout,
            failure: None,
        }
    }
}
