//! The user documentation (README.md, docs/, deploy/README.md) against what ships: its links
//! lead somewhere, the rollout order it documents matches the manifests' `mode`, and every audit
//! annotation it names is one the module (built `policy.wasm`, run through this engine) emits.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use common::*;
use injector_host::linkerd::rollout::{Rng, pod_create_request};
use kubewarden_engine::protocol::request::AdmissionRequest;
use kubewarden_engine::runtime::callback::HostContext;
use kubewarden_engine::runtime::engine::Policy;
use serde_json::{Value, json};

fn root() -> PathBuf {
    manifest_dir().join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml(path: &str) -> Value {
    serde_yaml_ng::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text of the markdown section that starts with `heading` (up to the next heading of the
/// same or a higher level).
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|&c| c == '#').count();
    let start = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?}"))
        + 1;
    let body = &doc[start + heading.len()..];
    let end = body
        .match_indices("\n#")
        .find(|(i, _)| {
            let hashes = body[i + 1..].chars().take_while(|&c| c == '#').count();
            hashes <= level && body[i + 1 + hashes..].starts_with(' ')
        })
        .map_or(body.len(), |(i, _)| i);
    &doc[start..start + heading.len() + end]
}

/// The lines of a piece of markdown outside fenced blocks (the fences left out too).
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut in_fence = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            return false;
        }
        !in_fence
    })
}

/// Inline code spans (`...`) of a piece of markdown, fenced blocks left out.
fn code_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    for line in prose_lines(text) {
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            spans.push(inside);
        }
    }
    spans
}

/// README.md, every page of docs/, deploy/README.md: what a user reads.
fn user_docs() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| format!("docs/{}", e.expect("docs/ entry").file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".md"))
        .collect();
    pages.sort();
    pages.insert(0, "README.md".into());
    pages.push("deploy/README.md".into());
    pages
}

/// GitHub's anchor for a heading: lower case, spaces to `-`, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The targets of `[text](target)` links in a piece of markdown, fenced blocks left out.
fn link_targets(text: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        for (i, _) in line.match_indices("](") {
            let rest = &line[i + 2..];
            if let Some(end) = rest.find(')') {
                targets.push(&rest[..end]);
            }
        }
    }
    targets
}

// === links ===

#[test]
fn links_between_the_pages_lead_to_a_file_and_a_heading() {
    let mut checked = 0;
    for page in user_docs() {
        let dir = std::path::Path::new(&page)
            .parent()
            .expect("a page's folder")
            .to_path_buf();
        for target in link_targets(&read(&page)) {
            if target.starts_with("http") {
                continue;
            }
            let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                PathBuf::from(&page)
            } else {
                dir.join(file)
            };
            let full = root().join(&path);
            assert!(
                full.exists(),
                "{page}: link {target:?}: no file {}",
                path.display()
            );
            if !fragment.is_empty() {
                let text = std::fs::read_to_string(&full).unwrap_or_default();
                let anchors: Vec<String> = text.lines().filter(|l| l.starts_with('#')).map(anchor).collect();
                assert!(
                    anchors.iter().any(|a| a == fragment),
                    "{page}: link {target:?}: no heading #{fragment} in {}",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} links checked: is docs/ there?");
}

// === rollout order ===

const INJECTOR: &str = "linkerd-proxy-injector";
const VERIFY: &str = "linkerd-proxy-verify";
const APPLY: &str = "kubectl apply -f deploy/cluster-admission-policy.yaml -f deploy/verify-policy.yaml \
     -f deploy/audit-policy.yaml";
const RETIRE_LINKERD: &str = "proxyInjector.namespaceSelector";

fn to_protect(policy: &str) -> String {
    format!(
        "kubectl patch clusteradmissionpolicy {policy} --type=merge -p '{{\"spec\":{{\"mode\":\"protect\"}}}}'"
    )
}

fn position(text: &str, needle: &str, what: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("{what} does not contain {needle:?}"))
}

/// The numbered step of an ordered list that contains `needle`.
fn step_with<'a>(text: &'a str, needle: &str) -> &'a str {
    let at = position(text, needle, "the steps");
    let start = text[..at]
        .rmatch_indices('\n')
        .find(|(i, _)| {
            let line = &text[i + 1..];
            line.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .map_or(0, |(i, _)| i + 1);
    let end = text[at..]
        .match_indices("\n\n")
        .find(|(i, _)| {
            let next = &text[at + i + 2..];
            !next.starts_with(' ') && !next.starts_with('\n')
        })
        .map_or(text.len(), |(i, _)| at + i);
    &text[start..end]
}

#[test]
fn install_steps_start_in_monitor_and_retire_linkerd_last() {
    let deploy_readme = read("deploy/README.md");
    let install = section(&deploy_readme, "## Install");
    // the step that applies the manifests says which mode they come in
    let apply_step = step_with(install, APPLY);
    let modes: Vec<&str> = code_spans(apply_step)
        .into_iter()
        .filter_map(|s| s.strip_prefix("mode: "))
        .collect();
    assert_eq!(modes, ["monitor"], "{apply_step}");
    for file in [
        "deploy/cluster-admission-policy.yaml",
        "deploy/verify-policy.yaml",
        "deploy/audit-policy.yaml",
    ] {
        assert_eq!(
            yaml(file)["spec"]["mode"],
            "monitor",
            "{file}: the documented first mode"
        );
    }
    // then protect, injector first, and Linkerd's injector off only after both
    let apply = position(install, APPLY, "Install");
    let injector = position(install, &to_protect(INJECTOR), "Install");
    let verify = position(install, &to_protect(VERIFY), "Install");
    let retire = position(install, RETIRE_LINKERD, "Install");
    assert!(
        apply < injector && injector < verify && verify < retire,
        "{install}"
    );

    let operations = read("docs/operations.md");
    let migrating = section(&operations, "## Migrating from Linkerd's injector");
    let apply = position(migrating, "`mode: monitor`", "Migrating");
    let injector = position(migrating, &to_protect(INJECTOR), "Migrating");
    let verify = position(migrating, &to_protect(VERIFY), "Migrating");
    let retire = position(migrating, RETIRE_LINKERD, "Migrating");
    assert!(
        apply < injector && injector < verify && verify < retire,
        "{migrating}"
    );
}

// === audit annotations ===

/// `key: value` code spans in every paragraph, list or table row of the user documentation
/// (README.md, docs/, deploy/README.md) that speaks of audit annotations, in order of appearance.
fn documented_audit_annotations() -> Vec<(String, String)> {
    let mut found = Vec::new();
    for path in user_docs() {
        let text = read(&path);
        // a table row stands alone: a table's other rows speak of other things
        let units = text.split("\n\n").flat_map(|p| {
            if p.trim_start().starts_with('|') {
                p.lines().collect()
            } else {
                vec![p]
            }
        });
        for unit in units {
            // words, whatever line breaks fall between them
            let words = unit
                .to_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if !words.contains("audit annotation") {
                continue;
            }
            for span in code_spans(unit) {
                if let Some((key, value)) = span.split_once(": ")
                    && !key.is_empty()
                    && key.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                {
                    found.push((key.to_string(), value.to_string()));
                }
            }
        }
    }
    found
}

/// `value` against a documented value in which every `<...>` stands for any non-empty text.
fn matches_documented(documented: &str, value: &str) -> bool {
    fn go(pattern: &str, value: &str) -> bool {
        match pattern.find('<') {
            None => pattern == value,
            Some(open) => {
                let Some(close) = pattern[open..].find('>') else {
                    return pattern == value;
                };
                let (literal, rest) = (&pattern[..open], &pattern[open + close + 1..]);
                let Some(tail) = value.strip_prefix(literal) else {
                    return false;
                };
                (1..=tail.len())
                    .filter(|&n| tail.is_char_boundary(n))
                    .any(|n| go(rest, &tail[n..]))
            }
        }
    }
    go(documented, value)
}

/// Whether the request was admitted, and its audit annotations.
fn annotations(
    policy: &Policy,
    host: &Arc<HostContext>,
    req: &AdmissionRequest,
    s: Value,
) -> (bool, BTreeMap<String, String>) {
    let resp = policy.evaluate(host, req, &settings(s)).expect("evaluation");
    (resp.allowed, resp.audit_annotations.unwrap_or_default())
}

/// What the module emits in both modes: an injected and a skipped pod (mutate), and an unmeshed,
/// a meshed (the injector's own output) and an exempt pod (verify).
fn emitted_audit_annotations() -> Vec<BTreeMap<String, String>> {
    let engine = engine();
    let policy = engine
        .load_policy_file(&policy_wasm_path())
        .expect("policy.wasm compiles");
    let host = policy_host();
    let rs = add_nginx_replica_set(&host);
    host.lookups()
        .insert_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}}))
        .unwrap();
    let mutate = json!({});
    let verify = json!({"policy": {"mode": "verify"}});

    let unmeshed = pod_create_request(&rs, &mut Rng::new(7)).expect("a pod of the ReplicaSet");
    let mut plain = unmeshed.clone();
    plain.namespace = Some("plain".into());
    plain.object.as_mut().unwrap()["metadata"]["namespace"] = json!("plain");

    let resp = policy
        .evaluate(&host, &unmeshed, &settings(mutate.clone()))
        .expect("evaluation");
    let mut meshed = unmeshed.clone();
    let object = meshed.object.as_mut().unwrap();
    json_patch::patch(object, &resp.decoded_patch().unwrap().expect("a patch")).unwrap();
    assert!(
        object["spec"]["initContainers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "linkerd-proxy"),
        "the injector's output runs the proxy"
    );

    let mut stale = meshed.clone();
    stale.object.as_mut().unwrap()["metadata"]["annotations"]["linkerd.io/proxy-version"] =
        json!("edge-26.5.1");
    // linkerd-config unusable (here: not found), values from the settings alone
    let fallback = json!({"policy": {"linkerdConfigMap": "absent", "linkerdConfigFailure": "settings"}});
    // the same, rejected for pods that ask for a proxy and left out elsewhere
    let unusable = json!({"policy": {"linkerdConfigMap": "absent"}});

    let cases = [
        ("injected (mutate)", &unmeshed, &mutate, true),
        (
            "injected, values from the settings alone (mutate)",
            &unmeshed,
            &fallback,
            true,
        ),
        ("skipped (mutate)", &plain, &mutate, true),
        (
            "skipped, linkerd-config unusable: no default opaque-ports annotation (mutate)",
            &plain,
            &unusable,
            true,
        ),
        ("unmeshed (verify)", &unmeshed, &verify, false),
        ("meshed (verify)", &meshed, &verify, true),
        ("exempt (verify)", &plain, &verify, true),
        ("stale proxy (verify)", &stale, &verify, true),
    ];
    cases
        .into_iter()
        .map(|(what, req, s, allowed)| {
            let (was_allowed, a) = annotations(&policy, &host, req, s.clone());
            assert_eq!(was_allowed, allowed, "{what}");
            a
        })
        .collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const ENABLE_ABSENT: &str =
    "neither the namespace nor the pod have the annotation \"linkerd.io/inject:enabled\"";

#[test]
fn the_module_emits_these_audit_annotations() {
    assert_eq!(
        emitted_audit_annotations(),
        [
            map(&[
                ("injection", "injected"),
                // the rollout's pods carry pod-template-hash: no ReplicaSet lookup by default
                ("owner", "deployment/nginx (pod-template-hash naming rule)")
            ]),
            map(&[
                ("injection", "injected"),
                ("owner", "deployment/nginx (pod-template-hash naming rule)"),
                ("values", "settings only: linkerd-config unusable")
            ]),
            map(&[("injection", &format!("skipped: {ENABLE_ABSENT}"))]),
            map(&[
                ("injection", &format!("skipped: {ENABLE_ABSENT}")),
                ("values", "not used: linkerd-config unusable")
            ]),
            map(&[("verify", "not meshed")]),
            // a meshed pod is exempt like any pod that already has a proxy: no "meshed" value
            map(&[("verify", "exempt: pod has a sidecar injected already")]),
            map(&[("verify", &format!("exempt: {ENABLE_ABSENT}"))]),
            map(&[(
                "verify",
                "meshed, stale proxy: edge-26.5.1 (control plane edge-26.8.3)"
            )]),
        ]
    );
}

#[test]
fn every_documented_audit_annotation_is_emitted() {
    let documented = documented_audit_annotations();
    let expected: Vec<(String, String)> = [
        // README.md: what it does
        ("injection", "skipped: <reasons>"),
        // docs/behaviour.md: owner resolution, failure behaviour, "Why a pod has no proxy"
        ("owner", "<kind>/<name> (<how>)"),
        ("values", "settings only: linkerd-config unusable"),
        ("values", "not used: linkerd-config unusable"),
        ("injection", "skipped: <reasons>"),
        ("injection", "injected"),
        // docs/operations.md: troubleshooting
        ("injection", "injected"),
        ("owner", "<kind>/<name> (<how>)"),
        ("injection", "skipped: <reasons>"),
        // docs/settings.md: where the values come from, verify mode
        ("values", "settings only: linkerd-config unusable"),
        (
            "verify",
            "meshed, stale proxy: <version> (control plane <version>)",
        ),
        // deploy/README.md: the verify policy
        ("verify", "not meshed"),
        ("verify", "exempt: <reasons>"),
        ("verify", "exempt: pod has a sidecar injected already"),
        ("verify", &format!("exempt: {ENABLE_ABSENT}")),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let emitted = emitted_audit_annotations();
    for (key, value) in &documented {
        assert!(
            emitted
                .iter()
                .flatten()
                .any(|(k, v)| k == key && matches_documented(value, v)),
            "the docs name `{key}: {value}`, which the module never emits: {emitted:#?}"
        );
    }
    // and the extraction found exactly these, so a reworded paragraph cannot hide a claim
    assert_eq!(documented, expected);
}

#[test]
fn placeholders_stand_for_some_text() {
    assert!(matches_documented(
        "exempt: <reasons>",
        "exempt: hostNetwork is enabled"
    ));
    assert!(!matches_documented("exempt: <reasons>", "exempt: "));
    assert!(!matches_documented(
        "meshed",
        "exempt: pod has a sidecar injected already"
    ));
    assert!(matches_documented(
        "<kind>/<name> (<how>)",
        "deployment/nginx (owner lookup)"
    ));
    assert!(!matches_documented("<kind>/<name> (<how>)", "pod (owner lookup)"));
}
