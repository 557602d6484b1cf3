//! What the policy module did with one object, read from its AdmissionResponse and nowhere else:
//! the `injection` audit annotation the module writes (`injected`, or `skipped: <reasons>` in
//! Linkerd's words), its warnings and its patch. `rollout` and `inject` both count and report
//! through this file, so "was it injected?" has one answer.

use serde_json::Value;
use thiserror::Error;

use kubewarden_engine::protocol::response::{AdmissionResponse, PatchDecodeError};

/// The audit annotation in which the module says what it did, and its values: the core's own
/// definitions.
pub use linkerd_injector_policy::outcome::{INJECTED, INJECTION_AUDIT_KEY, SKIPPED_PREFIX};

/// The module's word on one admitted object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injection {
    /// `injection: injected`.
    Injected,
    /// `injection: skipped: <reasons>`: Linkerd's reasons, as the module gives them.
    Skipped(String),
    /// No `injection` annotation: the module did not consider the object (not a pod or a
    /// workload, not a CREATE).
    NotConsidered,
}

impl Injection {
    /// Reads the `injection` audit annotation of an allowed response.
    pub fn of(response: &AdmissionResponse) -> Self {
        let value = response
            .audit_annotations
            .as_ref()
            .and_then(|a| a.get(INJECTION_AUDIT_KEY));
        match value.map(String::as_str) {
            None => Self::NotConsidered,
            Some(INJECTED) => Self::Injected,
            Some(other) => Self::Skipped(other.strip_prefix(SKIPPED_PREFIX).unwrap_or(other).to_owned()),
        }
    }

    /// The module's warnings, without the one that only repeats the skip reasons.
    pub fn warnings_beyond(&self, response: &AdmissionResponse) -> Vec<String> {
        let warnings = response.warnings.clone().unwrap_or_default();
        match self {
            Self::Skipped(reasons) => warnings
                .into_iter()
                .filter(|w| !w.ends_with(reasons.as_str()))
                .collect(),
            _ => warnings,
        }
    }
}

/// The module's audit annotations when they say something other than `injection` (settings
/// that only verify, say), as `key=value` pairs; `None` when it answers about injection or not
/// at all.
pub fn other_audit(response: &AdmissionResponse) -> Option<String> {
    let audit = response.audit_annotations.as_ref().filter(|a| !a.is_empty())?;
    if audit.contains_key(INJECTION_AUDIT_KEY) {
        return None;
    }
    Some(
        audit
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// Why the module's patch cannot be used.
#[derive(Debug, Error)]
pub enum PatchError {
    #[error(transparent)]
    Decode(#[from] PatchDecodeError),
    #[error("cannot apply the policy's patch: {0}")]
    Apply(#[from] json_patch::PatchError),
}

/// `object` with the response's patch applied (unchanged when there is no patch).
pub fn mutated(object: &Value, response: &AdmissionResponse) -> Result<Value, PatchError> {
    let mut out = object.clone();
    if let Some(patch) = response.decoded_patch()? {
        json_patch::patch(&mut out, &patch)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn answer(injection: Option<&str>, warnings: &[&str]) -> AdmissionResponse {
        AdmissionResponse {
            allowed: true,
            audit_annotations: injection
                .map(|v| BTreeMap::from([(INJECTION_AUDIT_KEY.to_owned(), v.to_owned())])),
            warnings: Some(warnings.iter().map(|w| w.to_string()).collect()),
            ..Default::default()
        }
    }

    #[test]
    fn reads_the_injection_audit_annotation() {
        assert_eq!(Injection::of(&answer(Some("injected"), &[])), Injection::Injected);
        assert_eq!(
            Injection::of(&answer(Some("skipped: hostNetwork is enabled"), &[])),
            Injection::Skipped("hostNetwork is enabled".into())
        );
        assert_eq!(Injection::of(&answer(None, &[])), Injection::NotConsidered);
    }

    #[test]
    fn other_audit_annotations_mean_no_injection_answer() {
        let mut r = answer(None, &[]);
        assert_eq!(other_audit(&r), None);
        r.audit_annotations = Some(BTreeMap::from([("verify".to_owned(), "not meshed".to_owned())]));
        assert_eq!(other_audit(&r).as_deref(), Some("verify=not meshed"));
        assert_eq!(other_audit(&answer(Some("injected"), &[])), None);
    }

    #[test]
    fn drops_the_warning_that_repeats_the_reasons() {
        let r = answer(
            Some("skipped: hostNetwork is enabled"),
            &["proxy injection skipped: hostNetwork is enabled", "other"],
        );
        assert_eq!(Injection::of(&r).warnings_beyond(&r), ["other"]);
        let r = answer(Some("injected"), &["w"]);
        assert_eq!(Injection::of(&r).warnings_beyond(&r), ["w"]);
    }
}
