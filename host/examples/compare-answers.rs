//! Compares two builds of the policy module answer for answer, to show that a change to the
//! module changes no answer: `scripts/compare-answers.sh OLD.wasm NEW.wasm` (which runs this).
//!
//! Both modules run in the engine as policy-server runs them (settings validated first, a fresh
//! instance per request, lookups allowed for the `contextAwareResources` of `policy.yaml`), on
//! the same requests and the same cluster:
//!
//! * `conformance`: every object of Linkerd's webhook fixtures, at each release whose fixtures
//!   differ, in the fixtures' namespace under each of its annotation sets, pods also owned by a
//!   Deployment, with the conformance suites' settings and cluster (`tests/common/fixtures.rs`,
//!   shared with them), and with each shipped settings file over a default control plane;
//! * `fixtures`: every object of Linkerd's CLI and integration fixtures, the same way;
//! * `bench`: every request of the benchmarks (`benches/src/world.rs`, shared with them) with
//!   each shipped settings file, over the default control plane and over each of Linkerd's
//!   `linkerd-config` goldens;
//! * `kubewarden`: the requests of `benches/kubewarden/requests/` over their cluster and the
//!   control plane `benches/kubewarden/fake_apiserver.py` serves, with each settings file;
//! * `settings`: `validate_settings` of every settings document used above.
//!
//! The shipped settings are `deploy/settings/*.yaml` and empty settings. Two answers are the same
//! when `accepted`, `message`, `code`, the JSON patch (decoded, from the mutated object as the
//! engine diffs it), the warnings and the audit annotations are equal (a missing list or map
//! equals an empty one, as the API server reads them). Prints the differences and
//! `N of M answers the same`; exits 1 when any answer differs, 2 when it cannot run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use kubewarden_engine::hostcalls::lookup::{ClusterLookup, Lookups};
use kubewarden_engine::protocol::request::UserInfo;
use kubewarden_engine::{
    AdmissionRequest, AdmissionResponse, ClusterState, ContextAwareResource, Engine, EngineConfig, FaultPlan,
    HostContext, LogSink, LookupSource, Metadata, PolicySettings, ValidationResponse,
};
use serde::Deserialize;
use serde_json::{Value, json};

// The benchmarks' requests and cluster, exactly as the benchmarks build them.
#[allow(dead_code)]
#[path = "../../benches/src/world.rs"]
mod world;
// Linkerd's fixtures, the conformance settings and cluster, exactly as the conformance suites
// build them.
#[path = "../../tests/common/fixtures.rs"]
mod fixtures;

use fixtures::{FIXTURE_NAMESPACE, WEBHOOK_DATA};

/// Each release whose webhook fixtures differ, and whether the settings pin its rendering (as
/// `tests/conformance.rs` and `host/tests/conformance_module.rs` do).
const RELEASES: &[(&str, &str, bool)] = &[
    (
        "edge-26.5.1",
        "tests/fixtures/linkerd-versions/edge-26.5.1/proxy-injector-fake-data",
        true,
    ),
    ("edge-26.8.3", WEBHOOK_DATA, false),
];

/// Linkerd's CLI and integration fixtures (read by `tests/nothing_lost.rs` too).
const OTHER_FIXTURES: &[&str] = &[
    "tests/fixtures/linkerd/cli/cmd/testdata",
    "tests/fixtures/linkerd/test/integration/install/inject/testdata",
];

/// The namespace annotation sets of the webhook tests (`fixtures::ns_annotations`).
const NS_CASES: &[&str] = &["enabled", "none", "opaque", "config"];

/// The release `benches/kubewarden/fake_apiserver.py` stands for, and the placeholders of
/// Linkerd's install golden it sets to that release.
const KUBEWARDEN_RELEASE: &str = "edge-26.8.3";
const KUBEWARDEN_PLACEHOLDERS: &[&str] = &[
    "install-control-plane-version",
    "install-proxy-version",
    "install-debug-version",
    "dev-undefined",
];

struct Args {
    old: PathBuf,
    new: PathBuf,
    metadata: PathBuf,
    /// How many differences to describe in full.
    show: usize,
}

fn usage() -> String {
    "usage: compare-answers OLD.wasm NEW.wasm [--metadata policy.yaml] [--show N]".into()
}

fn args() -> Result<Args, String> {
    let mut files = Vec::new();
    let mut metadata = fixtures::repo_root().join("policy.yaml");
    let mut show = 20;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--metadata" => metadata = it.next().ok_or_else(usage)?.into(),
            "--show" => show = it.next().and_then(|n| n.parse().ok()).ok_or_else(usage)?,
            "-h" | "--help" => return Err(usage()),
            _ => files.push(PathBuf::from(a)),
        }
    }
    let [old, new] = <[PathBuf; 2]>::try_from(files).map_err(|_| usage())?;
    Ok(Args {
        old,
        new,
        metadata,
        show,
    })
}

/// A settings document with its name.
#[derive(Clone)]
struct Settings {
    name: String,
    value: PolicySettings,
}

impl Settings {
    fn new(name: impl Into<String>, value: Value) -> Self {
        Self {
            name: name.into(),
            value: PolicySettings::from_value(&value).expect("settings are an object"),
        }
    }
}

/// Empty settings and `deploy/settings/*.yaml`, by file name.
fn shipped_settings() -> Result<Vec<Settings>, String> {
    let dir = fixtures::repo_root().join("deploy/settings");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut all = vec![Settings::new("empty", json!({}))];
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let value: Value = serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        let name = f.file_name().unwrap_or_default().to_string_lossy().into_owned();
        all.push(Settings::new(name, value));
    }
    Ok(all)
}

/// The settings the conformance suites give a release.
fn webhook_settings(tag: &str, pinned: bool) -> Settings {
    let mut s = fixtures::webhook_settings_json();
    if pinned {
        s["policy"]["renderVersion"] = json!(tag);
    }
    Settings::new(format!("conformance {tag}"), s)
}

/// One request over one cluster with one settings document.
struct Case {
    id: String,
    group: &'static str,
    request: AdmissionRequest,
    cluster: Arc<ClusterState>,
    settings: Settings,
}

fn state(objects: impl IntoIterator<Item = Value>) -> Result<Arc<ClusterState>, String> {
    let mut state = ClusterState::new();
    for o in objects {
        state.insert(o).map_err(|e| format!("cluster object: {e}"))?;
    }
    Ok(Arc::new(state))
}

/// The objects of a fixture file that an API server could be asked to create: `List`s
/// flattened, documents without a `kind` (fragments) left out. Linkerd's `*.bad.*` inputs are
/// invalid YAML on purpose: the documents before the error are read.
fn objects_of(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut objects = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        // serde_yaml_ng's iterator repeats a syntax error forever: stop at the first one.
        let Ok(v) = Value::deserialize(doc) else { break };
        match v.get("kind").and_then(Value::as_str) {
            Some("List") => objects.extend(v["items"].as_array().cloned().unwrap_or_default()),
            Some(_) => objects.push(v),
            None => {}
        }
    }
    Ok(objects
        .into_iter()
        .filter(|o| o.get("kind").and_then(Value::as_str).is_some())
        .collect())
}

/// The YAML files of a fixture directory, by name.
fn fixture_files(dir: &str) -> Result<Vec<PathBuf>, String> {
    let root = fixtures::repo_root().join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .map_err(|e| format!("{}: {e}", root.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    Ok(files)
}

/// The CREATE the API server sends for `object` in the fixtures' namespace.
fn create(object: Value) -> AdmissionRequest {
    let namespaced = object.get("kind").and_then(Value::as_str) != Some("Namespace");
    let user = UserInfo {
        username: Some("kubernetes-admin".into()),
        groups: Some(vec!["system:masters".into(), "system:authenticated".into()]),
        ..UserInfo::default()
    };
    AdmissionRequest::create(
        "compare-answers".into(),
        namespaced.then(|| FIXTURE_NAMESPACE.to_owned()),
        user,
        object,
    )
}

/// Every object of `dir` in each namespace case, pods also with a Deployment as owner: with
/// `own` settings over the conformance suites' cluster, and with each shipped settings document
/// over the default control plane.
fn fixture_cases(
    group: &'static str,
    dir: &str,
    own: &Settings,
    shipped: &[Settings],
    cases: &mut Vec<Case>,
) -> Result<(), String> {
    for file in fixture_files(dir)? {
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        for (i, object) in objects_of(&file)?.into_iter().enumerate() {
            let is_pod = object["kind"] == "Pod";
            let owners: &[bool] = if is_pod { &[false, true] } else { &[false] };
            for &owned in owners {
                let (object, extra) = if owned {
                    let (pod, rs) = fixtures::with_deployment_owner(object.clone());
                    (pod, vec![rs])
                } else {
                    (object.clone(), vec![])
                };
                for ns in NS_CASES {
                    let namespace = fixtures::namespace(FIXTURE_NAMESPACE, fixtures::ns_annotations(ns));
                    let what = format!(
                        "{dir}/{name}#{i} ({}) ns={ns}{}",
                        object["kind"].as_str().unwrap_or(""),
                        if owned { " owned" } else { "" }
                    );
                    let conformance = [namespace.clone(), fixtures::neutral_linkerd_config()];
                    cases.push(Case {
                        id: format!("{what} settings={}", own.name),
                        group,
                        request: create(object.clone()),
                        cluster: state(conformance.into_iter().chain(extra.clone()))?,
                        settings: own.clone(),
                    });
                    let control_plane = state(
                        injector_host::linkerd::rollout::default_control_plane()
                            .into_iter()
                            .chain([namespace])
                            .chain(extra.clone()),
                    )?;
                    for s in shipped {
                        cases.push(Case {
                            id: format!("{what} settings={}", s.name),
                            group,
                            request: create(object.clone()),
                            cluster: control_plane.clone(),
                            settings: s.clone(),
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

/// Every benchmark scenario with each shipped settings document, over the benchmarks' cluster
/// and over the same cluster with each of Linkerd's `linkerd-config` goldens.
fn bench_cases(shipped: &[Settings], cases: &mut Vec<Case>) -> Result<(), String> {
    let mut world = world::World::new();
    let mut scenarios = world.scenarios();
    scenarios.extend(world.series());
    let mut clusters = vec![("rollout linkerd-config".to_owned(), state(world.objects.clone())?)];
    for (golden, config) in fixtures::linkerd_config_goldens() {
        let objects = world.objects.iter().cloned().chain([config]);
        clusters.push((format!("linkerd-config {golden}"), state(objects)?));
    }
    for (cluster_name, cluster) in &clusters {
        for scenario in &scenarios {
            for s in shipped {
                cases.push(Case {
                    id: format!("{} over {cluster_name} settings={}", scenario.id, s.name),
                    group: "bench",
                    request: scenario.request.clone(),
                    cluster: cluster.clone(),
                    settings: s.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The control plane `benches/kubewarden/fake_apiserver.py` serves: Linkerd's install golden
/// with its placeholders set to the release, and the trust roots of its values.
fn kubewarden_control_plane() -> Result<Vec<Value>, String> {
    let path = fixtures::repo_root().join(format!(
        "tests/fixtures/linkerd-config/{KUBEWARDEN_RELEASE}/install_default.yaml"
    ));
    let mut text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    for p in KUBEWARDEN_PLACEHOLDERS {
        text = text.replace(p, KUBEWARDEN_RELEASE);
    }
    let config: Value = serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let values: Value = serde_yaml_ng::from_str(config["data"]["values"].as_str().unwrap_or_default())
        .map_err(|e| format!("{}: values: {e}", path.display()))?;
    let pem = values["identityTrustAnchorsPEM"].as_str().unwrap_or_default();
    let labels =
        json!({"linkerd.io/control-plane-component": "identity", "linkerd.io/control-plane-ns": "linkerd"});
    Ok(vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "linkerd",
            "labels": {"linkerd.io/is-control-plane": "true", "config.linkerd.io/admission-webhooks": "disabled",
                "linkerd.io/control-plane-ns": "linkerd"},
            "annotations": {"linkerd.io/inject": "disabled"}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "linkerd-identity-trust-roots",
            "namespace": "linkerd", "labels": labels, "annotations": config["metadata"]["annotations"]},
            "data": {"ca-bundle.crt": pem}}),
        config,
    ])
}

/// The requests of `benches/kubewarden/requests/` with each shipped settings document.
fn kubewarden_cases(shipped: &[Settings], cases: &mut Vec<Case>) -> Result<(), String> {
    let dir = fixtures::repo_root().join("benches/kubewarden/requests");
    let read = |name: &str| -> Result<Value, String> {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let Value::Array(objects) = read("cluster.json")? else {
        return Err("benches/kubewarden/requests/cluster.json: not a list of objects".into());
    };
    let cluster = state(kubewarden_control_plane()?.into_iter().chain(objects))?;
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".json") && n != "cluster.json")
        .collect();
    names.sort();
    for name in names {
        let request = AdmissionRequest::from_document(&read(&name)?).map_err(|e| format!("{name}: {e}"))?;
        for s in shipped {
            cases.push(Case {
                id: format!("{name} settings={}", s.name),
                group: "kubewarden",
                request: request.clone(),
                cluster: cluster.clone(),
                settings: s.clone(),
            });
        }
    }
    Ok(())
}

/// What a module answered, as the API server reads it.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    /// `validate_settings`.
    Settings { valid: bool, message: Option<String> },
    /// Not evaluated: the module refuses the settings, so policy-server would not serve it.
    SettingsRefused,
    /// The engine could not get an answer (a trap, or not a `ValidationResponse`).
    Failed(String),
    Answered {
        accepted: bool,
        message: Option<String>,
        code: Option<u16>,
        /// The decoded JSON patch.
        patch: Option<Value>,
        warnings: Vec<String>,
        audit: BTreeMap<String, String>,
    },
}

impl Answer {
    /// What kind of answer this is, for the summary: a comparison where every answer is a
    /// rejection or a failure would prove little.
    fn kind(&self) -> &'static str {
        match self {
            Self::Settings { valid: true, .. } => "valid",
            Self::Settings { valid: false, .. } => "invalid",
            Self::SettingsRefused => "not evaluated (settings refused)",
            Self::Failed(_) => "failed",
            Self::Answered { accepted: false, .. } => "rejected",
            Self::Answered { patch: Some(_), .. } => "patched",
            Self::Answered { .. } => "accepted unchanged",
        }
    }
}

struct Module {
    path: PathBuf,
    policy: kubewarden_engine::Policy,
}

fn host(cluster: &ClusterState, resources: &BTreeSet<ContextAwareResource>) -> Arc<HostContext> {
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(
        cluster.clone(),
        FaultPlan::new(),
    )));
    Arc::new(HostContext::new(
        "compare-answers",
        resources.clone(),
        lookups,
        LogSink::Discard,
    ))
}

fn settings_answer(m: &Module, host: &Arc<HostContext>, s: &Settings) -> Answer {
    match m.policy.instantiate(host) {
        Ok(mut instance) => {
            let v = instance.validate_settings(&s.value);
            Answer::Settings {
                valid: v.valid,
                message: v.message,
            }
        }
        Err(e) => Answer::Failed(e.to_string()),
    }
}

/// `validate` in a fresh instance, with the payload the engine builds.
fn answer(m: &Module, host: &Arc<HostContext>, request: &AdmissionRequest, s: &Settings) -> Answer {
    let instance = match m.policy.instantiate(host) {
        Ok(i) => i,
        Err(e) => return Answer::Failed(e.to_string()),
    };
    let out = match instance.call("validate", &world::payload(request, &s.value)) {
        Ok(out) => out,
        Err(e) => return Answer::Failed(format!("validate: {e}")),
    };
    let resp: ValidationResponse = match serde_json::from_slice(&out) {
        Ok(r) => r,
        Err(e) => return Answer::Failed(format!("not a ValidationResponse: {e}")),
    };
    let admission =
        match AdmissionResponse::from_validation_response(&request.uid, request.object.as_ref(), &resp) {
            Ok(a) => a,
            Err(e) => return Answer::Failed(format!("no JSON patch: {e}")),
        };
    let patch = match admission.decoded_patch() {
        Ok(p) => p.map(|p| serde_json::to_value(p).unwrap_or(Value::Null)),
        Err(e) => return Answer::Failed(format!("patch: {e}")),
    };
    Answer::Answered {
        accepted: resp.accepted,
        message: resp.message,
        code: resp.code,
        patch,
        warnings: resp.warnings.unwrap_or_default(),
        audit: resp.audit_annotations.unwrap_or_default().into_iter().collect(),
    }
}

fn short(v: &impl serde::Serialize) -> String {
    let text = serde_json::to_string(v).unwrap_or_default();
    match text.char_indices().nth(1500) {
        Some((i, _)) => format!("{}... ({} bytes)", &text[..i], text.len()),
        None => text,
    }
}

/// The request's object after a patch.
fn patched(object: Option<&Value>, patch: &Option<Value>) -> Value {
    let mut out = object.cloned().unwrap_or(Value::Null);
    if let Some(p) = patch
        && let Ok(p) = serde_json::from_value::<json_patch::Patch>(p.clone())
    {
        let _ = json_patch::patch(&mut out, &p);
    }
    out
}

/// How two answers differ, field by field.
fn differences(old: &Answer, new: &Answer, object: Option<&Value>) -> Vec<String> {
    match (old, new) {
        (
            Answer::Answered {
                accepted: a1,
                message: m1,
                code: c1,
                patch: p1,
                warnings: w1,
                audit: au1,
            },
            Answer::Answered {
                accepted: a2,
                message: m2,
                code: c2,
                patch: p2,
                warnings: w2,
                audit: au2,
            },
        ) => {
            let field = |name: &str, same: bool, o: String, n: String| {
                (!same).then(|| format!("{name}: old {o}\n      new {n}"))
            };
            let patch = (p1 != p2).then(|| {
                let diff = json_patch::diff(&patched(object, p1), &patched(object, p2));
                format!(
                    "patch: the objects they make differ by (old to new) {}\n      old patch {}\n      new patch {}",
                    short(&diff),
                    short(p1),
                    short(p2)
                )
            });
            let out: Vec<String> = [
                field("accepted", a1 == a2, a1.to_string(), a2.to_string()),
                field("message", m1 == m2, short(m1), short(m2)),
                field("code", c1 == c2, short(c1), short(c2)),
                patch,
                field("warnings", w1 == w2, short(w1), short(w2)),
                field("audit annotations", au1 == au2, short(au1), short(au2)),
            ]
            .into_iter()
            .flatten()
            .collect();
            out
        }
        _ => vec![format!(
            "old {}\n      new {}",
            short_answer(old),
            short_answer(new)
        )],
    }
}

fn short_answer(a: &Answer) -> String {
    let text = format!("{a:?}");
    match text.char_indices().nth(1500) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text,
    }
}

fn run(a: &Args) -> Result<bool, String> {
    let metadata = Metadata::from_file(&a.metadata).map_err(|e| format!("{}: {e}", a.metadata.display()))?;
    let resources = metadata.context_aware_resources;
    // no deadline: an answer must not depend on how busy the machine is
    let engine = Engine::new(EngineConfig::without_deadline()).map_err(|e| e.to_string())?;
    let load = |path: &Path| -> Result<Module, String> {
        let policy = engine
            .load_policy_file(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Module {
            path: path.to_owned(),
            policy,
        })
    };
    let (old, new) = (load(&a.old)?, load(&a.new)?);

    let shipped = shipped_settings()?;
    let mut cases = Vec::new();
    for &(tag, data, pinned) in RELEASES {
        fixture_cases(
            "conformance",
            data,
            &webhook_settings(tag, pinned),
            &shipped,
            &mut cases,
        )?;
    }
    let current = RELEASES
        .last()
        .map(|&(tag, _, pinned)| webhook_settings(tag, pinned));
    for dir in OTHER_FIXTURES {
        fixture_cases(
            "fixtures",
            dir,
            current.as_ref().ok_or("no release")?,
            &shipped,
            &mut cases,
        )?;
    }
    bench_cases(&shipped, &mut cases)?;
    kubewarden_cases(&shipped, &mut cases)?;

    println!(
        "compare-answers: old {}, new {}",
        old.path.display(),
        new.path.display()
    );
    // per group: answers compared, the same, and the old module's answers by kind
    let mut tally: BTreeMap<&str, (usize, usize, BTreeMap<&str, usize>)> = BTreeMap::new();
    let mut shown = 0;
    let mut report = |group: &'static str, id: &str, o: &Answer, n: &Answer, object: Option<&Value>| {
        let entry = tally.entry(group).or_default();
        entry.0 += 1;
        *entry.2.entry(o.kind()).or_default() += 1;
        if o == n {
            entry.1 += 1;
            return;
        }
        if shown < a.show {
            println!("DIFFERS {group}: {id}");
            for d in differences(o, n, object) {
                println!("    {d}");
            }
        } else if shown == a.show {
            println!("(further differences are counted, not shown: --show N)");
        }
        shown += 1;
    };

    // Settings first, as policy-server validates them when it loads a policy.
    let mut settings_valid: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let empty = ClusterState::new();
    for c in &cases {
        if !seen.insert(c.settings.name.clone()) {
            continue;
        }
        let h = host(&empty, &resources);
        let (o, n) = (
            settings_answer(&old, &h, &c.settings),
            settings_answer(&new, &h, &c.settings),
        );
        let valid = |a: &Answer| matches!(a, Answer::Settings { valid: true, .. });
        settings_valid.insert(c.settings.name.clone(), (valid(&o), valid(&n)));
        report("settings", &c.settings.name, &o, &n, None);
    }

    for c in &cases {
        let (old_valid, new_valid) = settings_valid[&c.settings.name];
        let evaluate = |m: &Module, valid: bool| {
            if valid {
                answer(m, &host(&c.cluster, &resources), &c.request, &c.settings)
            } else {
                Answer::SettingsRefused
            }
        };
        let (o, n) = (evaluate(&old, old_valid), evaluate(&new, new_valid));
        report(c.group, &c.id, &o, &n, c.request.object.as_ref());
    }

    let (mut compared, mut same) = (0, 0);
    for (group, (c, s, kinds)) in &tally {
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        println!("{group}: {s} of {c} answers the same (old: {})", kinds.join(", "));
        compared += c;
        same += s;
    }
    println!("{same} of {compared} answers the same");
    Ok(same == compared)
}

fn main() -> ExitCode {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("compare-answers: {e}");
            ExitCode::from(2)
        }
    }
}
