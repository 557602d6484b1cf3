//! One admission request through the core: kind and operation dispatch, namespace lookup,
//! decision, configuration, owner, rendering. Pure apart from the [`Cluster`] lookups.

use crate::annotations as ann;
use crate::cluster::{Cluster, Lookup};
use crate::config::{self, Layers};
use crate::control_plane;
use crate::decide::{self, Decision, DecisionInput};
use crate::guard;
use crate::inject::Plan;
use crate::opaque;
use crate::outcome::{Outcome, Verdict};
use crate::owner::{self, Owner, Resolution};
use crate::pod;
use crate::render::Context;
use crate::settings::{LookupFailure, Mode, Settings};
use crate::trust;
use crate::verify;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

type StringMap = BTreeMap<String, String>;

/// The parts of an AdmissionRequest the core reads.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub kind: &'a str,
    pub operation: &'a str,
    pub namespace: &'a str,
    pub object: &'a Value,
}

/// Where a kind keeps its pod template (empty for a Pod itself).
fn template_path(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&[]),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "ReplicationController" | "Job" => {
            Some(&["spec", "template"])
        }
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template"]),
        _ => None,
    }
}

/// What to add to the request's object: decided on the borrowed object, applied to an owned
/// one (the shell's, so the request object is never cloned).
#[derive(Debug)]
pub enum Edit {
    Inject {
        path: &'static [&'static str],
        plan: Box<Plan>,
    },
    Annotate {
        path: &'static [&'static str],
        additions: BTreeMap<String, String>,
    },
}

impl Edit {
    /// Applies the edit; `false` when the path does not lead to an object.
    pub fn apply(self, object: &mut Value) -> bool {
        match self {
            Edit::Inject { path, plan } => match navigate_mut(object, path) {
                Some(target) => {
                    plan.apply(target);
                    true
                }
                None => false,
            },
            Edit::Annotate { path, additions } => match navigate_mut(object, path) {
                Some(target) => {
                    let annotations = pod::object_entry(pod::object_entry(target, "metadata"), "annotations");
                    for (k, v) in additions {
                        annotations.insert(k, Value::String(v));
                    }
                    true
                }
                None => false,
            },
        }
    }
}

/// An outcome, and the edit that produces its mutated object.
pub struct Admission {
    pub outcome: Outcome,
    pub edit: Option<Edit>,
}

impl From<Outcome> for Admission {
    fn from(outcome: Outcome) -> Self {
        Self { outcome, edit: None }
    }
}

impl Admission {
    /// Applies the edit to `object` (the request's object, owned).
    pub fn finish(self, mut object: Value) -> Outcome {
        let mut out = self.outcome;
        if let Some(edit) = self.edit
            && edit.apply(&mut object)
        {
            out.mutated = Some(object);
        }
        out
    }
}

pub fn admit(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Outcome {
    let a = admit_edit(req, settings, cluster);
    if a.edit.is_some() {
        a.finish(req.object.clone())
    } else {
        a.outcome
    }
}

pub fn admit_edit(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Admission {
    let applies = req.kind == "Service" || template_path(req.kind).is_some();
    if req.operation != "CREATE" || !applies || (settings.policy.mode == Mode::Verify && req.kind != "Pod") {
        return Outcome::unchanged(Verdict::NotApplicable).into();
    }
    match control_plane::in_effect(settings, cluster) {
        Ok(in_effect) => {
            let mut admission = admit_kind(req, &in_effect.settings, cluster);
            if let Some(reason) = in_effect.fallback {
                note_values_fallback(&mut admission.outcome, &reason);
            }
            admission
        }
        Err(e) => Outcome::rejected(e.to_string()).into(),
    }
}

/// Says that `linkerd-config` was unusable and the settings alone were used.
fn note_values_fallback(out: &mut Outcome, reason: &control_plane::ValuesError) {
    out.warnings.push(format!(
        "{reason}; the Linkerd values in effect are this policy's settings alone (policy.linkerdConfigFailure: settings)"
    ));
    out.audit_annotations
        .insert("values".into(), "settings only: linkerd-config unusable".into());
}

/// One CREATE of a kind this policy handles, with the settings in effect.
fn admit_kind(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Admission {
    if settings.policy.mode == Mode::Verify {
        // Only pods carry a proxy; templates are injected when their pods are created.
        return match req.kind {
            "Pod" => admit_template(req, &[], settings, cluster),
            _ => Outcome::unchanged(Verdict::NotApplicable).into(),
        };
    }
    if req.kind == "Service" {
        return admit_service(req, settings, cluster);
    }
    match template_path(req.kind) {
        Some(path) => admit_template(req, path, settings, cluster),
        None => Outcome::unchanged(Verdict::NotApplicable).into(),
    }
}

fn request_namespace<'a>(req: &Request<'a>) -> Result<&'a str, String> {
    let ns = if req.namespace.is_empty() {
        req.object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
    } else {
        req.namespace
    };
    if ns.is_empty() {
        Err(format!(
            "request.namespace: missing; a namespaced {} needs one",
            req.kind
        ))
    } else {
        Ok(ns)
    }
}

/// The namespace's annotations, or the outcome to return when they cannot be read.
/// The namespace's annotations and labels, or the outcome to return when they cannot be read.
/// Labels are only asked for when a setting needs them.
fn namespace_metadata(
    ns: &str,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<(StringMap, StringMap), Box<Outcome>> {
    let lookup = Lookup {
        api_version: "v1",
        kind: "Namespace",
        name: ns.to_string(),
        namespace: None,
        disable_cache: false,
        field_masks: if settings.policy.exempt_label().is_some() {
            &["metadata.annotations", "metadata.labels"]
        } else {
            &["metadata.annotations"]
        },
    };
    match cluster.get(&lookup) {
        Ok(obj) => {
            let meta = obj.get("metadata").unwrap_or(&Value::Null);
            Ok((
                pod::string_map(meta, "annotations"),
                pod::string_map(meta, "labels"),
            ))
        }
        Err(e) => {
            let message = format!(
                "could not read Namespace {ns} to decide on proxy injection: {e} (usually transient; the API server will retry)"
            );
            match settings.policy.namespace_lookup_failure {
                LookupFailure::Reject => Err(Box::new(Outcome::rejected(message))),
                LookupFailure::Skip => {
                    let mut out = Outcome::unchanged(Verdict::NotApplicable);
                    out.warnings.push(format!(
                        "{message}; admitted without a proxy (policy.namespaceLookupFailure: skip)"
                    ));
                    out.audit_annotations
                        .insert("injection".into(), "skipped: namespace lookup failed".into());
                    Err(Box::new(out))
                }
            }
        }
    }
}

fn admit_service(req: &Request<'_>, settings: &Settings, cluster: &dyn Cluster) -> Admission {
    let Some(obj) = req.object.as_object() else {
        return Outcome::rejected("object: must be a Service object").into();
    };
    let meta = obj.get("metadata").unwrap_or(&Value::Null);
    if let Err(msg) = check_metadata(meta, "object.metadata") {
        return Outcome::rejected(msg).into();
    }
    if pod::string_map(meta, "annotations").contains_key(ann::OPAQUE_PORTS) {
        return Outcome::unchanged(Verdict::NotApplicable).into();
    }
    let ns = match request_namespace(req) {
        Ok(ns) => ns,
        Err(msg) => return Outcome::rejected(msg).into(),
    };
    let ns_ann = match namespace_metadata(ns, settings, cluster) {
        Ok((a, _)) => a,
        Err(outcome) => return (*outcome).into(),
    };
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let value = opaque::default_annotation(
        "Service",
        spec,
        ns_ann.get(ann::OPAQUE_PORTS).map(String::as_str),
        &settings.proxy.opaque_ports,
    );
    let out = Outcome::unchanged(Verdict::NotApplicable);
    let edit = value.map(|value| Edit::Annotate {
        path: &[],
        additions: BTreeMap::from([(ann::OPAQUE_PORTS.to_string(), value)]),
    });
    Admission { outcome: out, edit }
}

fn check_metadata(meta: &Value, at: &str) -> Result<(), String> {
    if !(meta.is_null() || meta.is_object()) {
        return Err(format!("{at}: must be an object"));
    }
    for key in ["annotations", "labels"] {
        if let Some(v) = meta.get(key)
            && !(v.is_null() || v.is_object())
        {
            return Err(format!("{at}.{key}: must be an object of strings"));
        }
    }
    Ok(())
}

/// Checks the shapes injection will edit, so no input is ever replaced.
fn check_template(template: &Value, at: &str) -> Result<(), String> {
    if !template.is_object() {
        return Err(format!("{at}: must be an object"));
    }
    check_metadata(
        template.get("metadata").unwrap_or(&Value::Null),
        &format!("{at}.metadata"),
    )?;
    let spec = template.get("spec").unwrap_or(&Value::Null);
    if !spec.is_object() {
        return Err(format!("{at}.spec: must be an object"));
    }
    for key in ["containers", "initContainers", "volumes"] {
        if let Some(v) = spec.get(key)
            && !(v.is_null() || v.is_array())
        {
            return Err(format!("{at}.spec.{key}: must be an array"));
        }
    }
    // Container names are unique across containers and init containers (the API server
    // enforces it too); a clear message here beats injecting into a pod that cannot exist.
    let mut names = std::collections::BTreeSet::new();
    for key in ["initContainers", "containers"] {
        for (i, c) in pod::list(spec, key).iter().enumerate() {
            let Some(obj) = c.as_object() else {
                return Err(format!("{at}.spec.{key}[{i}]: must be an object"));
            };
            if let Some(name) = obj.get("name").and_then(Value::as_str)
                && !names.insert(name)
            {
                return Err(format!(
                    "{at}.spec.{key}[{i}].name: duplicate container name \"{name}\""
                ));
            }
        }
    }
    Ok(())
}

fn navigate<'v>(object: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(object, |v, k| v.get(*k))
}

fn navigate_mut<'v>(object: &'v mut Value, path: &[&str]) -> Option<&'v mut Map<String, Value>> {
    path.iter()
        .try_fold(object, |v, k| v.get_mut(*k))?
        .as_object_mut()
}

fn admit_template(
    req: &Request<'_>,
    path: &'static [&'static str],
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Admission {
    let at = if path.is_empty() {
        "object".to_string()
    } else {
        format!("object.{}", path.join("."))
    };
    let Some(template) = navigate(req.object, path) else {
        return Outcome::rejected(format!("{at}: missing")).into();
    };
    if let Err(msg) = check_template(template, &at) {
        return Outcome::rejected(msg).into();
    }
    let ns = match request_namespace(req) {
        Ok(ns) => ns,
        Err(msg) => return Outcome::rejected(msg).into(),
    };
    let (ns_ann, ns_labels) = match namespace_metadata(ns, settings, cluster) {
        Ok(m) => m,
        Err(outcome) => return (*outcome).into(),
    };
    let meta = template.get("metadata").unwrap_or(&Value::Null);
    let spec = template.get("spec").unwrap_or(&Value::Null);
    let pod_ann = pod::string_map(meta, "annotations");
    let decision = decide::decide(DecisionInput {
        spec,
        pod_inject: pod_ann.get(ann::INJECT).map(String::as_str),
        ns_inject: ns_ann.get(ann::INJECT).map(String::as_str),
        token_projection: settings.identity.service_account_token_projection,
    });
    if settings.policy.mode == Mode::Verify {
        return verify::verify(spec, &pod_ann, &decision, ns, settings).into();
    }
    let ingress = match decision {
        Decision::Skip(reasons) => {
            return skipped(req, path, &pod_ann, &ns_ann, spec, reasons, settings);
        }
        Decision::Inject { ingress, .. } => ingress,
    };

    let labels = pod::string_map(meta, "labels");
    let layers = Layers {
        pod: &pod_ann,
        namespace: &ns_ann,
        spec,
        labels: &labels,
    };
    let config = match config::effective(settings, &layers, ingress) {
        Ok(c) => c,
        Err(e) => return Outcome::rejected(e.to_string()).into(),
    };
    let bundle = match trust::trust_anchors(settings, cluster) {
        Ok(b) => b,
        Err(e) => return Outcome::rejected(e.to_string()).into(),
    };
    let (owner, resolution) = if path.is_empty() {
        let r = owner::resolve(meta, ns, settings.policy.owner_resolution, cluster);
        (r.owner, r.resolution)
    } else {
        let name = req
            .object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        (
            Owner {
                kind: req.kind.to_ascii_lowercase(),
                name: name.to_string(),
            },
            Resolution::Direct,
        )
    };

    let cx = Context::new(&config, spec, &bundle);
    let subject = guard::Subject {
        pod_annotations: &pod_ann,
        ns_annotations: &ns_ann,
        ns_labels: &ns_labels,
        namespace: ns,
    };
    if let Err(e) = guard::check(settings, &config, &cx, &subject) {
        return Outcome::rejected(e.to_string()).into();
    }
    let mut annotations: BTreeMap<String, String> = ann::INHERITED_FROM_NAMESPACE
        .iter()
        .filter(|k| !pod_ann.contains_key(**k))
        .filter(|k| config.rendering.version.knows_annotation(k))
        .filter_map(|k| ns_ann.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    annotations.insert(ann::CREATED_BY.into(), settings.policy.created_by.clone());
    annotations.insert(ann::PROXY_VERSION.into(), cx.proxy_version().to_string());
    annotations.insert(ann::TRUST_ROOT_SHA256.into(), trust::sha256_hex(&bundle));
    if !pod_ann.contains_key(ann::OPAQUE_PORTS)
        && !ns_ann.contains_key(ann::OPAQUE_PORTS)
        && let Some(v) = opaque::default_annotation("Pod", spec, None, &settings.proxy.opaque_ports)
    {
        annotations.insert(ann::OPAQUE_PORTS.into(), v);
    }
    let mut new_labels = BTreeMap::new();
    new_labels.insert(
        ann::CONTROL_PLANE_NS_LABEL.to_string(),
        settings.policy.control_plane_namespace.clone(),
    );
    new_labels.insert(ann::WORKLOAD_NS_LABEL.to_string(), ns.to_string());
    if let Some((k, v)) = owner.label() {
        new_labels.insert(k, v);
    }
    let plan = Plan::new(&cx, annotations, new_labels);

    let mut out = Outcome::unchanged(Verdict::Injected { owner: owner.clone() });
    out.warnings = config.warnings;
    if resolution.is_fallback() {
        out.warnings.push(format!(
            "owner of this pod resolved by {}: labelled linkerd.io/proxy-{}={}",
            resolution.describe(),
            owner.kind,
            owner.name
        ));
    }
    out.audit_annotations
        .insert("injection".into(), "injected".into());
    if let Some(note) = config.rendering.audit_note() {
        out.audit_annotations.insert("rendering".into(), note);
    }
    out.audit_annotations.insert(
        "owner".into(),
        format!("{}/{} ({})", owner.kind, owner.name, resolution.describe()),
    );
    Admission {
        outcome: out,
        edit: Some(Edit::Inject {
            path,
            plan: Box::new(plan),
        }),
    }
}

/// A pod that gets no proxy: Linkerd's opaque-ports annotation, and the reasons when the pod
/// (or its namespace) asked for a proxy.
fn skipped(
    _req: &Request<'_>,
    path: &'static [&'static str],
    pod_ann: &BTreeMap<String, String>,
    ns_ann: &BTreeMap<String, String>,
    spec: &Value,
    reasons: Vec<decide::SkipReason>,
    settings: &Settings,
) -> Admission {
    let text = reasons
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    // The pod's own value counts first; any value but "disabled" (a mistyped one included) is
    // a request for a proxy. A pod that already has one is not missing it: say nothing, so a
    // second pass (reinvocation) leaves an injected pod exactly as it is.
    let effective = pod_ann
        .get(ann::INJECT)
        .filter(|v| !v.is_empty())
        .or(ns_ann.get(ann::INJECT));
    let asked = effective.is_some_and(|v| !v.is_empty() && v != "disabled")
        && !reasons.contains(&decide::SkipReason::SidecarExists);
    let mut additions = BTreeMap::new();
    if !pod_ann.contains_key(ann::OPAQUE_PORTS)
        && let Some(v) = opaque::default_annotation(
            "Pod",
            spec,
            ns_ann.get(ann::OPAQUE_PORTS).map(String::as_str),
            &settings.proxy.opaque_ports,
        )
    {
        additions.insert(ann::OPAQUE_PORTS.to_string(), v);
    }
    let mut out = Outcome::unchanged(Verdict::Skipped(reasons));
    if asked {
        additions.insert(ann::SKIP_REASONS.to_string(), text.clone());
        out.warnings
            .push(format!("Linkerd sidecar proxy injection skipped: {text}"));
    }
    out.audit_annotations
        .insert("injection".into(), format!("skipped: {text}"));
    let edit = (!additions.is_empty()).then_some(Edit::Annotate { path, additions });
    Admission { outcome: out, edit }
}
