//! Where context-aware answers come from, and the lookup counters.
//!
//! * [`LookupSource::Cluster`]: a [`ClusterState`] behind policy-server's 5-second cache for
//!   `get_resource` and `can_i` (lists are served uncached, as reflectors serve them), with
//!   [`FaultPlan`] applied to every lookup that reaches the "API server".
//! * [`LookupSource::Replay`]: a kwctl replay session.
//!
//! Counting: a lookup is *made* when it reaches the source (cache miss, `disable_cache`, replay);
//! it is *cached* when the cache answered it. Lists are counted apart.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::hostcalls::cache::{Clock, DEFAULT_TTL, Origin, TtlCache};
use crate::hostcalls::cluster::{ClusterLookupError, ClusterState};
use crate::hostcalls::fault::{FaultAction, FaultPlan, NOT_UTF8_LIST, NOT_UTF8_OBJECT};
use crate::hostcalls::field_mask;
use crate::hostcalls::replay::{CallbackRequestType, Exchange, ReplayResponse, ReplaySession};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReview,
};

/// Counters for one `apiVersion/kind`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceStats {
    pub made: u64,
    pub cached: u64,
    pub failed: u64,
}

/// Lookup counters of a host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupStats {
    /// Lookups that reached the source (cache misses, `disable_cache`, replayed).
    pub made: u64,
    /// Lookups answered from the cache.
    pub cached: u64,
    /// Lookups made that failed (errors, not found).
    pub failed: u64,
    /// List calls (served uncached).
    pub lists: u64,
    /// The same, per `apiVersion/kind`.
    pub by_resource: BTreeMap<String, ResourceStats>,
}

impl LookupStats {
    fn record(&mut self, resource: String, origin: Origin, failed: bool) {
        let entry = self.by_resource.entry(resource).or_default();
        match origin {
            Origin::Cache => {
                self.cached += 1;
                entry.cached += 1;
            }
            Origin::Fetched => {
                self.made += 1;
                entry.made += 1;
                if failed {
                    self.failed += 1;
                    entry.failed += 1;
                }
            }
        }
    }
}

/// A cached object. Every answer is built afresh, as policy-server builds it: the cached object
/// is deep-cloned, pruned by the call's field masks and serialised on every call, hit or miss.
/// (Keeping serialised answers would make a hit a byte copy, and this host would then
/// under-price the host calls that dominate the module's cost in policy-server.)
#[derive(Debug)]
struct CachedObject {
    object: Value,
}

impl CachedObject {
    fn new(object: Value) -> Self {
        Self { object }
    }

    fn answer(&self, masks: Option<&BTreeSet<String>>) -> Result<Vec<u8>, String> {
        let mut obj = self.object.clone();
        field_mask::apply_to_object(&mut obj, masks);
        serde_json::to_vec(&obj).map_err(|e| e.to_string())
    }
}

/// What one list asks for: a namespace's objects, or every namespace's.
struct ListSelection<'r> {
    api_version: &'r str,
    kind: &'r str,
    namespace: Option<&'r str>,
    label_selector: Option<&'r str>,
    field_selector: Option<&'r str>,
    field_masks: Option<&'r BTreeSet<String>>,
}

/// Lookups served from a cluster state.
#[derive(Debug)]
pub struct ClusterLookup {
    state: RwLock<ClusterState>,
    objects: TtlCache<Arc<CachedObject>>,
    access_reviews: TtlCache<Arc<Value>>,
    faults: FaultPlan,
}

impl ClusterLookup {
    pub fn new(state: ClusterState, faults: FaultPlan) -> Self {
        Self::with_ttl(state, faults, DEFAULT_TTL)
    }

    pub fn with_ttl(state: ClusterState, faults: FaultPlan, ttl: Duration) -> Self {
        Self::with_clock(state, faults, ttl, Clock::System)
    }

    /// Both caches read the time from `clock` (tests move a `ManualClock` to expire entries).
    pub fn with_clock(state: ClusterState, faults: FaultPlan, ttl: Duration, clock: Clock) -> Self {
        Self {
            state: RwLock::new(state),
            objects: TtlCache::with_clock(ttl, clock.clone()),
            access_reviews: TtlCache::with_clock(ttl, clock),
            faults,
        }
    }

    fn state(&self) -> std::sync::RwLockReadGuard<'_, ClusterState> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn fetch_object(&self, r: &GetResourceRequest) -> Result<Arc<CachedObject>, ClusterLookupError> {
        let ns = r.namespace.as_deref();
        let verdict = self.faults.apply(&r.kind, ns, Some(&r.name));
        let state = self.state();
        match verdict {
            FaultAction::Proceed => state
                .get(&r.api_version, &r.kind, &r.name, ns)
                .map(|v| Arc::new(CachedObject::new(v.clone()))),
            FaultAction::Error(m) => Err(ClusterLookupError::Injected(m)),
            FaultAction::NotFound => Err(state.not_found(&r.api_version, &r.kind, &r.name, ns)),
            FaultAction::NotUtf8 => Err(ClusterLookupError::Malformed(NOT_UTF8_OBJECT.to_vec())),
            FaultAction::Malformed => {
                let full = state
                    .get(&r.api_version, &r.kind, &r.name, ns)
                    .ok()
                    .and_then(|v| serde_json::to_vec(v).ok())
                    .unwrap_or_else(|| br#"{"apiVersion":"#.to_vec());
                Err(ClusterLookupError::Malformed(
                    full[..full.len().div_ceil(2)].to_vec(),
                ))
            }
        }
    }

    fn list(&self, s: &ListSelection<'_>) -> Result<Vec<u8>, ClusterLookupError> {
        let (api_version, kind, namespace) = (s.api_version, s.kind, s.namespace);
        match self.faults.apply(kind, namespace, None) {
            FaultAction::Proceed => {}
            FaultAction::Error(m) => return Err(ClusterLookupError::Injected(m)),
            FaultAction::NotFound => {
                return Err(ClusterLookupError::UnknownResource {
                    api_version: api_version.into(),
                    kind: kind.into(),
                });
            }
            FaultAction::Malformed => return Err(ClusterLookupError::Malformed(br#"{"items":[{"#.to_vec())),
            FaultAction::NotUtf8 => return Err(ClusterLookupError::Malformed(NOT_UTF8_LIST.to_vec())),
        }
        let state = self.state();
        let items: Vec<Value> = state
            .list(api_version, kind, namespace, s.label_selector, s.field_selector)?
            .into_iter()
            .map(|obj| {
                let mut obj = obj.clone();
                // reflectors drop these to save memory
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("managedFields");
                    if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
                        ann.remove("kubectl.kubernetes.io/last-applied-configuration");
                    }
                }
                field_mask::apply_to_object(&mut obj, s.field_masks);
                obj
            })
            .collect();
        let list =
            json!({"apiVersion": api_version, "kind": format!("{kind}List"), "metadata": {}, "items": items});
        serde_json::to_vec(&list).map_err(|e| ClusterLookupError::Injected(e.to_string()))
    }

    fn fetch_access_review(&self, sar: &SubjectAccessReview) -> Result<Arc<Value>, ClusterLookupError> {
        match self.faults.apply(
            "SubjectAccessReview",
            sar.resource_attributes.namespace.as_deref(),
            None,
        ) {
            FaultAction::Proceed => {}
            FaultAction::Error(m) => return Err(ClusterLookupError::Injected(m)),
            FaultAction::NotFound => {
                return Err(ClusterLookupError::UnknownResource {
                    api_version: "authorization.k8s.io/v1".into(),
                    kind: "SubjectAccessReview".into(),
                });
            }
            FaultAction::Malformed => return Err(ClusterLookupError::Malformed(br#"{"allowed":"#.to_vec())),
            FaultAction::NotUtf8 => return Err(ClusterLookupError::Malformed(NOT_UTF8_OBJECT.to_vec())),
        }
        let state = self.state();
        let status = state
            .objects()
            .filter(|o| o.get("kind").and_then(Value::as_str) == Some("SubjectAccessReview"))
            .find(|o| access_review_matches(o, sar))
            .and_then(|o| o.get("status").cloned())
            .unwrap_or_else(|| json!({"allowed": false}));
        Ok(Arc::new(status))
    }
}

/// Whether a `SubjectAccessReview` object of the cluster state answers this review.
fn access_review_matches(object: &Value, sar: &SubjectAccessReview) -> bool {
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let groups = |v: Option<&Vec<String>>| {
        v.cloned()
            .unwrap_or_default()
            .into_iter()
            .collect::<BTreeSet<_>>()
    };
    let spec_groups: Option<Vec<String>> = spec
        .get("groups")
        .and_then(|g| serde_json::from_value(g.clone()).ok());
    let attrs = spec.get("resourceAttributes").unwrap_or(&Value::Null);
    let a = &sar.resource_attributes;
    let o = |v: &Option<String>| v.clone().unwrap_or_default();
    s(spec, "user") == sar.user
        && groups(spec_groups.as_ref()) == groups(sar.groups.as_ref())
        && s(attrs, "group") == o(&a.group)
        && s(attrs, "name") == o(&a.name)
        && s(attrs, "namespace") == o(&a.namespace)
        && s(attrs, "resource") == a.resource
        && s(attrs, "subresource") == o(&a.subresource)
        && s(attrs, "verb") == a.verb
        && s(attrs, "version") == o(&a.version)
}

/// The source of context-aware answers.
#[derive(Debug)]
pub enum LookupSource {
    Cluster(ClusterLookup),
    Replay(ReplaySession),
}

/// A lookup source plus its counters; shared by every instance of an engine run.
#[derive(Debug)]
pub struct Lookups {
    source: LookupSource,
    stats: Mutex<LookupStats>,
    /// Every exchange in order, when recording (`--record-host-capabilities-interactions`).
    recorded: Option<Mutex<Vec<Exchange>>>,
}

impl Lookups {
    pub fn new(source: LookupSource) -> Self {
        Self {
            source,
            stats: Mutex::new(LookupStats::default()),
            recorded: None,
        }
    }

    /// Keeps every exchange so it can be written as a kwctl replay session.
    pub fn recording(mut self) -> Self {
        self.recorded = Some(Mutex::new(Vec::new()));
        self
    }

    /// The exchanges recorded so far (empty unless [`Lookups::recording`]).
    pub fn recorded(&self) -> Vec<Exchange> {
        self.recorded
            .as_ref()
            .map(|r| r.lock().unwrap_or_else(PoisonError::into_inner).clone())
            .unwrap_or_default()
    }

    /// Passes an answer through, recording it when asked to.
    /// The request is built only when recording: every host call passes through here.
    fn keep(
        &self,
        request: impl FnOnce() -> CallbackRequestType,
        result: Result<Vec<u8>, String>,
    ) -> Result<Vec<u8>, String> {
        if let Some(recorded) = &self.recorded {
            let response = match &result {
                Ok(bytes) => ReplayResponse::Success {
                    payload: String::from_utf8_lossy(bytes).into_owned(),
                },
                Err(message) => ReplayResponse::Error {
                    message: message.clone(),
                },
            };
            recorded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Exchange {
                    request: request(),
                    response,
                });
        }
        result
    }

    /// No cluster objects at all.
    pub fn empty() -> Self {
        Self::new(LookupSource::Cluster(ClusterLookup::new(
            ClusterState::new(),
            FaultPlan::new(),
        )))
    }

    pub fn source(&self) -> &LookupSource {
        &self.source
    }

    pub fn stats(&self) -> LookupStats {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn record(&self, resource: String, origin: Origin, failed: bool) {
        self.stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(resource, origin, failed);
    }

    fn record_list(&self) {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner).lists += 1;
    }

    /// Adds or replaces an object of the cluster state (no-op error for a replay source).
    pub fn insert_object(&self, object: Value) -> Result<(), String> {
        match &self.source {
            LookupSource::Cluster(c) => c
                .state
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(object),
            LookupSource::Replay(_) => Err("cannot add objects to a replay session".into()),
        }
    }

    /// Serves a request as a replay file holds it (kwctl's `CallbackRequestType`), through the
    /// matching host call below: how a recorded session is checked against a cluster state.
    pub fn answer(&self, request: CallbackRequestType) -> Result<Vec<u8>, String> {
        match request {
            CallbackRequestType::KubernetesGetResource {
                api_version,
                kind,
                name,
                namespace,
                disable_cache,
                field_masks,
            } => self.get_resource(&GetResourceRequest {
                api_version,
                kind,
                name,
                namespace,
                disable_cache,
                field_masks,
            }),
            CallbackRequestType::KubernetesListResourceNamespace {
                api_version,
                kind,
                namespace,
                label_selector,
                field_selector,
                field_masks,
            } => self.list_resources_by_namespace(&ListResourcesByNamespaceRequest {
                api_version,
                kind,
                namespace,
                label_selector,
                field_selector,
                field_masks,
            }),
            CallbackRequestType::KubernetesListResourceAll {
                api_version,
                kind,
                label_selector,
                field_selector,
                field_masks,
            } => self.list_resources_all(&ListAllResourcesRequest {
                api_version,
                kind,
                label_selector,
                field_selector,
                field_masks,
            }),
            CallbackRequestType::KubernetesCanI {
                request,
                disable_cache,
            } => self.can_i(&CanIRequest {
                subject_access_review: request,
                disable_cache,
            }),
        }
    }

    /// Serves `get_resource`; `Err` carries the message for the guest (without the
    /// "Callback evaluation failure: " prefix).
    pub fn get_resource(&self, r: &GetResourceRequest) -> Result<Vec<u8>, String> {
        self.keep(|| CallbackRequestType::from(r), self.answer_get_resource(r))
    }

    /// A get or `can_i` answered by the replay session, counted like a cluster lookup.
    fn replayed(
        &self,
        session: &ReplaySession,
        request: CallbackRequestType,
        resource: String,
    ) -> Result<Vec<u8>, String> {
        let result = session.respond(&request);
        self.record(resource, Origin::Fetched, result.is_err());
        result
    }

    fn answer_get_resource(&self, r: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let resource = format!("{}/{}", r.api_version, r.kind);
        match &self.source {
            LookupSource::Replay(session) => self.replayed(session, CallbackRequestType::from(r), resource),
            LookupSource::Cluster(c) => {
                let key = format!(
                    "get_resource_cached({},{}),{},{:?}",
                    r.api_version, r.kind, r.name, r.namespace
                );
                let (result, origin) = if r.disable_cache {
                    (c.fetch_object(r), Origin::Fetched)
                } else {
                    c.objects.get_or_fetch(&key, || c.fetch_object(r))
                };
                let failed = matches!(&result, Err(e) if !matches!(e, ClusterLookupError::Malformed(_)));
                self.record(resource, origin, failed);
                match result {
                    Ok(entry) => entry.answer(r.field_masks.as_ref()),
                    Err(ClusterLookupError::Malformed(bytes)) => Ok(bytes),
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }

    pub fn list_resources_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, String> {
        self.keep(|| CallbackRequestType::from(r), self.answer_list_namespace(r))
    }

    fn answer_list_namespace(&self, r: &ListResourcesByNamespaceRequest) -> Result<Vec<u8>, String> {
        let selection = ListSelection {
            api_version: &r.api_version,
            kind: &r.kind,
            namespace: Some(&r.namespace),
            label_selector: r.label_selector.as_deref(),
            field_selector: r.field_selector.as_deref(),
            field_masks: r.field_masks.as_ref(),
        };
        self.answer_list(CallbackRequestType::from(r), selection)
    }

    pub fn list_resources_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.keep(|| CallbackRequestType::from(r), self.answer_list_all(r))
    }

    fn answer_list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        let selection = ListSelection {
            api_version: &r.api_version,
            kind: &r.kind,
            namespace: None,
            label_selector: r.label_selector.as_deref(),
            field_selector: r.field_selector.as_deref(),
            field_masks: r.field_masks.as_ref(),
        };
        self.answer_list(CallbackRequestType::from(r), selection)
    }

    /// One list, from the replay session or the cluster state (a namespace's objects, or all).
    fn answer_list(&self, request: CallbackRequestType, s: ListSelection<'_>) -> Result<Vec<u8>, String> {
        self.record_list();
        match &self.source {
            LookupSource::Replay(session) => session.respond(&request),
            LookupSource::Cluster(c) => c.list(&s).or_else(malformed_is_an_answer),
        }
    }

    pub fn can_i(&self, r: &CanIRequest) -> Result<Vec<u8>, String> {
        self.keep(|| CallbackRequestType::from(r), self.answer_can_i(r))
    }

    fn answer_can_i(&self, r: &CanIRequest) -> Result<Vec<u8>, String> {
        let resource = "authorization.k8s.io/v1/SubjectAccessReview".to_owned();
        match &self.source {
            LookupSource::Replay(session) => self.replayed(session, CallbackRequestType::from(r), resource),
            LookupSource::Cluster(c) => {
                let sar = &r.subject_access_review;
                let (result, origin) = if r.disable_cache {
                    (c.fetch_access_review(sar), Origin::Fetched)
                } else {
                    c.access_reviews
                        .get_or_fetch(&format!("{sar:?}"), || c.fetch_access_review(sar))
                };
                let failed = matches!(&result, Err(e) if !matches!(e, ClusterLookupError::Malformed(_)));
                self.record(resource, origin, failed);
                match result {
                    Ok(v) => serde_json::to_vec(&*v).map_err(|e| e.to_string()),
                    Err(e) => malformed_is_an_answer(e),
                }
            }
        }
    }
}

fn malformed_is_an_answer(e: ClusterLookupError) -> Result<Vec<u8>, String> {
    match e {
        ClusterLookupError::Malformed(bytes) => Ok(bytes),
        e => Err(e.to_string()),
    }
}
