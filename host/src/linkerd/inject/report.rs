//! The report of `inject`: one entry per object with the module's answer ([`Injection`]) and
//! warnings, rendered in the layout of Linkerd's CLI report or as JSON for scripts.

use crate::linkerd::answer::Injection;

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Input file (or `<stdin>`).
    pub origin: String,
    /// `kind` as written (empty when missing).
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    pub injection: Injection,
    /// The module's admission warnings.
    pub warnings: Vec<String>,
}

impl Entry {
    fn line(&self) -> String {
        let kind = self.kind.to_ascii_lowercase();
        match &self.injection {
            Injection::Injected => format!("{kind} \"{}\" injected", self.name),
            Injection::Skipped(reasons) => format!("{kind} \"{}\" skipped: {reasons}", self.name),
            Injection::NotConsidered if self.kind.is_empty() => {
                "document missing \"kind\" field, skipped".into()
            }
            Injection::NotConsidered => format!("{kind} \"{}\" skipped: not a pod or a workload", self.name),
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
        self.count(|v| matches!(v, Injection::Injected))
    }

    pub fn skipped(&self) -> usize {
        self.count(|v| matches!(v, Injection::Skipped(_)))
    }

    fn count(&self, f: impl Fn(&Injection) -> bool) -> usize {
        self.entries.iter().filter(|e| f(&e.injection)).count()
    }

    /// The report as JSON: `{"injected", "skipped", "objects": [{origin, kind, name, namespace,
    /// verdict, reasons?, warnings}]}`, for scripts (`inject -o json`).
    pub fn to_json(&self) -> serde_json::Value {
        let objects: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|e| {
                let (verdict, reasons) = match &e.injection {
                    Injection::Injected => ("injected", None),
                    Injection::Skipped(r) => ("skipped", Some(r.as_str())),
                    Injection::NotConsidered => ("ignored", None),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_layout() {
        let entry = |kind: &str, name: &str, injection, warnings: Vec<&str>| Entry {
            origin: "f".into(),
            kind: kind.into(),
            name: name.into(),
            namespace: None,
            injection,
            warnings: warnings.into_iter().map(String::from).collect(),
        };
        let r = Report {
            entries: vec![
                entry("Deployment", "web", Injection::Injected, vec!["w1"]),
                entry(
                    "Pod",
                    "p",
                    Injection::Skipped("hostNetwork is enabled".into()),
                    vec![],
                ),
                entry("Service", "s", Injection::NotConsidered, vec![]),
                entry("", "", Injection::NotConsidered, vec![]),
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
