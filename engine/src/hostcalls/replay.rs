//! kwctl's `--replay-host-capabilities-interactions` sessions: a YAML list of
//! `{type: Exchange, request: "<YAML of a tagged CallbackRequestType>", response: {type: Success,
//! payload} | {type: Error, message}}`, consumed in order; a request must equal the recorded one.
//! Error texts are kwctl's (`callback_handler/proxy.rs`).

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReview,
};

#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("Cannot open host capabilities interactions file {path:?}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot deserialize contents of {path:?}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_yaml_ng::Error,
    },
    #[error(
        "{path:?}: exchange #{index}: Cannot deserialize recorded request into `CallbackRequestType`: {source}"
    )]
    Request {
        path: PathBuf,
        index: usize,
        #[source]
        source: serde_yaml_ng::Error,
    },
}

/// The host requests a replay file can hold (the Kubernetes variants of policy-evaluator's
/// `CallbackRequestType`; same names, fields and `Debug` output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallbackRequestType {
    KubernetesListResourceNamespace {
        api_version: String,
        kind: String,
        namespace: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesListResourceAll {
        api_version: String,
        kind: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesGetResource {
        api_version: String,
        kind: String,
        name: String,
        namespace: Option<String>,
        disable_cache: bool,
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesCanI {
        request: SubjectAccessReview,
        disable_cache: bool,
    },
}

/// One line naming the call, as tests and messages show it: `get apps/v1/ReplicaSet
/// shop/web-5d8f9c7b4 masks [metadata.name]`, `list v1/ConfigMap in linkerd masks [data]`; an
/// uncached get says `uncached`, selectors are named.
impl std::fmt::Display for CallbackRequestType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let masks = |m: &Option<BTreeSet<String>>| match m {
            Some(m) => format!(" masks [{}]", m.iter().cloned().collect::<Vec<_>>().join(", ")),
            None => String::new(),
        };
        let selectors = |label: &Option<String>, field: &Option<String>| {
            let label = label.as_ref().map(|s| format!(" labels {s}")).unwrap_or_default();
            let field = field.as_ref().map(|s| format!(" fields {s}")).unwrap_or_default();
            label + &field
        };
        match self {
            Self::KubernetesGetResource {
                api_version,
                kind,
                name,
                namespace,
                disable_cache,
                field_masks,
            } => {
                let target = namespace
                    .as_ref()
                    .map_or(name.clone(), |ns| format!("{ns}/{name}"));
                let uncached = if *disable_cache { " uncached" } else { "" };
                write!(
                    f,
                    "get {api_version}/{kind} {target}{uncached}{}",
                    masks(field_masks)
                )
            }
            Self::KubernetesListResourceNamespace {
                api_version,
                kind,
                namespace,
                label_selector,
                field_selector,
                field_masks,
            } => write!(
                f,
                "list {api_version}/{kind} in {namespace}{}{}",
                selectors(label_selector, field_selector),
                masks(field_masks)
            ),
            Self::KubernetesListResourceAll {
                api_version,
                kind,
                label_selector,
                field_selector,
                field_masks,
            } => write!(
                f,
                "list {api_version}/{kind}{}{}",
                selectors(label_selector, field_selector),
                masks(field_masks)
            ),
            Self::KubernetesCanI { request, .. } => {
                let r = &request.resource_attributes;
                write!(f, "can_i {} {} {}", request.user, r.verb, r.resource)
            }
        }
    }
}

impl From<&GetResourceRequest> for CallbackRequestType {
    fn from(r: &GetResourceRequest) -> Self {
        Self::KubernetesGetResource {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            name: r.name.clone(),
            namespace: r.namespace.clone(),
            disable_cache: r.disable_cache,
            field_masks: r.field_masks.clone(),
        }
    }
}

impl From<&ListResourcesByNamespaceRequest> for CallbackRequestType {
    fn from(r: &ListResourcesByNamespaceRequest) -> Self {
        Self::KubernetesListResourceNamespace {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            label_selector: r.label_selector.clone(),
            field_selector: r.field_selector.clone(),
            field_masks: r.field_masks.clone(),
        }
    }
}

impl From<&ListAllResourcesRequest> for CallbackRequestType {
    fn from(r: &ListAllResourcesRequest) -> Self {
        Self::KubernetesListResourceAll {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            label_selector: r.label_selector.clone(),
            field_selector: r.field_selector.clone(),
            field_masks: r.field_masks.clone(),
        }
    }
}

impl From<&CanIRequest> for CallbackRequestType {
    fn from(r: &CanIRequest) -> Self {
        Self::KubernetesCanI {
            request: r.subject_access_review.clone(),
            disable_cache: r.disable_cache,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ReplayResponse {
    Success { payload: String },
    Error { message: String },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type")]
enum RawExchange {
    Exchange {
        request: String,
        response: ReplayResponse,
    },
}

/// One recorded host call and its answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub request: CallbackRequestType,
    pub response: ReplayResponse,
}

/// A replay session, consumed in order (shared by every instance of an engine run).
#[derive(Debug)]
pub struct ReplaySession {
    exchanges: Mutex<VecDeque<Exchange>>,
}

impl ReplaySession {
    pub fn from_file(path: &Path) -> Result<Self, ReplayError> {
        let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Open {
            path: path.into(),
            source,
        })?;
        Self::from_str(&text, path)
    }

    pub fn from_str(text: &str, path: &Path) -> Result<Self, ReplayError> {
        let raw: Vec<RawExchange> = serde_yaml_ng::from_str(text).map_err(|source| ReplayError::Parse {
            path: path.into(),
            source,
        })?;
        let mut exchanges = VecDeque::new();
        for (index, RawExchange::Exchange { request, response }) in raw.into_iter().enumerate() {
            let request = serde_yaml_ng::from_str(&request).map_err(|source| ReplayError::Request {
                path: path.into(),
                index,
                source,
            })?;
            exchanges.push_back(Exchange { request, response });
        }
        Ok(Self {
            exchanges: Mutex::new(exchanges),
        })
    }

    pub fn from_exchanges(exchanges: impl IntoIterator<Item = Exchange>) -> Self {
        Self {
            exchanges: Mutex::new(exchanges.into_iter().collect()),
        }
    }

    /// Answers the next recorded exchange (kwctl's `produce_recorded_response`).
    pub fn respond(&self, request: &CallbackRequestType) -> Result<Vec<u8>, String> {
        let next = self
            .exchanges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        match next {
            None => Err("the list of recorded responses is empty".to_owned()),
            Some(exchange) if &exchange.request == request => match exchange.response {
                ReplayResponse::Success { payload } => Ok(payload.into_bytes()),
                ReplayResponse::Error { message } => Err(message),
            },
            Some(exchange) => Err(format!(
                "Replay error: unexpected request. Was expecting {:?}, got {:?} instead",
                exchange.request, request
            )),
        }
    }

    /// Writes exchanges as a session file that kwctl's `--replay-host-capabilities-interactions`
    /// (and this host's) reads back.
    pub fn to_yaml(exchanges: &[Exchange]) -> Result<String, serde_yaml_ng::Error> {
        let raw = exchanges
            .iter()
            .map(|e| {
                Ok(RawExchange::Exchange {
                    request: serde_yaml_ng::to_string(&e.request)?,
                    response: e.response.clone(),
                })
            })
            .collect::<Result<Vec<_>, serde_yaml_ng::Error>>()?;
        serde_yaml_ng::to_string(&raw)
    }

    /// Exchanges not replayed yet (kwctl only warns about them).
    pub fn leftovers(&self) -> usize {
        self.exchanges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Namespace answered, then a ReplicaSet lookup that failed.
    const SESSION: &str = include_str!("../../tests/data/replay-order.yml");

    fn ns_request() -> CallbackRequestType {
        CallbackRequestType::KubernetesGetResource {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            name: "emojivoto".into(),
            namespace: None,
            disable_cache: false,
            field_masks: None,
        }
    }

    #[test]
    fn a_call_is_named_on_one_line() {
        assert_eq!(ns_request().to_string(), "get v1/Namespace emojivoto");
        let rs = CallbackRequestType::KubernetesGetResource {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web".into(),
            namespace: Some("shop".into()),
            disable_cache: true,
            field_masks: Some(["metadata.name".into(), "metadata.ownerReferences".into()].into()),
        };
        assert_eq!(
            rs.to_string(),
            "get apps/v1/ReplicaSet shop/web uncached masks [metadata.name, metadata.ownerReferences]"
        );
        let list = CallbackRequestType::KubernetesListResourceAll {
            api_version: "v1".into(),
            kind: "Pod".into(),
            label_selector: Some("app=web".into()),
            field_selector: None,
            field_masks: None,
        };
        assert_eq!(list.to_string(), "list v1/Pod labels app=web");
    }

    #[test]
    fn replays_in_order() {
        let s = ReplaySession::from_str(SESSION, Path::new("s.yml")).unwrap();
        assert_eq!(
            s.respond(&ns_request()).unwrap(),
            br#"{"apiVersion":"v1","kind":"Namespace"}"#
        );
        let err = s.respond(&ns_request()).unwrap_err();
        assert_eq!(
            err,
            r#"Replay error: unexpected request. Was expecting KubernetesGetResource { api_version: "apps/v1", kind: "ReplicaSet", name: "web", namespace: Some("emojivoto"), disable_cache: false, field_masks: Some({"metadata.ownerReferences"}) }, got KubernetesGetResource { api_version: "v1", kind: "Namespace", name: "emojivoto", namespace: None, disable_cache: false, field_masks: None } instead"#
        );
        assert_eq!(
            s.respond(&ns_request()).unwrap_err(),
            "the list of recorded responses is empty"
        );
    }

    #[test]
    fn a_written_session_replays_the_same_answers() {
        let session = ReplaySession::from_str(SESSION, Path::new("s.yml")).unwrap();
        let exchanges: Vec<Exchange> = session.exchanges.lock().unwrap().iter().cloned().collect();
        let text = ReplaySession::to_yaml(&exchanges).unwrap();
        assert!(text.contains("!KubernetesGetResource"), "{text}");
        let again = ReplaySession::from_str(&text, Path::new("w.yml")).unwrap();
        assert_eq!(
            again.respond(&ns_request()).unwrap(),
            br#"{"apiVersion":"v1","kind":"Namespace"}"#
        );
        let CallbackRequestType::KubernetesGetResource { .. } = &exchanges[1].request else {
            panic!("second exchange is a get_resource");
        };
        assert_eq!(again.respond(&exchanges[1].request).unwrap_err(), "nope");
        assert_eq!(again.leftovers(), 0);
    }

    #[test]
    fn bad_request_names_the_exchange() {
        let text = "- type: Exchange\n  request: '!Nope {}'\n  response: {type: Error, message: x}\n";
        let err = ReplaySession::from_str(text, Path::new("s.yml")).unwrap_err();
        assert!(err.to_string().contains("exchange #0"), "{err}");
    }
}
