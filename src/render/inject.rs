//! The plan of an injection: what goes into a pod (or pod template), rendered from the untouched
//! pod, and where, at the positions Linkerd's patch uses ([`Plan::into_additions`]).

use crate::render::additions::{Addition, Additions, Path};
use crate::render::{self, Context, ProxyContainer, Volume};
use serde_json::Value;
use std::collections::BTreeMap;

/// Everything to add, rendered from the untouched pod.
#[derive(Debug, Clone)]
pub struct Plan {
    pub annotations: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
    xtables_volume: Option<Volume>,
    /// `linkerd-init`, or `linkerd-network-validator` with the CNI plugin.
    init: Value,
    debug: Option<Value>,
    volumes: Vec<Volume>,
    proxy: ProxyContainer,
    native: bool,
    proxy_first: bool,
}

impl Plan {
    pub fn new(
        cx: &Context<'_>,
        annotations: BTreeMap<String, String>,
        labels: BTreeMap<String, String>,
    ) -> Self {
        let v = &cx.config.values;
        let cni = v.cni_enabled;
        let mut volumes = vec![render::end_entity_volume()];
        if v.proxy.tracing.enabled {
            volumes.push(render::podinfo_volume());
        }
        if v.identity.service_account_token_projection {
            volumes.push(render::token_volume());
        }
        Self {
            annotations,
            labels,
            xtables_volume: (!cni).then(|| render::xtables_volume(v.proxy_init.xt_mount_path.name.clone())),
            init: if cni {
                render::network_validator(cx)
            } else {
                json(render::init_container(cx))
            },
            debug: cx.config.debug_sidecar.then(|| render::debug_container(cx)),
            volumes,
            proxy: render::proxy_container(cx),
            native: v.proxy.native_sidecar,
            proxy_first: v.proxy.r#await,
        }
    }

    /// The plan as additions, at Linkerd's positions: `linkerd-init` last of the init containers
    /// (first, and the proxy second, with native sidecars); the proxy first of the containers
    /// with proxy-await (the default), else last, after the debug sidecar; volumes last.
    pub fn into_additions(self) -> Additions {
        let volumes: Vec<Value> = self
            .xtables_volume
            .into_iter()
            .chain(self.volumes)
            .map(json)
            .collect();
        let proxy = json(self.proxy);
        let debug: Vec<Value> = self.debug.into_iter().collect();
        let list = |first: Vec<Value>, last: Vec<Value>| Addition::List { first, last };
        let mut additions = vec![
            (ANNOTATIONS, Addition::Strings(self.annotations)),
            (LABELS, Addition::Strings(self.labels)),
            (VOLUMES, list(vec![], volumes)),
        ];
        if self.native {
            additions.push((INIT_CONTAINERS, list(vec![self.init, proxy], vec![])));
            if !debug.is_empty() {
                additions.push((CONTAINERS, list(vec![], debug)));
            }
        } else {
            additions.push((INIT_CONTAINERS, list(vec![], vec![self.init])));
            let containers = if self.proxy_first {
                list(vec![proxy], debug)
            } else {
                list(vec![], debug.into_iter().chain([proxy]).collect())
            };
            additions.push((CONTAINERS, containers));
        }
        Additions(additions)
    }
}

/// A typed part as JSON: it holds strings, numbers and lists only, so it always serialises.
fn json(part: impl serde::Serialize) -> Value {
    serde_json::to_value(part).unwrap_or(Value::Null)
}

const ANNOTATIONS: Path = &["metadata", "annotations"];
const LABELS: Path = &["metadata", "labels"];
const VOLUMES: Path = &["spec", "volumes"];
const INIT_CONTAINERS: Path = &["spec", "initContainers"];
const CONTAINERS: Path = &["spec", "containers"];
