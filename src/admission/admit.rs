//! One admission request through the core: kind and operation dispatch, namespace lookup,
//! decision, configuration, owner, rendering. Pure apart from the [`Cluster`] lookups.

use crate::admission::decide::{self, Decision, DecisionInput};
use crate::admission::guard;
use crate::admission::opaque;
use crate::admission::outcome::{INJECTED, INJECTION_AUDIT_KEY, Outcome, Verdict, skipped_audit};
use crate::admission::owner::{self, Owner, Resolution};
use crate::admission::verify;
use crate::annotations as ann;
use crate::cluster::{Cluster, Lookup};
use crate::pod;
use crate::render::Context;
use crate::render::additions::Additions;
use crate::render::config::{self, Layers};
use crate::render::inject::Plan;
use crate::values::config_maps::ControlPlaneReads;
use crate::values::linkerd_config::{Read, Values};
use crate::values::settings::{LookupFailure, Mode, Settings, StaleProxy};
use crate::values::trust;
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

/// What to add to the request's object: decided on the borrowed object, carried out on the
/// owned one ([`Admission::finish`]).
#[derive(Debug)]
pub struct Edit {
    /// The template's path from the object's root (empty for a Pod or a Service itself).
    pub path: &'static [&'static str],
    pub additions: Additions,
}

impl Edit {
    /// Applies the edit; `false` when the path does not lead to an object.
    pub fn apply(self, object: &mut Value) -> bool {
        match navigate_mut(object, self.path) {
            Some(target) => {
                self.additions.apply(target);
                true
            }
            None => false,
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
    let reads = ControlPlaneReads::new(cluster, &settings.policy);
    let values = Values::new(settings, &reads);
    let mut admission = admit_kind(req, &values, &reads);
    note_values(&mut admission.outcome, values.read());
    admission
}

/// Says when `linkerd-config` was unusable: the settings alone were used, or outputs that need
/// its values were left out. A rejection for it already says why.
fn note_values(out: &mut Outcome, read: Read<'_>) {
    match read {
        Read::NotRead | Read::Used => {}
        Read::SettingsAlone(reason) => {
            out.warnings.push(format!(
                "{reason}; the Linkerd values in effect are this policy's settings alone (policy.linkerdConfigFailure: settings)"
            ));
            out.audit_annotations
                .insert("values".into(), "settings only: linkerd-config unusable".into());
        }
        Read::Unusable(reason, left_out) if !left_out.is_empty() && !out.is_rejected() => {
            out.warnings.push(format!(
                "{reason}; admitted without {} (an unusable linkerd-config rejects only pods that get a proxy)",
                left_out.join(" and ")
            ));
            out.audit_annotations
                .insert("values".into(), "not used: linkerd-config unusable".into());
        }
        Read::Unusable(..) => {}
    }
}

/// One CREATE of a kind this policy handles.
fn admit_kind(req: &Request<'_>, values: &Values<'_, '_>, cluster: &dyn Cluster) -> Admission {
    if values.settings().policy.mode == Mode::Verify {
        // Only pods carry a proxy; templates are injected when their pods are created.
        return match req.kind {
            "Pod" => admit_template(req, &[], values, cluster),
            _ => Outcome::unchanged(Verdict::NotApplicable).into(),
        };
    }
    if req.kind == "Service" {
        return admit_service(req, values, cluster);
    }
    match template_path(req.kind) {
        Some(path) => admit_template(req, path, values, cluster),
        None => Outcome::unchanged(Verdict::NotApplicable).into(),
    }
}

/// What an unusable `linkerd-config` leaves out of a verify-mode answer.
const STALE_CHECK: &str = "the stale-proxy check (proxy.image.version, linkerdVersion)";

fn request_namespace<'a>(req: &Request<'a>) -> Result<&'a str, String> {
    let ns = if req.namespace.is_empty() {
        navigate(req.object, &["metadata", "namespace"])
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
                    out.audit_annotations.insert(
                        INJECTION_AUDIT_KEY.into(),
                        skipped_audit("namespace lookup failed"),
                    );
                    Err(Box::new(out))
                }
            }
        }
    }
}

fn admit_service(req: &Request<'_>, values: &Values<'_, '_>, cluster: &dyn Cluster) -> Admission {
    let Some(obj) = req.object.as_object() else {
        return Outcome::rejected("object: must be a Service object").into();
    };
    let meta = obj.get("metadata").unwrap_or(&Value::Null);
    if let Err(msg) = check_metadata(meta, "object") {
        return Outcome::rejected(msg).into();
    }
    if pod::string_map(meta, "annotations").contains_key(ann::OPAQUE_PORTS) {
        return Outcome::unchanged(Verdict::NotApplicable).into();
    }
    let ns = match request_namespace(req) {
        Ok(ns) => ns,
        Err(msg) => return Outcome::rejected(msg).into(),
    };
    let ns_ann = match namespace_metadata(ns, values.settings(), cluster) {
        Ok((a, _)) => a,
        Err(outcome) => return (*outcome).into(),
    };
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    // the values are read only when the Service has a port the default list could name
    let ns_value = ns_ann.get(ann::OPAQUE_PORTS).map(String::as_str);
    let value = opaque::default_annotation("Service", spec, ns_value, || values.opaque_ports());
    let out = Outcome::unchanged(Verdict::NotApplicable);
    let edit = value.map(|value| Edit {
        path: &[],
        additions: Additions::annotations(BTreeMap::from([(ann::OPAQUE_PORTS.to_string(), value)])),
    });
    Admission { outcome: out, edit }
}

/// `at` names the metadata's parent: it is formatted only for a message.
fn check_metadata(meta: &Value, at: &str) -> Result<(), String> {
    if !(meta.is_null() || meta.is_object()) {
        return Err(format!("{at}.metadata: must be an object"));
    }
    for key in ["annotations", "labels"] {
        if let Some(v) = meta.get(key)
            && !(v.is_null() || v.is_object())
        {
            return Err(format!("{at}.metadata.{key}: must be an object of strings"));
        }
    }
    Ok(())
}

/// Checks the shapes injection will edit, so no input is ever replaced.
fn check_template(template: &Value, at: &str) -> Result<(), String> {
    if !template.is_object() {
        return Err(format!("{at}: must be an object"));
    }
    check_metadata(template.get("metadata").unwrap_or(&Value::Null), at)?;
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

/// The value at `path` of keys (`Value::pointer` would allocate twice per key).
fn navigate<'v>(object: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(object, |v, k| v.get(*k))
}

fn navigate_mut<'v>(object: &'v mut Value, path: &[&str]) -> Option<&'v mut Map<String, Value>> {
    path.iter()
        .try_fold(object, |v, k| v.get_mut(*k))?
        .as_object_mut()
}

/// A pod, or a workload's pod template at `path`: the decision, then a skip or an injection.
fn admit_template(
    req: &Request<'_>,
    path: &'static [&'static str],
    values: &Values<'_, '_>,
    cluster: &dyn Cluster,
) -> Admission {
    decide_template(req, path, values, cluster).unwrap_or_else(|stop| (*stop).into())
}

/// The pod being admitted and its namespace, as read from the request.
struct Template<'a> {
    path: &'static [&'static str],
    meta: &'a Value,
    spec: &'a Value,
    namespace: &'a str,
    object_namespace: &'a str,
    pod_ann: StringMap,
    ns_ann: StringMap,
    ns_labels: StringMap,
}

impl Template<'_> {
    fn guard_subject(&self) -> guard::Subject<'_> {
        guard::Subject {
            pod_annotations: &self.pod_ann,
            ns_annotations: &self.ns_ann,
            ns_labels: &self.ns_labels,
            namespace: self.namespace,
        }
    }
}

/// `Err` is the outcome that ends the request early: a rejection, or a namespace that could
/// not be read (boxed: it is large and rare).
fn decide_template(
    req: &Request<'_>,
    path: &'static [&'static str],
    values: &Values<'_, '_>,
    cluster: &dyn Cluster,
) -> Result<Admission, Box<Outcome>> {
    let refuse = |message: String| Box::new(Outcome::rejected(message));
    let template = template_at(req.object, path).map_err(refuse)?;
    let namespace = request_namespace(req).map_err(refuse)?;
    let (ns_ann, ns_labels) = namespace_metadata(namespace, values.settings(), cluster)?;
    let meta = template.get("metadata").unwrap_or(&Value::Null);
    let t = Template {
        path,
        meta,
        spec: template.get("spec").unwrap_or(&Value::Null),
        namespace,
        object_namespace: navigate(req.object, &["metadata", "namespace"])
            .and_then(Value::as_str)
            .unwrap_or(""),
        pod_ann: pod::string_map(meta, "annotations"),
        ns_ann,
        ns_labels,
    };
    let pod_inject = t.pod_ann.get(ann::INJECT).map(String::as_str);
    let ns_inject = t.ns_ann.get(ann::INJECT).map(String::as_str);
    // The values are read only for a pod whose annotations ask for a proxy: a pod that did not
    // ask is never refused over the control plane's config.
    let token_projection = match decide::inject_annotation(pod_inject, ns_inject) {
        Ok(_) => Some(
            values
                .required()
                .map_err(|e| refuse(e.to_string()))?
                .identity
                .service_account_token_projection,
        ),
        Err(_) => None,
    };
    let decision = decide::decide(DecisionInput {
        spec: t.spec,
        pod_inject,
        ns_inject,
        token_projection,
    });
    if values.settings().policy.mode == Mode::Verify {
        let current = match &decision {
            Decision::Inject { .. } => values.required().ok(),
            Decision::Skip(_) if verify::has_linkerd_proxy(t.spec) => values.optional(STALE_CHECK),
            Decision::Skip(_) => None,
        };
        let owner = stale_owner(&t, values.settings(), current, cluster);
        let on_stale = match &owner {
            Some(owner) => verify::OnStale::Reject(verify::Restart {
                pod: t.meta.get("name").and_then(Value::as_str).unwrap_or(""),
                namespace,
                owner,
            }),
            None => verify::OnStale::Warn,
        };
        return Ok(verify::verify(t.spec, &t.pod_ann, &decision, namespace, current, on_stale).into());
    }
    match decision {
        Decision::Skip(reasons) => Ok(skipped(&t, reasons, values)),
        Decision::Inject { ingress, .. } => injected(req, &t, ingress, values, cluster).map_err(refuse),
    }
}

/// The workload that restarts a pod whose proxy is stale, when `policy.staleProxy: reject`
/// refuses it: resolved (a lookup at most) only for that answer.
fn stale_owner(
    t: &Template<'_>,
    settings: &Settings,
    current: Option<&Settings>,
    cluster: &dyn Cluster,
) -> Option<Owner> {
    let policy = &settings.policy;
    let stale = policy.stale_proxy == StaleProxy::Reject
        && verify::has_linkerd_proxy(t.spec)
        && verify::stale_proxy(&t.pod_ann, current?).is_some();
    stale.then(|| owner::resolve(t.meta, t.namespace, policy.owner_resolution, cluster).owner)
}

/// The pod template at `path`, with the shapes injection edits checked; `Err` is the rejection.
fn template_at<'v>(object: &'v Value, path: &[&str]) -> Result<&'v Value, String> {
    let at = if path.is_empty() {
        "object".to_string()
    } else {
        format!("object.{}", path.join("."))
    };
    let template = navigate(object, path).ok_or_else(|| format!("{at}: missing"))?;
    check_template(template, &at)?;
    Ok(template)
}

/// The effective configuration, the trust anchors, the owner and the platform's guards, in
/// that order (each may reject, `Err` is the message; the owner may look objects up), then
/// the plan.
fn injected(
    req: &Request<'_>,
    t: &Template<'_>,
    ingress: bool,
    values: &Values<'_, '_>,
    cluster: &dyn Cluster,
) -> Result<Admission, String> {
    let settings = values.required().map_err(|e| e.to_string())?;
    let labels = pod::string_map(t.meta, "labels");
    let layers = Layers::new(&t.pod_ann, &t.ns_ann, t.spec, &labels);
    let config = config::effective(settings, &layers, ingress).map_err(|e| e.to_string())?;
    let bundle = trust::trust_anchors(settings, cluster).map_err(|e| e.to_string())?;
    let (owner, resolution) = workload_owner(req, t, settings, cluster);
    let cx = Context::new(&config, t.spec, &bundle);
    guard::check(settings, &config, &cx, &t.guard_subject()).map_err(|e| e.to_string())?;
    let plan = Plan::new(
        &cx,
        added_annotations(t, settings, &cx, &bundle),
        added_labels(t, settings, &owner),
    );
    Ok(Admission {
        outcome: injected_outcome(config.warnings, config.rendering.audit_note(), owner, resolution),
        edit: Some(Edit {
            path: t.path,
            additions: plan.into_additions(),
        }),
    })
}

/// A pod's owner is resolved (it may need lookups); a workload owns its own template.
fn workload_owner(
    req: &Request<'_>,
    t: &Template<'_>,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> (Owner, Resolution) {
    if t.path.is_empty() {
        let r = owner::resolve(t.meta, t.namespace, settings.policy.owner_resolution, cluster);
        return (r.owner, r.resolution);
    }
    let name = navigate(req.object, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let owner = Owner {
        kind: req.kind.to_ascii_lowercase(),
        name: name.to_string(),
    };
    (owner, Resolution::Direct)
}

/// The namespace's configuration the pod does not set itself, Linkerd's markers, and the
/// opaque-ports default when neither the pod nor its namespace sets one.
fn added_annotations(t: &Template<'_>, settings: &Settings, cx: &Context<'_>, bundle: &str) -> StringMap {
    // the namespace's few annotations looked up in the forty-odd keys it may pass down (a
    // sorted list), not each of those in the pod's and the namespace's maps
    let mut annotations: StringMap = t
        .ns_ann
        .iter()
        .filter(|(k, _)| ann::INHERITED_FROM_NAMESPACE.binary_search(&k.as_str()).is_ok())
        .filter(|(k, _)| !t.pod_ann.contains_key(*k))
        .filter(|(k, _)| cx.config.rendering.version.knows_annotation(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    annotations.insert(ann::CREATED_BY.into(), settings.policy.created_by.to_string());
    annotations.insert(ann::PROXY_VERSION.into(), cx.proxy_version().to_string());
    annotations.insert(ann::TRUST_ROOT_SHA256.into(), trust::sha256_hex(bundle));
    if !t.pod_ann.contains_key(ann::OPAQUE_PORTS)
        && !t.ns_ann.contains_key(ann::OPAQUE_PORTS)
        && let Some(v) =
            opaque::default_annotation("Pod", t.spec, None, || Some(&*settings.proxy.opaque_ports))
    {
        annotations.insert(ann::OPAQUE_PORTS.into(), v);
    }
    annotations
}

/// The control plane's and the workload's namespaces, and the owner's label.
fn added_labels(t: &Template<'_>, settings: &Settings, owner: &Owner) -> StringMap {
    let mut labels = BTreeMap::new();
    labels.insert(
        ann::CONTROL_PLANE_NS_LABEL.to_string(),
        settings.policy.control_plane_namespace.to_string(),
    );
    // Linkerd's rule: the object's own namespace (the API server sets it to the request's; a
    // manifest without one, in manual injection, gets "" as from `linkerd inject`)
    labels.insert(ann::WORKLOAD_NS_LABEL.to_string(), t.object_namespace.to_string());
    if let Some((k, v)) = owner.label() {
        labels.insert(k, v);
    }
    labels
}

fn injected_outcome(
    warnings: Vec<String>,
    rendering_note: Option<String>,
    owner: Owner,
    resolution: Resolution,
) -> Outcome {
    let mut out = Outcome::unchanged(Verdict::Injected { owner: owner.clone() });
    out.warnings = warnings;
    if resolution.is_fallback() {
        out.warnings.push(format!(
            "owner of this pod resolved by {}: labelled linkerd.io/proxy-{}={}",
            resolution.describe(),
            owner.kind,
            owner.name
        ));
    }
    out.audit_annotations
        .insert(INJECTION_AUDIT_KEY.into(), INJECTED.into());
    if let Some(note) = rendering_note {
        out.audit_annotations.insert("rendering".into(), note);
    }
    // concatenated, not formatted: `fmt` costs an injected pod more than the rest of this
    let described = [&owner.kind, "/", &owner.name, " (", &resolution.describe(), ")"].concat();
    out.audit_annotations.insert("owner".into(), described);
    out
}

/// A pod that gets no proxy: Linkerd's opaque-ports annotation, and the reasons when the pod
/// (or its namespace) asked for a proxy.
fn skipped(t: &Template<'_>, reasons: Vec<decide::SkipReason>, values: &Values<'_, '_>) -> Admission {
    // joined without `fmt`: its machinery cost a pod outside the mesh more than the rest of
    // this function
    let text = reasons
        .iter()
        .map(decide::SkipReason::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    // The pod's own value counts first; any value but "disabled" (a mistyped one included) is
    // a request for a proxy. A pod that already has one is not missing it: say nothing, so a
    // second pass (reinvocation) leaves an injected pod exactly as it is.
    let effective = t
        .pod_ann
        .get(ann::INJECT)
        .filter(|v| !v.is_empty())
        .or(t.ns_ann.get(ann::INJECT));
    let asked = effective.is_some_and(|v| !v.is_empty() && v != "disabled")
        && !reasons.contains(&decide::SkipReason::SidecarExists);
    let mut additions = BTreeMap::new();
    if !t.pod_ann.contains_key(ann::OPAQUE_PORTS)
        && let Some(v) = opaque::default_annotation(
            "Pod",
            t.spec,
            t.ns_ann.get(ann::OPAQUE_PORTS).map(String::as_str),
            || values.opaque_ports(),
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
        .insert(INJECTION_AUDIT_KEY.into(), skipped_audit(&text));
    let edit = (!additions.is_empty()).then(|| Edit {
        path: t.path,
        additions: Additions::annotations(additions),
    });
    Admission { outcome: out, edit }
}
