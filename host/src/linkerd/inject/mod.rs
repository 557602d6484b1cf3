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

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use thiserror::Error;

use super::answer::{self, Injection};
pub use super::report::{Entry, Report};
use crate::commands::manifests::{
    self, Parsed, Piece, ReadError, for_each_object, leading_comments, marker, separate, str_at,
};
pub use crate::commands::manifests::{Input, read_inputs};
use crate::hostcalls::cluster::ClusterState;
use crate::hostcalls::fault::FaultPlan;
use crate::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use crate::hostcalls::replay::{CallbackRequestType, Exchange, ReplayResponse};
use crate::protocol::metadata::ContextAwareResource;
use crate::protocol::request::{AdmissionRequest, PolicySettings, UserInfo};
use crate::protocol::response::AdmissionResponse;
use crate::runtime::callback::{HostContext, LogSink};
use crate::runtime::engine::{EngineError, Policy};

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
}

/// Everything that stops a transformation; nothing is written to stdout then.
#[derive(Debug, Error)]
pub enum InjectError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{}", .0.join("\n"))]
    Parse(Vec<String>),
    #[error("{}", .0.join("\n"))]
    Rejected(Vec<String>),
    #[error("Provided settings are not valid: {0}")]
    InvalidSettings(String),
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

/// The lookups of an admission that failed, as a hint for the user: manual injection reads no
/// cluster, so an object the module needs must be in `--context` or the input.
fn failed_lookups(exchanges: &[Exchange]) -> Vec<String> {
    exchanges
        .iter()
        .filter(|e| matches!(e.response, ReplayResponse::Error { .. }))
        .filter_map(|e| match &e.request {
            CallbackRequestType::KubernetesGetResource {
                api_version,
                kind,
                name,
                namespace,
                ..
            } => Some(match namespace {
                Some(ns) => format!("{api_version}/{kind} {ns}/{name}"),
                None => format!("{api_version}/{kind} {name}"),
            }),
            _ => None,
        })
        .collect()
}

/// The answered lists of a namespace's objects whose namespace the rejection names
/// (`<kind> <namespace>/`), as `(what was listed, the names the cluster state holds)`: a list
/// has no "not found", so the hint says what the cluster state had.
fn listed_for(exchanges: &[Exchange], rejection: &str) -> Vec<(String, Vec<String>)> {
    exchanges
        .iter()
        .filter_map(|e| match (&e.request, &e.response) {
            (
                CallbackRequestType::KubernetesListResourceNamespace {
                    api_version,
                    kind,
                    namespace,
                    ..
                },
                ReplayResponse::Success { payload },
            ) if rejection.contains(&format!("{kind} {namespace}/")) => {
                let list: Value = serde_json::from_str(payload).unwrap_or_default();
                let names = list["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
                    .collect();
                Some((format!("{api_version}/{kind} in namespace {namespace}"), names))
            }
            _ => None,
        })
        .collect()
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
        self.policy
            .instantiate(&host)?
            .validate_settings(&self.settings)
            .into_result()
            .map_err(InjectError::InvalidSettings)?;
        let mut session = Session {
            injector: self,
            host,
            report: Report::default(),
            rejections: Vec::new(),
            admitted: 0,
            yaml: String::new(),
        };
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

/// One run of [`Injector::run`]: the module's host, the output and the report so far.
struct Session<'i> {
    injector: &'i Injector<'i>,
    host: Arc<HostContext>,
    report: Report,
    rejections: Vec<String>,
    /// Objects sent to the module so far (their requests' uids).
    admitted: usize,
    yaml: String,
}

impl Session<'_> {
    fn finish(self) -> Result<InjectOutput, InjectError> {
        if !self.rejections.is_empty() {
            return Err(InjectError::Rejected(self.rejections));
        }
        Ok(InjectOutput {
            yaml: self.yaml,
            report: self.report,
        })
    }

    /// One input: its separators verbatim (YAML), its documents transformed or copied.
    fn write_input(&mut self, p: &Parsed) -> Result<(), InjectError> {
        if !p.json && !p.input.text.trim().is_empty() {
            let starts_with_marker = p
                .input
                .text
                .lines()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| marker(l).is_some());
            separate(&mut self.yaml, starts_with_marker);
        }
        for piece in &p.pieces {
            match piece {
                Piece::Separator(r) if !p.json => self.yaml.push_str(&p.input.text[r.clone()]),
                Piece::Separator(_) => {}
                Piece::Document(doc) => self.write_document(p, doc)?,
            }
        }
        Ok(())
    }

    /// A document: rewritten (keeping its leading comments) when the module changed an object
    /// in it, else copied byte for byte.
    fn write_document(&mut self, p: &Parsed, doc: &manifests::Document) -> Result<(), InjectError> {
        let original = &p.input.text[doc.range.clone()];
        if p.json {
            separate(&mut self.yaml, false);
        }
        let changed: Vec<Option<Value>> = doc
            .values
            .iter()
            .map(|v| self.transform(&p.input.origin, v))
            .collect();
        if changed.iter().all(Option::is_none) {
            self.yaml.push_str(original);
            if p.json && !original.ends_with('\n') {
                self.yaml.push('\n');
            }
            return Ok(());
        }
        let comments = leading_comments(original);
        self.yaml.push_str(&comments);
        if original[comments.len()..].starts_with("---") && !self.yaml.ends_with("---\n") {
            self.yaml.push_str("---\n");
        }
        for (i, (new, old)) in changed.iter().zip(&doc.values).enumerate() {
            if i > 0 {
                self.yaml.push_str("---\n");
            }
            self.yaml.push_str(&to_yaml(new.as_ref().unwrap_or(old))?);
        }
        Ok(())
    }

    /// A document value with injected objects, or `None` when nothing in it changes.
    fn transform(&mut self, origin: &str, value: &Value) -> Option<Value> {
        match value {
            Value::Array(items) => self.transform_items(origin, items).map(Value::Array),
            _ if manifests::is_list(value) => {
                let items = value.get("items").and_then(Value::as_array)?;
                let items = self.transform_items(origin, items)?;
                let mut list = value.clone();
                list["items"] = Value::Array(items);
                Some(list)
            }
            Value::Object(_) => self.transform_object(origin, value),
            _ => None,
        }
    }

    fn transform_items(&mut self, origin: &str, items: &[Value]) -> Option<Vec<Value>> {
        let changed: Vec<Option<Value>> = items.iter().map(|i| self.transform(origin, i)).collect();
        if changed.iter().all(Option::is_none) {
            return None;
        }
        Some(
            changed
                .into_iter()
                .zip(items)
                .map(|(new, old)| new.unwrap_or_else(|| old.clone()))
                .collect(),
        )
    }

    /// One object through the module; its entry goes into the report, a rejection into the
    /// rejections. `Some` with the mutated object when the module injected it.
    fn transform_object(&mut self, origin: &str, object: &Value) -> Option<Value> {
        let kind = str_at(object, "/kind").unwrap_or("").to_owned();
        let name = object_name(object);
        let what = format!("{origin}: {}/{name}", kind.to_ascii_lowercase());
        let mut entry = Entry {
            origin: origin.to_owned(),
            kind,
            name,
            namespace: None,
            injection: Injection::NotConsidered,
            warnings: Vec::new(),
        };
        if entry.kind.is_empty() {
            self.report.entries.push(entry);
            return None;
        }
        let namespace = object_namespace(object, &self.injector.options);
        let response = match self.admit(object, &namespace) {
            Ok(r) => r,
            Err(message) => {
                self.rejections.push(format!("{what}: {message}"));
                return None;
            }
        };
        entry.injection = Injection::of(&response);
        entry.warnings = entry.injection.warnings_beyond(&response);
        if entry.injection != Injection::NotConsidered {
            entry.namespace = Some(namespace);
        }
        let mutated = match entry.injection {
            Injection::Injected => match answer::mutated(object, &response) {
                Ok(m) => Some(m),
                Err(e) => {
                    self.rejections.push(format!("{what}: {e}"));
                    return None;
                }
            },
            _ => None,
        };
        self.report.entries.push(entry);
        mutated
    }

    /// The module's answer to the CREATE of `object`; a rejection (with the lookups that failed)
    /// or an engine failure as the message to report.
    fn admit(&mut self, object: &Value, namespace: &str) -> Result<AdmissionResponse, String> {
        self.admitted += 1;
        let user = UserInfo {
            username: Some(USERNAME.into()),
            ..Default::default()
        };
        let request = AdmissionRequest {
            dry_run: Some(true),
            ..AdmissionRequest::create(
                format!("inject-{}", self.admitted),
                Some(namespace.to_owned()),
                user,
                object.clone(),
            )
        };
        let before = self.host.lookups().recorded().len();
        let i = self.injector;
        let response = i
            .policy
            .instantiate(&self.host)
            .and_then(|mut instance| instance.validate(&request, &i.settings))
            .map_err(|e| e.to_string())?;
        if let Some(audit) = answer::other_audit(&response) {
            return Err(format!(
                "the policy answers without an `injection` audit annotation ({audit}): its settings \
                 do not inject (policy.mode: verify only checks pods); inject needs the mutating mode"
            ));
        }
        if response.allowed {
            return Ok(response);
        }
        let mut message = format!("rejected by the policy: {}", response.message());
        let recorded = self.host.lookups().recorded();
        let exchanges = recorded.get(before..).unwrap_or_default();
        for missing in failed_lookups(exchanges) {
            message.push_str(&format!(
                "\n  the policy looked up {missing}, which is not in the cluster state: manual \
                 injection reads no cluster, pass it with --context"
            ));
        }
        for (listed, names) in listed_for(exchanges, response.message()) {
            let held = if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            };
            message.push_str(&format!(
                "\n  the policy listed {listed}, of which the cluster state holds {held}: manual \
                 injection reads no cluster, pass what is missing with --context"
            ));
        }
        Err(message)
    }
}

fn to_yaml(value: &Value) -> Result<String, InjectError> {
    serde_yaml_ng::to_string(value)
        .map_err(|e| InjectError::Rejected(vec![format!("cannot write YAML: {e}")]))
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

    #[test]
    fn failed_lookups_name_the_objects() {
        let get = |namespace: Option<&str>, response| Exchange {
            request: CallbackRequestType::KubernetesGetResource {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "roots".into(),
                namespace: namespace.map(str::to_owned),
                disable_cache: false,
                field_masks: None,
            },
            response,
        };
        let error = || ReplayResponse::Error {
            message: "not found".into(),
        };
        let ok = ReplayResponse::Success { payload: "{}".into() };
        assert_eq!(
            failed_lookups(&[get(Some("linkerd"), error()), get(None, ok), get(None, error())]),
            ["v1/ConfigMap linkerd/roots", "v1/ConfigMap roots"]
        );
    }

    #[test]
    fn lists_the_rejection_names_say_what_the_cluster_state_held() {
        let list = |namespace: &str, payload: &str| Exchange {
            request: CallbackRequestType::KubernetesListResourceNamespace {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: namespace.into(),
                label_selector: None,
                field_selector: None,
                field_masks: None,
            },
            response: ReplayResponse::Success {
                payload: payload.into(),
            },
        };
        let held = list("linkerd", r#"{"items":[{"metadata":{"name":"linkerd-config"}}]}"#);
        let empty = list("mesh", r#"{"items":[]}"#);
        let rejection = "ConfigMap linkerd/roots not found; ConfigMap mesh/values not found";
        assert_eq!(
            listed_for(&[held.clone(), empty.clone()], rejection),
            [
                (
                    "v1/ConfigMap in namespace linkerd".to_owned(),
                    vec!["linkerd-config".to_owned()]
                ),
                ("v1/ConfigMap in namespace mesh".to_owned(), vec![])
            ]
        );
        assert_eq!(listed_for(&[held, empty], "Namespace shop not found"), []);
    }
}
