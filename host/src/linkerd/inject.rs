//! Manual injection of manifests (`injector-host inject`), like `linkerd inject --manual`.
//!
//! Inputs are YAML streams (several documents) or JSON (one or more values), files, directories
//! or stdin. Every Pod and every workload with a pod template (Deployment, StatefulSet,
//! DaemonSet, ReplicaSet, ReplicationController, Job, CronJob), also inside `List`s and arrays,
//! goes through the policy module as a CREATE AdmissionRequest with the given settings, exactly
//! as at admission; the engine's JSON patch is applied to the object and the result is written
//! back as YAML. Every other document, and every object the module skips, is copied
//! byte-for-byte with its separators and comments, in input order.
//!
//! Before injection the pod template is marked `linkerd.io/inject: enabled` (`ingress` with
//! [`InjectOptions::ingress`]) unless it already has a `linkerd.io/inject` value, so Linkerd's
//! decision table admits it whatever its namespace says; an explicit `disabled` is honoured.
//! The marker stays in the output: the manifest then states that it wants a proxy, the mutating
//! policy skips it at admission (it already has one) and the verify policy checks it.
//!
//! The cluster state the module looks up comes from an optional context file, plus the Namespace
//! documents of the input itself (they win: they are what will be applied), plus a synthetic
//! Namespace without annotations for every other namespace the objects use. Trust anchors are
//! never invented: the settings must carry `identityTrustAnchorsPEM`, or the context must hold
//! Linkerd's trust-roots ConfigMap.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use thiserror::Error;

use crate::hostcalls::cluster::ClusterState;
use crate::hostcalls::fault::FaultPlan;
use crate::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use crate::protocol::metadata::ContextAwareResource;
use crate::protocol::request::{
    AdmissionRequest, GroupVersionKind, GroupVersionResource, PolicySettings, UserInfo,
};
use crate::runtime::callback::{HostContext, LogSink};
use crate::runtime::engine::{EngineError, Policy};

/// The annotation Linkerd's decision table reads.
pub const INJECT_ANNOTATION: &str = "linkerd.io/inject";
/// The annotation `linkerd inject --enable-debug-sidecar` sets.
pub const DEBUG_SIDECAR_ANNOTATION: &str = "config.linkerd.io/enable-debug-sidecar";
/// The user name of the AdmissionRequests sent to the module.
pub const USERNAME: &str = "injector-host-inject";

/// One input text and where it came from (a path, or `<stdin>`).
#[derive(Debug, Clone)]
pub struct Input {
    pub origin: String,
    pub text: String,
}

impl Input {
    pub fn new(origin: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            origin: origin.into(),
            text: text.into(),
        }
    }
}

/// Options of `inject` besides the settings.
#[derive(Debug, Clone, Default)]
pub struct InjectOptions {
    /// Namespace of objects without `metadata.namespace` (default `default`).
    pub namespace: Option<String>,
    /// Mark templates `linkerd.io/inject: ingress` instead of `enabled` (Linkerd's `--ingress`).
    pub ingress: bool,
    /// Add `config.linkerd.io/enable-debug-sidecar: "true"` unless set (Linkerd's
    /// `--enable-debug-sidecar`).
    pub enable_debug_sidecar: bool,
}

/// Everything that stops a transformation; nothing is written to stdout then.
#[derive(Debug, Error)]
pub enum InjectError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", .0.join("\n"))]
    Parse(Vec<String>),
    #[error("{}", .0.join("\n"))]
    Rejected(Vec<String>),
    #[error(
        "no trust anchors for manual injection: set identityTrustAnchorsPEM in the settings, or pass \
         --context with ConfigMap {namespace}/{name} (key ca-bundle.crt)"
    )]
    NoTrustAnchors { namespace: String, name: String },
    #[error("the settings select policy.mode: verify, which never mutates; inject needs the mutating mode")]
    VerifyMode,
    #[error("Provided settings are not valid: {0}")]
    InvalidSettings(String),
    #[error("cannot build the cluster state: {0}")]
    State(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// What happened to one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The module added the proxy.
    Injected,
    /// The module skipped it, with Linkerd's reasons; the document is copied unchanged.
    Skipped(String),
    /// Not a pod or workload (or no `kind`): copied unchanged.
    Ignored,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Input file (or `<stdin>`).
    pub origin: String,
    /// `kind` as written (empty when missing).
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    pub verdict: Verdict,
    /// The module's admission warnings.
    pub warnings: Vec<String>,
}

impl Entry {
    fn line(&self) -> String {
        let kind = self.kind.to_ascii_lowercase();
        match &self.verdict {
            Verdict::Injected => format!("{kind} \"{}\" injected", self.name),
            Verdict::Skipped(reasons) => format!("{kind} \"{}\" skipped: {reasons}", self.name),
            Verdict::Ignored if self.kind.is_empty() => "document missing \"kind\" field, skipped".into(),
            Verdict::Ignored => format!("{kind} \"{}\" skipped: not a pod or a workload", self.name),
        }
    }
}

/// The per-object report, printed on stderr in the layout of Linkerd's CLI report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub entries: Vec<Entry>,
}

impl Report {
    pub fn injected(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Injected))
    }

    pub fn skipped(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Skipped(_)))
    }

    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.entries.iter().filter(|e| f(&e.verdict)).count()
    }

    /// The report as JSON: `{"injected", "skipped", "objects": [{origin, kind, name, namespace,
    /// verdict, reasons?, warnings}]}`, for scripts (`inject -o json`).
    pub fn to_json(&self) -> serde_json::Value {
        let objects: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|e| {
                let (verdict, reasons) = match &e.verdict {
                    Verdict::Injected => ("injected", None),
                    Verdict::Skipped(r) => ("skipped", Some(r.as_str())),
                    Verdict::Ignored => ("ignored", None),
                };
                let mut o = serde_json::json!({
                    "origin": e.origin,
                    "kind": e.kind,
                    "name": e.name,
                    "namespace": e.namespace,
                    "verdict": verdict,
                    "warnings": e.warnings,
                });
                if let Some(r) = reasons {
                    o["reasons"] = r.into();
                }
                o
            })
            .collect();
        serde_json::json!({
            "injected": self.injected(),
            "skipped": self.skipped(),
            "objects": objects,
        })
    }

    /// Warnings (`‼`), then one line per object, each block framed by blank lines.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let warnings: Vec<String> = self
            .entries
            .iter()
            .flat_map(|e| {
                e.warnings
                    .iter()
                    .map(move |w| format!("‼ {}/{}: {w}", e.kind.to_ascii_lowercase(), e.name))
            })
            .collect();
        if !warnings.is_empty() {
            out.push('\n');
            for w in warnings {
                out.push_str(&w);
                out.push('\n');
            }
        }
        out.push('\n');
        for e in &self.entries {
            out.push_str(&e.line());
            out.push('\n');
        }
        out.push('\n');
        out
    }
}

/// The transformed stream and its report.
#[derive(Debug, Clone)]
pub struct InjectOutput {
    pub yaml: String,
    pub report: Report,
}

// === input ===

/// Reads the named inputs: `-` is stdin, a directory is read recursively (files ending in
/// `.yaml`, `.yml` or `.json`, in path order), any other path is read as it is.
pub fn read_inputs(paths: &[String]) -> Result<Vec<Input>, InjectError> {
    let mut inputs = Vec::new();
    for p in paths {
        if p == "-" {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|source| {
                InjectError::Read {
                    path: "<stdin>".into(),
                    source,
                }
            })?;
            inputs.push(Input::new("<stdin>", text));
            continue;
        }
        let path = Path::new(p);
        if path.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files)?;
            files.sort();
            for f in files {
                inputs.push(read_file(&f)?);
            }
        } else {
            inputs.push(read_file(path)?);
        }
    }
    Ok(inputs)
}

fn read_file(path: &Path) -> Result<Input, InjectError> {
    let text = std::fs::read_to_string(path).map_err(|source| InjectError::Read {
        path: path.display().to_string(),
        source,
    })?;
    Ok(Input::new(path.display().to_string(), text))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), InjectError> {
    let entries = std::fs::read_dir(dir).map_err(|source| InjectError::Read {
        path: dir.display().to_string(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| InjectError::Read {
            path: dir.display().to_string(),
            source,
        })?;
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(path);
        }
    }
    Ok(())
}

// === splitting a stream into documents, keeping their text ===

/// A piece of an input: separator text (copied verbatim) or a document.
#[derive(Debug, Clone)]
enum Piece {
    Separator(Range<usize>),
    Document(Document),
}

#[derive(Debug, Clone)]
struct Document {
    range: Range<usize>,
    /// Values parsed from the text (none for an empty or comment-only document).
    values: Vec<Value>,
}

#[derive(Debug)]
struct Parsed {
    input: Input,
    json: bool,
    pieces: Vec<Piece>,
}

fn is_json(text: &str) -> bool {
    matches!(
        text.trim_start_matches('\u{feff}').trim_start().chars().next(),
        Some('{' | '[')
    )
}

/// A line that is a YAML document marker (`---` or `...` followed by nothing, blanks or a
/// comment). At column 0 such a line can never be document content.
fn marker(line: &str) -> Option<(&'static str, &str)> {
    for m in ["---", "..."] {
        if let Some(rest) = line.strip_prefix(m)
            && (rest.is_empty() || rest.starts_with([' ', '\t']))
        {
            return Some((m, rest));
        }
    }
    None
}

fn split_yaml(input: &Input) -> Result<Vec<Piece>, Vec<String>> {
    let text = input.text.as_str();
    let mut pieces = Vec::new();
    let mut errors = Vec::new();
    let mut start = 0;
    let mut start_line = 1;
    let mut pos = 0;
    let mut push = |range: Range<usize>, first_line: usize, pieces: &mut Vec<Piece>| {
        if range.is_empty() {
            return;
        }
        match parse_yaml_chunk(&text[range.clone()]) {
            Ok(values) => pieces.push(Piece::Document(Document { range, values })),
            Err((line, column, message)) => errors.push(format!(
                "{}:{}:{}: cannot parse YAML: {}",
                input.origin,
                first_line + line - 1,
                column,
                shift_lines(&message, first_line - 1)
            )),
        }
    };
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let line_no = index + 1;
        let bare = line.trim_end_matches(['\n', '\r']);
        if let Some((m, rest)) = marker(bare) {
            push(start..pos, start_line, &mut pieces);
            let rest = rest.trim();
            if m == "---" && !rest.is_empty() && !rest.starts_with('#') {
                // `--- value`: the marker line belongs to the document
                start = pos;
                start_line = line_no;
            } else {
                pieces.push(Piece::Separator(pos..pos + line.len()));
                start = pos + line.len();
                start_line = line_no + 1;
            }
        }
        pos += line.len();
    }
    push(start..text.len(), start_line, &mut pieces);
    if errors.is_empty() {
        Ok(pieces)
    } else {
        Err(errors)
    }
}

/// Parses one document's text; errors carry the line and column within the chunk, and a message
/// whose own `line N` mentions are still relative to the chunk.
fn parse_yaml_chunk(chunk: &str) -> Result<Vec<Value>, (usize, usize, String)> {
    let mut values = Vec::new();
    for de in serde_yaml_ng::Deserializer::from_str(chunk) {
        match Value::deserialize(de) {
            Ok(Value::Null) => {}
            Ok(v) => values.push(v),
            Err(e) => {
                let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
                let message = e.to_string();
                let message = message
                    .strip_suffix(&format!(" at line {line} column {column}"))
                    .map(str::to_owned)
                    .unwrap_or_else(|| message.replacen(&format!(" at line {line} column {column}"), "", 1));
                return Err((line, column, message));
            }
        }
    }
    Ok(values)
}

/// Adds `offset` to every `line N` in a parser message.
fn shift_lines(message: &str, offset: usize) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let (head, tail) = rest.split_at(at + 5);
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        match tail[..digits].parse::<usize>() {
            Ok(n) if digits > 0 => out.push_str(&(n + offset).to_string()),
            _ => out.push_str(&tail[..digits]),
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

fn split_json(input: &Input) -> Result<Vec<Piece>, Vec<String>> {
    let text = input.text.as_str();
    let mut pieces = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut prev = 0;
    loop {
        let start = prev + (text[prev..].len() - text[prev..].trim_start().len());
        match stream.next() {
            None => break,
            Some(Ok(value)) => {
                let end = stream.byte_offset();
                pieces.push(Piece::Separator(prev..start));
                pieces.push(Piece::Document(Document {
                    range: start..end,
                    values: vec![value],
                }));
                prev = end;
            }
            Some(Err(e)) => {
                let mut message = e.to_string();
                if let Some(at) = message.rfind(" at line ") {
                    message.truncate(at);
                }
                return Err(vec![format!(
                    "{}:{}:{}: cannot parse JSON: {message}",
                    input.origin,
                    e.line(),
                    e.column()
                )]);
            }
        }
    }
    pieces.push(Piece::Separator(prev..text.len()));
    Ok(pieces)
}

fn parse_input(input: Input) -> Result<Parsed, Vec<String>> {
    let json = is_json(&input.text);
    let pieces = if json {
        split_json(&input)?
    } else {
        split_yaml(&input)?
    };
    Ok(Parsed { input, json, pieces })
}

// === objects ===

/// Where a kind keeps its pod template (empty for a Pod itself), and its resource name.
fn workload(kind: &str) -> Option<(&'static [&'static str], &'static str)> {
    Some(match kind {
        "Pod" => (&[], "pods"),
        "Deployment" => (&["spec", "template"], "deployments"),
        "StatefulSet" => (&["spec", "template"], "statefulsets"),
        "DaemonSet" => (&["spec", "template"], "daemonsets"),
        "ReplicaSet" => (&["spec", "template"], "replicasets"),
        "ReplicationController" => (&["spec", "template"], "replicationcontrollers"),
        "Job" => (&["spec", "template"], "jobs"),
        "CronJob" => (&["spec", "jobTemplate", "spec", "template"], "cronjobs"),
        _ => return None,
    })
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn is_list(v: &Value) -> bool {
    str_at(v, "/kind").is_some_and(|k| k.ends_with("List")) && v.get("items").is_some_and(Value::is_array)
}

/// Calls `f` on every object of a document value: itself, or the items of a `List` / array.
fn for_each_object(v: &Value, f: &mut impl FnMut(&Value)) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| for_each_object(i, f)),
        _ if is_list(v) => {
            if let Some(Value::Array(items)) = v.get("items") {
                items.iter().for_each(|i| for_each_object(i, f));
            }
        }
        Value::Object(_) => f(v),
        _ => {}
    }
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

/// Marks the pod template's annotations; `false` when the template is missing or not an object
/// (the module then says what is wrong).
fn mark(object: &mut Value, path: &[&str], options: &InjectOptions) -> bool {
    let Some(template) = path.iter().try_fold(&mut *object, |v, k| v.get_mut(*k)) else {
        return false;
    };
    let Some(template) = template.as_object_mut() else {
        return false;
    };
    let metadata = template
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if metadata.is_null() {
        *metadata = Value::Object(Map::new());
    }
    let Some(metadata) = metadata.as_object_mut() else {
        return false;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if annotations.is_null() {
        *annotations = Value::Object(Map::new());
    }
    let Some(annotations) = annotations.as_object_mut() else {
        return false;
    };
    if !annotations.contains_key(INJECT_ANNOTATION) {
        let value = if options.ingress { "ingress" } else { "enabled" };
        annotations.insert(INJECT_ANNOTATION.into(), Value::String(value.into()));
    }
    if options.enable_debug_sidecar && !annotations.contains_key(DEBUG_SIDECAR_ANNOTATION) {
        annotations.insert(DEBUG_SIDECAR_ANNOTATION.into(), Value::String("true".into()));
    }
    true
}

/// Linkerd's reason texts for a pod without / with `linkerd.io/inject: disabled`.
const ENABLE_ABSENT: &str =
    "neither the namespace nor the pod have the annotation \"linkerd.io/inject:enabled\"";
const DISABLE_PRESENT: &str = "pod has the annotation \"linkerd.io/inject:disabled\"";

fn explicitly_disabled(object: &Value, path: &[&str]) -> bool {
    let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
    str_at(
        object,
        &format!("{pointer}/metadata/annotations/linkerd.io~1inject"),
    ) == Some("disabled")
}

fn split_api_version(api_version: &str) -> (String, String) {
    match api_version.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), api_version.to_owned()),
    }
}

// === settings checks ===

/// The settings keys that decide where the trust anchors come from.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct TrustSettings {
    #[serde(rename = "identityTrustAnchorsPEM")]
    identity_trust_anchors_pem: Option<String>,
    policy: Option<TrustPolicy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct TrustPolicy {
    mode: Option<String>,
    trust_anchors: Option<String>,
    control_plane_namespace: Option<String>,
    trust_anchors_config_map: Option<String>,
}

/// The ConfigMap (namespace, name) the module will read the trust anchors from, if any.
fn trust_config_map(settings: &PolicySettings) -> Result<Option<(String, String)>, InjectError> {
    let s: TrustSettings = serde_json::from_value(Value::Object(settings.0.clone())).unwrap_or_default();
    let policy = s.policy.unwrap_or_default();
    if policy.mode.as_deref() == Some("verify") {
        return Err(InjectError::VerifyMode);
    }
    let inline = s.identity_trust_anchors_pem.unwrap_or_default();
    let from_config_map = match policy.trust_anchors.as_deref() {
        Some("inline") => false,
        Some("configMap") => true,
        _ => inline.trim().is_empty(),
    };
    Ok(from_config_map.then(|| {
        (
            policy.control_plane_namespace.unwrap_or_else(|| "linkerd".into()),
            policy
                .trust_anchors_config_map
                .unwrap_or_else(|| "linkerd-identity-trust-roots".into()),
        )
    }))
}

// === the transformation ===

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
        let mut parsed = Vec::new();
        let mut errors = Vec::new();
        for input in inputs {
            match parse_input(input) {
                Ok(p) => parsed.push(p),
                Err(mut e) => errors.append(&mut e),
            }
        }
        if !errors.is_empty() {
            return Err(InjectError::Parse(errors));
        }
        let host = Arc::new(self.host_context(&parsed)?);
        let instance = self.policy.instantiate(&host)?;
        let mut instance = instance;
        let validation = instance.validate_settings(&self.settings);
        if !validation.valid {
            return Err(InjectError::InvalidSettings(
                validation.message.unwrap_or_default(),
            ));
        }

        let mut report = Report::default();
        let mut rejections = Vec::new();
        let mut yaml = String::new();
        let mut uid = 0usize;
        for p in &parsed {
            if !p.json && !p.input.text.trim().is_empty() {
                let starts_with_marker = p
                    .input
                    .text
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .is_some_and(|l| marker(l).is_some());
                separate(&mut yaml, starts_with_marker);
            }
            for piece in &p.pieces {
                let doc = match piece {
                    Piece::Separator(r) => {
                        if !p.json {
                            yaml.push_str(&p.input.text[r.clone()]);
                        }
                        continue;
                    }
                    Piece::Document(doc) => doc,
                };
                let original = &p.input.text[doc.range.clone()];
                if p.json {
                    separate(&mut yaml, false);
                }
                let mut changed = Vec::with_capacity(doc.values.len());
                let mut any = false;
                for value in &doc.values {
                    let mut ctx = Ctx {
                        origin: &p.input.origin,
                        host: &host,
                        report: &mut report,
                        rejections: &mut rejections,
                        uid: &mut uid,
                    };
                    match self.transform(value, &mut ctx) {
                        Some(v) => {
                            any = true;
                            changed.push(v);
                        }
                        None => changed.push(value.clone()),
                    }
                }
                if any {
                    let comments = leading_comments(original);
                    yaml.push_str(&comments);
                    if original[comments.len()..].starts_with("---") && !yaml.ends_with("---\n") {
                        yaml.push_str("---\n");
                    }
                    for (i, v) in changed.iter().enumerate() {
                        if i > 0 {
                            yaml.push_str("---\n");
                        }
                        yaml.push_str(&to_yaml(v)?);
                    }
                } else {
                    yaml.push_str(original);
                    if p.json && !original.ends_with('\n') {
                        yaml.push('\n');
                    }
                }
            }
        }
        if !rejections.is_empty() {
            return Err(InjectError::Rejected(rejections));
        }
        Ok(InjectOutput { yaml, report })
    }

    /// The cluster state: the context, the input's Namespaces, synthetic Namespaces for the rest.
    fn host_context(&self, parsed: &[Parsed]) -> Result<HostContext, InjectError> {
        let mut state = self.context.clone();
        let mut used = BTreeSet::new();
        for p in parsed {
            for piece in &p.pieces {
                let Piece::Document(doc) = piece else { continue };
                for value in &doc.values {
                    for_each_object(value, &mut |o| {
                        let kind = str_at(o, "/kind").unwrap_or("");
                        if kind == "Namespace" && str_at(o, "/apiVersion") == Some("v1") {
                            let _ = state.insert(o.clone());
                        } else if workload(kind).is_some() {
                            used.insert(object_namespace(o, &self.options));
                        }
                    });
                }
            }
        }
        for ns in used {
            if state.get("v1", "Namespace", &ns, None).is_err() {
                state
                    .insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
                    .map_err(InjectError::State)?;
            }
        }
        if let Some((namespace, name)) = trust_config_map(&self.settings)? {
            let found = state
                .get("v1", "ConfigMap", &name, Some(&namespace))
                .ok()
                .and_then(|cm| str_at(cm, "/data/ca-bundle.crt"))
                .is_some_and(|b| !b.trim().is_empty());
            if !found {
                return Err(InjectError::NoTrustAnchors { namespace, name });
            }
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
        let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(state, FaultPlan::new())));
        Ok(HostContext::new(
            self.policy.name(),
            allow_list,
            lookups,
            LogSink::Stderr,
        ))
    }

    /// A document value with injected objects, or `None` when nothing in it changes.
    fn transform(&self, value: &Value, ctx: &mut Ctx<'_>) -> Option<Value> {
        match value {
            Value::Array(items) => self.transform_items(items, ctx).map(Value::Array),
            _ if is_list(value) => {
                let items = value.get("items").and_then(Value::as_array)?;
                let items = self.transform_items(items, ctx)?;
                let mut list = value.clone();
                list["items"] = Value::Array(items);
                Some(list)
            }
            _ => self.transform_object(value, ctx),
        }
    }

    fn transform_items(&self, items: &[Value], ctx: &mut Ctx<'_>) -> Option<Vec<Value>> {
        let mut any = false;
        let out = items
            .iter()
            .map(|i| match self.transform(i, ctx) {
                Some(v) => {
                    any = true;
                    v
                }
                None => i.clone(),
            })
            .collect();
        any.then_some(out)
    }

    fn transform_object(&self, object: &Value, ctx: &mut Ctx<'_>) -> Option<Value> {
        let kind = str_at(object, "/kind").unwrap_or("").to_owned();
        let name = object_name(object);
        let mut entry = Entry {
            origin: ctx.origin.to_owned(),
            kind: kind.clone(),
            name: name.clone(),
            namespace: None,
            verdict: Verdict::Ignored,
            warnings: Vec::new(),
        };
        let Some((path, resource)) = workload(&kind).filter(|_| object.is_object()) else {
            ctx.report.entries.push(entry);
            return None;
        };
        let namespace = object_namespace(object, &self.options);
        entry.namespace = Some(namespace.clone());
        let mut marked = object.clone();
        mark(&mut marked, path, &self.options);
        let (group, version) = split_api_version(str_at(object, "/apiVersion").unwrap_or(""));
        *ctx.uid += 1;
        let gvk = GroupVersionKind {
            group: group.clone(),
            version: version.clone(),
            kind: kind.clone(),
        };
        let gvr = GroupVersionResource {
            group,
            version,
            resource: resource.into(),
        };
        let request = AdmissionRequest {
            uid: format!("inject-{}", ctx.uid),
            kind: gvk.clone(),
            resource: gvr.clone(),
            sub_resource: None,
            request_kind: Some(gvk),
            request_resource: Some(gvr),
            request_sub_resource: None,
            name: str_at(object, "/metadata/name").map(str::to_owned),
            namespace: Some(namespace),
            operation: "CREATE".into(),
            user_info: UserInfo {
                username: Some(USERNAME.into()),
                ..Default::default()
            },
            object: Some(marked.clone()),
            old_object: None,
            dry_run: Some(true),
            options: None,
        };
        let what = format!("{}: {}/{}", ctx.origin, kind.to_ascii_lowercase(), name);
        let response = match self
            .policy
            .instantiate(ctx.host)
            .and_then(|mut i| i.validate(&request, &self.settings))
        {
            Ok(r) => r,
            Err(e) => {
                ctx.rejections.push(format!("{what}: {e}"));
                return None;
            }
        };
        if !response.allowed {
            ctx.rejections
                .push(format!("{what}: rejected by the policy: {}", response.message()));
            return None;
        }
        // the module's "injection skipped" warning repeats what the report line says
        entry.warnings = response
            .warnings
            .clone()
            .unwrap_or_default()
            .into_iter()
            .filter(|w| !w.starts_with("Linkerd sidecar proxy injection skipped:"))
            .collect();
        let audit: BTreeMap<String, String> = response.audit_annotations.clone().unwrap_or_default();
        let injection = audit.get("injection").map(String::as_str).unwrap_or("");
        if injection != "injected" {
            entry.verdict = match injection.strip_prefix("skipped: ") {
                // An explicit `disabled` in a namespace that does not enable injection: the
                // webhook's reason is the missing `enabled`; say what the CLI says.
                Some(reasons) if explicitly_disabled(object, path) => {
                    Verdict::Skipped(reasons.replace(ENABLE_ABSENT, DISABLE_PRESENT))
                }
                Some(reasons) => Verdict::Skipped(reasons.to_owned()),
                None => Verdict::Skipped(format!("not injected by the policy ({injection})")),
            };
            ctx.report.entries.push(entry);
            return None;
        }
        let patch = match response.decoded_patch() {
            Ok(Some(p)) => p,
            Ok(None) => {
                entry.verdict = Verdict::Skipped("the policy returned no change".into());
                ctx.report.entries.push(entry);
                return None;
            }
            Err(e) => {
                ctx.rejections.push(format!("{what}: {e}"));
                return None;
            }
        };
        let mut mutated = marked;
        if let Err(e) = json_patch::patch(&mut mutated, &patch) {
            ctx.rejections
                .push(format!("{what}: cannot apply the policy's patch: {e}"));
            return None;
        }
        entry.verdict = Verdict::Injected;
        ctx.report.entries.push(entry);
        Some(mutated)
    }
}

struct Ctx<'a> {
    origin: &'a str,
    host: &'a Arc<HostContext>,
    report: &'a mut Report,
    rejections: &'a mut Vec<String>,
    uid: &'a mut usize,
}

/// Between inputs, and before every JSON document: ends the output so far with a newline and a
/// `---` marker, unless the next text starts with its own marker.
fn separate(yaml: &mut String, next_starts_with_marker: bool) {
    if yaml.is_empty() {
        return;
    }
    if !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    if !next_starts_with_marker && !yaml.ends_with("---\n") {
        yaml.push_str("---\n");
    }
}

/// The comment and blank lines before a document's content, kept when it is rewritten.
fn leading_comments(text: &str) -> String {
    text.split_inclusive('\n')
        .take_while(|l| {
            let t = l.trim();
            t.is_empty() || t.starts_with('#')
        })
        .collect()
}

fn to_yaml(value: &Value) -> Result<String, InjectError> {
    serde_yaml_ng::to_string(value)
        .map_err(|e| InjectError::Rejected(vec![format!("cannot write YAML: {e}")]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Vec<String> {
        let input = Input::new("t.yaml", text);
        split_yaml(&input)
            .unwrap()
            .into_iter()
            .map(|p| match p {
                Piece::Separator(r) => format!("S{:?}", &text[r]),
                Piece::Document(d) => format!("D{}{:?}", d.values.len(), &text[d.range]),
            })
            .collect()
    }

    #[test]
    fn splits_yaml_keeping_every_byte() {
        let text = "# head\na: 1\n---\nb: 2\n--- # c\n\n---\n...\nc: 3";
        let p = pieces(text);
        assert_eq!(
            p,
            vec![
                r##"D1"# head\na: 1\n""##,
                r#"S"---\n""#,
                r#"D1"b: 2\n""#,
                r##"S"--- # c\n""##,
                r#"D0"\n""#,
                r#"S"---\n""#,
                r#"S"...\n""#,
                r#"D1"c: 3""#,
            ]
        );
        assert_eq!(pieces("--- {a: 1}\n"), vec![r#"D1"--- {a: 1}\n""#]);
        // `----` and `---x` are content, not markers
        assert_eq!(pieces("a: |\n  x\n---x: 1\n").len(), 1);
    }

    #[test]
    fn parse_errors_name_file_and_line() {
        let input = Input::new("bad.yaml", "a: 1\n---\nb: 1\nc: [\n");
        let err = split_yaml(&input).unwrap_err();
        assert_eq!(err.len(), 1);
        assert!(
            err[0].starts_with("bad.yaml:4:") || err[0].starts_with("bad.yaml:5:"),
            "{err:?}"
        );
        assert_eq!(
            shift_lines("x at line 3 column 2, y at line 1", 10),
            "x at line 13 column 2, y at line 11"
        );
        let input = Input::new("x.json", "{\"a\": 1}\n{\"b\": }");
        let err = split_json(&input).unwrap_err();
        assert!(err[0].starts_with("x.json:2:"), "{err:?}");
    }

    #[test]
    fn json_streams_and_lists() {
        let input = Input::new(
            "x.json",
            " {\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\"}]}\n[1]\n",
        );
        let p = split_json(&input).unwrap();
        let docs: Vec<&Document> = p
            .iter()
            .filter_map(|p| match p {
                Piece::Document(d) => Some(d),
                _ => None,
            })
            .collect();
        assert_eq!(docs.len(), 2);
        assert!(is_list(&docs[0].values[0]));
        let mut n = 0;
        for_each_object(&docs[0].values[0], &mut |_| n += 1);
        assert_eq!(n, 1);
    }

    #[test]
    fn marks_templates() {
        let opts = InjectOptions::default();
        let mut d = json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {}}}}}});
        assert!(mark(&mut d, workload("CronJob").unwrap().0, &opts));
        assert_eq!(
            d.pointer("/spec/jobTemplate/spec/template/metadata/annotations/linkerd.io~1inject"),
            Some(&json!("enabled"))
        );
        let mut p = json!({"kind": "Pod", "metadata": {"annotations": {"linkerd.io/inject": "disabled"}}});
        let opts = InjectOptions {
            ingress: true,
            enable_debug_sidecar: true,
            ..Default::default()
        };
        assert!(mark(&mut p, &[], &opts));
        assert_eq!(
            p["metadata"]["annotations"],
            json!({"linkerd.io/inject": "disabled", "config.linkerd.io/enable-debug-sidecar": "true"})
        );
        let mut no_template = json!({"kind": "Deployment", "spec": {}});
        assert!(!mark(&mut no_template, workload("Deployment").unwrap().0, &opts));
        assert_eq!(no_template, json!({"kind": "Deployment", "spec": {}}));
    }

    #[test]
    fn trust_sources() {
        let s = |v: Value| PolicySettings::from_value(&v).unwrap();
        assert_eq!(
            trust_config_map(&s(json!({"identityTrustAnchorsPEM": "x"}))).unwrap(),
            None
        );
        assert_eq!(
            trust_config_map(&s(json!({}))).unwrap(),
            Some(("linkerd".into(), "linkerd-identity-trust-roots".into()))
        );
        assert_eq!(
            trust_config_map(&s(json!({"identityTrustAnchorsPEM": "x",
                "policy": {"trustAnchors": "configMap", "controlPlaneNamespace": "l5d"}})))
            .unwrap(),
            Some(("l5d".into(), "linkerd-identity-trust-roots".into()))
        );
        assert!(matches!(
            trust_config_map(&s(json!({"policy": {"mode": "verify"}}))),
            Err(InjectError::VerifyMode)
        ));
    }

    #[test]
    fn report_layout() {
        let entry = |kind: &str, name: &str, verdict, warnings: Vec<&str>| Entry {
            origin: "f".into(),
            kind: kind.into(),
            name: name.into(),
            namespace: None,
            verdict,
            warnings: warnings.into_iter().map(String::from).collect(),
        };
        let r = Report {
            entries: vec![
                entry("Deployment", "web", Verdict::Injected, vec!["w1"]),
                entry(
                    "Pod",
                    "p",
                    Verdict::Skipped("hostNetwork is enabled".into()),
                    vec![],
                ),
                entry("Service", "s", Verdict::Ignored, vec![]),
                entry("", "", Verdict::Ignored, vec![]),
            ],
        };
        assert_eq!(
            r.render(),
            "\n‼ deployment/web: w1\n\ndeployment \"web\" injected\npod \"p\" skipped: hostNetwork is enabled\n\
             service \"s\" skipped: not a pod or a workload\ndocument missing \"kind\" field, skipped\n\n"
        );
        assert_eq!((r.injected(), r.skipped()), (1, 1));
    }
}
