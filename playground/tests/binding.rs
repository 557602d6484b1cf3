//! The binding gives the policy module's answers: for Linkerd's webhook fixtures, under several
//! namespaces and settings, `preview` is compared with `wire::validate` (the module's entry
//! point, payload in, response out) and with `admit::admit`; then the playground's own inputs:
//! Lists, several documents, JSON, and errors that name their input and line.

use linkerd_injector_policy::admit::{self, Request};
use linkerd_injector_policy::cluster::MemoryCluster;
use linkerd_injector_policy::outcome::Verdict;
use linkerd_injector_policy::settings::Settings;
use linkerd_injector_policy::wire::{self, ValidationResponse};
use playground::{EXAMPLE_TRUST_BUNDLE, Input, Preview, examples, preview, preview_json};
use serde_json::{Value, json};
use std::path::PathBuf;

const WEBHOOK_DATA: &str = "../tests/fixtures/linkerd/controller/proxy-injector/fake/data";

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(WEBHOOK_DATA)
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixtures(prefix: &str) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(WEBHOOK_DATA);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".yaml"))
        .collect();
    names.sort();
    names
}

fn yaml(text: &str) -> Value {
    serde_yaml_ng::from_str(text).expect("valid YAML")
}

/// The settings texts the comparison runs under.
fn settings_cases() -> Vec<(&'static str, String)> {
    vec![
        (
            "webhook",
            "linkerdVersion: dev-undefined\nidentityTrustAnchorsPEM: IdentityTrustAnchorsPEM\n\
             policy:\n  createdBy: linkerd-injector-policy test\n"
                .into(),
        ),
        ("example", examples()[0].settings.to_string()),
        // No inline bundle: the example ConfigMap stands in.
        (
            "configMap",
            "proxy:\n  nativeSidecar: false\n  await: false\ncniEnabled: true\n".into(),
        ),
        (
            "verify",
            "identityTrustAnchorsPEM: x\npolicy:\n  mode: verify\n".into(),
        ),
    ]
}

/// The namespace texts: none, a map, and Linkerd's Namespace fixtures as they are.
fn namespace_cases() -> Vec<(String, String)> {
    let mut cases = vec![
        ("(empty)".to_string(), String::new()),
        (
            "map".to_string(),
            "linkerd.io/inject: enabled\nconfig.linkerd.io/skip-outbound-ports: \"34567\"\n\
             config.alpha.linkerd.io/proxy-wait-before-exit-seconds: \"300\"\n"
                .to_string(),
        ),
    ];
    for name in fixtures("namespace-") {
        let text = fixture(&name);
        cases.push((name, text));
    }
    cases
}

/// What the policy module answers for `object`, from the same inputs as the binding.
fn module_answer(object: &Value, ns_text: &str, settings_text: &str) -> (ValidationResponse, Verdict) {
    let ns_meta = if ns_text.trim().is_empty() {
        json!({})
    } else {
        let v = yaml(ns_text);
        if v.get("kind").is_some() {
            v["metadata"].clone()
        } else {
            json!({ "annotations": v })
        }
    };
    let namespace = object["metadata"]["namespace"]
        .as_str()
        .or(ns_meta["name"].as_str())
        .unwrap_or("default")
        .to_string();
    let settings_value: Value = yaml(settings_text);
    let settings = Settings::from_value(settings_value.clone()).expect("valid settings");
    let mut objects = vec![json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace, "annotations": ns_meta["annotations"], "labels": ns_meta["labels"]}
    })];
    if settings.identity_trust_anchors_pem.is_empty() {
        objects.push(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "linkerd-identity-trust-roots", "namespace": "linkerd"},
            "data": {"ca-bundle.crt": EXAMPLE_TRUST_BUNDLE}
        }));
    }
    // the control plane's values: none here, as in the playground's own preview cluster
    objects.push(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "linkerd-config", "namespace": "linkerd"},
        "data": {"values": "{}\n"}
    }));
    let kind = object["kind"].as_str().unwrap_or("");
    let payload = json!({
        "request": {
            "uid": "playground-test",
            "kind": {"group": "", "version": "v1", "kind": kind},
            "operation": "CREATE",
            "namespace": namespace,
            "object": object,
        },
        "settings": settings_value,
    });
    let cluster = MemoryCluster::new(objects.clone());
    let bytes = wire::validate(&serde_json::to_vec(&payload).expect("payload"), &cluster);
    let response: ValidationResponse = serde_json::from_slice(&bytes).expect("response");
    let req = Request {
        kind,
        operation: "CREATE",
        namespace: &namespace,
        object,
    };
    let outcome = admit::admit(&req, &settings, &MemoryCluster::new(objects));
    (response, outcome.verdict)
}

fn compare(
    manifest_name: &str,
    manifest: &str,
    ns_name: &str,
    ns: &str,
    settings_name: &str,
    settings: &str,
) {
    let case = format!("{manifest_name} / ns {ns_name} / settings {settings_name}");
    let out = preview(manifest, ns, settings);
    assert!(out.errors.is_empty(), "{case}: {:?}", out.errors);
    assert_eq!(out.objects.len(), 1, "{case}");
    let object = yaml(manifest);
    let (response, verdict) = module_answer(&object, ns, settings);
    let ours = &out.objects[0];

    assert_eq!(ours.accepted, response.accepted, "{case}: accepted");
    assert_eq!(ours.message, response.message, "{case}: message");
    assert_eq!(
        ours.warnings,
        response.warnings.clone().unwrap_or_default(),
        "{case}: warnings"
    );
    assert_eq!(
        ours.audit_annotations,
        // the SDK's HashMap, in the binding's sorted order
        response
            .audit_annotations
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect(),
        "{case}: audit annotations"
    );
    // The injected YAML, read back, is the module's mutated object (or the object unchanged).
    let mutated = response.mutated_object.clone().unwrap_or_else(|| object.clone());
    assert_eq!(yaml(&out.injected_yaml), mutated, "{case}: injected YAML");
    // The patch is Kubewarden's: json_patch::diff of the object and the mutated object.
    let patch = serde_json::to_value(json_patch::diff(&object, &mutated)).expect("patch");
    assert_eq!(ours.patch, patch, "{case}: patch");
    let mut applied = object.clone();
    json_patch::patch(
        &mut applied,
        &serde_json::from_value::<json_patch::Patch>(ours.patch.clone()).expect("patch"),
    )
    .expect("applies");
    assert_eq!(applied, mutated, "{case}: patch applies");

    let expected_verdict = match &verdict {
        Verdict::Injected { .. } => "injected",
        Verdict::Skipped(_) => "skipped",
        Verdict::NotApplicable if response.mutated_object.is_some() => "annotated",
        Verdict::NotApplicable => "unchanged",
        Verdict::Rejected(_) => "rejected",
    };
    assert_eq!(ours.verdict, expected_verdict, "{case}: verdict");
    match verdict {
        Verdict::Skipped(reasons) => {
            let codes: Vec<&str> = reasons.iter().map(|r| r.code()).collect();
            let texts: Vec<String> = reasons.iter().map(ToString::to_string).collect();
            assert_eq!(
                ours.reasons.iter().map(|r| r.code).collect::<Vec<_>>(),
                codes,
                "{case}"
            );
            assert_eq!(
                ours.reasons.iter().map(|r| r.text.clone()).collect::<Vec<_>>(),
                texts,
                "{case}"
            );
        }
        Verdict::Injected { owner } => {
            assert_eq!(
                ours.owner,
                Some(format!("{}/{}", owner.kind, owner.name)),
                "{case}"
            );
            assert!(out.injected_yaml.contains("name: linkerd-proxy"), "{case}");
            assert!(
                ours.changes
                    .iter()
                    .any(|c| c.name == "linkerd-proxy" && c.change == "added"),
                "{case}: the summary lists the proxy"
            );
        }
        _ => assert!(ours.reasons.is_empty(), "{case}"),
    }
}

#[test]
fn same_answers_as_the_module_on_linkerds_fixtures() {
    let mut manifests = Vec::new();
    // (inject-*.yaml are container specs, not objects.)
    for prefix in ["pod-", "deployment-", "service-", "filter-"] {
        manifests.extend(fixtures(prefix));
    }
    assert!(manifests.len() >= 15, "fixtures found: {manifests:?}");
    let mut cases = 0;
    let mut verdicts = std::collections::BTreeMap::new();
    for name in &manifests {
        let manifest = fixture(name);
        for (ns_name, ns) in namespace_cases() {
            for (settings_name, settings) in settings_cases() {
                compare(name, &manifest, &ns_name, &ns, settings_name, &settings);
                let out = preview(&manifest, &ns, &settings);
                *verdicts.entry(out.objects[0].verdict).or_insert(0) += 1;
                cases += 1;
            }
        }
    }
    println!("binding vs module: {cases} cases agree ({verdicts:?})");
    for v in ["injected", "skipped", "annotated", "unchanged", "rejected"] {
        assert!(verdicts.contains_key(v), "no case gave {v}: {verdicts:?}");
    }
}

#[test]
fn examples_run_clean() {
    for example in examples() {
        let out = preview(example.manifest, example.namespace, example.settings);
        assert!(out.errors.is_empty(), "{}: {:?}", example.id, out.errors);
        assert!(!out.objects.is_empty(), "{}", example.id);
    }
    let first = &examples()[0];
    let out = preview(first.manifest, first.namespace, first.settings);
    let deployment = &out.objects[0];
    assert_eq!(deployment.verdict, "injected");
    assert_eq!(deployment.owner.as_deref(), Some("deployment/web"));
    assert!(out.injected_yaml.contains("linkerd.io/proxy-deployment: web"));
    assert!(out.injected_yaml.contains("linkerd.io/workload-ns: shop"));
    let sections: Vec<&str> = deployment.changes.iter().map(|c| c.section).collect();
    for s in ["initContainers", "volumes", "labels", "annotations"] {
        assert!(sections.contains(&s), "{s} missing from {sections:?}");
    }
    assert!(
        deployment
            .changes
            .iter()
            .all(|c| c.at.starts_with("spec.template."))
    );
}

#[test]
fn host_network_pod_is_skipped_with_linkerds_reason() {
    let example = examples().into_iter().find(|e| e.id == "host-network").unwrap();
    let out = preview(example.manifest, example.namespace, example.settings);
    let pod = &out.objects[0];
    assert_eq!(pod.verdict, "skipped");
    assert_eq!(pod.reasons[0].code, "host_network_enabled");
    assert_eq!(pod.reasons[0].text, "hostNetwork is enabled");
    assert!(!out.injected_yaml.contains("linkerd-proxy"));
    assert!(
        out.injected_yaml
            .contains("linkerd.io/injection-skipped: hostNetwork is enabled")
    );
}

#[test]
fn replicaset_pod_is_named_by_its_template_hash() {
    let example = examples().into_iter().find(|e| e.id == "replicaset-pod").unwrap();
    // the default `policy.ownerResolution: templateHash` needs no lookup: no fallback, no note
    let out = preview(example.manifest, example.namespace, example.settings);
    let pod = &out.objects[0];
    assert_eq!(pod.verdict, "injected");
    assert_eq!(pod.owner.as_deref(), Some("deployment/web"));
    assert!(pod.warnings.is_empty(), "{:?}", pod.warnings);
    assert!(
        !out.notes.iter().any(|n| n.contains("ReplicaSet")),
        "{:?}",
        out.notes
    );

    // `lookup` (Linkerd's way) asks for the ReplicaSet, which is not here: the fallback, noted
    let mut settings: Value = serde_yaml_ng::from_str(example.settings).unwrap();
    settings["policy"]["ownerResolution"] = json!("lookup");
    let out = preview(example.manifest, example.namespace, &settings.to_string());
    let pod = &out.objects[0];
    assert_eq!(pod.owner.as_deref(), Some("deployment/web"));
    assert!(
        pod.warnings.iter().any(|w| w.contains("pod-template-hash")),
        "{:?}",
        pod.warnings
    );
    assert!(
        out.notes.iter().any(|n| n.contains("ReplicaSet")),
        "{:?}",
        out.notes
    );
}

#[test]
fn lists_and_documents_keep_their_shape() {
    let example = examples().into_iter().find(|e| e.id == "list").unwrap();
    let out = preview(example.manifest, example.namespace, example.settings);
    let verdicts: Vec<(&str, &str)> = out.objects.iter().map(|o| (o.kind.as_str(), o.verdict)).collect();
    assert_eq!(
        verdicts,
        [
            ("Service", "annotated"),
            ("StatefulSet", "injected"),
            ("CronJob", "skipped"),
            ("ConfigMap", "unchanged"),
        ]
    );
    let list = yaml(&out.injected_yaml);
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        list["items"][1]["spec"]["template"]["metadata"]["labels"]["linkerd.io/proxy-statefulset"],
        "db"
    );

    // Several documents: each admitted, rendered back as several documents.
    let docs = format!(
        "{}---\n{}",
        fixture("pod-inject-enabled.yaml"),
        fixture("service-without-opaque-ports.yaml")
    );
    let out = preview(&docs, "", "identityTrustAnchorsPEM: x\n");
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.objects.len(), 2);
    let rendered: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&out.injected_yaml)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    assert_eq!(rendered.len(), 2);
    assert_eq!(rendered[1]["kind"], "Service");
}

#[test]
fn json_input_is_accepted() {
    let pod = serde_json::to_string_pretty(&yaml(&fixture("pod-inject-enabled.yaml"))).unwrap();
    let out = preview(
        &pod,
        "{\"linkerd.io/inject\": \"enabled\"}",
        "{\"identityTrustAnchorsPEM\": \"x\"}",
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.objects[0].verdict, "injected");
}

fn only_error(out: &Preview) -> (Input, String, Option<usize>) {
    assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
    let e = &out.errors[0];
    (e.input, e.message.clone(), e.line)
}

#[test]
fn errors_name_the_input_and_the_line() {
    let settings = "identityTrustAnchorsPEM: x\n";
    // YAML syntax: a tab, an unclosed flow mapping, a bad indentation.
    let bad = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: {app: web\nspec: {}\n";
    let (input, message, line) = only_error(&preview(bad, "", settings));
    assert_eq!(input, Input::Manifest);
    assert!(
        line.is_some_and(|l| (5..=7).contains(&l)),
        "{message} at {line:?}"
    );
    // The position is given apart; libyaml's context (where the mapping began) stays in the text.
    assert!(
        message.starts_with("did not find expected ',' or '}'"),
        "{message}"
    );

    let bad = "kind: Pod\nmetadata:\n  name: x\n   labels: {}\n";
    let (_, message, line) = only_error(&preview(bad, "", settings));
    assert_eq!(line, Some(4), "{message}");

    let (input, message, line) = only_error(&preview("{\"kind\": \"Pod\",\n \"spec\": }", "", settings));
    assert_eq!((input, line), (Input::Manifest, Some(2)), "{message}");

    let (_, message, _) = only_error(&preview("   \n", "", settings));
    assert!(message.starts_with("empty"), "{message}");
    let (_, message, line) = only_error(&preview("apiVersion: v1\nmetadata: {}\n", "", settings));
    assert!(message.contains("no kind"), "{message}");
    assert_eq!(line, Some(1));

    // Namespace annotations: a value of the wrong type, with its line.
    let pod = fixture("pod-inject-enabled.yaml");
    let (input, message, line) = only_error(&preview(
        &pod,
        "linkerd.io/inject: enabled\nfoo: [1, 2]\n",
        settings,
    ));
    assert_eq!((input, line), (Input::Namespace, Some(2)), "{message}");

    // Settings: every invalid key, each at its line.
    let bad_settings =
        "identityTrustAnchorsPEM: x\nproxy:\n  ports:\n    admin: 0\nimagePullPolicy: Sometimes\n";
    let out = preview(&pod, "", bad_settings);
    let errors: Vec<(Input, Option<usize>)> = out.errors.iter().map(|e| (e.input, e.line)).collect();
    assert!(errors.contains(&(Input::Settings, Some(4))), "{:?}", out.errors);
    assert!(errors.contains(&(Input::Settings, Some(5))), "{:?}", out.errors);
    assert!(
        out.errors
            .iter()
            .any(|e| e.message.contains("settings.proxy.ports.admin"))
    );

    // All inputs are checked at once.
    let out = preview("kind: [", "a: [", "b: [");
    let inputs: Vec<Input> = out.errors.iter().map(|e| e.input).collect();
    assert_eq!(inputs, [Input::Manifest, Input::Namespace, Input::Settings]);
}

#[test]
fn rejections_point_at_the_field() {
    let bad = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: a\n    image: a\n  - name: a\n    image: b\n";
    let out = preview(bad, "linkerd.io/inject: enabled", "identityTrustAnchorsPEM: x\n");
    let pod = &out.objects[0];
    assert_eq!(pod.verdict, "rejected");
    assert!(
        pod.message
            .as_deref()
            .unwrap()
            .contains("duplicate container name")
    );
    assert_eq!(pod.line, Some(9), "{:?}", pod.message);
}

#[test]
fn the_json_entry_point_serialises_the_preview() {
    let first = &examples()[0];
    let text = preview_json(first.manifest, first.namespace, first.settings);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["objects"][0]["verdict"], "injected");
    assert!(v["injectedYaml"].as_str().unwrap().contains("linkerd-proxy"));
    assert!(
        v["objects"][0]["patchText"]
            .as_str()
            .unwrap()
            .contains("\"op\": \"add\"")
    );
    let v: Value = serde_json::from_str(&preview_json("a: [", "", "")).unwrap();
    assert_eq!(v["errors"][0]["input"], "manifest");
    assert!(v["errors"][0]["line"].as_u64().is_some(), "{v}");
}

#[test]
fn no_trust_bundle_uses_the_labelled_example() {
    let pod = fixture("pod-inject-enabled.yaml");
    let out = preview(&pod, "", "");
    assert_eq!(out.objects[0].verdict, "injected");
    assert!(out.notes.iter().any(|n| n.contains("EXAMPLE")), "{:?}", out.notes);
    let out = preview(&pod, "", "identityTrustAnchorsPEM: x\n");
    assert!(out.notes.is_empty(), "{:?}", out.notes);
}
