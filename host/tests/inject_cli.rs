//! `injector-host inject` end to end (the binary, the real policy module): byte-for-byte copies
//! of untouched documents, directories, stdin, JSON, Lists, reports, errors, cluster state.
//! Runs are given the control plane's `linkerd-config` (data/inject/context.yaml), as a user
//! passes `kubectl get cm -n linkerd linkerd-config -o yaml`, unless a test is about the context.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{manifest_dir, policy_wasm_path};
use serde::Deserialize;
use serde_json::{Value, json};

fn data(name: &str) -> PathBuf {
    manifest_dir().join("tests/data/inject").join(name)
}

fn pem() -> String {
    std::fs::read_to_string(
        manifest_dir().join("../tests/fixtures/linkerd/cli/cmd/testdata/valid-trust-anchors.pem"),
    )
    .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inject_cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The settings with the test trust anchors inline, written to a file.
fn settings_file(name: &str, extra: Value) -> PathBuf {
    let mut settings = json!({"identityTrustAnchorsPEM": pem()});
    if let (Value::Object(a), Value::Object(b)) = (&mut settings, extra) {
        a.extend(b);
    }
    let path = tmp(name);
    std::fs::write(&path, serde_json::to_string_pretty(&settings).unwrap()).unwrap();
    path
}

/// The cluster state of most runs: the control plane's `linkerd-config`, neutral values.
fn control_plane() -> PathBuf {
    data("context.yaml")
}

/// That `linkerd-config` as an object, for contexts built by a test.
fn linkerd_config() -> Value {
    let text = std::fs::read_to_string(control_plane()).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

/// `injector-host inject ARGS` with the control plane's `linkerd-config` as `--context`.
fn inject(args: &[&str], stdin: Option<&str>) -> Output {
    let context = control_plane();
    inject_raw(&[&["--context", path(&context)], args].concat(), stdin)
}

/// `injector-host inject ARGS`, no other flag.
fn inject_raw(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_injector-host"));
    cmd.arg("inject")
        .arg("--module")
        .arg(policy_wasm_path())
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // a command refused before it reads its input (a usage error) closes the pipe first:
        // the write then fails, and the output says what happened
        let _ = pipe.write_all(text.as_bytes());
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn docs(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn container_names(template: &Value) -> Vec<String> {
    let names = |key: &str| -> Vec<String> {
        template["spec"][key]
            .as_array()
            .map(|a| a.iter().map(|c| c["name"].as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    };
    [names("initContainers"), names("containers")].concat()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn mixed_stream_keeps_untouched_documents_byte_for_byte() {
    let settings = settings_file("mixed.json", json!({}));
    let input = std::fs::read_to_string(data("mixed.yaml")).unwrap();
    let out = inject(
        &["--settings-path", path(&settings), path(&data("mixed.yaml"))],
        None,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");

    // Everything before the Deployment is copied verbatim, separators and comments included.
    let head = &input[..input.find("apiVersion: apps/v1\nkind: Deployment").unwrap()];
    assert!(stdout.starts_with(head), "{stdout}");
    // The DaemonSet (skipped), the ConfigMap and the `...` marker, verbatim.
    let daemonset = &input[input.find("---\napiVersion: apps/v1\nkind: DaemonSet").unwrap()
        ..input.find("---\napiVersion: v1\nkind: List").unwrap()];
    assert!(stdout.contains(daemonset), "{stdout}");
    assert!(stdout.ends_with("---\n"), "the trailing separator is kept");

    let docs = docs(&stdout);
    assert_eq!(
        docs.iter()
            .map(|d| d["kind"].as_str().unwrap())
            .collect::<Vec<_>>(),
        [
            "Namespace",
            "Service",
            "Deployment",
            "DaemonSet",
            "ConfigMap",
            "List"
        ]
    );
    let deployment = &docs[2];
    let t = &deployment["spec"]["template"];
    assert_eq!(container_names(t), ["linkerd-init", "linkerd-proxy", "web"]);
    assert_eq!(t["metadata"]["annotations"]["linkerd.io/inject"], "enabled");
    assert_eq!(t["metadata"]["labels"]["linkerd.io/proxy-deployment"], "web");
    assert_eq!(t["metadata"]["labels"]["linkerd.io/workload-ns"], "shop");
    let proxy = &t["spec"]["initContainers"][1];
    assert_eq!(
        proxy["resources"]["requests"]["cpu"], "200m",
        "the input's Namespace is the cluster state"
    );
    // the rewritten document keeps its leading comment
    assert!(stdout.contains("--- # the workload\n# keep this comment\napiVersion: apps/v1\n"));

    let list = &docs[5]["items"];
    assert_eq!(container_names(&list[0]), ["sh"], "inject: disabled is honoured");
    assert_eq!(
        container_names(&list[1]),
        ["linkerd-init", "linkerd-proxy", "worker"]
    );
    assert_eq!(list[1]["metadata"]["labels"]["linkerd.io/workload-ns"], "shop");

    assert_eq!(
        stderr,
        "\n\
         namespace \"shop\" skipped: not a pod or a workload\n\
         service \"web\" skipped: not a pod or a workload\n\
         deployment \"web\" injected\n\
         daemonset \"node-agent\" skipped: hostNetwork is enabled\n\
         configmap \"settings\" skipped: not a pod or a workload\n\
         pod \"debug\" skipped: pod has the annotation \"linkerd.io/inject:disabled\"\n\
         pod \"worker\" injected\n\n"
    );

    // Idempotent: the output goes through unchanged, every workload now skipped.
    let again = inject(&["--settings-path", path(&settings), "-"], Some(&stdout));
    assert!(again.status.success());
    assert_eq!(text(&again.stdout), stdout);
    assert!(text(&again.stderr).contains("deployment \"web\" skipped: pod has a sidecar injected already"));
    // Deterministic.
    let twice = inject(
        &["--settings-path", path(&settings), path(&data("mixed.yaml"))],
        None,
    );
    assert_eq!(twice.stdout, out.stdout);
}

/// Windows workloads (`spec.os.name` or the `kubernetes.io/os` node selector) come out byte for
/// byte, and the report says why (linkerd2#2882: Linkerd's proxy is a Linux image).
#[test]
fn windows_workloads_are_left_unchanged_and_the_report_says_why() {
    let settings = settings_file("windows.json", json!({}));
    let input = std::fs::read_to_string(data("windows.yaml")).unwrap();
    let out = inject(
        &["--settings-path", path(&settings), path(&data("windows.yaml"))],
        None,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, input);
    assert_eq!(
        stderr,
        "\n\
         deployment \"iis\" skipped: pod runs on Windows\n\
         statefulset \"legacy\" skipped: pod runs on Windows\n\n"
    );
}

#[test]
fn directories_json_and_namespaces() {
    let settings = settings_file("dir.json", json!({}));
    let out = inject(
        &[
            "--settings-path",
            path(&settings),
            "-n",
            "batch",
            path(&data("dir")),
        ],
        None,
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    // a.yaml, c.yml, nested/b.json (two JSON values), in path order; ignored.txt is not read
    let docs = docs(&stdout);
    assert_eq!(
        docs.iter()
            .map(|d| d["kind"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["CronJob", "ServiceAccount", "Pod", "Secret"]
    );
    let template = &docs[0]["spec"]["jobTemplate"]["spec"]["template"];
    assert_eq!(
        container_names(template),
        ["linkerd-init", "linkerd-proxy", "report"]
    );
    // admitted in `-n batch`, but labelled with the manifest's own (missing) namespace, as by
    // `linkerd inject`: `kubectl apply -n other` must not find `batch` there
    assert_eq!(template["metadata"]["labels"]["linkerd.io/workload-ns"], "");
    assert_eq!(
        container_names(&docs[2]),
        ["linkerd-init", "linkerd-proxy", "app"]
    );
    // the untouched JSON document is copied as it is, after a separator
    assert!(stdout.contains(
        "---\n{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"s\"}, \"type\": \"Opaque\"}\n"
    ));
    // c.yml starts with its own `---`: no doubled separator
    assert!(!stdout.contains("---\n---\n"), "{stdout}");
    assert!(stderr.contains("cronjob \"report\" injected\n"), "{stderr}");
    assert!(stderr.contains("pod \"json-pod\" injected\n"), "{stderr}");
}

#[test]
fn stdin_and_json_list() {
    let settings = settings_file("stdin.json", json!({}));
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "data"},
         "spec": {"selector": {}, "serviceName": "db", "template": {"spec": {"containers": [{"name": "db", "image": "postgres"}]}}}}
    ]});
    let out = inject(
        &["--settings-path", path(&settings), "--ingress", "-"],
        Some(&serde_json::to_string_pretty(&list).unwrap()),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let docs = docs(&text(&out.stdout));
    assert_eq!(docs.len(), 1);
    let template = &docs[0]["items"][0]["spec"]["template"];
    assert_eq!(
        template["metadata"]["annotations"]["linkerd.io/inject"],
        "ingress"
    );
    assert_eq!(
        template["metadata"]["labels"]["linkerd.io/proxy-statefulset"],
        "db"
    );
    let proxy = template["spec"]["initContainers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "linkerd-proxy")
        .unwrap();
    let env = proxy["env"].as_array().unwrap();
    assert!(
        env.iter()
            .any(|e| e["name"] == "LINKERD2_PROXY_INGRESS_MODE" && e["value"] == "true"),
        "ingress mode"
    );
}

#[test]
fn parse_errors_name_every_file_and_line_and_print_nothing() {
    let settings = settings_file("bad.json", json!({}));
    let bad_yaml = tmp("bad.yaml");
    std::fs::write(
        &bad_yaml,
        "apiVersion: v1\nkind: Pod\n---\nmetadata:\n  name: [x\n",
    )
    .unwrap();
    let bad_json = tmp("bad.json5");
    std::fs::write(&bad_json, "{\"kind\": \"Pod\",\n \"metadata\": }\n").unwrap();
    let out = inject(
        &[
            "--settings-path",
            path(&settings),
            path(&bad_yaml),
            path(&data("mixed.yaml")),
            path(&bad_json),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("Error: "), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:6:1: cannot parse YAML", bad_yaml.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}:2:14: cannot parse JSON", bad_json.display())),
        "{stderr}"
    );
}

#[test]
fn cluster_state_and_trust_anchors() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: web}\nspec:\n  containers: [{name: c, image: i}]\n";
    let no_pem = tmp("nopem.json");
    std::fs::write(&no_pem, "{}").unwrap();
    // No context: Linkerd's values are read first, and are not invented.
    let out = inject_raw(&["--settings-path", path(&no_pem), "-"], Some(pod));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        text(&out.stderr),
        "Error: <stdin>: pod/p: rejected by the policy: ConfigMap linkerd/linkerd-config not found: is \
         Linkerd's control plane installed there? (policy.controlPlaneNamespace, policy.linkerdConfigMap; \
         policy.valuesFrom: settings reads no ConfigMap)\n  the policy listed v1/ConfigMap in namespace \
         linkerd, of which the cluster state holds none: manual injection reads no cluster, pass what \
         is missing with --context\n"
    );
    // Or the settings alone, as host/README.md and deploy/README.md say: no lookup of them.
    let alone = settings_file("alone.json", json!({"policy": {"valuesFrom": "settings"}}));
    let out = inject_raw(&["--settings-path", path(&alone), "-"], Some(pod));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "\npod \"p\" injected\n\n");
    // Linkerd's values but no inline trust anchors: refused, nothing invented.
    let out = inject(&["--settings-path", path(&no_pem), "-"], Some(pod));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    // the module's own reason, and the object it looked for
    assert_eq!(
        text(&out.stderr),
        "Error: <stdin>: pod/p: rejected by the policy: could not read the trust anchors from ConfigMap \
         linkerd/linkerd-identity-trust-roots: ConfigMap linkerd/linkerd-identity-trust-roots not found \
         (usually transient; the API server will retry)\n  the policy listed v1/ConfigMap in namespace \
         linkerd, of which the cluster state holds linkerd-config: manual injection reads no cluster, \
         pass what is missing with --context\n"
    );
    // The context's ConfigMap and Namespace are used.
    let context = tmp("context.yaml");
    let bundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let objects = json!([
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "linkerd-identity-trust-roots", "namespace": "linkerd"},
         "data": {"ca-bundle.crt": bundle}},
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": "web", "annotations": {"config.linkerd.io/proxy-log-level": "debug"}}},
        linkerd_config(),
    ]);
    std::fs::write(&context, serde_json::to_string(&objects).unwrap()).unwrap();
    let out = inject_raw(
        &["--settings-path", path(&no_pem), "--context", path(&context), "-"],
        Some(pod),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let docs = docs(&text(&out.stdout));
    let sha = docs[0]["metadata"]["annotations"]["linkerd.io/trust-root-sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(sha.len(), 64);
    let proxy = &docs[0]["spec"]["initContainers"][1];
    assert!(
        proxy["env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "LINKERD2_PROXY_LOG" && e["value"].as_str().unwrap().starts_with("debug")),
        "namespace annotation from the context"
    );
}

#[test]
fn settings_problems_and_rejections_stop_the_run() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {config.linkerd.io/proxy-image: evil/proxy}\nspec:\n  containers: [{name: c, image: i}]\n";
    let verify = settings_file("verify.json", json!({"policy": {"mode": "verify"}}));
    let out = inject(&["--settings-path", path(&verify), "-"], Some(pod));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("policy.mode: verify"),
        "{}",
        text(&out.stderr)
    );

    let invalid = settings_file("invalid.json", json!({"proxy": {"ports": {"admin": 0}}}));
    let out = inject(&["--settings-path", path(&invalid), "-"], Some(pod));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("Provided settings are not valid: settings.proxy.ports.admin"),
        "{}",
        text(&out.stderr)
    );

    let hardened = settings_file(
        "hardened.json",
        json!({"policy": {"restrictedAnnotations": ["config.linkerd.io/proxy-image"]}}),
    );
    let out = inject(&["--settings-path", path(&hardened), "-"], Some(pod));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains(
            "<stdin>: pod/p: rejected by the policy: annotation config.linkerd.io/proxy-image: pod authors may not set it"
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn input_boundaries() {
    let settings = settings_file("edges.json", json!({}));
    let files = [
        ("1.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}"),
        (
            "2.yaml",
            "apiVersion: v1\r\nkind: Pod\r\nmetadata: {name: crlf}\r\nspec:\r\n  containers: [{name: c, image: i}]\r\n",
        ),
        ("3.yaml", ""),
        (
            "4.yaml",
            "--- {apiVersion: v1, kind: Pod, metadata: {name: inline}, spec: {containers: [{name: c, image: i}]}}\n\
             --- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n",
        ),
    ];
    let mut args = vec!["--settings-path".to_owned(), path(&settings).to_owned()];
    for (name, content) in files {
        let p = tmp(name);
        std::fs::write(&p, content).unwrap();
        args.push(path(&p).to_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = inject(&args, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // a file without a final newline is closed before the next file's separator
    assert!(
        stdout.starts_with("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"),
        "{stdout}"
    );
    assert!(stdout.ends_with("--- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n"));
    assert_eq!(stdout.matches("\n---").count(), 3, "no empty documents: {stdout}");
    let names: Vec<String> = docs(&stdout)
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["a", "crlf", "inline", "s"]);
    assert_eq!(
        container_names(&docs(&stdout)[1]),
        ["linkerd-init", "linkerd-proxy", "c"]
    );
}

#[test]
fn settings_from_the_deployed_policy_manifest() {
    let policy = manifest_dir().join("../deploy/cluster-admission-policy.yaml");
    let context = manifest_dir().join("tests/data/e2e/context.yaml");
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: web}\nspec:\n  containers: [{name: c, image: i}]\n";
    // spec.settings of the manifest: `policy.trustAnchors: configMap`, so the context's ConfigMap
    let out = inject_raw(
        &["--settings-path", path(&policy), "--context", path(&context), "-"],
        Some(pod),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("pod \"p\" injected"));
    // with Linkerd's values but not its trust roots
    let out = inject(&["--settings-path", path(&policy), "-"], Some(pod));
    assert_eq!(
        out.status.code(),
        Some(1),
        "the manifest's settings read the ConfigMap"
    );
    assert!(text(&out.stderr).contains(
        "the policy listed v1/ConfigMap in namespace linkerd, of which the cluster state holds linkerd-config:"
    ));
}

/// `linkerd.io/workload-ns` is the manifest's own namespace, as `linkerd inject` writes it
/// (its goldens `inject_gettest_deployment.good` and `..._automountServiceAccountToken_false`):
/// empty when the manifest names none, whatever namespace the object is admitted in.
#[rstest::rstest]
#[case::no_namespace("metadata: {name: web}", &[], "")]
#[case::no_namespace_admitted_in_other("metadata: {name: web}", &["-n", "other"], "")]
#[case::own_namespace("metadata: {name: web, namespace: shop}", &[], "shop")]
#[case::own_namespace_wins_over_n("metadata: {name: web, namespace: shop}", &["-n", "other"], "shop")]
fn workload_namespace_label_is_the_manifests(
    #[case] metadata: &str,
    #[case] flags: &[&str],
    #[case] label: &str,
) {
    let name = format!("workload-ns-{label}{}.json", flags.join(""));
    let settings = settings_file(&name, json!({}));
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\n{metadata}\nspec:\n  selector: {{matchLabels: {{app: web}}}}\n  \
         template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: web, image: nginx}}]\n"
    );
    let args = [&["--settings-path", path(&settings)], flags, &["-"]].concat();
    let out = inject(&args, Some(&deployment));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let docs = docs(&text(&out.stdout));
    let labels = &docs[0]["spec"]["template"]["metadata"]["labels"];
    assert_eq!(
        container_names(&docs[0]["spec"]["template"]),
        ["linkerd-init", "linkerd-proxy", "web"]
    );
    assert_eq!(labels["linkerd.io/workload-ns"], json!(label), "{labels}");
    assert_eq!(
        docs[0]["metadata"].get("namespace").is_some(),
        !label.is_empty(),
        "the manifest keeps its namespace, or its lack of one"
    );
}

/// A Deployment with one container, in namespace `shop`.
const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n\
    spec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    \
    spec:\n      containers: [{name: app, image: nginx}]\n";

/// `--ignore-cluster` (Linkerd's name for injecting without a cluster): the settings alone, as
/// `policy.valuesFrom: settings` would, without the user writing it.
#[test]
fn ignore_cluster_renders_from_the_settings_alone() {
    // the default settings, but for the trust anchors: no cluster to read them from either
    let settings = settings_file("ignore-cluster.json", json!({}));
    let out = inject_raw(
        &["--ignore-cluster", "--settings-path", path(&settings), "-"],
        Some(DEPLOYMENT),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "inject: values from the settings alone (--ignore-cluster): linkerd-config not read\n\
         \ndeployment \"web\" injected\n\n"
    );
    let docs = docs(&text(&out.stdout));
    assert_eq!(docs.len(), 1);
    let template = &docs[0]["spec"]["template"];
    assert_eq!(
        container_names(template),
        ["linkerd-init", "linkerd-proxy", "app"]
    );
    assert_eq!(template["spec"]["initContainers"][1]["name"], "linkerd-proxy");
    let created_by = linkerd_injector_policy::settings::PolicyOptions::default().created_by;
    assert_eq!(
        template["metadata"]["annotations"]["linkerd.io/created-by"],
        json!(created_by)
    );

    // the settings may say it themselves
    let own = settings_file(
        "ignore-cluster-own.json",
        json!({"policy": {"valuesFrom": "settings"}}),
    );
    let again = inject_raw(
        &["--ignore-cluster", "--settings-path", path(&own), "-"],
        Some(DEPLOYMENT),
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(again.stdout, out.stdout);
}

#[test]
fn ignore_cluster_contradicted_is_refused() {
    // with a cluster state: a usage error, before anything is read
    let context = control_plane();
    let out = inject_raw(
        &["--ignore-cluster", "--context", path(&context), "-"],
        Some(DEPLOYMENT),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).starts_with(
            "error: the argument '--ignore-cluster' cannot be used with '--context <CONTEXT>'\n"
        ),
        "{}",
        text(&out.stderr)
    );
    // with settings that read linkerd-config: both named
    let settings = settings_file(
        "ignore-cluster-linkerd-config.json",
        json!({"policy": {"valuesFrom": "linkerdConfig"}}),
    );
    let out = inject_raw(
        &["--ignore-cluster", "--settings-path", path(&settings), "-"],
        Some(DEPLOYMENT),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        text(&out.stderr),
        "Error: --ignore-cluster renders from the settings alone, but the settings say \
         `policy.valuesFrom: linkerdConfig` (Linkerd's values from the cluster's linkerd-config \
         ConfigMap): drop --ignore-cluster and pass that ConfigMap with --context, or drop the \
         setting\n"
    );
}
