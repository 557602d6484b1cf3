//! `injector-host run`: one request through a policy, the AdmissionResponse as one JSON line,
//! with `kwctl run`'s flags (cluster state or a replay session, recording, the context-aware
//! allow-list, host capabilities, raw requests).
//!
//! Two steps, [`prepare`] and [`Prepared::evaluate`], each handing back its stderr lines: the
//! allow-list warnings come before the evaluation, whose policy log records go to stderr as the
//! policy writes them, so the command line prints them in between, in kwctl's order.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde_json::Value;

use super::common::{
    CommandError, CommonArgs, Output, engine_config, fault_plan, log_sink, metadata, read_settings,
};
use kubewarden_engine::hostcalls::capabilities::HostCapabilities;
use kubewarden_engine::hostcalls::cluster::ClusterState;
use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::hostcalls::replay::ReplaySession;
use kubewarden_engine::protocol::metadata::{ContextAwareResource, Metadata};
use kubewarden_engine::protocol::request::{AdmissionRequest, PolicySettings};
use kubewarden_engine::protocol::response::SettingsRejected;
use kubewarden_engine::runtime::callback::HostContext;
use kubewarden_engine::runtime::engine::{Engine, Policy};

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

/// kwctl's words when `--allow-context-aware` finds no metadata.
const NOT_ANNOTATED: &str = "Policy is not annotated, access to Kubernetes resources is not allowed";
/// kwctl's words when a policy declares resources but `--allow-context-aware` is not given.
const ACCESS_DENIED: [&str; 2] = [
    "Policy requires access to Kubernetes resources at evaluation time. During this execution the access to Kubernetes resources is denied. This can cause the policy to not behave properly",
    "Carefully review which types of Kubernetes resources the policy needs via the `inspect` command, then run the policy using the `--allow-context-aware` flag.",
];

/// A `run` read and loaded, ready to evaluate.
pub struct Prepared<'a> {
    args: &'a RunArgs,
    /// Kept alive for its epoch ticker: the policy's deadline counts on it.
    _engine: Engine,
    policy: Policy,
    settings: PolicySettings,
    document: Value,
    request: Option<AdmissionRequest>,
    faults: FaultPlan,
    capabilities: HostCapabilities,
    allow_list: BTreeSet<ContextAwareResource>,
    /// The allow-list warnings, for stderr before the evaluation.
    pub warnings: Vec<String>,
}

/// `injector-host run`, first step: reads the flags, the settings and the request, loads the
/// module and decides which resources it may look up.
pub fn prepare(args: &RunArgs) -> Result<Prepared<'_>, CommandError> {
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
    let (allow_list, warnings) = allow_list(args.allow_context_aware, md.as_ref());
    Ok(Prepared {
        args,
        _engine: engine,
        policy,
        settings,
        document,
        request,
        faults,
        capabilities,
        allow_list,
        warnings,
    })
}

/// The resources granted, and kwctl's warnings about them: the declared ones with
/// `--allow-context-aware`, none without.
fn allow_list(
    allow_context_aware: bool,
    md: Option<&Metadata>,
) -> (BTreeSet<ContextAwareResource>, Vec<String>) {
    let declared: BTreeSet<ContextAwareResource> =
        md.map(|m| m.context_aware_resources.clone()).unwrap_or_default();
    let mut warnings = Vec::new();
    if allow_context_aware {
        if md.is_none() {
            warnings.push(NOT_ANNOTATED.to_owned());
        }
        (declared, warnings)
    } else {
        if !declared.is_empty() {
            warnings.extend(ACCESS_DENIED.map(str::to_owned));
        }
        (BTreeSet::new(), warnings)
    }
}

impl Prepared<'_> {
    /// `injector-host run`, second step: validates the settings and the request; the JSON line
    /// for stdout and, for stderr, the replay's leftovers and the `--print-stats` counters.
    pub fn evaluate(self) -> Result<Output, CommandError> {
        let (args, settings) = (self.args, &self.settings);
        let lookups = lookups(args, self.faults)?;
        let host = Arc::new(
            HostContext::new(
                self.policy.name(),
                self.allow_list,
                lookups,
                log_sink(&args.common),
            )
            .with_capabilities(self.capabilities),
        );
        let mut instance = self.policy.instantiate(&host)?;
        SettingsRejected::check(instance.validate_settings(settings))
            .map_err(CommandError::InvalidSettings)?;
        let response = match &self.request {
            Some(request) => instance.validate(request, settings)?,
            None => instance.validate_raw(&self.document, settings)?,
        };
        if let Some(path) = &args.record_host_capabilities_interactions {
            write_session(path, &host)?;
        }
        let stdout = to_json(&response)?;
        let mut stderr = Vec::new();
        if let LookupSource::Replay(session) = host.lookups().source() {
            let left = session.leftovers();
            if left > 0 {
                stderr.push(format!(
                    "WARN Some of the recorded exchanges have not been replayed: {left} left"
                ));
            }
        }
        if args.common.print_stats {
            stderr.push(to_json(&host.stats())?);
        }
        Ok(Output {
            stdout,
            stderr,
            failure: None,
        })
    }
}

/// Where lookups are answered from: the replayed session, or the cluster state (with the
/// faults); recording every exchange when a session is to be written.
fn lookups(args: &RunArgs, faults: FaultPlan) -> Result<Lookups, CommandError> {
    let source = if let Some(replay) = &args.replay_host_capabilities_interactions {
        LookupSource::Replay(ReplaySession::from_file(replay)?)
    } else {
        let state = match &args.context {
            Some(path) => ClusterState::from_file(path)?,
            None => ClusterState::new(),
        };
        LookupSource::Cluster(ClusterLookup::new(state, faults))
    };
    Ok(match args.record_host_capabilities_interactions {
        Some(_) => Lookups::new(source).recording(),
        None => Lookups::new(source),
    })
}

fn to_json(value: &impl serde::Serialize) -> Result<String, CommandError> {
    serde_json::to_string(value).map_err(|e| CommandError::Output(e.to_string()))
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

/// Writes the recorded exchanges as a kwctl replay session.
fn write_session(path: &Path, host: &HostContext) -> Result<(), CommandError> {
    let text = ReplaySession::to_yaml(&host.lookups().recorded())
        .map_err(|e| CommandError::Output(e.to_string()))?;
    std::fs::write(path, text).map_err(|source| CommandError::File {
        what: "cannot write the session file",
        path: path.display().to_string(),
        source,
    })
}
