//! Read-only views of a raw pod (or pod template) JSON object.
//!
//! The request object is never deserialised into typed structs (that would drop unknown and
//! null fields); these helpers read the few fields the injector needs, tolerating wrong types.
#![forbid(unsafe_code)]

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Path of the service-account token the API server mounts into every container.
pub const SA_TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Annotations (or labels) as strings; YAML booleans and numbers are turned into their text,
/// as the API server would refuse them anyway and Linkerd's fixtures use them.
pub fn string_map(meta: &Value, key: &str) -> BTreeMap<String, String> {
    let Some(map) = meta.get(key).and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    map.iter()
        .filter_map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            Some((k.clone(), s))
        })
        .collect()
}

pub fn list<'a>(spec: &'a Value, key: &str) -> &'a [Value] {
    spec.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub fn containers(spec: &Value) -> &[Value] {
    list(spec, "containers")
}

pub fn init_containers(spec: &Value) -> &[Value] {
    list(spec, "initContainers")
}

/// Init containers then containers, the order Linkerd scans them in.
pub fn all_containers(spec: &Value) -> impl Iterator<Item = &Value> {
    init_containers(spec).iter().chain(containers(spec))
}

/// A declared container port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerPort<'a> {
    pub name: Option<&'a str>,
    pub port: i64,
}

pub fn container_ports(spec: &Value) -> Vec<ContainerPort<'_>> {
    all_containers(spec)
        .flat_map(|c| list(c, "ports"))
        .filter_map(|p| {
            let port = p.get("containerPort")?.as_i64()?;
            Some(ContainerPort {
                name: p.get("name").and_then(Value::as_str),
                port,
            })
        })
        .collect()
}

/// The port number of a named container port, if any container declares it.
pub fn named_port(spec: &Value, name: &str) -> Option<u16> {
    container_ports(spec)
        .into_iter()
        .find(|p| p.name == Some(name))
        .and_then(|p| u16::try_from(p.port).ok())
}

pub fn bool_field(obj: &Value, key: &str) -> Option<bool> {
    obj.get(key).and_then(Value::as_bool)
}

/// The first container's mount of the service-account token, if any.
pub fn sa_token_mount(spec: &Value) -> Option<&Value> {
    containers(spec)
        .first()
        .map(|c| list(c, "volumeMounts"))
        .unwrap_or(&[])
        .iter()
        .find(|m| m.get("mountPath").and_then(Value::as_str) == Some(SA_TOKEN_MOUNT_PATH))
}

/// Gets `obj[key]` as an object, creating it (or replacing a non-object) when needed.
pub fn object_entry<'a>(obj: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = obj
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(m) => m,
        _ => unreachable!("entry was just made an object"),
    }
}

/// Gets `obj[key]` as an array, creating it when needed.
pub fn array_entry<'a>(obj: &'a mut Map<String, Value>, key: &str) -> &'a mut Vec<Value> {
    let entry = obj
        .entry(key.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !entry.is_array() {
        *entry = Value::Array(Vec::new());
    }
    match entry {
        Value::Array(a) => a,
        _ => unreachable!("entry was just made an array"),
    }
}
