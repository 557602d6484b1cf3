//! Verify mode: the same decision, as a validating policy. A pod that the decision table says
//! should be meshed but carries no `linkerd-proxy` is rejected with the reasons; meshed and
//! exempt pods pass. Deployed next to the mutating policy it makes admission fail closed when
//! injection was skipped (Linkerd #3885), and lets Kubewarden's audit scanner report existing
//! pods that escaped injection (linkerd2#3358). A meshed pod whose proxy is not the version the
//! control plane injects now is reported (what `linkerd check --proxy` warns about), not refused:
//! it runs, and a restart of its workload updates it. With `policy.staleProxy: reject` it is
//! refused instead, naming the workload to restart: Kubewarden's audit scanner records only
//! rejections as failures, so that is how an audit policy reports it.

use crate::admission::decide::{AnnotationAt, Decision, SkipReason};
use crate::admission::outcome::{Outcome, Verdict};
use crate::admission::owner::Owner;
use crate::annotations as ann;
use crate::pod;
use crate::values::settings::Settings;
use serde_json::Value;
use std::collections::BTreeMap;

/// True when the pod runs Linkerd's proxy (as a native sidecar or a container).
pub fn has_linkerd_proxy(spec: &Value) -> bool {
    pod::all_containers(spec).any(|c| c.get("name").and_then(Value::as_str) == Some("linkerd-proxy"))
}

/// The proxy version the control plane injects by default: `proxy.image.version`, else
/// `linkerdVersion`, of the values in effect.
pub fn control_plane_proxy_version(values: &Settings) -> &str {
    match &*values.proxy.image.version {
        "" => &values.linkerd_version,
        pinned => pinned,
    }
}

/// `Some((pod's, control plane's))` when a meshed pod's `linkerd.io/proxy-version` differs from
/// what the control plane injects. A pod that chose its version
/// (`config.linkerd.io/proxy-version`) or carries no version annotation is not reported.
pub fn stale_proxy<'a>(
    pod_annotations: &'a BTreeMap<String, String>,
    values: &'a Settings,
) -> Option<(&'a str, &'a str)> {
    if pod_annotations.contains_key(ann::PROXY_VERSION_OVERRIDE) {
        return None;
    }
    let running = pod_annotations.get(ann::PROXY_VERSION)?;
    let current = control_plane_proxy_version(values);
    (running != current).then_some((running.as_str(), current))
}

/// The pod a stale proxy is reported for, and the workload that restarts it.
#[derive(Debug, Clone, Copy)]
pub struct Restart<'a> {
    pub pod: &'a str,
    pub namespace: &'a str,
    pub owner: &'a Owner,
}

/// What a stale proxy gets: `policy.staleProxy` with, for `reject`, the workload to name.
#[derive(Debug, Clone, Copy)]
pub enum OnStale<'a> {
    Warn,
    Reject(Restart<'a>),
}

/// A lowercase owner kind (as [`Owner`] keeps it) as Kubernetes spells it.
fn kind_name(kind: &str) -> &str {
    match kind {
        "deployment" => "Deployment",
        "statefulset" => "StatefulSet",
        "daemonset" => "DaemonSet",
        "replicaset" => "ReplicaSet",
        "replicationcontroller" => "ReplicationController",
        "job" => "Job",
        "cronjob" => "CronJob",
        "pod" => "Pod",
        other => other,
    }
}

/// What to do about a stale proxy: `kubectl rollout restart` where it applies, else recreate
/// the pod (a pod created with `generateName` has no name yet at admission).
pub fn restart_advice(r: &Restart<'_>) -> String {
    let Restart {
        pod,
        namespace,
        owner,
    } = *r;
    let (kind, name) = (kind_name(&owner.kind), &owner.name);
    match owner.kind.as_str() {
        "deployment" | "statefulset" | "daemonset" => format!(
            "restart {kind} {namespace}/{name} to update it (kubectl rollout restart {}/{name} -n {namespace})",
            owner.kind
        ),
        "pod" if pod.is_empty() => "recreate the pod to update it".to_string(),
        "pod" => format!("recreate pod {namespace}/{pod} to update it (it has no owner to start a new one)"),
        _ if pod.is_empty() => {
            format!("recreate the pod to update it; its owner, {kind} {namespace}/{name}, starts a new one")
        }
        _ => format!(
            "delete pod {namespace}/{pod} to update it; its owner, {kind} {namespace}/{name}, starts a new one \
             (kubectl delete pod {pod} -n {namespace})"
        ),
    }
}

/// Reports a stale proxy on `out`; `false` when the proxy is current (or chose its version), or
/// the control plane's values are unknown.
fn report_stale(
    out: &mut Outcome,
    pod_annotations: &BTreeMap<String, String>,
    values: Option<&Settings>,
    on_stale: OnStale<'_>,
) -> bool {
    let Some((running, current)) = values.and_then(|v| stale_proxy(pod_annotations, v)) else {
        return false;
    };
    match on_stale {
        OnStale::Warn => out.warnings.push(format!(
            "pod's Linkerd proxy is version {running}, but the control plane injects {current}: restart its workload to update the proxy"
        )),
        OnStale::Reject(restart) => {
            out.verdict = Verdict::Rejected(format!(
                "pod's Linkerd proxy is stale: it runs {running}, the control plane injects {current}; {}",
                restart_advice(&restart)
            ));
        }
    }
    out.audit_annotations.insert(
        "verify".into(),
        format!("meshed, stale proxy: {running} (control plane {current})"),
    );
    true
}

fn exempt(reasons: &[SkipReason]) -> Outcome {
    let text = reasons
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = Outcome::unchanged(Verdict::Skipped(reasons.to_vec()));
    out.audit_annotations
        .insert("verify".into(), format!("exempt: {text}"));
    out
}

/// The verify-mode answer for a pod. `values` are the control plane's, for the stale-proxy
/// report; `None` when they were not read or are unusable, and no report is made.
pub fn verify(
    spec: &Value,
    pod_annotations: &BTreeMap<String, String>,
    decision: &Decision,
    namespace: &str,
    values: Option<&Settings>,
    on_stale: OnStale<'_>,
) -> Outcome {
    match decision {
        Decision::Inject { at, .. } if !has_linkerd_proxy(spec) => {
            let place = match at {
                AnnotationAt::Namespace => format!("on namespace {namespace}"),
                AnnotationAt::Workload => "on the pod".to_string(),
            };
            let mut out = Outcome::rejected(format!(
                "pod is not meshed: linkerd.io/inject {place} requires the Linkerd proxy, but the pod has no \
                 linkerd-proxy container (injection was skipped or failed; check the injector policy)"
            ));
            out.audit_annotations.insert("verify".into(), "not meshed".into());
            out
        }
        Decision::Inject { .. } => {
            let mut out = Outcome::unchanged(Verdict::NotApplicable);
            if !report_stale(&mut out, pod_annotations, values, on_stale) {
                out.audit_annotations.insert("verify".into(), "meshed".into());
            }
            out
        }
        // A pod that already runs the proxy is exempt from injection; its version still counts.
        Decision::Skip(reasons) => {
            let mut out = exempt(reasons);
            if has_linkerd_proxy(spec) {
                report_stale(&mut out, pod_annotations, values, on_stale);
            }
            out
        }
    }
}
