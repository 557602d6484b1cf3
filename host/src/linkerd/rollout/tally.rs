//! What each pod admission came to ([`PodAdmission`], read from the module's own answer by
//! [`classify`]) and the counts the workers share while the rollout runs ([`Tally`]), with the
//! progress bar drawn from them.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::linkerd::answer::{self, Injection};
use kubewarden_engine::protocol::response::AdmissionResponse;
use serde_json::Value;

/// What one pod admission of the rollout came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodAdmission {
    /// Allowed, and the module says it injected the proxy.
    Injected,
    /// Allowed without a proxy (skipped, or not considered).
    Skipped,
    Rejected(String),
    /// The engine failed, or the module's patch does not apply to the pod.
    Error(String),
}

/// Classifies a response to a pod CREATE by the module's own answer ([`Injection`]); its patch
/// must apply to the pod.
pub fn classify(pod: &Value, response: &AdmissionResponse) -> PodAdmission {
    if !response.allowed {
        return PodAdmission::Rejected(response.message().to_owned());
    }
    if let Err(e) = answer::mutated(pod, response) {
        return PodAdmission::Error(e.to_string());
    }
    match Injection::of(response) {
        Injection::Injected => PodAdmission::Injected,
        Injection::Skipped(_) | Injection::NotConsidered => PodAdmission::Skipped,
    }
}

/// The counts of a rollout, shared by the workers. Atomics rather than one lock: every worker
/// counts after every admission, and the progress bar reads them while they do.
#[derive(Debug, Default)]
pub(super) struct Tally {
    injected: AtomicUsize,
    skipped: AtomicUsize,
    rejected: AtomicUsize,
    errors: AtomicUsize,
    deadline_exceeded: AtomicUsize,
    /// Admissions finished, of any kind.
    done: AtomicUsize,
    /// Rejection and error messages (the first ten distinct ones), with counts.
    samples: Mutex<BTreeMap<String, usize>>,
}

/// The final counts of a [`Tally`], once the workers are done.
#[derive(Debug)]
pub(super) struct Counts {
    pub injected: usize,
    pub skipped: usize,
    pub rejected: usize,
    pub deadline_exceeded: usize,
    pub errors: usize,
    pub samples: BTreeMap<String, usize>,
}

impl Tally {
    pub(super) fn count(&self, outcome: &PodAdmission) {
        let counter = match outcome {
            PodAdmission::Injected => &self.injected,
            PodAdmission::Skipped => &self.skipped,
            PodAdmission::Rejected(m) => {
                self.sample(format!("rejected: {m}"));
                &self.rejected
            }
            PodAdmission::Error(m) => {
                self.sample(format!("error: {m}"));
                &self.errors
            }
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// A rejection that was the policy deadline (counted among the rejections as well).
    pub(super) fn count_deadline_exceeded(&self) {
        self.deadline_exceeded.fetch_add(1, Ordering::Relaxed);
    }

    fn sample(&self, label: String) {
        let mut s = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        if s.len() < 10 || s.contains_key(&label) {
            *s.entry(label).or_default() += 1;
        }
    }

    fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::Relaxed)
    }

    pub(super) fn into_counts(self) -> Counts {
        Counts {
            injected: Self::get(&self.injected),
            skipped: Self::get(&self.skipped),
            rejected: Self::get(&self.rejected),
            deadline_exceeded: Self::get(&self.deadline_exceeded),
            errors: Self::get(&self.errors),
            samples: self.samples.into_inner().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// One frame of the progress bar on stderr; `\r` redraws it in place.
    pub(super) fn draw_progress(&self, total: usize) {
        let n = Self::get(&self.done);
        let width = 30;
        let filled = (n * width).checked_div(total).unwrap_or(0);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {n}/{total}  injected {}  skipped {}  rejected {}  errors {}",
            "#".repeat(filled),
            "-".repeat(width - filled),
            Self::get(&self.injected),
            Self::get(&self.skipped),
            Self::get(&self.rejected),
            Self::get(&self.errors),
        );
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_by_the_modules_answer() {
        let pod = json!({"spec": {"containers": [{"name": "app"}]}});
        let with = |injection: &str, ops: Value| AdmissionResponse {
            allowed: true,
            patch: Some(base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                ops.to_string(),
            )),
            audit_annotations: Some(BTreeMap::from([("injection".to_owned(), injection.to_owned())])),
            ..Default::default()
        };
        let add = json!([{"op": "add", "path": "/spec/containers/0", "value": {"name": "linkerd-proxy"}}]);
        assert_eq!(classify(&pod, &with("injected", add)), PodAdmission::Injected);
        let annotate = json!([{"op": "add", "path": "/metadata", "value": {}}]);
        assert_eq!(
            classify(&pod, &with("skipped: hostNetwork is enabled", annotate)),
            PodAdmission::Skipped
        );
        let bad = with("injected", json!([{"op": "remove", "path": "/nope"}]));
        assert!(matches!(classify(&pod, &bad), PodAdmission::Error(m) if m.starts_with("cannot apply")));
        assert_eq!(
            classify(
                &pod,
                &AdmissionResponse {
                    allowed: true,
                    ..Default::default()
                }
            ),
            PodAdmission::Skipped,
            "no injection annotation: not considered"
        );
        assert_eq!(
            classify(&pod, &AdmissionResponse::reject("u", "no", 400)),
            PodAdmission::Rejected("no".into())
        );
    }

    #[test]
    fn samples_keep_ten_distinct_messages() {
        let tally = Tally::default();
        for i in 0..12 {
            tally.count(&PodAdmission::Rejected(format!("m{i}")));
        }
        tally.count(&PodAdmission::Rejected("m0".into()));
        tally.count(&PodAdmission::Injected);
        tally.count_deadline_exceeded();
        let counts = tally.into_counts();
        assert_eq!(
            (counts.rejected, counts.injected, counts.deadline_exceeded),
            (13, 1, 1)
        );
        assert_eq!(counts.samples.len(), 10);
        assert_eq!(counts.samples["rejected: m0"], 2);
    }
}
