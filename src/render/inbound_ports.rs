//! `LINKERD2_PROXY_INBOUND_PORTS`: every port the pod's containers listen on.

use crate::pod;
use serde_json::Value;
use std::collections::BTreeSet;

/// Container ports of init containers and containers, plus integer `httpGet` ports of their
/// liveness and readiness probes; deduplicated and sorted as strings, as Linkerd does.
pub fn inbound_ports(spec: &Value) -> String {
    let mut ports = BTreeSet::new();
    for c in pod::all_containers(spec) {
        for p in pod::list(c, "ports") {
            if let Some(n) = p.get("containerPort").and_then(Value::as_i64) {
                ports.insert(n.to_string());
            }
        }
        for probe in ["livenessProbe", "readinessProbe"] {
            let port = c
                .get(probe)
                .and_then(|p| p.get("httpGet"))
                .and_then(|g| g.get("port"));
            if let Some(n) = port.and_then(Value::as_i64) {
                ports.insert(n.to_string());
            }
        }
    }
    ports.into_iter().collect::<Vec<_>>().join(",")
}
