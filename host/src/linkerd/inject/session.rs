//! One run of manual injection over its inputs ([`Session`]): each document copied byte for byte
//! or rewritten when the module injected an object in it, each object sent to the module as a
//! CREATE and its answer entered in the report. The inputs and the cluster state are set up by
//! [`super::Injector`].

use std::sync::Arc;

use serde_json::Value;

use super::report::{Entry, Report};
use super::{InjectError, InjectOutput, Injector, USERNAME, hints, object_name, object_namespace};
use crate::commands::manifests::{self, Parsed, Piece, leading_comments, marker, separate, str_at};
use crate::linkerd::answer::{self, Injection};
use kubewarden_engine::protocol::request::{AdmissionRequest, UserInfo};
use kubewarden_engine::protocol::response::AdmissionResponse;
use kubewarden_engine::runtime::callback::HostContext;

/// One run of [`Injector::run`](super::Injector::run): the module's host, the output and the report so far.
pub(super) struct Session<'i> {
    injector: &'i Injector<'i>,
    host: Arc<HostContext>,
    report: Report,
    rejections: Vec<String>,
    /// Objects sent to the module so far (their requests' uids).
    admitted: usize,
    yaml: String,
}

impl<'i> Session<'i> {
    pub(super) fn new(injector: &'i Injector<'i>, host: Arc<HostContext>) -> Self {
        Self {
            injector,
            host,
            report: Report::default(),
            rejections: Vec::new(),
            admitted: 0,
            yaml: String::new(),
        }
    }

    pub(super) fn finish(self) -> Result<InjectOutput, InjectError> {
        if !self.rejections.is_empty() {
            return Err(InjectError::Rejected(self.rejections));
        }
        Ok(InjectOutput {
            yaml: self.yaml,
            report: self.report,
        })
    }

    /// One input: its separators verbatim (YAML), its documents transformed or copied.
    pub(super) fn write_input(&mut self, p: &Parsed) -> Result<(), InjectError> {
        if !p.json && !p.input.text.trim().is_empty() {
            let starts_with_marker = p
                .input
                .text
                .lines()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| marker(l).is_some());
            separate(&mut self.yaml, starts_with_marker);
        }
        for piece in &p.pieces {
            match piece {
                Piece::Separator(r) if !p.json => self.yaml.push_str(&p.input.text[r.clone()]),
                Piece::Separator(_) => {}
                Piece::Document(doc) => self.write_document(p, doc)?,
            }
        }
        Ok(())
    }

    /// A document: rewritten (keeping its leading comments) when the module changed an object
    /// in it, else copied byte for byte.
    fn write_document(&mut self, p: &Parsed, doc: &manifests::Document) -> Result<(), InjectError> {
        let original = &p.input.text[doc.range.clone()];
        if p.json {
            separate(&mut self.yaml, false);
        }
        let changed: Vec<Option<Value>> = doc
            .values
            .iter()
            .map(|v| self.transform(&p.input.origin, v))
            .collect();
        if changed.iter().all(Option::is_none) {
            self.yaml.push_str(original);
            if p.json && !original.ends_with('\n') {
                self.yaml.push('\n');
            }
            return Ok(());
        }
        let comments = leading_comments(original);
        self.yaml.push_str(&comments);
        if original[comments.len()..].starts_with("---") && !self.yaml.ends_with("---\n") {
            self.yaml.push_str("---\n");
        }
        for (i, (new, old)) in changed.iter().zip(&doc.values).enumerate() {
            if i > 0 {
                self.yaml.push_str("---\n");
            }
            self.yaml.push_str(&to_yaml(new.as_ref().unwrap_or(old))?);
        }
        Ok(())
    }

    /// A document value with injected objects, or `None` when nothing in it changes.
    fn transform(&mut self, origin: &str, value: &Value) -> Option<Value> {
        match value {
            Value::Array(items) => self.transform_items(origin, items).map(Value::Array),
            _ if manifests::is_list(value) => {
                let items = value.get("items").and_then(Value::as_array)?;
                let items = self.transform_items(origin, items)?;
                let mut list = value.clone();
                list["items"] = Value::Array(items);
                Some(list)
            }
            Value::Object(_) => self.transform_object(origin, value),
            _ => None,
        }
    }

    fn transform_items(&mut self, origin: &str, items: &[Value]) -> Option<Vec<Value>> {
        let changed: Vec<Option<Value>> = items.iter().map(|i| self.transform(origin, i)).collect();
        if changed.iter().all(Option::is_none) {
            return None;
        }
        Some(
            changed
                .into_iter()
                .zip(items)
                .map(|(new, old)| new.unwrap_or_else(|| old.clone()))
                .collect(),
        )
    }

    /// One object through the module; its entry goes into the report, a rejection into the
    /// rejections. `Some` with the mutated object when the module injected it.
    fn transform_object(&mut self, origin: &str, object: &Value) -> Option<Value> {
        let kind = str_at(object, "/kind").unwrap_or("").to_owned();
        let name = object_name(object);
        let what = format!("{origin}: {}/{name}", kind.to_ascii_lowercase());
        let mut entry = Entry {
            origin: origin.to_owned(),
            kind,
            name,
            namespace: None,
            injection: Injection::NotConsidered,
            warnings: Vec::new(),
        };
        if entry.kind.is_empty() {
            self.report.entries.push(entry);
            return None;
        }
        let namespace = object_namespace(object, &self.injector.options);
        let response = match self.admit(object, &namespace) {
            Ok(r) => r,
            Err(message) => {
                self.rejections.push(format!("{what}: {message}"));
                return None;
            }
        };
        entry.injection = Injection::of(&response);
        entry.warnings = entry.injection.warnings_beyond(&response);
        if entry.injection != Injection::NotConsidered {
            entry.namespace = Some(namespace);
        }
        let mutated = match entry.injection {
            Injection::Injected => match answer::mutated(object, &response) {
                Ok(m) => Some(m),
                Err(e) => {
                    self.rejections.push(format!("{what}: {e}"));
                    return None;
                }
            },
            _ => None,
        };
        self.report.entries.push(entry);
        mutated
    }

    /// The module's answer to the CREATE of `object`; a rejection (with the lookups that failed)
    /// or an engine failure as the message to report.
    fn admit(&mut self, object: &Value, namespace: &str) -> Result<AdmissionResponse, String> {
        self.admitted += 1;
        let user = UserInfo {
            username: Some(USERNAME.into()),
            ..Default::default()
        };
        let request = AdmissionRequest {
            dry_run: Some(true),
            ..AdmissionRequest::create(
                format!("inject-{}", self.admitted),
                Some(namespace.to_owned()),
                user,
                object.clone(),
            )
        };
        let before = self.host.lookups().recorded().len();
        let i = self.injector;
        let response = i
            .policy
            .instantiate(&self.host)
            .and_then(|mut instance| instance.validate(&request, &i.settings))
            .map_err(|e| e.to_string())?;
        if let Some(audit) = answer::other_audit(&response) {
            return Err(format!(
                "the policy answers without an `injection` audit annotation ({audit}): its settings \
                 do not inject (policy.mode: verify only checks pods); inject needs the mutating mode"
            ));
        }
        if response.allowed {
            return Ok(response);
        }
        let mut message = format!("rejected by the policy: {}", response.message());
        let recorded = self.host.lookups().recorded();
        let exchanges = recorded.get(before..).unwrap_or_default();
        message.push_str(&hints::explain(
            exchanges,
            response.message(),
            i.options.ignore_cluster,
        ));
        Err(message)
    }
}

fn to_yaml(value: &Value) -> Result<String, InjectError> {
    serde_yaml_ng::to_string(value)
        .map_err(|e| InjectError::Rejected(vec![format!("cannot write YAML: {e}")]))
}
