//! The control plane's ConfigMaps with one host call: under `policy.configMapLookup: list` the
//! first ConfigMap an admission reads from the control-plane namespace (`linkerd-config`, the
//! trust roots) lists them all, and later reads of that admission are answered from the list.
//! In policy-server a host call costs 0.1-0.5 ms of wall time however small its answer, and a
//! list is served from a watch-backed reflector, so it is as fresh as a get.
//!
//! A listed ConfigMap is handed over, not copied (`linkerd-config`'s values are 8 KB, read in
//! every fresh instance): the core reads each one once per admission, and a second read of the
//! same one is a get of its own. Before any is handed over, one string of the list's answer can
//! be read where the answer holds it ([`Cluster::json_string`]): `proxy.opaquePorts` of an
//! object outside the mesh is skimmed from `linkerd-config`'s values as the JSON writes them.

use crate::cluster::{Cluster, ListLookup, Listed, Lookup, LookupError, StringReader};
use crate::values::settings::{ConfigMapLookup, PolicyOptions};
use serde_json::Value;
use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};

/// A [`Cluster`] that answers gets of control-plane ConfigMaps from one list; every other call
/// goes to `inner` unchanged.
pub struct ControlPlaneReads<'c> {
    inner: &'c dyn Cluster,
    /// The control-plane namespace, when its ConfigMaps are listed.
    listed_namespace: Option<&'c str>,
    /// The list's answer, kept as the engine gave it: a string of it may be read there
    /// ([`Cluster::json_string`]) before, or instead of, its items being built.
    listed: OnceCell<Result<Box<dyn Listed + 'c>, LookupError>>,
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
            listed: OnceCell::new(),
            items: OnceCell::new(),
            handed_over: RefCell::default(),
        }
    }

    /// The namespace to list for `lookup`: its own, when it is a ConfigMap there.
    fn listed_for(&self, lookup: &Lookup) -> Option<&'c str> {
        self.listed_namespace
            .filter(|&ns| lookup.kind == "ConfigMap" && lookup.namespace.as_deref() == Some(ns))
    }

    /// The list's answer, asked for once.
    fn answer(&self, namespace: &str) -> Result<&dyn Listed, LookupError> {
        let listed = self
            .listed
            .get_or_init(|| self.inner.list_answer(&ListLookup::config_maps(namespace)));
        match listed {
            Ok(answer) => Ok(&**answer),
            Err(e) => Err(e.clone()),
        }
    }
}

impl Cluster for ControlPlaneReads<'_> {
    fn get(&self, lookup: &Lookup) -> Result<Value, LookupError> {
        let Some(namespace) = self.listed_for(lookup) else {
            return self.inner.get(lookup);
        };
        let answer = self.answer(namespace)?;
        let items = self.items.get_or_init(|| answer.items().map(RefCell::new));
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

    /// Read from the list's answer while its items are not built (a failed list: `None`, and
    /// the get that follows fails as the list did, with no second call).
    fn json_string(&self, lookup: &Lookup, path: &[&str], read: StringReader<'_>) -> Option<Cow<'_, str>> {
        let Some(namespace) = self.listed_for(lookup) else {
            return self.inner.json_string(lookup, path, read);
        };
        if self.items.get().is_some() {
            return None;
        }
        self.answer(namespace).ok()?.json_string(&lookup.name, path, read)
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

    /// A string of a listed ConfigMap is read from the list's answer, as JSON writes it; a
    /// get of it later is answered from the same list, and once the items are built the
    /// answer is theirs alone.
    #[test]
    fn a_string_is_read_where_the_list_holds_it() {
        let mut values = config_map("linkerd", "linkerd-config");
        values["data"]["values"] = json!("proxy:\n  opaquePorts: \"25\"\n");
        let inner = MemoryCluster::new(vec![values.clone()]);
        let p = policy(ConfigMapLookup::List);
        let reads = ControlPlaneReads::new(&inner, &p);
        let lookup = Lookup::config_map("linkerd", "linkerd-config");
        assert_eq!(
            reads
                .json_string(&lookup, &["data", "values"], &mut |_| None)
                .as_deref(),
            Some(r#"proxy:\n  opaquePorts: \"25\"\n"#)
        );
        assert_eq!(
            reads.json_string(&lookup, &["data", "absent"], &mut |_| None),
            None
        );
        assert_eq!(
            reads.json_string(
                &Lookup::config_map("linkerd", "absent"),
                &["data", "values"],
                &mut |_| None
            ),
            None
        );
        assert_eq!(reads.get(&lookup), Ok(values));
        assert_eq!(
            reads.json_string(&lookup, &["data", "values"], &mut |_| None),
            None
        );
        assert_eq!(described(&inner), ["list ConfigMaps in namespace linkerd"]);
    }

    /// Outside the listed namespace, and under `configMapLookup: get`, strings are the inner
    /// cluster's to give (a memory cluster gives none).
    #[test]
    fn strings_of_objects_not_listed_are_not_read_from_a_list() {
        let inner = cluster();
        for (lookup, namespace) in [(ConfigMapLookup::List, "shop"), (ConfigMapLookup::Get, "linkerd")] {
            let p = policy(lookup);
            let reads = ControlPlaneReads::new(&inner, &p);
            let at = Lookup::config_map(namespace, "linkerd-config");
            assert_eq!(reads.json_string(&at, &["data", "k"], &mut |_| None), None);
        }
        assert_eq!(described(&inner), Vec::<String>::new());
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
        // nor a string read first
        let inner = cluster().fail("ConfigMap", failed.clone());
        let reads = ControlPlaneReads::new(&inner, &p);
        let lookup = Lookup::config_map("linkerd", "linkerd-config");
        assert_eq!(reads.json_string(&lookup, &["data", "k"], &mut |_| None), None);
        assert_eq!(reads.get(&lookup), Err(failed));
        assert_eq!(described(&inner), ["list ConfigMaps in namespace linkerd"]);
    }
}
