//! The wasmtime/waPC side: an [`Engine`] (wasmtime engine + epoch ticker), a compiled [`Policy`]
//! (module pre-instantiated once, like policy-server's `StackPre`) and per-evaluation
//! [`Instance`]s.
//!
//! Deadlines work like policy-server's `--policy-timeout`: the engine has epoch interruption on,
//! a ticker thread increments the epoch every `epoch_tick` (1 s in policy-server), and every
//! guest call gets `ceil(deadline / epoch_tick)` ticks. An interrupted call answers
//! `allowed: false`, code 500, "Policy execution interrupted ...", and the instance is rebuilt
//! from the pre-instantiated module before it is used again.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use thiserror::Error;
use wasmtime_provider::wasmtime;
use wasmtime_provider::{
    EpochDeadlines, ResourceLimits, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre,
};

use crate::protocol::metadata::{Metadata, MetadataError};
use crate::protocol::request::{AdmissionRequest, PolicySettings};
use crate::protocol::response::{
    AdmissionResponse, DEADLINE_MESSAGE, SettingsValidationResponse, ValidationResponse,
};
use crate::runtime::callback::HostContext;

/// The error text wasmtime-provider gives an interrupted guest call.
pub const EPOCH_INTERRUPTION_ERROR: &str = "guest code interrupted, execution deadline exceeded";

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("cannot create the wasmtime engine: {0}")]
    Wasmtime(String),
    #[error("cannot start the epoch ticker thread: {0}")]
    Ticker(#[source] std::io::Error),
    #[error("cannot read module {path}: {source}")]
    ReadModule {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot compile module {name}: {message}")]
    Compile { name: String, message: String },
    #[error("cannot prepare module {name} for instantiation: {message}")]
    Prepare { name: String, message: String },
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    #[error("cannot instantiate module {name}: {message}")]
    Instantiate { name: String, message: String },
    #[error("cannot invoke 'protocol_version' waPC function : {0}")]
    ProtocolVersion(String),
    #[error("cannot create ProtocolVersion object from {0:?}")]
    BadProtocolVersion(String),
    #[error("cannot serialize the request: {0}")]
    Serialize(#[source] serde_json::Error),
}

/// Engine settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineConfig {
    /// Evaluation deadline (`None`: no deadline, like `kwctl run`).
    pub deadline: Option<Duration>,
    /// How often the epoch advances (policy-server: 1 s).
    pub epoch_tick: Duration,
    /// Largest linear memory an instance may grow to, in bytes (`None`: wasmtime's default,
    /// 4 GiB for wasm32). A guest that needs more fails its allocation and traps; the engine
    /// answers that request with a 500 and the next request gets a fresh instance.
    pub max_memory: Option<usize>,
}

impl Default for EngineConfig {
    /// policy-server's defaults: 2 s deadline, 1 s ticks.
    fn default() -> Self {
        Self {
            deadline: Some(Duration::from_secs(2)),
            epoch_tick: Duration::from_secs(1),
            max_memory: None,
        }
    }
}

impl EngineConfig {
    /// No deadline at all (`kwctl run`).
    pub fn without_deadline() -> Self {
        Self {
            deadline: None,
            ..Self::default()
        }
    }

    pub fn with_deadline(deadline: Duration, epoch_tick: Duration) -> Self {
        Self {
            deadline: Some(deadline),
            epoch_tick,
            max_memory: None,
        }
    }

    /// The same configuration with each instance's linear memory capped at `bytes`.
    pub fn with_max_memory(self, bytes: usize) -> Self {
        Self {
            max_memory: Some(bytes),
            ..self
        }
    }

    fn ticks(&self) -> Option<u64> {
        let tick = self.epoch_tick.as_nanos().max(1);
        self.deadline.map(|d| (d.as_nanos().div_ceil(tick)).max(1) as u64)
    }
}

#[derive(Debug)]
struct Ticker {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A wasmtime engine and its epoch ticker.
pub struct Engine {
    wasmtime: wasmtime::Engine,
    config: EngineConfig,
    _ticker: Option<Ticker>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("config", &self.config).finish()
    }
}

impl Engine {
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let mut wt_config = wasmtime::Config::default();
        if config.deadline.is_some() {
            wt_config.epoch_interruption(true);
        }
        let wasmtime = wasmtime::Engine::new(&wt_config).map_err(|e| EngineError::Wasmtime(e.to_string()))?;
        let ticker = if config.deadline.is_some() {
            let (stop, rx) = mpsc::channel::<()>();
            let engine = wasmtime.clone();
            let tick = config.epoch_tick;
            let thread = std::thread::Builder::new()
                .name("epoch-ticker".into())
                .spawn(move || {
                    while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(tick) {
                        engine.increment_epoch();
                    }
                })
                .map_err(EngineError::Ticker)?;
            Some(Ticker {
                stop: Some(stop),
                thread: Some(thread),
            })
        } else {
            None
        };
        Ok(Self {
            wasmtime,
            config,
            _ticker: ticker,
        })
    }

    pub fn config(&self) -> EngineConfig {
        self.config
    }

    /// Compiles a module (binary or WAT text) and pre-instantiates it.
    pub fn load_policy(&self, name: &str, bytes: &[u8]) -> Result<Policy, EngineError> {
        let metadata = Metadata::from_module(bytes)?;
        let module = wasmtime::Module::new(&self.wasmtime, bytes).map_err(|e| EngineError::Compile {
            name: name.into(),
            message: format!("{e:#}"),
        })?;
        let deadlines = self.config.ticks().map(|n| EpochDeadlines {
            wapc_init: n,
            wapc_func: n,
        });
        Policy::prepare(
            name.to_owned(),
            self.wasmtime.clone(),
            module,
            deadlines,
            self.config.max_memory,
            metadata,
        )
    }

    /// Reads and compiles a module file.
    pub fn load_policy_file(&self, path: &Path) -> Result<Policy, EngineError> {
        let bytes = std::fs::read(path).map_err(|source| EngineError::ReadModule {
            path: path.display().to_string(),
            source,
        })?;
        self.load_policy(&path.display().to_string(), &bytes)
    }
}

/// A compiled, pre-instantiated policy module. Cheap to share between threads.
#[derive(Clone)]
pub struct Policy {
    name: String,
    engine: wasmtime::Engine,
    module: wasmtime::Module,
    pre: WasmtimeEngineProviderPre,
    deadlines: Option<EpochDeadlines>,
    max_memory: Option<usize>,
    metadata: Option<Metadata>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.name)
            .field("metadata", &self.metadata)
            .finish()
    }
}

impl Policy {
    fn prepare(
        name: String,
        engine: wasmtime::Engine,
        module: wasmtime::Module,
        deadlines: Option<EpochDeadlines>,
        max_memory: Option<usize>,
        metadata: Option<Metadata>,
    ) -> Result<Self, EngineError> {
        let mut builder = WasmtimeEngineProviderBuilder::new()
            .engine(engine.clone())
            .module(module.clone());
        if let Some(d) = deadlines {
            builder = builder.enable_epoch_interruptions(d);
        }
        if let Some(bytes) = max_memory {
            builder = builder.enable_resource_limits(ResourceLimits {
                max_memory_size: Some(bytes),
                max_table_elements: None,
            });
        }
        let pre = builder.build_pre().map_err(|e| EngineError::Prepare {
            name: name.clone(),
            message: e.to_string(),
        })?;
        Ok(Self {
            name,
            engine,
            module,
            pre,
            deadlines,
            max_memory,
            metadata,
        })
    }

    /// The same compiled module with another linear-memory cap (no recompilation).
    pub fn with_max_memory(&self, bytes: Option<usize>) -> Result<Self, EngineError> {
        Self::prepare(
            self.name.clone(),
            self.engine.clone(),
            self.module.clone(),
            self.deadlines,
            bytes,
            self.metadata.clone(),
        )
    }

    /// The linear-memory cap of each instance, if any.
    pub fn max_memory(&self) -> Option<usize> {
        self.max_memory
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Metadata embedded by `kwctl annotate`, if any.
    pub fn embedded_metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }

    /// A fresh instance (runs `wapc_init`) whose host calls go to `host`.
    pub fn instantiate(&self, host: &Arc<HostContext>) -> Result<Instance, EngineError> {
        let wapc = self.new_wapc_host(host)?;
        Ok(Instance {
            policy: self.clone(),
            host: Arc::clone(host),
            wapc,
        })
    }

    fn new_wapc_host(&self, host: &Arc<HostContext>) -> Result<wapc::WapcHost, EngineError> {
        let provider = self
            .pre
            .rehydrate(self.deadlines)
            .map_err(|e| EngineError::Instantiate {
                name: self.name.clone(),
                message: e.to_string(),
            })?;
        wapc::WapcHost::new(Box::new(provider), Some(host.callback())).map_err(|e| EngineError::Instantiate {
            name: self.name.clone(),
            message: e.to_string(),
        })
    }

    /// Instantiates afresh, validates nothing, and runs `validate` once (policy-server's path
    /// for a request; settings are validated once at load time, see [`Instance::validate_settings`]).
    pub fn evaluate(
        &self,
        host: &Arc<HostContext>,
        request: &AdmissionRequest,
        settings: &PolicySettings,
    ) -> Result<AdmissionResponse, EngineError> {
        let mut instance = self.instantiate(host)?;
        instance.validate(request, settings)
    }
}

/// A live waPC instance of a policy.
pub struct Instance {
    policy: Policy,
    host: Arc<HostContext>,
    wapc: wapc::WapcHost,
}

impl Instance {
    /// Rebuilds the instance from the pre-instantiated module (after an interruption).
    pub fn reset(&mut self) -> Result<(), EngineError> {
        self.wapc = self.policy.new_wapc_host(&self.host)?;
        Ok(())
    }

    /// Calls any guest function.
    pub fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>, wapc::errors::Error> {
        self.wapc.call(function, payload)
    }

    /// `protocol_version` → e.g. `"v1"`.
    pub fn protocol_version(&self) -> Result<String, EngineError> {
        let out = self
            .call("protocol_version", &[])
            .map_err(|e| EngineError::ProtocolVersion(e.to_string()))?;
        serde_json::from_slice::<String>(&out)
            .map_err(|_| EngineError::BadProtocolVersion(String::from_utf8_lossy(&out).into_owned()))
    }

    /// `validate_settings`; failures become `valid: false` like policy-evaluator.
    pub fn validate_settings(&mut self, settings: &PolicySettings) -> SettingsValidationResponse {
        let payload = match serde_json::to_vec(settings) {
            Ok(p) => p,
            Err(e) => {
                return SettingsValidationResponse {
                    valid: false,
                    message: Some(format!("error: {e:?}")),
                };
            }
        };
        match self.call("validate_settings", &payload) {
            Ok(out) => serde_json::from_slice(&out).unwrap_or_else(|e| SettingsValidationResponse {
                valid: false,
                message: Some(format!("error: invalid response from policy: {e}")),
            }),
            Err(err) => {
                if err.to_string().contains(EPOCH_INTERRUPTION_ERROR) {
                    let _ = self.reset();
                }
                SettingsValidationResponse {
                    valid: false,
                    message: Some(format!("Error invoking settings validation callback: {err:?}")),
                }
            }
        }
    }

    /// `validate`: builds `{"request", "settings"}`, turns the answer into an AdmissionResponse.
    /// Only host-side failures (serialising the request, rebuilding after an interruption) are
    /// `Err`; everything the guest does ends in a response.
    pub fn validate(
        &mut self,
        request: &AdmissionRequest,
        settings: &PolicySettings,
    ) -> Result<AdmissionResponse, EngineError> {
        self.validate_payload(
            &request.uid,
            request.object.as_ref(),
            &Payload { request, settings },
        )
    }

    /// `validate` of a raw request (`kwctl run --raw`): the document itself is the request and
    /// the object a mutation is diffed against; the uid is its `uid` field, if any.
    pub fn validate_raw(
        &mut self,
        request: &Value,
        settings: &PolicySettings,
    ) -> Result<AdmissionResponse, EngineError> {
        let uid = request.get("uid").and_then(Value::as_str).unwrap_or_default();
        self.validate_payload(uid, Some(request), &Payload { request, settings })
    }

    fn validate_payload<R: serde::Serialize>(
        &mut self,
        uid: &str,
        object: Option<&Value>,
        payload: &Payload<'_, R>,
    ) -> Result<AdmissionResponse, EngineError> {
        // Serialised straight from the borrowed request: `json!` would deep-copy it first.
        let payload = serde_json::to_vec(payload).map_err(EngineError::Serialize)?;
        match self.call("validate", &payload) {
            Ok(out) => Ok(match serde_json::from_slice::<ValidationResponse>(&out) {
                Ok(resp) => {
                    AdmissionResponse::from_validation_response(uid, object, &resp).unwrap_or_else(|e| {
                        AdmissionResponse::reject_internal_server_error(
                            uid,
                            format!("invalid response format: cannot deserialize JSONPatch: {e}"),
                        )
                    })
                }
                Err(e) => AdmissionResponse::reject_internal_server_error(
                    uid,
                    format!("invalid response from policy: {e}"),
                ),
            }),
            Err(err) if err.to_string().contains(EPOCH_INTERRUPTION_ERROR) => {
                self.reset()?;
                Ok(AdmissionResponse::reject(uid, DEADLINE_MESSAGE, 500))
            }
            Err(err) => Ok(AdmissionResponse::reject_internal_server_error(uid, err)),
        }
    }
}

/// The `validate` call's input: `{"request": ..., "settings": ...}`.
#[derive(serde::Serialize)]
struct Payload<'a, R> {
    request: &'a R,
    settings: &'a PolicySettings,
}
