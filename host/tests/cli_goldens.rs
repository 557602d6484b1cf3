//! `injector-host inject` against Linkerd's CLI goldens (`linkerd inject --manual`, the manual
//! cases of `TestUninjectAndInject` and `TestRunInjectCmd` in cli/cmd/testdata; see
//! tests/fixtures/linkerd/README.md section 2).
//!
//! For each case the input goes through the real policy module as `linkerd inject` configures
//! itself: the test's configuration is the control plane's values (ConfigMap
//! `linkerd/linkerd-config`, key `values`, which the CLI reads from the cluster), and the case's
//! flags are the settings over them. The output is compared with the golden on what the injector
//! renders:
//! per object, the pod template's containers, init containers, volumes, labels and the
//! `linkerd.io/proxy-version` / `linkerd.io/trust-root-sha256` annotations. Normalised first:
//! Kubernetes quantities in `resources` (`0.5` = `500m`, `1Gi` = `1024Mi`), and `null` / integer
//! `0` fields, which the CLI drops by re-serialising through typed Go objects (`omitempty`).
//! Cases where Linkerd's CLI fails (hostNetwork, another proxy, bad YAML) match when this tool
//! reports the same reason (and leaves the document unchanged) or the same parse error.
//!
//! Prints `cli goldens: N/M match`; every mismatch must be listed in `KNOWN_DIFFERENCES` with
//! its reason, and every listed case must still differ.

use std::path::{Path, PathBuf};

use injector_host::linkerd::answer::Injection;
use injector_host::linkerd::inject::{InjectError, InjectOptions, Injector, Input};
use kubewarden_engine::hostcalls::cluster::ClusterState;
use kubewarden_engine::protocol::metadata::Metadata;
use kubewarden_engine::protocol::request::PolicySettings;
use kubewarden_engine::runtime::engine::{Engine, EngineConfig, Policy};
use serde::Deserialize;
use serde_json::{Map, Value, json};

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/linkerd/cli/cmd/testdata")
}

fn policy_wasm() -> PathBuf {
    let path = std::env::var_os("INJECTOR_POLICY_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../policy.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run `make policy.wasm` first",
        path.display()
    );
    path
}

fn read(name: &str) -> String {
    std::fs::read_to_string(testdata().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Which of Linkerd's two test configurations a case uses.
#[derive(Clone, Copy)]
enum Config {
    /// TestUninjectAndInject's `defaultConfig`.
    UninjectAndInject,
    /// TestRunInjectCmd's configuration.
    RunInjectCmd,
}

enum Expect {
    /// Compare with this golden file.
    Golden(&'static str),
    /// The document is skipped (unchanged) with this reason, which Linkerd's stderr golden names.
    Skipped { stderr: &'static str },
    /// A parse error; Linkerd's stderr golden gives the line within the document.
    ParseError { stderr: &'static str },
}

struct Case {
    name: &'static str,
    input: &'static str,
    config: Config,
    /// The case's flags: settings over the configuration's values (deep-merged into the
    /// CLI's own settings).
    settings: Value,
    options: InjectOptions,
    expect: Expect,
}

fn case(name: &'static str, input: &'static str, config: Config, expect: Expect) -> Case {
    Case {
        name,
        input,
        config,
        settings: json!({}),
        options: InjectOptions::default(),
        expect,
    }
}

/// Cases where this tool deliberately differs from the CLI, with the reason (also in README).
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    (
        "already_injected",
        "the CLI uninjects the four already-injected Deployments and injects them again; like the \
         webhook, this tool skips a pod that already has a proxy (`pod has a sidecar injected \
         already`) and leaves it byte-for-byte unchanged",
    ),
    (
        "tap_deployment_debug",
        "the input is an already-injected control-plane Deployment: the CLI uninjects and re-injects \
         it, this tool skips it (`pod has a sidecar injected already`) and leaves it unchanged",
    ),
];

fn cases() -> Vec<Case> {
    use Config::*;
    use Expect::*;
    let mut v = vec![
        case(
            "deployment",
            "inject_emojivoto_deployment.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_deployment.golden.yml"),
        ),
        Case {
            settings: json!({"proxy": {"ports": {"admin": 1234}}}),
            ..case(
                "deployment_overridden",
                "inject_emojivoto_deployment.input.yml",
                UninjectAndInject,
                Golden("inject_emojivoto_deployment_overridden.golden.yml"),
            )
        },
        case(
            "list",
            "inject_emojivoto_list.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_list.golden.yml"),
        ),
        case(
            "hostNetwork_false",
            "inject_emojivoto_deployment_hostNetwork_false.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_deployment_hostNetwork_false.golden.yml"),
        ),
        case(
            "injectDisabled",
            "inject_emojivoto_deployment_injectDisabled.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_deployment_injectDisabled.input.yml"),
        ),
        case(
            "controller_name",
            "inject_emojivoto_deployment_controller_name.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_deployment_controller_name.golden.yml"),
        ),
        case(
            "pod",
            "inject_emojivoto_pod.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_pod.golden.yml"),
        ),
        case(
            "udp",
            "inject_emojivoto_deployment_udp.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_deployment_udp.golden.yml"),
        ),
        case(
            "already_injected",
            "inject_emojivoto_already_injected.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_already_injected.golden.yml"),
        ),
        case(
            "empty_resources",
            "inject_emojivoto_deployment_empty_resources.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_deployment_empty_resources.golden.yml"),
        ),
        Case {
            settings: json!({"cniEnabled": true}),
            ..case(
                "no_init_container",
                "inject_emojivoto_deployment.input.yml",
                UninjectAndInject,
                Golden("inject_emojivoto_deployment_no_init_container.golden.yml"),
            )
        },
        case(
            "config_overrides",
            "inject_emojivoto_deployment_config_overrides.input.yml",
            UninjectAndInject,
            Golden("inject_emojivoto_deployment_config_overrides.golden.yml"),
        ),
        Case {
            options: InjectOptions {
                enable_debug_sidecar: true,
                ..Default::default()
            },
            ..case(
                "debug",
                "inject_emojivoto_deployment.input.yml",
                UninjectAndInject,
                Golden("inject_emojivoto_deployment_debug.golden.yml"),
            )
        },
        Case {
            options: InjectOptions {
                enable_debug_sidecar: true,
                ..Default::default()
            },
            ..case(
                "tap_deployment_debug",
                "inject_tap_deployment.input.yml",
                UninjectAndInject,
                Golden("inject_tap_deployment_debug.golden.yml"),
            )
        },
        Case {
            settings: json!({"proxy": {"opaquePorts": "3000,5000-6000,mysql"}}),
            ..case(
                "opaque_ports",
                "inject_emojivoto_deployment.input.yml",
                UninjectAndInject,
                Golden("inject_emojivoto_deployment_opaque_ports.golden.yml"),
            )
        },
        Case {
            options: InjectOptions {
                ingress: true,
                ..Default::default()
            },
            ..case(
                "pod_ingress",
                "inject_emojivoto_pod.input.yml",
                UninjectAndInject,
                Golden("inject_emojivoto_pod_ingress.golden.yml"),
            )
        },
        Case {
            settings: json!({"proxy": {"nativeSidecar": true}}),
            ..case(
                "native_sidecar",
                "inject_emojivoto_deployment.input.yml",
                UninjectAndInject,
                Golden("inject_emojivoto_deployment_native_sidecar.golden.yml"),
            )
        },
        case(
            "gettest_good",
            "inject_gettest_deployment.good.input.yml",
            RunInjectCmd,
            Golden("inject_gettest_deployment.good.golden.yml"),
        ),
        case(
            "automountServiceAccountToken_false",
            "inject_emojivoto_deployment_automountServiceAccountToken_false.input.yml",
            RunInjectCmd,
            Golden("inject_emojivoto_deployment_automountServiceAccountToken_false.golden.yml"),
        ),
        case(
            "istio",
            "inject_emojivoto_istio.input.yml",
            RunInjectCmd,
            Skipped {
                stderr: "inject_emojivoto_istio.golden.stderr",
            },
        ),
        case(
            "hostNetwork_true",
            "inject_emojivoto_deployment_hostNetwork_true.input.yml",
            RunInjectCmd,
            Skipped {
                stderr: "inject_emojivoto_deployment_hostNetwork_true.golden.stderr",
            },
        ),
        case(
            "gettest_bad",
            "inject_gettest_deployment.bad.input.yml",
            RunInjectCmd,
            ParseError {
                stderr: "inject_gettest_deployment.bad.golden",
            },
        ),
    ];
    // Not `--manual` in Linkerd's test, but its failure is the webhook's skip reason.
    v.push(Case {
        settings: json!({"identity": {"serviceAccountTokenProjection": false}}),
        ..case(
            "automountServiceAccountToken_false_volumeProjection_disabled",
            "inject_emojivoto_deployment_automountServiceAccountToken_false.input.yml",
            RunInjectCmd,
            Skipped {
                stderr: "inject_emojivoto_deployment_automountServiceAccountToken_false_volumeProjection_disabled.golden.stderr",
            },
        )
    });
    v
}

/// The configuration's Helm values, as the control plane publishes them in `linkerd-config`.
fn values(config: Config) -> Value {
    let (cp, proxy, debug) = match config {
        Config::UninjectAndInject => (
            "test-inject-control-plane-version",
            "test-inject-proxy-version",
            "test-inject-debug-version",
        ),
        Config::RunInjectCmd => (
            "install-control-plane-version",
            "testinjectversion",
            "install-debug-version",
        ),
    };
    json!({
        "linkerdVersion": cp,
        "proxy": {"image": {"name": "cr.l5d.io/linkerd/proxy", "version": proxy}},
        "debugContainer": {"image": {"name": "cr.l5d.io/linkerd/debug", "version": debug}},
    })
}

/// The cluster state: the control plane's `linkerd-config` with the configuration's values.
fn control_plane(config: Config) -> ClusterState {
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "linkerd-config", "namespace": "linkerd"},
        "data": {"values": serde_yaml_ng::to_string(&values(config)).unwrap()},
    });
    let mut state = ClusterState::new();
    state.insert(config_map).unwrap();
    state
}

/// The case's settings, plus what is the CLI's own: the test's trust anchors and its
/// `linkerd.io/created-by`.
fn settings(c: &Case) -> Value {
    let mut settings = json!({
        "identityTrustAnchorsPEM": read("valid-trust-anchors.pem"),
        "policy": {"createdBy": "linkerd/cli dev-undefined"},
    });
    merge(&mut settings, &c.settings);
    settings
}

fn merge(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b.clone(),
    }
}

// === what is compared ===

fn template_path(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some(""),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "ReplicationController" | "Job" => {
            Some("/spec/template")
        }
        "CronJob" => Some("/spec/jobTemplate/spec/template"),
        _ => None,
    }
}

fn objects(docs: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for d in docs {
        match d.get("items").and_then(Value::as_array) {
            Some(items) if d["kind"].as_str().is_some_and(|k| k.ends_with("List")) => {
                out.extend(items.iter().cloned())
            }
            _ => out.push(d.clone()),
        }
    }
    out
}

/// The compared view of one object.
fn view(object: &Value) -> Value {
    let kind = object["kind"].as_str().unwrap_or("");
    let name = object.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
    let Some(path) = template_path(kind) else {
        return json!({"kind": kind, "name": name});
    };
    let t = object.pointer(path).cloned().unwrap_or(Value::Null);
    let field = |p: &str| t.pointer(p).cloned().unwrap_or(Value::Null);
    let mut v = json!({
        "kind": kind,
        "name": name,
        "containers": field("/spec/containers"),
        "initContainers": field("/spec/initContainers"),
        "volumes": field("/spec/volumes"),
        "labels": field("/metadata/labels"),
        "proxy-version": field("/metadata/annotations/linkerd.io~1proxy-version"),
        "trust-root-sha256": field("/metadata/annotations/linkerd.io~1trust-root-sha256"),
    });
    normalise(&mut v, false);
    v
}

/// Drops `null`, `""` and integer `0` fields and empty `resources: {}` (Go's `omitempty` after
/// the CLI's typed round trip) and canonicalises quantities under `resources`.
fn normalise(v: &mut Value, in_resources: bool) {
    match v {
        Value::Object(map) => {
            map.retain(|k, x| {
                !(x.is_null()
                    || x.as_i64() == Some(0)
                    || x.as_str() == Some("")
                    || (k == "resources" && x.as_object().is_some_and(Map::is_empty)))
            });
            for (k, x) in map.iter_mut() {
                if in_resources && (k == "requests" || k == "limits") {
                    if let Value::Object(q) = x {
                        for quantity in q.values_mut() {
                            *quantity = Value::String(canonical_quantity(quantity));
                        }
                    }
                } else {
                    normalise(x, k == "resources");
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| normalise(x, false)),
        _ => {}
    }
}

/// A Kubernetes quantity as a number of base units (`500m` and `0.5` both give `0.5`).
fn canonical_quantity(q: &Value) -> String {
    let s = match q {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let suffixes: [(&str, f64); 13] = [
        ("Ki", 1024f64),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("Pi", 1024f64.powi(5)),
        ("Ei", 1024f64.powi(6)),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    for (suffix, factor) in suffixes {
        if let Some(n) = s.strip_suffix(suffix)
            && let Ok(n) = n.parse::<f64>()
        {
            return format!("{}", n * factor);
        }
    }
    s.parse::<f64>().map(|n| format!("{n}")).unwrap_or(s)
}

/// JSON pointers where two values differ (at most `limit`).
fn differences(a: &Value, b: &Value, at: String, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let (p, q) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                differences(p, q, format!("{at}/{k}"), out, limit);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, format!("{at}/{i}"), out, limit);
            }
        }
        _ => out.push(format!("{at}: ours {} vs golden {}", short(a), short(b))),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 120 {
        format!("{}...", &s[..120])
    } else {
        s
    }
}

fn parse_stream(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("golden YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

// === running ===

struct Runner {
    policy: Policy,
    allow: std::collections::BTreeSet<kubewarden_engine::protocol::metadata::ContextAwareResource>,
}

impl Runner {
    fn run(&self, c: &Case) -> Result<injector_host::linkerd::inject::InjectOutput, InjectError> {
        let injector = Injector::new(
            &self.policy,
            PolicySettings::from_value(&settings(c)).unwrap(),
            c.options.clone(),
            control_plane(c.config),
            Some(self.allow.clone()),
        );
        injector.run(vec![Input::new(c.input, read(c.input))])
    }

    /// `Ok(())` when the case matches, else what differs.
    fn check(&self, c: &Case) -> Result<(), String> {
        let result = self.run(c);
        match &c.expect {
            Expect::Golden(golden) => {
                let out = result.map_err(|e| format!("inject failed: {e}"))?;
                let ours: Vec<Value> = objects(&parse_stream(&out.yaml)).iter().map(view).collect();
                let theirs: Vec<Value> = objects(&parse_stream(&read(golden))).iter().map(view).collect();
                if ours.len() != theirs.len() {
                    return Err(format!("{} objects, golden has {}", ours.len(), theirs.len()));
                }
                let mut diffs = Vec::new();
                for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                    differences(a, b, format!("object {i}"), &mut diffs, 8);
                }
                if diffs.is_empty() {
                    Ok(())
                } else {
                    Err(diffs.join("\n      "))
                }
            }
            Expect::Skipped { stderr } => {
                let out = result.map_err(|e| format!("inject failed: {e}"))?;
                let reason = read(stderr);
                let reason = reason.rsplit(": ").next().unwrap_or("").trim();
                let input = read(c.input);
                let skipped = out
                    .report
                    .entries
                    .iter()
                    .all(|e| matches!(&e.injection, Injection::Skipped(r) if r.contains(reason)));
                if out.yaml != input {
                    Err("the skipped document was changed".into())
                } else if !skipped || out.report.entries.is_empty() {
                    Err(format!(
                        "report {:?} does not give Linkerd's reason {reason:?}",
                        out.report.entries
                    ))
                } else {
                    Ok(())
                }
            }
            Expect::ParseError { stderr } => {
                let golden = read(stderr);
                let line: usize = golden
                    .split("line ")
                    .nth(1)
                    .and_then(|s| s.split(':').next())
                    .and_then(|s| s.parse().ok())
                    .expect("line in Linkerd's parse error");
                let message = match result {
                    Err(InjectError::Parse(errors)) if errors.len() == 1 => errors[0].clone(),
                    other => return Err(format!("expected one parse error, got {other:?}")),
                };
                // ours: `<file>:<absolute line>:<column>: ...`; Linkerd's: the line in the document
                let ours: usize = message
                    .strip_prefix(&format!("{}:", c.input))
                    .and_then(|s| s.split(':').next())
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| format!("no file:line in {message:?}"))?;
                let text = read(c.input);
                let doc_start = text
                    .lines()
                    .take(ours)
                    .enumerate()
                    .filter(|(_, l)| l.starts_with("---"))
                    .map(|(i, _)| i + 2)
                    .last()
                    .unwrap_or(1);
                let in_document = ours + 1 - doc_start;
                if in_document.abs_diff(line) <= 1 {
                    Ok(())
                } else {
                    Err(format!(
                        "our error is at line {ours} (line {in_document} of its document), Linkerd's at line {line} of the document: {message}"
                    ))
                }
            }
        }
    }
}

#[test]
fn cli_goldens() {
    let engine = Engine::new(EngineConfig::without_deadline()).unwrap();
    let policy = engine.load_policy_file(&policy_wasm()).unwrap();
    let allow = Metadata::from_file(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../policy.yaml")))
        .unwrap()
        .context_aware_resources;
    let runner = Runner { policy, allow };
    let cases = cases();
    let mut matched = 0;
    let mut unexpected = Vec::new();
    let mut report = String::new();
    for c in &cases {
        let known = KNOWN_DIFFERENCES.iter().find(|(n, _)| *n == c.name);
        match (runner.check(c), known) {
            (Ok(()), None) => matched += 1,
            (Ok(()), Some(_)) => {
                unexpected.push(format!("{}: listed as a known difference but matches", c.name))
            }
            (Err(d), Some((_, reason))) => {
                report.push_str(&format!("  {} differs (known): {reason}\n      {d}\n", c.name))
            }
            (Err(d), None) => unexpected.push(format!("{}: {d}", c.name)),
        }
    }
    println!("cli goldens: {matched}/{} match", cases.len());
    print!("{report}");
    assert!(
        unexpected.is_empty(),
        "unexpected results:\n{}",
        unexpected.join("\n")
    );
}

#[test]
fn quantities_are_normalised() {
    assert_eq!(
        canonical_quantity(&json!("0.5")),
        canonical_quantity(&json!("500m"))
    );
    assert_eq!(canonical_quantity(&json!(1)), canonical_quantity(&json!("1")));
    assert_eq!(
        canonical_quantity(&json!("1Gi")),
        canonical_quantity(&json!("1024Mi"))
    );
    assert_ne!(
        canonical_quantity(&json!("1G")),
        canonical_quantity(&json!("1Gi"))
    );
    let mut v = json!({"resources": {"limits": {"cpu": 1}}, "x": 0, "y": null, "s": "",
        "z": [{"a": 0, "resources": {}, "emptyDir": {}}]});
    normalise(&mut v, false);
    assert_eq!(
        v,
        json!({"resources": {"limits": {"cpu": "1"}}, "z": [{"emptyDir": {}}]})
    );
}
