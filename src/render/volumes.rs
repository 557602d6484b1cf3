//! Volumes injection appends to the pod, typed: written straight into the answer, fields in the
//! order of their JSON names (the order a JSON map writes them in).

use crate::values::settings::Text;
use serde::Serialize;

/// One volume: a name and one source.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    #[serde(rename = "downwardAPI", skip_serializing_if = "Option::is_none")]
    downward_api: Option<DownwardApi>,
    #[serde(skip_serializing_if = "Option::is_none")]
    empty_dir: Option<EmptyDir>,
    name: Text,
    #[serde(skip_serializing_if = "Option::is_none")]
    projected: Option<Projected>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct EmptyDir {
    #[serde(skip_serializing_if = "Option::is_none")]
    medium: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct DownwardApi {
    items: [DownwardItem; 1],
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct DownwardItem {
    field_ref: FieldRef,
    path: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct FieldRef {
    field_path: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Projected {
    sources: [TokenSource; 1],
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenSource {
    service_account_token: Token,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Token {
    audience: &'static str,
    expiration_seconds: i64,
    path: &'static str,
}

fn volume(name: Text) -> Volume {
    Volume {
        downward_api: None,
        empty_dir: None,
        name,
        projected: None,
    }
}

/// The iptables lock file's `emptyDir`, shared by `linkerd-init` and the node's iptables.
pub fn xtables_volume(name: Text) -> Volume {
    let empty_dir = Some(EmptyDir { medium: None });
    Volume {
        empty_dir,
        ..volume(name)
    }
}

/// The proxy's identity key and certificate, in memory.
pub fn end_entity_volume() -> Volume {
    let empty_dir = Some(EmptyDir {
        medium: Some("Memory"),
    });
    Volume {
        empty_dir,
        ..volume("linkerd-identity-end-entity".into())
    }
}

/// The pod's labels, for the proxy's trace attributes.
pub fn podinfo_volume() -> Volume {
    let downward_api = Some(DownwardApi {
        items: [DownwardItem {
            field_ref: FieldRef {
                field_path: "metadata.labels",
            },
            path: "labels",
        }],
    });
    Volume {
        downward_api,
        ..volume("linkerd-podinfo".into())
    }
}

/// The projected service-account token the proxy presents to the identity service.
pub fn token_volume() -> Volume {
    let projected = Some(Projected {
        sources: [TokenSource {
            service_account_token: Token {
                audience: "identity.l5d.io",
                expiration_seconds: 86400,
                path: "linkerd-identity-token",
            },
        }],
    });
    Volume {
        projected,
        ..volume("linkerd-identity-token".into())
    }
}
