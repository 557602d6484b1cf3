//! Volumes injection appends to the pod.

use serde_json::{Value, json};

pub fn xtables_volume(name: &str) -> Value {
    json!({"emptyDir": {}, "name": name})
}

pub fn end_entity_volume() -> Value {
    json!({"emptyDir": {"medium": "Memory"}, "name": "linkerd-identity-end-entity"})
}

pub fn podinfo_volume() -> Value {
    json!({
        "downwardAPI": {"items": [{"fieldRef": {"fieldPath": "metadata.labels"}, "path": "labels"}]},
        "name": "linkerd-podinfo"
    })
}

pub fn token_volume() -> Value {
    json!({
        "name": "linkerd-identity-token",
        "projected": {"sources": [{"serviceAccountToken": {
            "audience": "identity.l5d.io",
            "expirationSeconds": 86400,
            "path": "linkerd-identity-token"
        }}]}
    })
}
