//! What happened to one admission request; the shell turns it into a `ValidationResponse`.

use crate::admission::decide::SkipReason;
use crate::admission::owner::Owner;
use serde_json::Value;
use std::collections::BTreeMap;

/// The audit annotation saying what the policy did with a pod or pod template: [`INJECTED`], or
/// [`SKIPPED_PREFIX`] and Linkerd's reasons. Hosts (`injector-host inject` and `rollout`) read
/// the module's answer through these, so the format has one definition.
pub const INJECTION_AUDIT_KEY: &str = "injection";
pub const INJECTED: &str = "injected";
pub const SKIPPED_PREFIX: &str = "skipped: ";

/// `skipped: <reasons>`, the value of [`INJECTION_AUDIT_KEY`] for a pod without a proxy.
pub fn skipped_audit(reasons: &str) -> String {
    [SKIPPED_PREFIX, reasons].concat()
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A proxy was added (to the pod, or to a workload's pod template).
    Injected { owner: Owner },
    /// No proxy: Linkerd's reasons.
    Skipped(Vec<SkipReason>),
    /// Not a request this policy changes (other kinds, operations), or a Service.
    NotApplicable,
    /// The request is refused with this message.
    Rejected(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    /// The whole object with the additions, when anything was added.
    pub mutated: Option<Value>,
    pub warnings: Vec<String>,
    pub audit_annotations: BTreeMap<String, String>,
}

impl Outcome {
    pub fn unchanged(verdict: Verdict) -> Self {
        Self {
            verdict,
            mutated: None,
            warnings: Vec::new(),
            audit_annotations: BTreeMap::new(),
        }
    }

    pub fn rejected(message: impl Into<String>) -> Self {
        Self::unchanged(Verdict::Rejected(message.into()))
    }

    pub fn is_rejected(&self) -> bool {
        matches!(self.verdict, Verdict::Rejected(_))
    }
}
