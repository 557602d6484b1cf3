//! The control plane's ConfigMaps with one host call: under `policy.configMapLookup: list` the
//! first ConfigMap an admission reads from the control-plane namespace (`linkerd-config`, the
//! trust roots) lists them all, and later reads of that admission are answered from the list.
//! In policy-server a host call costs wall time however small its answer, and a list is served
//! from a watch-backed reflector, so it is as fresh as a get.
//!
//! A listed ConfigMap is handed over, not copied: the core reads each one once per admission,
//! and a second read of the same one is a get of its own.

use crate::cluster::{Cluster, ListLookup, Lookup, LookupError};
use crate::values::settings::{ConfigMapLookup, PolicyOptions};
use serde_json::Value;
use std::cell::{OnceCell, RefCell};

/// A [`Cluster`] that answers gets of control-plane ConfigMaps from one list; every other call
/// goes to `inner` unchanged.
pub struct ControlPlaneReads<'c> {
    inner: &'c dyn Cluster,
    /// The control-plane namespace, when its ConfigMaps are listed.
    listed_namespace: Option<&'c str>,
    /// The list's items not handed over yet, asked for once.
    items: OnceCell<Result<RefCell<Vec<Value>>, LookupError>>,
    /// The names of the listed ConfigMaps already handed over.
    handed_over: RefCell<Vec<String>>,
}

impl<'c> ControlPlaneReads<'c> {
    pub fn new(inner: &'c dyn Cluster, policy: &'c PolicyOptions) -> Self {
        let listed_namespace =
            (policy.config_map_lookup == ConfigMapLookup::List).then_some(&*policy.control_plane_namespace);
        Self {
            inner,
            listed_namespace,
            items: OnceCell::new(),
            handed_over: RefCell::default(),
        }
    }

    /// The namespace to list for `lookup`: its own, when it is a ConfigMap there.
    fn listed_for(&self, lookup: &Lookup) -> Option<&'c str> {
        self.listed_namespace
            .filter(|&ns| lookup.kind == "ConfigMap" && lookup.namespace.as_deref() == Some(ns))
    }
}

impl Cluster for ControlPlaneReads<'_> {
    fn get(&self, lookup: &Lookup) -> Result<Value, LookupError> {
        let Some(namespace) = self.listed_for(lookup) else {
            return self.inner.get(lookup);
        };
        let items = self.items.get_or_init(|| {
            self.inner
                .list(&ListLookup::config_maps(namespace))
                .map(RefCell::new)
        });
        let items = items.as_ref().map_err(Clone::clone)?;
        if self.handed_over.borrow().contains(&lookup.name) {
            return self.inner.get(lookup);
        }
        let named = |o: &Value| {
            let name = o.get("metadata").and_then(|m| m.get("name"));
            name.and_then(Value::as_str) == Some(lookup.name.as_str())
        };
        let mut items = items.borrow_mut();
        let at = items
            .iter()
            .position(named)
            .ok_or_else(|| LookupError::NotFound(lookup.describe()))?;
        self.handed_over.borrow_mut().push(lookup.name.clone());
        Ok(items.swap_remove(at))
    }

    fn list(&self, lookup: &ListLookup) -> Result<Vec<Value>, LookupError> {
        self.inner.list(lookup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{Call, MemoryCluster};
    use serde_json::json;

    fn config_map(namespace: &str, name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"k": name}})
    }

    fn cluster() -> MemoryCluster {
        MemoryCluster::new(vec![
            config_map("linkerd", "linkerd-config"),
            config_map("linkerd", "linkerd-identity-trust-roots"),
            config_map("shop", "linkerd-config"),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        ])
    }

    fn policy(lookup: ConfigMapLookup) -> PolicyOptions {
        PolicyOptions {
            config_map_lookup: lookup,
            ..PolicyOptions::default()
        }
    }

    fn described(c: &MemoryCluster) -> Vec<String> {
        c.calls().iter().map(Call::describe).collect()
    }

    fn ns_lookup() -> Lookup {
        Lookup {
            api_version: "v1",
            kind: "Namespace",
            name: "shop".into(),
            namespace: None,
            disable_cache: false,
            field_masks: &[],
        }
    }

    #[test]
    fn one_list_answers_every_control_plane_config_map() {
        let inner = cluster();
        let p = policy(ConfigMapLookup::List);
        let reads = ControlPlaneReads::new(&inner, &p);
        let values = reads.get(&Lookup::config_map("linkerd", "linkerd-config"));
        let roots = reads.get(&Lookup::config_map("linkerd", "linkerd-identity-trust-roots"));
        assert_eq!(values, Ok(config_map("linkerd", "linkerd-config")));
        assert_eq!(roots, Ok(config_map("linkerd", "linkerd-identity-trust-roots")));
        assert_eq!(
            reads.get(&Lookup::config_map("linkerd", "absent")),
            Err(LookupError::NotFound("ConfigMap linkerd/absent".into()))
        );
        assert_eq!(described(&inner), ["list ConfigMaps in namespace linkerd"]);
        // handed over, so a second read is a get of its own, with the same answer
        let again = reads.get(&Lookup::config_map("linkerd", "linkerd-config"));
        assert_eq!(again, values);
        assert_eq!(
            described(&inner),
            [
                "list ConfigMaps in namespace linkerd",
                "get ConfigMap linkerd/linkerd-config"
            ]
        );
    }

    #[test]
    fn other_objects_and_namespaces_are_got() {
        let inner = cluster();
        let p = policy(ConfigMapLookup::List);
        let reads = ControlPlaneReads::new(&inner, &p);
        assert_eq!(
            reads.get(&Lookup::config_map("shop", "linkerd-config")),
            Ok(config_map("shop", "linkerd-config"))
        );
        assert!(reads.get(&ns_lookup()).is_ok());
        assert_eq!(
            described(&inner),
            ["get ConfigMap shop/linkerd-config", "get Namespace shop"]
        );
    }

    #[test]
    fn get_reads_each_config_map_by_name() {
        let inner = cluster();
        let p = policy(ConfigMapLookup::Get);
        let reads = ControlPlaneReads::new(&inner, &p);
        assert!(
            reads
                .get(&Lookup::config_map("linkerd", "linkerd-config"))
                .is_ok()
        );
        assert!(
            reads
                .get(&Lookup::config_map("linkerd", "linkerd-identity-trust-roots"))
                .is_ok()
        );
        assert_eq!(
            described(&inner),
            [
                "get ConfigMap linkerd/linkerd-config",
                "get ConfigMap linkerd/linkerd-identity-trust-roots"
            ]
        );
    }

    /// A failed list fails every read it would have answered, without a second call.
    #[test]
    fn a_failed_list_fails_each_read_once_listed() {
        let failed =
            LookupError::Failed("lookup of ConfigMaps in namespace linkerd failed: forbidden".into());
        let inner = cluster().fail("ConfigMap", failed.clone());
        let p = policy(ConfigMapLookup::List);
        let reads = ControlPlaneReads::new(&inner, &p);
        assert_eq!(
            reads.get(&Lookup::config_map("linkerd", "linkerd-config")),
            Err(failed.clone())
        );
        assert_eq!(
            reads.get(&Lookup::config_map("linkerd", "linkerd-identity-trust-roots")),
            Err(failed.clone())
        );
        assert_eq!(described(&inner), ["list ConfigMaps in namespace linkerd"]);
    }
}
