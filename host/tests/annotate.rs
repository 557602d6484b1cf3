//! `injector-host annotate` on the real module: the `io.kubewarden.metadata` section has the
//! shape `kwctl annotate` writes (policy.yaml + protocolVersion from the module + the README as
//! usage), the engine reads it back, and the annotated module still evaluates.

use std::path::PathBuf;
use std::process::Command;

use kubewarden_engine::protocol::metadata::{METADATA_SECTION, Metadata, ProtocolVersion};
use kubewarden_engine::protocol::sections::custom_section;
use kubewarden_engine::runtime::engine::{Engine, EngineConfig};
use serde_json::Value;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn root(p: &str) -> PathBuf {
    manifest_dir().join("..").join(p)
}

fn policy_wasm() -> PathBuf {
    let path = std::env::var_os("INJECTOR_POLICY_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| root("policy.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run `make policy.wasm` first",
        path.display()
    );
    path
}

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("annotate");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_injector-host"))
}

fn annotate(
    module: &PathBuf,
    metadata: &PathBuf,
    usage: Option<&PathBuf>,
    out: &PathBuf,
) -> std::process::Output {
    let mut cmd = host();
    cmd.arg("annotate").arg("-m").arg(metadata).arg("-o").arg(out);
    if let Some(u) = usage {
        cmd.arg("-u").arg(u);
    }
    cmd.arg(module).output().unwrap()
}

fn section_json(module: &[u8]) -> Value {
    serde_json::from_slice(
        custom_section(module, METADATA_SECTION)
            .unwrap()
            .expect("metadata section"),
    )
    .unwrap()
}

#[test]
fn annotates_like_kwctl_and_the_engine_reads_it() {
    let out = tmp("annotated-policy.wasm");
    let result = annotate(
        &policy_wasm(),
        &root("policy.yaml"),
        Some(&root("README.md")),
        &out,
    );
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(result.stdout.is_empty());
    // the real policy declares exactly the host capability it uses: no warning
    assert!(
        result.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );

    let original = std::fs::read(policy_wasm()).unwrap();
    let annotated = std::fs::read(&out).unwrap();
    // the module's own bytes are kept; the section is appended
    assert!(annotated.starts_with(&original), "the module is not rewritten");

    let md = section_json(&annotated);
    let yaml: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(root("policy.yaml")).unwrap()).unwrap();
    // kwctl's field order
    let keys: Vec<&str> = md.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "protocolVersion",
            "rules",
            "annotations",
            "mutating",
            "backgroundAudit",
            "executionMode",
            "policyType",
            "contextAwareResources",
            "hostCapabilities",
            "minimumKubewardenVersion"
        ]
    );
    assert_eq!(md["protocolVersion"], "v1", "asked from the module");
    assert_eq!(md["rules"], yaml["rules"]);
    assert_eq!(md["mutating"], yaml["mutating"]);
    assert_eq!(md["backgroundAudit"], yaml["backgroundAudit"]);
    assert_eq!(md["executionMode"], "kubewarden-wapc");
    assert_eq!(md["policyType"], "kubernetes");
    assert_eq!(md["hostCapabilities"], yaml["hostCapabilities"]);
    assert_eq!(md["minimumKubewardenVersion"], "1.35.0");
    let mut declared: Vec<Value> = yaml["contextAwareResources"].as_array().unwrap().clone();
    declared.sort_by_key(|v| (v["apiVersion"].to_string(), v["kind"].to_string()));
    assert_eq!(
        md["contextAwareResources"],
        Value::Array(declared),
        "sorted like a BTreeSet"
    );
    let annotations = md["annotations"].as_object().unwrap();
    assert_eq!(
        annotations["io.kubewarden.policy.usage"],
        std::fs::read_to_string(root("README.md")).unwrap()
    );
    assert!(!annotations.contains_key("io.kubewarden.kwctl"));
    for (k, v) in yaml["annotations"].as_object().unwrap() {
        assert_eq!(&annotations[k], v, "{k}");
    }

    // the engine reads it (what `injector-host run` uses without --metadata-path)
    let engine = Engine::new(EngineConfig::without_deadline()).unwrap();
    let policy = engine.load_policy_file(&out).unwrap();
    let embedded = policy.embedded_metadata().expect("embedded metadata");
    let file = Metadata::from_file(&root("policy.yaml")).unwrap();
    assert_eq!(embedded.context_aware_resources, file.context_aware_resources);
    assert!(embedded.mutating);
    assert_eq!(embedded.protocol_version, Some(ProtocolVersion::V1));
    assert_eq!(embedded.minimum_kubewarden_version.as_deref(), Some("1.35.0"));
    assert_eq!(
        file.minimum_kubewarden_version,
        embedded.minimum_kubewarden_version
    );

    // and the annotated module evaluates like the plain one, granted the embedded resources
    let data = manifest_dir().join("tests/data/e2e");
    let run = host()
        .arg("run")
        .arg("--allow-context-aware")
        .arg("--replay-host-capabilities-interactions")
        .arg(data.join("session-injected.yml"))
        .arg("--settings-path")
        .arg(data.join("settings-default.yaml"))
        .arg("-r")
        .arg(data.join("pod-request.json"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let response: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    assert_eq!(response["auditAnnotations"]["injection"], "injected");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!stderr.contains("not been granted"), "{stderr}");
    assert!(
        !stderr.contains("not replayed"),
        "every recorded lookup was made: {stderr}"
    );

    // annotating again replaces the section (one section, same content)
    let again = tmp("annotated-twice.wasm");
    let result = annotate(&out, &root("policy.yaml"), Some(&root("README.md")), &again);
    assert!(result.status.success());
    assert_eq!(std::fs::read(&again).unwrap(), annotated);
}

#[test]
fn invalid_metadata_and_modules_are_refused() {
    let bad = tmp("bad-metadata.yaml");
    std::fs::write(
        &bad,
        "rules:\n- apiGroups: ['', '*']\n  apiVersions: [v1]\n  resources: [pods]\n  operations: [CREATE]\nmutating: true\n",
    )
    .unwrap();
    let result = annotate(&policy_wasm(), &bad, None, &tmp("never.wasm"));
    assert_eq!(result.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains(
            "Metadata is invalid: rules[0].apiGroups: No other elements can be defined when '*' is used"
        ),
        "{stderr}"
    );
    assert!(!tmp("never.wasm").exists());

    let no_mutating = tmp("no-mutating.yaml");
    std::fs::write(&no_mutating, "rules: []\n").unwrap();
    let result = annotate(&policy_wasm(), &no_mutating, None, &tmp("never.wasm"));
    assert!(String::from_utf8_lossy(&result.stderr).contains("Error unmarshalling metadata"));

    let not_wasm = tmp("not.wasm");
    std::fs::write(&not_wasm, "(module)").unwrap();
    let result = annotate(&not_wasm, &root("policy.yaml"), None, &tmp("never.wasm"));
    assert_eq!(result.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&result.stderr).contains("Error parsing wasm module"),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );

    // a declared capability the module never uses is a warning, as in kwctl
    let extra = tmp("extra-capability.yaml");
    let text = std::fs::read_to_string(root("policy.yaml")).unwrap().replace(
        "  - kubernetes/get_resource\n",
        "  - kubernetes/get_resource\n  - oci/v2/verify\n",
    );
    std::fs::write(&extra, text).unwrap();
    let result = annotate(&policy_wasm(), &extra, None, &tmp("extra.wasm"));
    assert!(result.status.success());
    assert!(
        String::from_utf8_lossy(&result.stderr).contains(
            "host capabilities declared in metadata but not detected in the policy: [\"oci/v2/verify\"]"
        ),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
}
