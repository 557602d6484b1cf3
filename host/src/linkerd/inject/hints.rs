//! Why a lookup failed, told to the user: manual injection reads no cluster, so when the module
//! rejects an object after a lookup came back empty, the rejection names what the module looked
//! for and how to provide it (`--context`; with `--ignore-cluster`, what the cluster state holds
//! instead). Read from the host's recorded exchanges of that one admission.

use serde_json::Value;

use kubewarden_engine::hostcalls::replay::{CallbackRequestType, Exchange, ReplayResponse};

/// What to do about a missing object, by how the run got its cluster state.
const PASS_IT: &str = "manual injection reads no cluster, pass it with --context";
const PASS_WHAT_IS_MISSING: &str = "manual injection reads no cluster, pass what is missing with --context";
/// With `--ignore-cluster` there is no `--context` to pass it in: say what the state holds.
const IGNORED: &str = "with --ignore-cluster it holds the input's Namespaces only (set what the \
     policy needs in the settings, or pass it with --context instead of --ignore-cluster)";

/// The hint lines (each starting with a newline) for a rejection after `exchanges`; empty when
/// no lookup of them failed or listed the namespace the rejection names. `ignore_cluster`: the
/// run was told to read no cluster state (`--ignore-cluster`), so `--context` is no remedy.
pub(super) fn explain(exchanges: &[Exchange], rejection: &str, ignore_cluster: bool) -> String {
    let (pass_it, pass_what_is_missing) = match ignore_cluster {
        false => (PASS_IT, PASS_WHAT_IS_MISSING),
        true => (IGNORED, IGNORED),
    };
    let mut hints = String::new();
    for missing in failed_lookups(exchanges) {
        hints.push_str(&format!(
            "\n  the policy looked up {missing}, which is not in the cluster state: {pass_it}"
        ));
    }
    for (listed, names) in listed_for(exchanges, rejection) {
        let held = if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        };
        hints.push_str(&format!(
            "\n  the policy listed {listed}, of which the cluster state holds {held}: {pass_what_is_missing}"
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

    #[test]
    fn the_remedy_follows_how_the_run_got_its_cluster_state() {
        let missing = Exchange {
            request: CallbackRequestType::KubernetesGetResource {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "roots".into(),
                namespace: Some("linkerd".into()),
                disable_cache: false,
                field_masks: None,
            },
            response: ReplayResponse::Error {
                message: "not found".into(),
            },
        };
        let line = "\n  the policy looked up v1/ConfigMap linkerd/roots, which is not in the cluster state: ";
        assert_eq!(
            explain(std::slice::from_ref(&missing), "no", false),
            format!("{line}{PASS_IT}")
        );
        assert_eq!(explain(&[missing], "no", true), format!("{line}{IGNORED}"));
        assert_eq!(explain(&[], "no", true), "");
    }
}
