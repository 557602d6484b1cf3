//! The policy's core in the browser: one wasm-bindgen function over [`preview`].
//!
//! Everything the page shows is computed here, by the same core the policy module runs
//! (`admit::admit`): parsing the three inputs (YAML or JSON), the decision and Linkerd's reasons,
//! the injected manifest rendered as YAML, the JSON patch (`json_patch::diff`, as Kubewarden
//! computes it) and a summary of what was added. The page's JavaScript only moves text in and out.
//!
//! Without a cluster, lookups are answered from memory: a Namespace named after each object's
//! namespace carrying the given annotations and labels, and (only when the settings have no
//! `identityTrustAnchorsPEM`) an example trust-roots ConfigMap. Owner lookups find nothing, so
//! pods owned by a ReplicaSet or a Job take the core's fallback path, as they would in a cluster
//! whose lookups fail; the warning says so.

mod changes;
mod input;
pub mod locate;

pub use changes::Change;
pub use input::{Document, InputError, Manifest, NamespaceInput};

use linkerd_injector_policy::admit::{self, Request};
use linkerd_injector_policy::cluster::MemoryCluster;
use linkerd_injector_policy::outcome::{Outcome, Verdict};
use linkerd_injector_policy::settings::{Settings, TrustAnchorsSource, ValuesSource};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use wasm_bindgen::prelude::*;

/// The example trust anchor of the page's default settings, and the stand-in for the trust
/// roots ConfigMap when the settings have none. Self-signed for this playground: no cluster
/// trusts it.
pub const EXAMPLE_TRUST_BUNDLE: &str = include_str!("../examples/example-trust-anchor.pem");

/// Which input a message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Input {
    Manifest,
    Namespace,
    Settings,
}

/// What the page shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// Problems in the inputs, each naming its input and, where known, its line. When any is
    /// present nothing else is computed.
    pub errors: Vec<InputError>,
    /// Facts about how the playground answered without a cluster.
    pub notes: Vec<String>,
    /// One entry per object (a List's items count one by one).
    pub objects: Vec<ObjectPreview>,
    /// The manifest as the policy leaves it, as YAML (same documents, Lists kept).
    pub injected_yaml: String,
}

/// The policy's answer for one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectPreview {
    pub kind: String,
    pub name: String,
    pub namespace: String,
    /// `injected`, `skipped` (no proxy, Linkerd's reasons), `annotated` (no proxy to add, but an
    /// annotation added, e.g. opaque ports on a Service), `unchanged` or `rejected`.
    pub verdict: &'static str,
    /// One sentence for the verdict.
    pub headline: String,
    /// Linkerd's skip reasons (code and text), when the pod gets no proxy.
    pub reasons: Vec<Reason>,
    /// `kind/name` of the owner an injected proxy is labelled with.
    pub owner: Option<String>,
    /// The admission answer: false when rejected.
    pub accepted: bool,
    /// The rejection message.
    pub message: Option<String>,
    /// Where in the manifest a rejection points, when it names a field (1-based).
    pub line: Option<usize>,
    pub warnings: Vec<String>,
    pub audit_annotations: BTreeMap<String, String>,
    /// RFC 6902 operations from the object to the mutated object (`json_patch::diff`).
    pub patch: Value,
    /// The same patch as indented JSON text.
    pub patch_text: String,
    /// What was added, grouped for reading.
    pub changes: Vec<Change>,
}

/// One skip reason: Linkerd's metric label and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub code: &'static str,
    pub text: String,
}

/// The page's entry point: the three inputs as text, the [`Preview`] as JSON text.
#[wasm_bindgen]
pub fn preview_json(manifest: &str, namespace: &str, settings: &str) -> String {
    serde_json::to_string(&preview(manifest, namespace, settings))
        .unwrap_or_else(|e| json!({"errors": [{"input": "manifest", "message": e.to_string()}]}).to_string())
}

/// The examples the page offers, as JSON text: `[{id, title, manifest, namespace, settings}]`.
#[wasm_bindgen]
pub fn examples_json() -> String {
    serde_json::to_string(&examples()).unwrap_or_default()
}

/// The versions the page names: this policy's and the Linkerd release it follows.
#[wasm_bindgen]
pub fn versions_json() -> String {
    let defaults = Settings::from_value(Value::Null)
        .map(|s| s.linkerd_version)
        .unwrap_or_default();
    json!({"policy": env!("CARGO_PKG_VERSION"), "linkerd": defaults}).to_string()
}

/// One example for the page.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    pub id: &'static str,
    pub title: &'static str,
    pub manifest: &'static str,
    pub namespace: &'static str,
    pub settings: &'static str,
}

const SETTINGS_EXAMPLE: &str = include_str!("../examples/settings.yaml");
const NAMESPACE_ENABLED: &str = include_str!("../examples/namespace-annotations.yaml");

/// The page's examples; the first one prefills it.
pub fn examples() -> Vec<Example> {
    vec![
        Example {
            id: "deployment",
            title: "Deployment in an injected namespace",
            manifest: include_str!("../examples/deployment.yaml"),
            namespace: NAMESPACE_ENABLED,
            settings: SETTINGS_EXAMPLE,
        },
        Example {
            id: "host-network",
            title: "Pod with hostNetwork (skipped)",
            manifest: include_str!("../examples/pod-host-network.yaml"),
            namespace: NAMESPACE_ENABLED,
            settings: SETTINGS_EXAMPLE,
        },
        Example {
            id: "replicaset-pod",
            title: "Pod created by a ReplicaSet (owner without a cluster)",
            manifest: include_str!("../examples/pod-replicaset.yaml"),
            namespace: NAMESPACE_ENABLED,
            settings: SETTINGS_EXAMPLE,
        },
        Example {
            id: "list",
            title: "List: Service, StatefulSet, CronJob, ConfigMap",
            manifest: include_str!("../examples/list.yaml"),
            namespace: "",
            settings: SETTINGS_EXAMPLE,
        },
    ]
}

/// Runs the policy's core on the inputs: `manifest` is a Pod, a workload, a List or several
/// YAML documents; `namespace` is empty, a map of annotations, or a Namespace object; `settings`
/// is the policy's settings (YAML or JSON, empty for the defaults).
pub fn preview(manifest: &str, namespace: &str, settings: &str) -> Preview {
    let mut errors = Vec::new();
    let manifest_doc = input::manifest(manifest).map_err(|e| errors.push(e)).ok();
    let ns = input::namespace(namespace).map_err(|e| errors.push(e)).ok();
    let settings = input::settings(settings).map_err(|e| errors.extend(e)).ok();
    let (Some(manifest_doc), Some(ns), Some(settings)) = (manifest_doc, ns, settings) else {
        return Preview {
            errors,
            notes: Vec::new(),
            objects: Vec::new(),
            injected_yaml: String::new(),
        };
    };
    run(manifest, &manifest_doc, &ns, &settings)
}

/// The namespace an object is admitted in: its own, else the pasted Namespace's, else `default`.
fn object_namespace<'a>(object: &'a Value, ns: &'a NamespaceInput) -> &'a str {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or(ns.name.as_deref())
        .unwrap_or("default")
}

/// Whether admitting an injected pod would read the trust roots ConfigMap.
fn reads_trust_config_map(settings: &Settings) -> bool {
    match settings.policy.trust_anchors {
        TrustAnchorsSource::Inline => false,
        TrustAnchorsSource::ConfigMap => true,
        TrustAnchorsSource::Auto => settings.identity_trust_anchors_pem.trim().is_empty(),
    }
}

/// The objects the core may look up: the Namespaces of the manifest's objects (all carrying
/// the given metadata), when the settings point to it the example trust ConfigMap, and an empty
/// `linkerd-config`.
pub fn cluster_for(manifest: &Manifest, ns: &NamespaceInput, settings: &Settings) -> MemoryCluster {
    let mut names: Vec<&str> = manifest.objects().map(|o| object_namespace(o, ns)).collect();
    names.sort_unstable();
    names.dedup();
    let mut objects: Vec<Value> = names
        .into_iter()
        .map(|name| {
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "annotations": ns.annotations, "labels": ns.labels}})
        })
        .collect();
    if reads_trust_config_map(settings) {
        objects.push(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": settings.policy.trust_anchors_config_map,
                "namespace": settings.policy.control_plane_namespace},
            "data": {"ca-bundle.crt": EXAMPLE_TRUST_BUNDLE}
        }));
    }
    if settings.policy.values_from == ValuesSource::LinkerdConfig {
        // The preview has no control plane: its `linkerd-config` holds no values, so the
        // settings over the chart defaults are the values in effect.
        objects.push(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": settings.policy.linkerd_config_map,
                "namespace": settings.policy.control_plane_namespace},
            "data": {"values": "{}\n"}
        }));
    }
    MemoryCluster::new(objects)
}

fn run(text: &str, manifest: &Manifest, ns: &NamespaceInput, settings: &Settings) -> Preview {
    let cluster = cluster_for(manifest, ns, settings);
    let single = manifest.documents.len() == 1 && matches!(manifest.documents[0], Document::Object(_));
    let mut objects = Vec::new();
    let mut rendered = Vec::new();
    for doc in &manifest.documents {
        let out = match doc {
            Document::Object(object) => {
                let (preview, mutated) = admit_one(object, ns, settings, &cluster);
                objects.push(preview);
                mutated
            }
            Document::List(list) => {
                let mut list = list.clone();
                if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
                    for item in items.iter_mut() {
                        let (preview, mutated) = admit_one(item, ns, settings, &cluster);
                        objects.push(preview);
                        *item = mutated;
                    }
                }
                list
            }
        };
        rendered.push(to_yaml(&out));
    }
    if single && let Some(object) = objects.first_mut() {
        object.line = object.message.as_deref().and_then(|m| message_line(text, m));
    }
    let mut notes = Vec::new();
    let lookups = cluster.lookups();
    // an injected object read the trust roots, from the example ConfigMap (by name or listed
    // with the control plane's ConfigMaps)
    if reads_trust_config_map(settings) && objects.iter().any(|o| o.verdict == "injected") {
        notes.push(format!(
            "The settings have no identityTrustAnchorsPEM: an EXAMPLE bundle stood in for ConfigMap {}/{} \
             (linkerd.io/trust-root-sha256 and the proxy's trust anchors will differ in your cluster).",
            settings.policy.control_plane_namespace, settings.policy.trust_anchors_config_map
        ));
    }
    for kind in ["ReplicaSet", "Job"] {
        if lookups.iter().any(|l| l.kind == kind) {
            notes.push(format!(
                "No cluster here: the owning {kind} could not be looked up, so the owner label comes \
                 from the policy's fallback (see the warning); in a cluster the lookup finds the real owner."
            ));
        }
    }
    Preview {
        errors: Vec::new(),
        notes,
        objects,
        injected_yaml: rendered.join("---\n"),
    }
}

/// The line a rejection message points to, when it names a field of the object
/// (`object.spec.containers[1]: ...`).
fn message_line(text: &str, message: &str) -> Option<usize> {
    let path = message.split(": ").next()?.strip_prefix("object.")?;
    locate::key_line(text, path)
}

fn to_yaml(value: &Value) -> String {
    serde_yaml_ng::to_string(value).unwrap_or_else(|e| format!("# cannot render as YAML: {e}\n"))
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// One object through `admit::admit`, as a CREATE request; returns the preview and the object
/// as the policy leaves it.
pub fn admit_one(
    object: &Value,
    ns: &NamespaceInput,
    settings: &Settings,
    cluster: &MemoryCluster,
) -> (ObjectPreview, Value) {
    let kind = str_at(object, "/kind");
    let namespace = object_namespace(object, ns);
    let request = Request {
        kind,
        operation: "CREATE",
        namespace,
        object,
    };
    let outcome = admit::admit(&request, settings, cluster);
    let mutated = outcome.mutated.clone().unwrap_or_else(|| object.clone());
    let patch = json_patch::diff(object, &mutated);
    let patch = serde_json::to_value(&patch).unwrap_or(Value::Null);
    let patch_text = serde_json::to_string_pretty(&patch).unwrap_or_default();
    let changes = changes::changes(object, &mutated);
    let mut name = str_at(object, "/metadata/name").to_string();
    if name.is_empty() {
        let generate = str_at(object, "/metadata/generateName");
        name = if generate.is_empty() {
            "(no name)".into()
        } else {
            format!("{generate}*")
        };
    }
    let Outcome {
        verdict,
        warnings,
        audit_annotations,
        ..
    } = outcome;
    let mut preview = ObjectPreview {
        kind: kind.to_string(),
        name,
        namespace: namespace.to_string(),
        verdict: "unchanged",
        headline: String::new(),
        reasons: Vec::new(),
        owner: None,
        accepted: true,
        message: None,
        line: None,
        warnings,
        audit_annotations,
        patch,
        patch_text,
        changes,
    };
    match verdict {
        Verdict::Injected { owner } => {
            preview.verdict = "injected";
            let label = owner
                .label()
                .map(|(k, v)| format!(", labelled {k}={v}"))
                .unwrap_or_default();
            preview.headline = format!(
                "Injected: the linkerd-proxy sidecar is added (owner {}/{}{label}).",
                owner.kind, owner.name
            );
            preview.owner = Some(format!("{}/{}", owner.kind, owner.name));
        }
        Verdict::Skipped(reasons) => {
            preview.verdict = "skipped";
            preview.headline = "Not injected: Linkerd skips this pod.".into();
            preview.reasons = reasons
                .iter()
                .map(|r| Reason {
                    code: r.code(),
                    text: r.to_string(),
                })
                .collect();
        }
        Verdict::NotApplicable => {
            if !preview.changes.is_empty() {
                preview.verdict = "annotated";
            }
            preview.headline = match kind {
                "Service" if !preview.changes.is_empty() => {
                    "Not a pod: only Linkerd's opaque-ports annotation is added to the Service.".into()
                }
                "Service" => "Not a pod: the Service is admitted unchanged.".into(),
                "Pod" => "Admitted unchanged (verify mode: the pod is acceptable).".into(),
                _ if kind.is_empty() => "No kind: the policy admits it unchanged.".into(),
                _ => format!(
                    "Admitted unchanged: the policy injects Pods and workloads with a pod template, not a {kind}."
                ),
            };
        }
        Verdict::Rejected(message) => {
            preview.verdict = "rejected";
            preview.accepted = false;
            preview.headline = format!("Rejected: {message}");
            preview.message = Some(message);
        }
    }
    (preview, mutated)
}
