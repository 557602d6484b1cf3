//! The release workflow (.github/workflows/release.yml) against policy.yaml and the PolicyServer's
//! verification config (deploy/verification-config.yaml): the workflow must publish to the
//! `ociUrl` policy.yaml declares, sign the pushed digest with the identity the verification
//! config accepts, and that identity must be the repository policy.yaml names as its source.

use std::path::PathBuf;

use serde_json::{Value, json};

const WORKFLOW: &str = ".github/workflows/release.yml";
const OWNER: &str = "linkerd-injector-policy";
const REPO: &str = "linkerd-injector-policy";
const OCI_URL: &str = "ghcr.io/linkerd-injector-policy/policies/linkerd-injector";
const FULCIO_GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml_text(text: &str, what: &str) -> Value {
    serde_yaml_ng::from_str(text).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn workflow() -> Value {
    yaml_text(&read(WORKFLOW), WORKFLOW)
}

fn annotation(name: &str) -> String {
    let metadata = yaml_text(&read("policy.yaml"), "policy.yaml");
    metadata["annotations"][name]
        .as_str()
        .unwrap_or_else(|| panic!("policy.yaml: annotation {name}"))
        .to_string()
}

/// policy.yaml's `io.kubewarden.policy.source`, as (owner, repository).
fn source_repository() -> (String, String) {
    let source = annotation("io.kubewarden.policy.source");
    let path = source
        .strip_prefix("https://github.com/")
        .unwrap_or_else(|| panic!("source {source} is not on github.com"));
    let (owner, repo) = path.split_once('/').expect("owner/repository");
    (owner.to_string(), repo.trim_end_matches('/').to_string())
}

/// The `verification-config` document inside deploy/verification-config.yaml's ConfigMap.
fn verification_config() -> Value {
    let cm = yaml_text(
        &read("deploy/verification-config.yaml"),
        "verification-config.yaml",
    );
    let text = cm["data"]["verification-config"]
        .as_str()
        .expect("data.verification-config");
    yaml_text(text, "verification-config")
}

fn jobs(wf: &Value) -> &serde_json::Map<String, Value> {
    wf["jobs"].as_object().expect("jobs")
}

fn steps(job: &Value) -> &Vec<Value> {
    job["steps"].as_array().expect("steps")
}

fn run(step: &Value) -> &str {
    step["run"].as_str().unwrap_or("")
}

/// The step named `name` in `job`, with its index.
fn step<'a>(job: &'a Value, name: &str) -> (usize, &'a Value) {
    steps(job)
        .iter()
        .enumerate()
        .find(|(_, s)| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name:?}"))
}

/// Command lines of a run script, continuation lines joined, indentation dropped.
fn commands(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in script.lines() {
        let line = line.trim();
        if let Some(head) = line.strip_suffix('\\') {
            current.push_str(head.trim_end());
            current.push(' ');
        } else {
            current.push_str(line);
            out.push(std::mem::take(&mut current));
        }
    }
    out
}

#[test]
fn policy_yaml_names_this_repository_and_registry() {
    assert_eq!(source_repository(), (OWNER.to_string(), REPO.to_string()));
    assert_eq!(annotation("io.kubewarden.policy.ociUrl"), OCI_URL);
    // the package lives under the repository's owner, where the workflow's token can push
    assert!(OCI_URL.starts_with(&format!("ghcr.io/{OWNER}/")));
}

#[test]
fn verification_config_accepts_exactly_this_workflow_on_tags() {
    let (owner, repo) = source_repository();
    assert_eq!(
        verification_config(),
        json!({
            "apiVersion": "v1",
            "allOf": [
                {"kind": "githubAction", "owner": owner, "repo": repo},
                {"kind": "genericIssuer", "issuer": FULCIO_GITHUB_ISSUER,
                 "subjectUrlPrefix": format!("https://github.com/{owner}/{repo}/{WORKFLOW}@refs/tags/")}
            ]
        })
    );
    assert!(root().join(WORKFLOW).is_file());
}

#[test]
fn the_workflow_runs_only_on_version_tags() {
    // a run on any other ref would sign with a subject (`@refs/heads/...`) the config refuses
    assert_eq!(workflow()["on"], json!({"push": {"tags": ["v*"]}}));
}

#[test]
fn only_the_release_job_holds_the_signing_identity() {
    let wf = workflow();
    assert_eq!(wf["permissions"], json!({}));
    let signing: Vec<&String> = jobs(&wf)
        .iter()
        .filter(|(_, job)| {
            steps(job)
                .iter()
                .any(|s| commands(run(s)).iter().any(|c| c.starts_with("cosign sign ")))
        })
        .map(|(name, _)| name)
        .collect();
    assert_eq!(signing, ["release"]);
    let release = &wf["jobs"]["release"];
    assert_eq!(
        release["permissions"],
        json!({"contents": "write", "packages": "write", "id-token": "write"})
    );
    assert_eq!(wf["jobs"]["test"]["permissions"], json!({"contents": "read"}));
    assert_eq!(release["needs"], "test");
}

#[test]
fn tests_then_publishes_the_tested_module() {
    let wf = workflow();
    let test = &wf["jobs"]["test"];
    let (build, build_step) = step(test, "Build");
    let (tests, tests_step) = step(test, "Test");
    assert_eq!(run(build_step).trim(), "make policy.wasm");
    assert_eq!(run(tests_step).trim(), "make test");
    let (keep, keep_step) = step(test, "Keep the tested module");
    assert!(build < tests && tests < keep);
    assert_eq!(keep_step["with"]["path"], "policy.wasm");
    let release = &wf["jobs"]["release"];
    let (_, fetch) = step(release, "Fetch the tested module");
    assert_eq!(fetch["with"]["name"], keep_step["with"]["name"]);
    // make test lints this workflow
    let makefile = read("Makefile");
    let test_line = makefile
        .lines()
        .find(|l| l.starts_with("test:"))
        .expect("Makefile: test:");
    assert!(
        test_line.split_whitespace().any(|t| t == "lint-workflows"),
        "{test_line}"
    );
}

#[test]
fn pushes_to_the_oci_url_and_signs_the_pushed_digest() {
    let wf = workflow();
    assert_eq!(
        wf["env"]["POLICY_OCI_URL"],
        annotation("io.kubewarden.policy.ociUrl")
    );
    let release = &wf["jobs"]["release"];
    let (annotate, annotate_step) = step(release, "Annotate");
    assert_eq!(
        commands(run(annotate_step)),
        ["kwctl annotate -m policy.yaml -u README.md -o annotated-policy.wasm policy.wasm"]
    );
    let (push, push_step) = step(release, "Push");
    assert_eq!(push_step["id"], "push");
    let push_commands = commands(run(push_step));
    assert!(
        push_commands.contains(
            &r#"ref=$(kwctl push -o json annotated-policy.wasm "${POLICY_OCI_URL}:${GITHUB_REF_NAME}" | jq -r .immutable_ref)"#
                .to_string()
        ),
        "{push_commands:#?}"
    );
    assert!(push_commands.contains(&r#"echo "immutable_ref=${ref}" >> "$GITHUB_OUTPUT""#.to_string()));
    let (sign, sign_step) = step(release, "Sign the module");
    assert_eq!(
        sign_step["env"]["IMMUTABLE_REF"],
        "${{ steps.push.outputs.immutable_ref }}"
    );
    assert_eq!(
        commands(run(sign_step)),
        [
            r#"cosign sign --yes --new-bundle-format=false --use-signing-config=false "${IMMUTABLE_REF}""#,
            r#"cosign sign --yes --new-bundle-format=true --use-signing-config=true "${IMMUTABLE_REF}""#,
        ]
    );
    let (verify, verify_step) = step(release, "Verify the signature");
    assert!(
        commands(run(verify_step)).contains(
            &r#"kwctl verify --verification-config-path "${RUNNER_TEMP}/verification-config.yml" "registry://${IMMUTABLE_REF}""#
                .to_string()
        )
    );
    assert!(annotate < push && push < sign && sign < verify);
}

#[test]
fn release_carries_the_annotated_module_and_the_signed_sbom() {
    let wf = workflow();
    let release = &wf["jobs"]["release"];
    let (sbom, sbom_step) = step(release, "SBOM");
    assert!(commands(run(sbom_step)).iter().any(|c| {
        c.starts_with("syft scan --output spdx-json=policy-sbom.spdx.json ") && c.ends_with(" dir:.")
    }));
    let (sign, sign_step) = step(release, "Sign the SBOM");
    assert_eq!(
        commands(run(sign_step)),
        ["cosign sign-blob --yes --bundle policy-sbom.spdx.jsonl.bundle.sigstore policy-sbom.spdx.json"]
    );
    let (gh, gh_step) = step(release, "GitHub release");
    let gh_commands = commands(run(gh_step));
    assert!(
        gh_commands.contains(&r#"cp annotated-policy.wasm "${RUNNER_TEMP}/assets/policy.wasm""#.to_string())
    );
    let create = gh_commands
        .iter()
        .find(|c| c.starts_with("gh release create "))
        .expect("gh release create");
    for asset in [
        "policy.wasm",
        "policy-sbom.spdx.json",
        "policy-sbom.spdx.jsonl.bundle.sigstore",
    ] {
        assert!(
            create.contains(&format!(r#""${{RUNNER_TEMP}}/assets/{asset}""#)),
            "{asset}: {create}"
        );
    }
    assert!(sbom < sign && sign < gh);
}

/// `major.minor.patch` of a `vX.Y.Z` tag.
fn semver(tag: &str) -> (u32, u32, u32) {
    let v: Vec<u32> = tag
        .strip_prefix('v')
        .unwrap_or(tag)
        .split('.')
        .map(|n| n.parse().unwrap_or_else(|_| panic!("not a version: {tag}")))
        .collect();
    assert_eq!(v.len(), 3, "{tag}");
    (v[0], v[1], v[2])
}

#[test]
fn kwctl_and_the_policy_server_are_one_kubewarden_release() {
    let wf = workflow();
    let (_, install) = step(&wf["jobs"]["release"], "Install kwctl");
    let kwctl = install["with"]["kwctl-version"].as_str().expect("kwctl-version");
    assert_eq!(kwctl, "v1.35.0");
    assert!(semver(kwctl) >= (1, 35, 0));
    let server = yaml_text(&read("deploy/policy-server.yaml"), "policy-server.yaml");
    let image = server["spec"]["image"].as_str().expect("spec.image");
    assert_eq!(image, format!("ghcr.io/kubewarden/policy-server:{kwctl}"));
}

#[test]
fn every_action_is_pinned_to_a_commit_with_its_version() {
    let text = read(WORKFLOW);
    let mut seen = 0;
    for line in text.lines() {
        let Some(uses) = line.trim().trim_start_matches("- ").strip_prefix("uses: ") else {
            continue;
        };
        seen += 1;
        let (action, rest) = uses.split_once('@').unwrap_or_else(|| panic!("unpinned: {line}"));
        let (sha, comment) = rest
            .split_once(" # v")
            .unwrap_or_else(|| panic!("no version: {line}"));
        assert!(!action.is_empty(), "{line}");
        assert!(
            sha.len() == 40
                && sha
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "not a commit: {line}"
        );
        assert!(comment.starts_with(|c: char| c.is_ascii_digit()), "{line}");
    }
    assert_eq!(seen, 8, "uses: lines");
}
