//! Why a lookup failed, told to the user: manual injection reads no cluster, so when the module
//! rejects an object after a lookup came back empty, the rejection names what the module looked
//! for and how to provide it (`--context`). Read from the host's recorded exchanges of that one
//! admission.

use serde_json::Value;

use crate::hostcalls::replay::{CallbackRequestType, Exchange, ReplayResponse};

/// The hint lines (each starting with a newline) for a rejection after `exchanges`; empty when
/// no lookup of them failed or listed the namespace the rejection names.
pub(super) fn explain(exchanges: &[Exchange], rejection: &str) -> String {
    let mut hints = String::new();
    for missing in failed_lookups(exchanges) {
        hints.push_str(&format!(
            "\n  the policy looked up {missing}, which is not in the cluster state: manual \
             injection reads no cluster, pass it with --context"
        ));
    }
    for (listed, names) in listed_for(exchanges, rejection) {
        let held = if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        };
        hints.push_str(&format!(
            "\n  the policy listed {listed}, of which the cluster state holds {held}: manual \
             injection reads no cluster, pass what is missing with --context"
        ));
    }
    hints
}

/// The lookups of an admission that failed, as a hint for the user: manual injection reads no
/// cluster, so an object the module needs must be in `--context` or the input.
fn failed_lookups(exchanges: &[Exchange]) -> Vec<String> {
    exchanges
        .iter()
        .filter(|e| matches!(e.response, ReplayResponse::Error { .. }))
        .filter_map(|e| match &e.request {
            CallbackRequestType::KubernetesGetResource {
                api_version,
                kind,
                name,
                namespace,
                ..
            } => Some(match namespace {
                Some(ns) => format!("{api_version}/{kind} {ns}/{name}"),
                None => format!("{api_version}/{kind} {name}"),
            }),
            _ => None,
        })
        .collect()
}

/// The answered lists of a namespace's objects whose namespace the rejection names
/// (`<kind> <namespace>/`), as `(what was listed, the names the cluster state holds)`: a list
/// has no "not found", so the hint says what the cluster state had.
fn listed_for(exchanges: &[Exchange], rejection: &str) -> Vec<(String, Vec<String>)> {
    exchanges
        .iter()
        .filter_map(|e| match (&e.request, &e.response) {
            (
                CallbackRequestType::KubernetesListResourceNamespace {
                    api_version,
                    kind,
                    namespace,
                    ..
                },
                ReplayResponse::Success { payload },
            ) if rejection.contains(&format!("{kind} {namespace}/")) => {
                let list: Value = serde_json::from_str(payload).unwrap_or_default();
                let names = list["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
                    .collect();
                Some((format!("{api_version}/{kind} in namespace {namespace}"), names))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_lookups_name_the_objects() {
        let get = |namespace: Option<&str>, response| Exchange {
            request: CallbackRequestType::KubernetesGetResource {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "roots".into(),
                namespace: namespace.map(str::to_owned),
                disable_cache: false,
                field_masks: None,
            },
            response,
        };
        let error = || ReplayResponse::Error {
            message: "not found".into(),
        };
        let ok = ReplayResponse::Success { payload: "{}".into() };
        assert_eq!(
            failed_lookups(&[get(Some("linkerd"), error()), get(None, ok), get(None, error())]),
            ["v1/ConfigMap linkerd/roots", "v1/ConfigMap roots"]
        );
    }

    #[test]
    fn lists_the_rejection_names_say_what_the_cluster_state_held() {
        let list = |namespace: &str, payload: &str| Exchange {
            request: CallbackRequestType::KubernetesListResourceNamespace {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: namespace.into(),
                label_selector: None,
                field_selector: None,
                field_masks: None,
            },
            response: ReplayResponse::Success {
                payload: payload.into(),
            },
        };
        let held = list("linkerd", r#"{"items":[{"metadata":{"name":"linkerd-config"}}]}"#);
        let empty = list("mesh", r#"{"items":[]}"#);
        let rejection = "ConfigMap linkerd/roots not found; ConfigMap mesh/values not found";
        assert_eq!(
            listed_for(&[held.clone(), empty.clone()], rejection),
            [
                (
                    "v1/ConfigMap in namespace linkerd".to_owned(),
                    vec!["linkerd-config".to_owned()]
                ),
                ("v1/ConfigMap in namespace mesh".to_owned(), vec![])
            ]
        );
        assert_eq!(listed_for(&[held, empty], "Namespace shop not found"), []);
    }
}
