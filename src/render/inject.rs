//! Adds the proxy to a pod (or pod template) object, editing its raw JSON: additions only,
//! at the positions Linkerd's patch uses.

use crate::admission::pod::{array_entry, object_entry};
use crate::render::{self, Context, ProxyContainer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Everything to add, rendered from the untouched pod.
#[derive(Debug, Clone)]
pub struct Plan {
    pub annotations: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
    xtables_volume: Option<Value>,
    init: Value,
    debug: Option<Value>,
    volumes: Vec<Value>,
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
            xtables_volume: (!cni).then(|| render::xtables_volume(&v.proxy_init.xt_mount_path.name)),
            init: if cni {
                render::network_validator(cx)
            } else {
                render::init_container(cx)
            },
            debug: cx.config.debug_sidecar.then(|| render::debug_container(cx)),
            volumes,
            proxy: render::proxy_container(cx),
            native: v.proxy.native_sidecar,
            proxy_first: v.proxy.r#await,
        }
    }

    /// Applies the plan to `template` (an object with `metadata` and `spec`).
    pub fn apply(self, template: &mut Map<String, Value>) {
        let held = self.apply_holding_proxy(template);
        let list = array_entry(object_entry(template, "spec"), held.list);
        list.insert(held.index.min(list.len()), held.proxy.into_value());
    }

    /// Applies all of the plan but the proxy container, and says where it goes: the shell
    /// writes it typed into the answer ([`HeldProxy`]), never as a JSON tree.
    pub fn apply_holding_proxy(self, template: &mut Map<String, Value>) -> HeldProxy {
        let meta = object_entry(template, "metadata");
        let annotations = object_entry(meta, "annotations");
        for (k, v) in self.annotations {
            annotations.insert(k, Value::String(v));
        }
        let labels = object_entry(meta, "labels");
        for (k, v) in self.labels {
            labels.insert(k, Value::String(v));
        }
        let spec = object_entry(template, "spec");
        array_entry(spec, "volumes");
        array_entry(spec, "initContainers");
        if let Some(xt) = self.xtables_volume {
            array_entry(spec, "volumes").push(xt);
        }
        let inits = array_entry(spec, "initContainers");
        if self.native {
            inits.insert(0, self.init);
        } else {
            inits.push(self.init);
        }
        if let Some(debug) = self.debug {
            array_entry(spec, "containers").push(debug);
        }
        array_entry(spec, "volumes").extend(self.volumes);
        let (list, index) = if self.native {
            ("initContainers", 1.min(array_entry(spec, "initContainers").len()))
        } else if self.proxy_first {
            ("containers", 0)
        } else {
            ("containers", array_entry(spec, "containers").len())
        };
        // the list exists from here on, so the proxy always has a place
        array_entry(spec, list);
        HeldProxy {
            list,
            index,
            proxy: self.proxy,
        }
    }
}

/// The proxy container, and its place in the template: `spec.<list>[index]`, the items from
/// `index` on moved one along.
#[derive(Debug)]
pub struct HeldProxy {
    pub list: &'static str,
    pub index: usize,
    pub proxy: ProxyContainer,
}
