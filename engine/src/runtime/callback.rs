//! The host-call dispatcher, in policy-evaluator's order (`runtimes/callback.rs`): binding must be
//! `kubewarden`; `tracing/log` is always served; other capabilities outside `kubernetes/*` are
//! refused as not granted, and so is anything the host-capability allow-list does not name; Kubernetes lookups must be in the `contextAwareResources` allow-list
//! (`can_i` is not checked); unknown namespaces/operations are named. Answers from the lookup
//! source that fail reach the guest as `Callback evaluation failure: <message>`.

use std::collections::BTreeSet;
use std::error::Error as StdError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::hostcalls::capabilities::{HostCapabilities, KNOWN_PATHS};
use crate::hostcalls::lookup::{LookupStats, Lookups};
use crate::protocol::metadata::ContextAwareResource;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
};

/// A capability policy-evaluator knows outside `kubernetes/*` (and `tracing/log`): this host
/// does not serve it, so it is refused as not granted.
fn served_only_by_policy_server(path: &str) -> bool {
    KNOWN_PATHS.contains(&path) && !path.starts_with("kubernetes/")
}

/// What happens to the guest's `tracing/log` records.
#[derive(Debug, Default)]
pub enum LogSink {
    /// One line per record on stderr (the default).
    #[default]
    Stderr,
    /// Kept in memory (see [`HostContext::logs`]).
    Capture(Mutex<Vec<Value>>),
    /// Counted only.
    Discard,
}

impl LogSink {
    pub fn capture() -> Self {
        Self::Capture(Mutex::new(Vec::new()))
    }
}

/// Everything a host call needs; shared by every instance of an engine run.
#[derive(Debug)]
pub struct HostContext {
    /// Name used in log lines (the module path).
    pub policy_id: String,
    allow_list: BTreeSet<ContextAwareResource>,
    capabilities: HostCapabilities,
    lookups: Arc<Lookups>,
    handler: CallbackHandler,
    logs: LogSink,
    log_records: AtomicU64,
}

/// A lookup run on the callback thread, with its reply channel inside.
type Job = Box<dyn FnOnce(&Lookups) + Send>;

/// policy-evaluator's path for a host call, in shape: the wasm thread sends the request over a
/// channel to the callback handler (a task there, a thread here), which answers from the cache
/// and sends the serialised answer back over a one-shot channel while the wasm thread blocks.
/// Lookups served on the wasm thread would cost a function call; in policy-server each costs
/// two thread hand-offs, and this host prices them the same way.
#[derive(Debug)]
struct CallbackHandler {
    jobs: mpsc::Sender<Job>,
}

impl CallbackHandler {
    /// Starts the handler thread; it ends when the [`HostContext`] (the sender) is dropped.
    fn start(lookups: Arc<Lookups>) -> Self {
        let (jobs, queue) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("callback-handler".into())
            .spawn(move || {
                for job in queue {
                    job(&lookups);
                }
            });
        if let Err(e) = spawned {
            // without a thread the channel has no receiver: every call then fails with a message
            eprintln!("WARN cannot start the callback handler thread: {e}");
        }
        Self { jobs }
    }

    /// Runs `lookup` on the handler thread and waits for its answer.
    fn call(
        &self,
        lookup: impl FnOnce(&Lookups) -> Result<Vec<u8>, String> + Send + 'static,
    ) -> Result<Vec<u8>, String> {
        let (reply, answer) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |lookups| {
            // the waiting side may be gone (an interrupted guest): nothing to answer then
            let _ = reply.send(lookup(lookups));
        });
        self.jobs
            .send(job)
            .map_err(|_| "Error sending request over callback channel: the handler has stopped".to_owned())?;
        answer
            .recv()
            .map_err(|_| "callback handler: cannot receive the response".to_owned())?
    }
}

type CallbackResult = Result<Vec<u8>, Box<dyn StdError + Send + Sync>>;

fn parse<T: DeserializeOwned>(payload: &[u8]) -> Result<T, Box<dyn StdError + Send + Sync>> {
    Ok(serde_json::from_slice(payload)?)
}

impl HostContext {
    pub fn new(
        policy_id: impl Into<String>,
        allow_list: BTreeSet<ContextAwareResource>,
        lookups: Lookups,
        logs: LogSink,
    ) -> Self {
        let lookups = Arc::new(lookups);
        Self {
            policy_id: policy_id.into(),
            allow_list,
            capabilities: HostCapabilities::AllowAll,
            handler: CallbackHandler::start(Arc::clone(&lookups)),
            lookups,
            logs,
            log_records: AtomicU64::new(0),
        }
    }

    /// Restricts the host capabilities the policy may call (default: all, as for a
    /// ClusterAdmissionPolicy).
    pub fn with_capabilities(mut self, capabilities: HostCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    pub fn allow_list(&self) -> &BTreeSet<ContextAwareResource> {
        &self.allow_list
    }

    pub fn lookups(&self) -> &Lookups {
        &self.lookups
    }

    pub fn stats(&self) -> LookupStats {
        self.lookups.stats()
    }

    /// Captured log records (empty unless the sink is [`LogSink::Capture`]).
    pub fn logs(&self) -> Vec<Value> {
        match &self.logs {
            LogSink::Capture(records) => records.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            _ => Vec::new(),
        }
    }

    /// How many `tracing/log` records the guests sent.
    pub fn log_count(&self) -> u64 {
        self.log_records.load(Ordering::Relaxed)
    }

    /// The waPC host callback for instances of this context.
    pub fn callback(self: &Arc<Self>) -> Box<wapc::HostCallback> {
        let ctx = Arc::clone(self);
        Box::new(move |_id, binding, namespace, operation, payload| {
            ctx.dispatch(binding, namespace, operation, payload)
        })
    }

    fn check_access(&self, api_version: &str, kind: &str) -> Result<(), Box<dyn StdError + Send + Sync>> {
        if self
            .allow_list
            .contains(&ContextAwareResource::new(api_version, kind))
        {
            Ok(())
        } else {
            Err(format!(
                "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported."
            )
            .into())
        }
    }

    /// Handles one host call.
    pub fn dispatch(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> CallbackResult {
        if binding != "kubewarden" {
            return Err(format!("unknown binding: {binding}").into());
        }
        let path = format!("{namespace}/{operation}");
        // tracing is never gated; the others only where the allow-list and this host both serve them
        let granted = namespace == "tracing" || self.capabilities.allows(&path);
        if !granted || served_only_by_policy_server(&path) {
            return Err(format!(
                "Policy has not been granted access to the '{path}' host capability. The violation has been reported."
            )
            .into());
        }
        let failure = |message: String| -> Box<dyn StdError + Send + Sync> {
            format!("Callback evaluation failure: {message}").into()
        };
        match namespace {
            "tracing" => match operation {
                "log" => {
                    self.log(payload);
                    Ok(Vec::new())
                }
                _ => Err(format!("unknown operation: {operation}").into()),
            },
            "kubernetes" => match operation {
                "get_resource" => {
                    let req: GetResourceRequest = parse(payload)?;
                    self.check_access(&req.api_version, &req.kind)?;
                    self.handler.call(move |l| l.get_resource(&req)).map_err(failure)
                }
                "list_resources_by_namespace" => {
                    let req: ListResourcesByNamespaceRequest = parse(payload)?;
                    self.check_access(&req.api_version, &req.kind)?;
                    self.handler
                        .call(move |l| l.list_resources_by_namespace(&req))
                        .map_err(failure)
                }
                "list_resources_all" => {
                    let req: ListAllResourcesRequest = parse(payload)?;
                    self.check_access(&req.api_version, &req.kind)?;
                    self.handler
                        .call(move |l| l.list_resources_all(&req))
                        .map_err(failure)
                }
                "can_i" => {
                    let req: CanIRequest = parse(payload)?;
                    self.handler.call(move |l| l.can_i(&req)).map_err(failure)
                }
                _ => Err(format!("unknown operation: {operation}").into()),
            },
            "oci" | "net" | "crypto" => Err(format!("unknown operation: {operation}").into()),
            _ => Err(format!("unknown namespace: {namespace}").into()),
        }
    }

    fn log(&self, payload: &[u8]) {
        self.log_records.fetch_add(1, Ordering::Relaxed);
        let record: Value = serde_json::from_slice(payload)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(payload).into_owned()));
        match &self.logs {
            LogSink::Stderr => eprintln!("{}", format_log(&self.policy_id, &record)),
            LogSink::Capture(records) => records
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(record),
            LogSink::Discard => {}
        }
    }
}

/// `LEVEL policy=<id> message key=value...` for a guest log record.
pub fn format_log(policy_id: &str, record: &Value) -> String {
    let Some(map) = record.as_object() else {
        return format!("INFO policy={policy_id} {record}");
    };
    let level = map
        .get("level")
        .and_then(Value::as_str)
        .unwrap_or("info")
        .to_uppercase();
    let message = map.get("message").and_then(Value::as_str).unwrap_or("");
    let mut line = format!("{level} policy={policy_id} {message}");
    for (k, v) in map
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "level" | "message"))
    {
        match v {
            Value::String(s) => line.push_str(&format!(" {k}={s}")),
            other => line.push_str(&format!(" {k}={other}")),
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_run_on_the_callback_thread_and_answers_come_back() {
        let handler = CallbackHandler::start(Arc::new(Lookups::empty()));
        let here = std::thread::current().id();
        let (tx, rx) = mpsc::channel();
        let answer = handler.call(move |_| {
            tx.send(std::thread::current().id()).unwrap();
            Ok(std::thread::current()
                .name()
                .unwrap_or_default()
                .as_bytes()
                .to_vec())
        });
        assert_eq!(answer.unwrap(), b"callback-handler");
        assert_ne!(rx.recv().unwrap(), here, "not the calling (wasm) thread");
        assert_eq!(handler.call(|_| Err("boom".into())).unwrap_err(), "boom");
    }
}
