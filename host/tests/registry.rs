//! The OCI round trip through a real registry: Debian's `docker-registry` (the CNCF distribution
//! registry) on loopback, started and stopped here. The annotated module is pushed as kwctl
//! pushes it, pulled back by tag and by digest, and run from its `registry://` URI.
//! `make setup` installs the registry; set `REGISTRY_BIN` to use another binary.

mod common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use injector_host::registry::{self, ModuleRef, OCI_SOURCE_ANNOTATION, Sources};
use serde_json::Value;

/// A registry process on a free loopback port, killed on drop.
struct Registry {
    child: Child,
    address: String,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Registry {
    fn start(name: &str) -> Self {
        let bin = std::env::var("REGISTRY_BIN").unwrap_or_else(|_| "docker-registry".into());
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("registry-{name}-{port}"));
        std::fs::create_dir_all(dir.join("storage")).unwrap();
        let config = dir.join("config.yml");
        let address = format!("127.0.0.1:{port}");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {address}\n",
                dir.join("storage").display()
            ),
        )
        .unwrap();
        let child = Command::new(&bin)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{bin}` ({e}): run `make setup`, or set REGISTRY_BIN"));
        let registry = Self {
            child,
            address,
            _dir: TempDir(dir),
        };
        registry.wait_ready();
        registry
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(&self.address).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the registry on {} did not start listening", self.address);
    }

    fn uri(&self, path: &str) -> String {
        format!("registry://{}/{path}", self.address)
    }
}

fn annotated_module() -> Vec<u8> {
    let module = std::fs::read(policy_wasm_path()).unwrap();
    let metadata = std::fs::read_to_string(policy_yaml_path()).unwrap();
    injector_host::commands::annotate::annotate(&module, &metadata, Some("usage text\nover two lines"))
        .expect("annotate policy.wasm")
        .module
}

fn insecure(uri: &ModuleRef) -> Sources {
    Sources::default().with_insecure(uri.registry())
}

fn host(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_injector-host"))
        .args(args)
        .output()
        .expect("run injector-host")
}

#[test]
fn push_then_pull_by_tag_and_by_digest_gives_the_same_bytes() {
    let registry = Registry::start("roundtrip");
    let module = annotated_module();
    let uri = ModuleRef::parse(&registry.uri("policies/linkerd-injector:v0.1.0")).unwrap();
    let pushed = registry::push(&module, &uri, &insecure(&uri), false).expect("push");
    assert_eq!(
        pushed.immutable_ref,
        format!("{}/policies/linkerd-injector@{}", registry.address, pushed.digest)
    );
    let by_tag = registry::pull(&uri, &insecure(&uri)).expect("pull by tag");
    assert!(
        by_tag == module,
        "pulled by tag: {} bytes, pushed {}",
        by_tag.len(),
        module.len()
    );
    let by_digest = ModuleRef::parse(&format!("registry://{}", pushed.immutable_ref)).unwrap();
    let pulled = registry::pull(&by_digest, &insecure(&by_digest)).expect("pull by digest");
    assert!(
        pulled == module,
        "pulled by digest differs from the pushed module"
    );
}

#[test]
fn the_manifest_is_kubewardens_wasm_artifact() {
    let registry = Registry::start("manifest");
    let module = annotated_module();
    let uri = ModuleRef::parse(&registry.uri("policies/linkerd-injector:v0.1.0")).unwrap();
    let pushed = registry::push(&module, &uri, &insecure(&uri), false).expect("push");
    let (bytes, digest) = registry::manifest(&uri, &insecure(&uri)).expect("manifest");
    assert_eq!(digest, pushed.digest);
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v1+json"
    );
    // the config blob is `{}`: 2 bytes with this digest
    assert_eq!(manifest["config"]["size"], 2);
    assert_eq!(
        manifest["config"]["digest"],
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.wasm.content.layer.v1+wasm"
    );
    assert_eq!(layers[0]["size"], module.len());
    let annotations = &manifest["annotations"];
    let source = "https://github.com/linkerd-injector-policy/linkerd-injector-policy";
    assert_eq!(annotations[OCI_SOURCE_ANNOTATION], source);
    assert_eq!(annotations["io.kubewarden.policy.source"], source);
    assert_eq!(
        annotations["io.kubewarden.policy.title"],
        "linkerd-injector-policy"
    );
    // multi-line annotations (the usage text) are not valid on a manifest, as kwctl drops them
    assert_eq!(annotations.get("io.kubewarden.policy.usage"), None);
}

#[test]
fn an_unannotated_module_is_refused_unless_forced() {
    let registry = Registry::start("force");
    let module = std::fs::read(policy_wasm_path()).unwrap();
    let uri = ModuleRef::parse(&registry.uri("policies/bare:v1")).unwrap();
    let err = registry::push(&module, &uri, &insecure(&uri), false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cannot push a policy that is not annotated. Use `annotate` command or `push --force`"
    );
    registry::push(&module, &uri, &insecure(&uri), true).expect("forced push");
    let (bytes, _) = registry::manifest(&uri, &insecure(&uri)).unwrap();
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(manifest.get("annotations"), None);
}

#[test]
fn a_plain_http_registry_needs_insecure() {
    let registry = Registry::start("secure");
    let uri = ModuleRef::parse(&registry.uri("policies/linkerd-injector:v0.1.0")).unwrap();
    let err = registry::pull(&uri, &Sources::default()).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("registry {}: ", registry.address))
            && err.ends_with(
                "(a registry without TLS needs --insecure or a --sources-path listing it in insecure_sources)"
            ),
        "{err}"
    );
}

#[test]
fn the_cli_pushes_pulls_and_runs_from_the_registry() {
    let registry = Registry::start("cli");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let annotated = dir.join("registry-cli-annotated.wasm");
    std::fs::write(&annotated, annotated_module()).unwrap();
    let uri = registry.uri("policies/linkerd-injector:v0.1.0");

    let out = host(&[
        "push",
        "--insecure",
        "-o",
        "json",
        annotated.to_str().unwrap(),
        &uri,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pushed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let immutable = pushed["immutable_ref"].as_str().unwrap().to_owned();
    assert!(immutable.starts_with(&format!("{}/policies/linkerd-injector@sha256:", registry.address)));

    let pulled = dir.join("registry-cli-pulled.wasm");
    let out = host(&[
        "pull",
        "--insecure",
        "-o",
        pulled.to_str().unwrap(),
        &format!("registry://{immutable}"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read(&pulled).unwrap() == std::fs::read(&annotated).unwrap());

    // the same evaluation from the file and from the registry, with a kwctl sources file
    let sources = dir.join("registry-cli-sources.yaml");
    std::fs::write(
        &sources,
        format!("insecure_sources:\n  - \"{}\"\n", registry.address),
    )
    .unwrap();
    let e2e = manifest_dir().join("tests/data/e2e");
    let evaluate = |module: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--allow-context-aware",
            "--replay-host-capabilities-interactions",
        ];
        let session = e2e.join("session-injected.yml").display().to_string();
        let request = e2e.join("pod-request.json").display().to_string();
        args.push(&session);
        args.extend(["--request-path", &request]);
        args.extend(extra);
        args.push(module);
        let out = host(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let from_file = evaluate(annotated.to_str().unwrap(), &[]);
    let sources_arg = sources.display().to_string();
    let from_registry = evaluate(&uri, &["--sources-path", &sources_arg]);
    assert_eq!(
        String::from_utf8_lossy(&from_registry),
        String::from_utf8_lossy(&from_file)
    );
    assert!(String::from_utf8_lossy(&from_file).contains("\"patchType\":\"JSONPatch\""));
}
