//! The default `config.linkerd.io/opaque-ports` annotation of pods and Services.
//!
//! Linkerd writes the namespace's value verbatim when the namespace has one, otherwise the
//! default list (`proxy.opaquePorts`) filtered to the ports the object exposes. Entries are
//! compared as exact strings, so a range in the default list never matches.

use crate::pod;
use serde_json::Value;

/// A port the default list may name: the number compared with the list, and the port written
/// to the annotation (a Service's `port` is written when its `targetPort` is listed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    compared: i64,
    written: i64,
}

/// The ports of a pod (`kind` other than `Service`) or a Service that a default list could
/// name. Empty means no list adds the annotation, so the list need not be read.
fn candidates(kind: &str, spec: &Value) -> Vec<Candidate> {
    match kind {
        "Service" => pod::list(spec, "ports")
            .iter()
            .filter_map(|p| {
                let port = p.get("port")?.as_i64()?;
                let compared = match p.get("targetPort") {
                    None | Some(Value::Null) => port,
                    // Named target ports are never compared.
                    Some(target) => target.as_i64()?,
                };
                Some(Candidate {
                    compared,
                    written: port,
                })
            })
            .collect(),
        _ => pod::container_ports(spec)
            .into_iter()
            .map(|p| Candidate {
                compared: p.port,
                written: p.port,
            })
            .collect(),
    }
}

/// The annotation the default list gives these candidates; `None` when it names none.
fn from_defaults(candidates: &[Candidate], defaults: &str) -> Option<String> {
    let mut annotation = String::new();
    for c in candidates {
        let compared = c.compared.to_string();
        if crate::parse::ports::entries(defaults).any(|entry| entry == compared) {
            if !annotation.is_empty() {
                annotation.push(',');
            }
            annotation.push_str(&c.written.to_string());
        }
    }
    (!annotation.is_empty()).then_some(annotation)
}

/// The annotation value for a pod or Service that lacks one; `None` when nothing applies.
/// `defaults` gives the default list (`None`: unknown, so no annotation); it is asked only when
/// the namespace has no value and the object has a port the list could name, so a caller that
/// must read the list from the cluster reads it only then.
pub fn default_annotation<D: AsRef<str>>(
    kind: &str,
    spec: &Value,
    ns_value: Option<&str>,
    defaults: impl FnOnce() -> Option<D>,
) -> Option<String> {
    if let Some(ns) = ns_value {
        return Some(ns.to_string());
    }
    let candidates = candidates(kind, spec);
    if candidates.is_empty() {
        return None;
    }
    from_defaults(&candidates, defaults()?.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    const DEFAULTS: &str = "25,587,3306,4444,5432,6379,9300,11211";

    #[rstest]
    #[case::untargeted_listed(json!([{"port": 3306}]), Some("3306"))]
    #[case::listed_target_writes_the_port(json!([{"port": 80, "targetPort": 3306}]), Some("80"))]
    #[case::unlisted_target(json!([{"port": 3306, "targetPort": 8080}]), None)]
    #[case::named_target_never_matches(json!([{"port": 3306, "targetPort": "mysql"}]), None)]
    #[case::in_order(json!([{"port": 6379}, {"port": 25, "targetPort": null}]), Some("6379,25"))]
    #[case::no_ports(json!([]), None)]
    fn service_ports(#[case] ports: Value, #[case] expected: Option<&str>) {
        let spec = json!({"ports": ports});
        assert_eq!(
            default_annotation("Service", &spec, None, || Some(DEFAULTS)).as_deref(),
            expected
        );
    }

    #[test]
    fn named_targets_are_no_candidates() {
        let spec = json!({"ports": [{"port": 80, "targetPort": "http"}]});
        assert_eq!(candidates("Service", &spec), []);
    }

    #[test]
    fn the_namespace_value_is_written_verbatim() {
        let spec = json!({"containers": [{"name": "a"}]});
        assert_eq!(
            default_annotation("Pod", &spec, Some("8080, http"), || -> Option<&str> {
                panic!("the namespace's value needs no list")
            })
            .as_deref(),
            Some("8080, http")
        );
    }

    #[rstest]
    #[case::padded_or_signed_never_match("080,+80, 80,80 ", None)]
    #[case::exact_entry_among_others("8080,80,8", Some("80,443"))]
    fn entries_are_compared_as_written(#[case] defaults: &str, #[case] expected: Option<&str>) {
        let spec =
            json!({"ports": [{"port": 80}, {"port": 443, "targetPort": 8}, {"port": 9, "targetPort": -8}]});
        assert_eq!(
            default_annotation("Service", &spec, None, || Some(defaults)).as_deref(),
            expected
        );
    }

    #[test]
    fn pod_ports_are_compared_as_strings() {
        let spec = json!({"containers": [{"name": "a", "ports": [{"containerPort": 5432}, {"containerPort": 8080}]}]});
        assert_eq!(
            default_annotation("Pod", &spec, None, || Some("5432,8000-8100")).as_deref(),
            Some("5432")
        );
    }
}
