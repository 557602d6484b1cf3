//! Manual injection of manifests (`injector-host inject`), like `linkerd inject --manual`.
//!
//! Every object of the inputs ([`crate::commands::manifests`]), also inside `List`s and arrays,
//! goes through the policy module as a CREATE AdmissionRequest with the given settings, exactly
//! as at admission. The module's answer decides everything ([`super::answer`]): an object it
//! injected is written back with its patch applied; every other document is copied byte for byte
//! with its separators and comments, in input order. This file knows no pod-template path, skip
//! reason or setting of the policy.
//!
//! Manual injection wants a proxy everywhere, as Linkerd's CLI does: every Namespace the module
//! may look up is annotated `linkerd.io/inject: enabled` (`ingress` with
//! [`InjectOptions::ingress`]; plus `config.linkerd.io/enable-debug-sidecar: "true"` with
//! [`InjectOptions::enable_debug_sidecar`]). The module then applies Linkerd's precedence itself:
//! a workload's own `linkerd.io/inject` (an explicit `disabled`) wins, and an injected workload
//! inherits the marker, so the output states that it wants a proxy; the mutating policy skips it
//! at admission (it already has one) and the verify policy checks it.
//!
//! The cluster state the module looks up comes from an optional context file, plus the Namespace
//! documents of the input itself (they win: they are what will be applied), plus a synthetic
//! Namespace for every other namespace the objects use. Nothing else is invented: when the module
//! rejects an object because a lookup failed (Linkerd's trust-roots ConfigMap, say), the error
//! names the objects it looked for.
//!
//! The files: this one sets a run up (options, the cluster state, the settings check);
//! `session.rs` writes the output object by object, `hints.rs` explains failed lookups and
//! `report.rs` is the per-object report.

mod hints;
mod report;
mod session;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use thiserror::Error;

use crate::commands::common::CommandError;
use crate::commands::manifests::{self, Parsed, Piece, ReadError, for_each_object, str_at};
pub use crate::commands::manifests::{Input, read_inputs};
use kubewarden_engine::hostcalls::cluster::ClusterState;
use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::protocol::metadata::ContextAwareResource;
use kubewarden_engine::protocol::request::PolicySettings;
use kubewarden_engine::protocol::response::SettingsRejected;
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use kubewarden_engine::runtime::engine::{EngineError, Policy};
pub use report::{Entry, Report};
use session::Session;

use linkerd_injector_policy::annotations::{ENABLE_DEBUG_SIDECAR, INJECT};

/// The user name of the AdmissionRequests sent to the module.
pub const USERNAME: &str = "injector-host-inject";

/// Options of `inject` besides the settings.
#[derive(Debug, Clone, Default)]
pub struct InjectOptions {
    /// Namespace the objects without `metadata.namespace` are admitted in (default `default`).
    /// Their `linkerd.io/workload-ns` stays empty, as from Linkerd's CLI: the manifest names none.
    pub namespace: Option<String>,
    /// `linkerd.io/inject: ingress` instead of `enabled` (Linkerd's `--ingress`).
    pub ingress: bool,
    /// `config.linkerd.io/enable-debug-sidecar: "true"` for workloads that do not set it
    /// (Linkerd's `--enable-debug-sidecar`).
    pub enable_debug_sidecar: bool,
    /// The run reads no cluster state but the Namespaces (Linkerd's `--ignore-cluster`): a failed
    /// lookup's hint says so instead of pointing at `--context`. The settings are the caller's
    /// to adapt.
    pub ignore_cluster: bool,
}

/// Everything that stops a transformation; nothing is written to stdout then.
#[derive(Debug, Error)]
pub enum InjectError {
    /// The steps every command shares (settings, metadata, cluster state).
    #[error(transparent)]
    Setup(#[from] CommandError),
    #[error(
        "--ignore-cluster renders from the settings alone, but the settings say `policy.valuesFrom: \
         linkerdConfig` (Linkerd's values from the cluster's linkerd-config ConfigMap): drop \
         --ignore-cluster and pass that ConfigMap with --context, or drop the setting"
    )]
    IgnoreClusterWithLinkerdConfig,
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{}", .0.join("\n"))]
    Parse(Vec<String>),
    #[error("{}", .0.join("\n"))]
    Rejected(Vec<String>),
    #[error(transparent)]
    InvalidSettings(#[from] SettingsRejected),
    #[error("cannot build the cluster state: {0}")]
    State(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The transformed stream and its report.
#[derive(Debug, Clone)]
pub struct InjectOutput {
    pub yaml: String,
    pub report: Report,
}

/// The namespace an object is admitted in.
fn object_namespace(object: &Value, options: &InjectOptions) -> String {
    str_at(object, "/metadata/namespace")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .or_else(|| options.namespace.clone())
        .unwrap_or_else(|| "default".into())
}

fn object_name(object: &Value) -> String {
    str_at(object, "/metadata/name")
        .or_else(|| str_at(object, "/metadata/generateName"))
        .unwrap_or("")
        .to_owned()
}

/// Annotates a Namespace so that the module injects whatever it holds (see the module comment).
fn want_proxies(namespace: &mut Value, options: &InjectOptions) {
    let Some(meta) = namespace.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    let Some(annotations) = annotations.as_object_mut() else {
        return;
    };
    let inject = if options.ingress { "ingress" } else { "enabled" };
    annotations.insert(INJECT.into(), json!(inject));
    if options.enable_debug_sidecar {
        annotations.insert(ENABLE_DEBUG_SIDECAR.into(), json!("true"));
    }
}

/// Runs manual injection over parsed inputs with one policy and its settings.
pub struct Injector<'p> {
    policy: &'p Policy,
    settings: PolicySettings,
    options: InjectOptions,
    context: ClusterState,
    allow_list: Option<BTreeSet<ContextAwareResource>>,
}

impl<'p> Injector<'p> {
    /// `context`: the cluster state from `--context` (may be empty); `allow_list`: the
    /// `contextAwareResources` granted (`None`: every kind of the final cluster state).
    pub fn new(
        policy: &'p Policy,
        settings: PolicySettings,
        options: InjectOptions,
        context: ClusterState,
        allow_list: Option<BTreeSet<ContextAwareResource>>,
    ) -> Self {
        Self {
            policy,
            settings,
            options,
            context,
            allow_list,
        }
    }

    /// Transforms the inputs. All parse errors of all inputs are reported together; a rejection
    /// by the module stops the run too (the object would not be admitted either).
    pub fn run(&self, inputs: Vec<Input>) -> Result<InjectOutput, InjectError> {
        let parsed = parse_all(inputs)?;
        let host = Arc::new(self.host_context(&parsed)?);
        SettingsRejected::check(self.policy.instantiate(&host)?.validate_settings(&self.settings))
            .map_err(InjectError::InvalidSettings)?;
        let mut session = Session::new(self, host);
        for p in &parsed {
            session.write_input(p)?;
        }
        session.finish()
    }

    /// The cluster state: the context, the input's Namespaces, synthetic Namespaces for the rest,
    /// every one of them wanting proxies.
    fn host_context(&self, parsed: &[Parsed]) -> Result<HostContext, InjectError> {
        let mut state = self.context.clone();
        let mut used = BTreeSet::new();
        for value in parsed.iter().flat_map(documents).flat_map(|d| &d.values) {
            for_each_object(value, &mut |o| {
                if str_at(o, "/kind") == Some("Namespace") && str_at(o, "/apiVersion") == Some("v1") {
                    let _ = state.insert(o.clone());
                }
                used.insert(object_namespace(o, &self.options));
            });
        }
        for ns in used {
            let mut namespace = state.get("v1", "Namespace", &ns, None).cloned().unwrap_or_else(
                |_| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            );
            want_proxies(&mut namespace, &self.options);
            state.insert(namespace).map_err(InjectError::State)?;
        }
        let allow_list = match &self.allow_list {
            Some(a) => a.clone(),
            None => state
                .objects()
                .filter_map(|o| {
                    Some(ContextAwareResource::new(
                        str_at(o, "/apiVersion")?,
                        str_at(o, "/kind")?,
                    ))
                })
                .collect(),
        };
        let source = LookupSource::Cluster(ClusterLookup::new(state, FaultPlan::new()));
        Ok(HostContext::new(
            self.policy.name(),
            allow_list,
            Lookups::new(source).recording(),
            LogSink::Stderr,
        ))
    }
}

fn parse_all(inputs: Vec<Input>) -> Result<Vec<Parsed>, InjectError> {
    let mut parsed = Vec::new();
    let mut errors = Vec::new();
    for input in inputs {
        match manifests::parse_input(input) {
            Ok(p) => parsed.push(p),
            Err(mut e) => errors.append(&mut e),
        }
    }
    match errors.is_empty() {
        true => Ok(parsed),
        false => Err(InjectError::Parse(errors)),
    }
}

fn documents(p: &Parsed) -> impl Iterator<Item = &manifests::Document> {
    p.pieces.iter().filter_map(|piece| match piece {
        Piece::Document(d) => Some(d),
        Piece::Separator(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_want_proxies() {
        let mut ns =
            json!({"metadata": {"name": "shop", "annotations": {"linkerd.io/inject": "disabled", "a": "b"}}});
        want_proxies(&mut ns, &InjectOptions::default());
        assert_eq!(
            ns["metadata"]["annotations"],
            json!({"linkerd.io/inject": "enabled", "a": "b"})
        );
        let mut ns = json!({"metadata": {"name": "shop", "annotations": null}});
        let opts = InjectOptions {
            ingress: true,
            enable_debug_sidecar: true,
            ..Default::default()
        };
        want_proxies(&mut ns, &opts);
        assert_eq!(
            ns["metadata"]["annotations"],
            json!({"linkerd.io/inject": "ingress", "config.linkerd.io/enable-debug-sidecar": "true"})
        );
    }
}
