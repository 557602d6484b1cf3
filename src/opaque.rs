//! The default `config.linkerd.io/opaque-ports` annotation of pods and Services.
//!
//! Linkerd writes the namespace's value verbatim when the namespace has one, otherwise the
//! default list (`proxy.opaquePorts`) filtered to the ports the object exposes. Entries are
//! compared as exact strings, so a range in the default list never matches.

use crate::pod;
use serde_json::Value;

/// The annotation value for a pod or Service that lacks one; `None` when nothing applies.
pub fn default_annotation(
    kind: &str,
    spec: &Value,
    ns_value: Option<&str>,
    defaults: &str,
) -> Option<String> {
    if let Some(ns) = ns_value {
        return Some(ns.to_string());
    }
    let listed: Vec<&str> = defaults.split(',').collect();
    let is_listed = |port: i64| listed.contains(&port.to_string().as_str());
    let ports: Vec<String> = match kind {
        "Service" => pod::list(spec, "ports")
            .iter()
            .filter_map(|p| {
                let port = p.get("port")?.as_i64()?;
                let exposed = match p.get("targetPort") {
                    None | Some(Value::Null) => is_listed(port),
                    Some(Value::Number(n)) => n.as_i64().is_some_and(is_listed),
                    Some(_) => false,
                };
                exposed.then(|| port.to_string())
            })
            .collect(),
        _ => pod::container_ports(spec)
            .into_iter()
            .filter(|p| is_listed(p.port))
            .map(|p| p.port.to_string())
            .collect(),
    };
    (!ports.is_empty()).then(|| ports.join(","))
}
