//! Verify mode: the same decision, as a validating policy. A pod that the decision table says
//! should be meshed but carries no `linkerd-proxy` is rejected with the reasons; meshed and
//! exempt pods pass. Deployed next to the mutating policy it makes admission fail closed when
//! injection was skipped (Linkerd #3885), and lets Kubewarden's audit scanner report existing
//! pods that escaped injection (linkerd2#3358).

use crate::decide::{AnnotationAt, Decision};
use crate::outcome::{Outcome, Verdict};
use crate::pod;
use serde_json::Value;

/// True when the pod runs Linkerd's proxy (as a native sidecar or a container).
pub fn has_linkerd_proxy(spec: &Value) -> bool {
    pod::all_containers(spec).any(|c| c.get("name").and_then(Value::as_str) == Some("linkerd-proxy"))
}

pub fn verify(spec: &Value, decision: &Decision, namespace: &str) -> Outcome {
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
            out.audit_annotations.insert("verify".into(), "meshed".into());
            out
        }
        Decision::Skip(reasons) => {
            let text = reasons
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let mut out = Outcome::unchanged(Verdict::Skipped(reasons.clone()));
            out.audit_annotations
                .insert("verify".into(), format!("exempt: {text}"));
            out
        }
    }
}
