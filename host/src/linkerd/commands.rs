//! The Linkerd commands of `injector-host` (`rollout`, `inject`): their flags come from
//! [`crate::commands::cli`], their work from [`super::rollout`] and [`super::inject`].

use std::sync::Arc;
use std::time::Duration;

use super::inject::{InjectError, InjectOptions, Injector, read_inputs};
use super::rollout::{
    RolloutError, RolloutOptions, RolloutReport, Workload, default_control_plane, run_rollout,
};
use crate::commands::cli::{
    CliError, InjectArgs, Output, RolloutArgs, engine_config, fault_plan, log_sink, metadata,
    policy_settings, read_settings, settings_from,
};
use crate::hostcalls::cluster::{ClusterState, ClusterStateError};
use crate::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use crate::protocol::metadata::PolicyMetadata;
use crate::runtime::callback::HostContext;
use crate::runtime::engine::{Engine, EngineConfig};

/// `injector-host rollout`, as a command: the report, failed when any admission was rejected
/// or failed (a pod without its admission, which is what the rollout must never produce).
pub fn rollout(args: &RolloutArgs) -> Result<Output, CliError> {
    let (stdout, report) = rollout_report(args)?;
    let failed = report.rejected + report.errors;
    let failure = (failed > 0).then(|| {
        format!(
            "{failed} of {} admissions were not admitted ({} rejected, {} engine errors)",
            report.replicas, report.rejected, report.errors
        )
    });
    Ok(Output { stdout, failure })
}

/// `injector-host rollout`: the report text (or JSON) and the report itself.
fn rollout_report(args: &RolloutArgs) -> Result<(String, RolloutReport), CliError> {
    let settings = read_settings(&args.common)?;
    let faults = fault_plan(&args.common)?;
    let default_deadline = (!args.disable_timeout_protection).then_some(Duration::from_secs(2));
    let config = if args.disable_timeout_protection {
        EngineConfig::without_deadline()
    } else {
        engine_config(&args.common, default_deadline)
    };
    let engine = Engine::new(config)?;
    let policy = engine.load_policy_file(&args.module)?;
    // like a ClusterAdmissionPolicy with the contextAwareResources of the policy's metadata;
    // an unannotated module next to its policy.yaml uses that file
    let sibling = args.module.parent().map(|d| d.join("policy.yaml"));
    let md = metadata(&args.common, &policy, sibling.as_deref())?;
    let allow_list = md.map(|m| m.context_aware_resources).unwrap_or_default();
    // a Linkerd control plane unless the context file brings its own objects of the same names
    let mut state = ClusterState::new();
    for object in default_control_plane() {
        state.insert(object).map_err(|message| {
            CliError::Rollout(RolloutError::ClusterState {
                what: "the control plane".into(),
                message,
            })
        })?;
    }
    if let Some(path) = &args.context {
        let text = std::fs::read_to_string(path).map_err(|source| ClusterStateError::Read {
            path: path.clone(),
            source,
        })?;
        state.load_str(&text, path)?;
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
        serde_json::to_string_pretty(&report).map_err(|e| CliError::Output(e.to_string()))?
    } else {
        report.render()
    };
    Ok((text, report))
}

/// `injector-host inject`: prints the report on stderr, returns the YAML stream.
pub fn inject(args: &InjectArgs) -> Result<String, CliError> {
    let settings = policy_settings(settings_from(
        args.settings_path.as_deref(),
        args.settings_json.as_deref(),
    )?)?;
    let inputs = read_inputs(&args.inputs).map_err(InjectError::from)?;
    let engine = Engine::new(EngineConfig::without_deadline())?;
    let policy = engine.load_policy_file(&args.module)?;
    let md = match &args.metadata_path {
        Some(path) => Some(PolicyMetadata::from_file(path)?),
        None => match policy.embedded_metadata() {
            Some(md) => Some(md.clone()),
            None => {
                let sibling = args.module.parent().map(|d| d.join("policy.yaml"));
                match sibling {
                    Some(p) if p.exists() => Some(PolicyMetadata::from_file(&p)?),
                    _ => None,
                }
            }
        },
    };
    let context = match &args.context {
        Some(path) => ClusterState::from_file(path)?,
        None => ClusterState::new(),
    };
    let options = InjectOptions {
        namespace: Some(args.namespace.clone()),
        ingress: args.ingress,
        enable_debug_sidecar: args.enable_debug_sidecar,
    };
    let injector = Injector::new(
        &policy,
        settings,
        options,
        context,
        md.map(|m| m.context_aware_resources),
    );
    let output = injector.run(inputs)?;
    if !args.quiet && args.output == "json" {
        eprintln!("{}", output.report.to_json());
    } else if !args.quiet {
        eprint!("{}", output.report.render());
    }
    Ok(output.yaml)
}
