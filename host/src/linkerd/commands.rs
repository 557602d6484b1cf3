//! The Linkerd commands of `injector-host` (`rollout`, `inject`): their flags (on top of the
//! shared ones of [`crate::commands::common`]), and their work done by [`super::rollout`] and
//! [`super::inject`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use linkerd_injector_policy::settings::ValuesSource;
use serde_json::{Value, json};

use super::inject::{InjectError, InjectOptions, Injector, read_inputs};
use super::rollout::{
    RolloutError, RolloutOptions, RolloutReport, Workload, default_control_plane, run_rollout,
};
use crate::commands::common::{
    CommandError, CommonArgs, Output, engine_config, fault_plan, log_sink, metadata, policy_settings,
    read_settings, settings_from,
};
use kubewarden_engine::hostcalls::cluster::{ClusterState, ClusterStateError};
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::protocol::metadata::Metadata;
use kubewarden_engine::protocol::request::PolicySettings;
use kubewarden_engine::runtime::callback::HostContext;
use kubewarden_engine::runtime::engine::{Engine, EngineConfig, Policy};

/// What `inject --ignore-cluster` says on stderr before the report: where Linkerd's values came
/// from. The trust anchors are not named: as without a context, they come from the settings
/// (`identityTrustAnchorsPEM`) or the module rejects the workload; no bundle is made up.
pub const IGNORE_CLUSTER_NOTE: &str =
    "inject: values from the settings alone (--ignore-cluster): linkerd-config not read";

#[derive(Debug, Args)]
pub struct RolloutArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Number of pods the ReplicaSet creates
    #[arg(long)]
    pub replicas: usize,
    /// Worker threads evaluating admissions
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// YAML with the Deployment and its Namespace (default: nginx in an injected namespace)
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Extra cluster state (YAML/JSON objects)
    #[arg(long)]
    pub context: Option<PathBuf>,
    /// API server webhook timeout in seconds, for the report
    #[arg(long, default_value_t = 10.0)]
    pub webhook_timeout: f64,
    /// Evaluate without a policy deadline (policy-server's --disable-timeout-protection)
    #[arg(long)]
    pub disable_timeout_protection: bool,
    /// Seed for generated names and uids
    #[arg(long, default_value_t = 3358)]
    pub seed: u64,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// The policy module (.wasm)
    pub module: PathBuf,
}

#[derive(Debug, Args)]
pub struct InjectArgs {
    /// YAML or JSON files, directories (read recursively: *.yaml, *.yml, *.json) or `-` (stdin)
    #[arg(required = true, value_name = "FILE|DIR|-")]
    pub inputs: Vec<String>,
    /// The policy module
    #[arg(long, default_value = "policy.wasm")]
    pub module: PathBuf,
    /// YAML or JSON file with the policy settings, or the ClusterAdmissionPolicy manifest itself
    /// (its `spec.settings` are used)
    #[arg(long, conflicts_with = "settings_json")]
    pub settings_path: Option<PathBuf>,
    /// Policy settings as a JSON string
    #[arg(long)]
    pub settings_json: Option<String>,
    /// Cluster state: Namespaces, Linkerd's linkerd-config and trust-roots ConfigMaps, owners (YAML/JSON objects)
    #[arg(long)]
    pub context: Option<PathBuf>,
    /// Render from the settings alone, reading no linkerd-config (Linkerd's `--ignore-cluster`):
    /// the module is sent `policy.valuesFrom: settings` unless the settings say where values come from
    #[arg(long, conflicts_with = "context")]
    pub ignore_cluster: bool,
    /// Policy metadata file whose contextAwareResources are granted (default: the module's
    /// embedded metadata, else policy.yaml next to the module)
    #[arg(long)]
    pub metadata_path: Option<PathBuf>,
    /// Namespace of objects without metadata.namespace
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// Mark templates `linkerd.io/inject: ingress` (proxy in ingress mode) unless they set a value
    #[arg(long)]
    pub ingress: bool,
    /// Add the debug sidecar (`config.linkerd.io/enable-debug-sidecar: "true"`) unless set
    #[arg(long)]
    pub enable_debug_sidecar: bool,
    /// Do not print the per-object report on stderr
    #[arg(long)]
    pub quiet: bool,
    /// Format of the per-object report on stderr (the manifests stay YAML on stdout)
    #[arg(short = 'o', long, value_parser = ["text", "json"], default_value = "text")]
    pub output: String,
}

/// `injector-host rollout`, as a command: the report, failed when any admission was rejected
/// or failed (a pod without its admission, which is what the rollout must never produce).
pub fn rollout(args: &RolloutArgs) -> Result<Output, RolloutError> {
    let (stdout, report) = rollout_report(args)?;
    let failed = report.rejected + report.errors;
    let failure = (failed > 0).then(|| {
        format!(
            "{failed} of {} admissions were not admitted ({} rejected, {} engine errors)",
            report.replicas, report.rejected, report.errors
        )
    });
    Ok(Output {
        stdout,
        stderr: Vec::new(),
        failure,
    })
}

/// `injector-host rollout`: the report text (or JSON) and the report itself.
fn rollout_report(args: &RolloutArgs) -> Result<(String, RolloutReport), RolloutError> {
    let settings = read_settings(&args.common)?;
    let faults = fault_plan(&args.common)?;
    let default_deadline = (!args.disable_timeout_protection).then_some(Duration::from_secs(2));
    let config = if args.disable_timeout_protection {
        EngineConfig::without_deadline()
    } else {
        engine_config(&args.common, default_deadline)
    };
    let engine = Engine::new(config).map_err(CommandError::from)?;
    let policy = engine
        .load_policy_file(&args.module)
        .map_err(CommandError::from)?;
    // like a ClusterAdmissionPolicy with the contextAwareResources of the policy's metadata;
    // an unannotated module next to its policy.yaml uses that file
    let sibling = args.module.parent().map(|d| d.join("policy.yaml"));
    let md = metadata(&args.common, &policy, sibling.as_deref())?;
    let allow_list = md.map(|m| m.context_aware_resources).unwrap_or_default();
    // a Linkerd control plane unless the context file brings its own objects of the same names
    let mut state = ClusterState::new();
    for object in default_control_plane() {
        state
            .insert(object)
            .map_err(|message| RolloutError::ClusterState {
                what: "the control plane".into(),
                message,
            })?;
    }
    if let Some(path) = &args.context {
        let text = std::fs::read_to_string(path).map_err(|source| ClusterStateError::Read {
            path: path.clone(),
            source,
        });
        text.and_then(|text| state.load_str(&text, path))
            .map_err(CommandError::from)?;
    }
    let workload = match &args.manifest {
        Some(path) => Workload::from_manifest(path)?,
        None => Workload::default_nginx(args.replicas),
    };
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(state, faults)));
    let host = Arc::new(HostContext::new(
        policy.name(),
        allow_list,
        lookups,
        log_sink(&args.common),
    ));
    let opts = RolloutOptions {
        replicas: args.replicas,
        workers: args.workers,
        settings,
        webhook_timeout: Duration::from_secs_f64(args.webhook_timeout.max(0.0)),
        policy_deadline: config.deadline,
        seed: args.seed,
        progress: !args.json,
    };
    let report = run_rollout(&policy, &host, &workload, &opts)?;
    let text = if args.json {
        serde_json::to_string_pretty(&report).map_err(|e| CommandError::Output(e.to_string()))?
    } else {
        report.to_string()
    };
    Ok((text, report))
}

/// `injector-host inject`: prints the report on stderr (after [`IGNORE_CLUSTER_NOTE`] with
/// `--ignore-cluster`), returns the YAML stream.
pub fn inject(args: &InjectArgs) -> Result<String, InjectError> {
    let mut settings = policy_settings(settings_from(
        args.settings_path.as_deref(),
        args.settings_json.as_deref(),
    )?)?;
    if args.ignore_cluster {
        settings = values_from_settings(settings)?;
    }
    let inputs = read_inputs(&args.inputs)?;
    let engine = Engine::new(EngineConfig::without_deadline())?;
    let policy = engine.load_policy_file(&args.module)?;
    let md = inject_metadata(args, &policy)?;
    let context = match &args.context {
        Some(path) => ClusterState::from_file(path).map_err(CommandError::from)?,
        None => ClusterState::new(),
    };
    let options = InjectOptions {
        namespace: Some(args.namespace.clone()),
        ingress: args.ingress,
        enable_debug_sidecar: args.enable_debug_sidecar,
        ignore_cluster: args.ignore_cluster,
    };
    let injector = Injector::new(
        &policy,
        settings,
        options,
        context,
        md.map(|m| m.context_aware_resources),
    );
    // with the text report only: `-o json` keeps stderr one JSON object, `--quiet` empty
    let text_report = !args.quiet && args.output != "json";
    if args.ignore_cluster && text_report {
        eprintln!("{IGNORE_CLUSTER_NOTE}");
    }
    let output = injector.run(inputs)?;
    if !args.quiet && args.output == "json" {
        eprintln!("{}", output.report.to_json());
    } else if text_report {
        eprint!("{}", output.report.render());
    }
    Ok(output.yaml)
}

/// The metadata whose `contextAwareResources` are granted: `--metadata-path`, else the module's
/// embedded metadata, else `policy.yaml` next to the module.
fn inject_metadata(args: &InjectArgs, policy: &Policy) -> Result<Option<Metadata>, CommandError> {
    if let Some(path) = &args.metadata_path {
        return Ok(Some(Metadata::from_file(path)?));
    }
    if let Some(md) = policy.embedded_metadata() {
        return Ok(Some(md.clone()));
    }
    match args.module.parent().map(|d| d.join("policy.yaml")) {
        Some(p) if p.exists() => Ok(Some(Metadata::from_file(&p)?)),
        _ => Ok(None),
    }
}

/// The settings of `--ignore-cluster`: `policy.valuesFrom: settings` added when they do not say
/// where Linkerd's values come from, so the module reads no linkerd-config (there is no cluster
/// to read it from). `settings` is kept; `linkerdConfig` contradicts the flag; any other value
/// is left for the module's settings validation to name, as without the flag.
fn values_from_settings(mut settings: PolicySettings) -> Result<PolicySettings, InjectError> {
    const VALUES_FROM: &str = "valuesFrom";
    // `null` means unset in the settings (the default, linkerdConfig), like an absent key
    let policy = settings.0.entry("policy").or_insert(Value::Null);
    if policy.is_null() {
        *policy = json!({});
    }
    let Some(policy) = policy.as_object_mut() else {
        return Ok(settings);
    };
    let said = policy.get(VALUES_FROM).filter(|v| !v.is_null());
    match said.cloned().map(serde_json::from_value) {
        None => {
            policy.insert(VALUES_FROM.into(), json!(ValuesSource::Settings));
        }
        Some(Ok(ValuesSource::LinkerdConfig)) => return Err(InjectError::IgnoreClusterWithLinkerdConfig),
        Some(Ok(ValuesSource::Settings) | Err(_)) => {}
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(v: Value) -> PolicySettings {
        PolicySettings::from_value(&v).unwrap()
    }

    #[test]
    fn ignore_cluster_renders_from_the_settings() {
        let with = |v: Value| values_from_settings(settings(v)).map(|s| Value::Object(s.0));
        assert_eq!(
            with(json!({})).unwrap(),
            json!({"policy": {"valuesFrom": "settings"}})
        );
        assert_eq!(
            with(json!({"policy": {"mode": "mutate"}, "proxy": {}})).unwrap(),
            json!({"policy": {"mode": "mutate", "valuesFrom": "settings"}, "proxy": {}})
        );
        // null is unset, as everywhere in the settings
        assert_eq!(
            with(json!({"policy": null})).unwrap(),
            json!({"policy": {"valuesFrom": "settings"}})
        );
        assert_eq!(
            with(json!({"policy": {"valuesFrom": null}})).unwrap(),
            json!({"policy": {"valuesFrom": "settings"}})
        );
        let own = json!({"policy": {"valuesFrom": "settings"}});
        assert_eq!(with(own.clone()).unwrap(), own);
        assert!(matches!(
            with(json!({"policy": {"valuesFrom": "linkerdConfig"}})),
            Err(InjectError::IgnoreClusterWithLinkerdConfig)
        ));
        // not this function's to judge: the module names what is wrong
        for odd in [json!({"policy": {"valuesFrom": "cluster"}}), json!({"policy": 3})] {
            assert_eq!(with(odd.clone()).unwrap(), odd);
        }
    }
}
