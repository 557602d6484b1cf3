//! deploy/: every manifest parsed with typed structs (the SDK's Kubewarden CRD types,
//! k8s-openapi for Kubernetes objects, a mirror of the PolicyServer and verification-config
//! types), nothing dropped by a lenient parser, and the manifests checked against policy.yaml,
//! Linkerd's webhook selectors and each other. Every settings document passes the module's
//! `validate_settings` through the engine; the hardened profile is exercised through the module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use injector_host::linkerd::answer::Injection;
use injector_host::linkerd::inject::{InjectError, InjectOptions, Injector, Input};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, EnvVar, PodSecurityContext, SecurityContext, ServiceAccount, Toleration,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubewarden_engine::hostcalls::cluster::ClusterState;
use kubewarden_engine::hostcalls::fault::FaultPlan;
use kubewarden_engine::hostcalls::lookup::{ClusterLookup, LookupSource, Lookups};
use kubewarden_engine::protocol::metadata::ContextAwareResource;
use kubewarden_engine::protocol::request::PolicySettings;
use kubewarden_engine::protocol::request::{AdmissionRequest, UserInfo};
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use kubewarden_engine::runtime::engine::{Engine, EngineConfig, Policy};
use kubewarden_policy_sdk::crd::policies::ClusterAdmissionPolicy;
use kubewarden_policy_sdk::crd::policies::cluster_admission_policy::ClusterAdmissionPolicySpec;
use kubewarden_policy_sdk::crd::policies::common::FailurePolicy;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn deploy(name: &str) -> PathBuf {
    root().join("deploy").join(name)
}

fn yaml_docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .filter(|v| !v.is_null())
        .collect()
}

fn yaml(path: &Path) -> Value {
    let mut docs = yaml_docs(path);
    assert_eq!(docs.len(), 1, "{}: one document", path.display());
    docs.remove(0)
}

/// `true` when every leaf of `original` is in `parsed` with the same value: a typed parse that
/// silently dropped a misspelt field fails this.
fn covered(original: &Value, parsed: &Value) -> bool {
    match (original, parsed) {
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| covered(v, w)) || (v.is_null() && !b.contains_key(k))),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| covered(x, y))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

/// Parses with the typed struct and checks nothing was dropped; the error says which of the two
/// failed.
fn try_typed<T: DeserializeOwned + serde::Serialize>(what: &str, v: &Value) -> Result<T, String> {
    let t: T = serde_json::from_value(v.clone()).map_err(|e| format!("{what}: {e}"))?;
    let back = serde_json::to_value(&t).unwrap();
    if !covered(v, &back) {
        return Err(format!(
            "{what}: a field was not understood:\n{v:#}\nparsed as\n{back:#}"
        ));
    }
    Ok(t)
}

fn typed<T: DeserializeOwned + serde::Serialize>(what: &str, v: &Value) -> T {
    try_typed(what, v).unwrap_or_else(|e| panic!("{e}"))
}

// === mirrors of types the SDK does not have (deny unknown fields, like the CRD schema) ===

/// `policies.kubewarden.io/v1 PolicyServer` (api/policies/v1/policyserver_types.go).
#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PolicyServer {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: PolicyServerSpec,
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PolicyServerSpec {
    image: String,
    replicas: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_available: Option<IntOrString>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_unavailable: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    env: Vec<EnvVar>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    service_account_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    image_pull_secret: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    insecure_sources: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    source_authorities: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    verification_config: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    sigstore_trust_config: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    security_contexts: Option<PolicyServerSecurity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    affinity: Option<Affinity>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    limits: BTreeMap<String, Quantity>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    requests: BTreeMap<String, Quantity>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tolerations: Vec<Toleration>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    priority_class_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    namespaced_policies_capabilities: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    webhook_port: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    readiness_probe_port: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics_port: Option<i32>,
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct PolicyServerSecurity {
    container: Option<SecurityContext>,
    pod: Option<PodSecurityContext>,
}

/// policy-fetcher's `VerificationConfigV1` (crates/policy-fetcher/src/verify/config.rs).
#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VerificationConfig {
    api_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    all_of: Option<Vec<Signature>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    any_of: Option<AnyOf>,
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AnyOf {
    minimum_matches: Option<u8>,
    signatures: Vec<Signature>,
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", deny_unknown_fields)]
enum Signature {
    PubKey {
        owner: Option<String>,
        key: String,
        annotations: Option<BTreeMap<String, String>>,
    },
    /// policy-fetcher flattens its `Subject` enum into the entry: exactly one of the two keys.
    GenericIssuer {
        issuer: String,
        #[serde(rename = "subjectEqual", skip_serializing_if = "Option::is_none")]
        subject_equal: Option<String>,
        #[serde(rename = "subjectUrlPrefix", skip_serializing_if = "Option::is_none")]
        subject_url_prefix: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<BTreeMap<String, String>>,
    },
    GithubAction {
        owner: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        repo: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<BTreeMap<String, String>>,
    },
}

// === loading everything ===

struct Manifests {
    injector: ClusterAdmissionPolicySpec,
    injector_raw: Value,
    verify: ClusterAdmissionPolicySpec,
    verify_raw: Value,
    audit: ClusterAdmissionPolicySpec,
    audit_raw: Value,
    server: PolicyServer,
    service_accounts: Vec<ServiceAccount>,
    cluster_roles: Vec<ClusterRole>,
    cluster_role_bindings: Vec<ClusterRoleBinding>,
    roles: Vec<Role>,
    role_bindings: Vec<RoleBinding>,
    config_maps: Vec<ConfigMap>,
    metadata: Value,
}

fn cap(file: &str) -> (ClusterAdmissionPolicySpec, Value) {
    let raw = yaml(&deploy(file));
    assert_eq!(raw["apiVersion"], "policies.kubewarden.io/v1", "{file}");
    assert_eq!(raw["kind"], "ClusterAdmissionPolicy", "{file}");
    let policy: ClusterAdmissionPolicy = typed(file, &raw);
    assert!(policy.metadata.name.is_some(), "{file}: metadata.name");
    (policy.spec.expect("spec"), raw)
}

fn load() -> Manifests {
    let (injector, injector_raw) = cap("cluster-admission-policy.yaml");
    let (verify, verify_raw) = cap("verify-policy.yaml");
    let (audit, audit_raw) = cap("audit-policy.yaml");
    let server: PolicyServer = typed("policy-server.yaml", &yaml(&deploy("policy-server.yaml")));
    let mut m = Manifests {
        injector,
        injector_raw,
        verify,
        verify_raw,
        audit,
        audit_raw,
        server,
        service_accounts: Vec::new(),
        cluster_roles: Vec::new(),
        cluster_role_bindings: Vec::new(),
        roles: Vec::new(),
        role_bindings: Vec::new(),
        config_maps: Vec::new(),
        metadata: serde_yaml_ng::from_str(&std::fs::read_to_string(root().join("policy.yaml")).unwrap())
            .unwrap(),
    };
    for file in ["rbac.yaml", "verification-config.yaml"] {
        for doc in yaml_docs(&deploy(file)) {
            let what = format!("{file} {}/{}", doc["kind"], doc["metadata"]["name"]);
            match doc["kind"].as_str().unwrap_or("") {
                "ServiceAccount" => m.service_accounts.push(typed(&what, &doc)),
                "ClusterRole" => m.cluster_roles.push(typed(&what, &doc)),
                "ClusterRoleBinding" => m.cluster_role_bindings.push(typed(&what, &doc)),
                "Role" => m.roles.push(typed(&what, &doc)),
                "RoleBinding" => m.role_bindings.push(typed(&what, &doc)),
                "ConfigMap" => m.config_maps.push(typed(&what, &doc)),
                other => panic!("{what}: unexpected kind {other}"),
            }
        }
    }
    m
}

#[test]
fn every_file_in_deploy_is_checked() {
    let mut files: Vec<String> = std::fs::read_dir(deploy(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".yaml") || f.ends_with(".yml"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "audit-policy.yaml",
            "cluster-admission-policy.yaml",
            "policy-server.yaml",
            "rbac.yaml",
            "verification-config.yaml",
            "verify-policy.yaml"
        ],
        "a new manifest needs checks here"
    );
    let mut settings: Vec<String> = std::fs::read_dir(deploy("settings"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    settings.sort();
    assert_eq!(
        settings,
        ["cni.yaml", "defaults.yaml", "ha.yaml", "hardened.yaml"]
    );
    load();
}

// === the policies ===

fn rules(spec: &ClusterAdmissionPolicySpec) -> Value {
    serde_json::to_value(spec.rules.as_ref().expect("rules")).unwrap()
}

fn resources(spec: &ClusterAdmissionPolicySpec) -> BTreeSet<(String, String)> {
    spec.context_aware_resources
        .iter()
        .map(|r| (r.api_version.clone(), r.kind.clone()))
        .collect()
}

fn declared_resources(metadata: &Value) -> BTreeSet<(String, String)> {
    metadata["contextAwareResources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["apiVersion"].as_str().unwrap().into(),
                r["kind"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn injector_policy_agrees_with_policy_yaml() {
    let m = load();
    let p = &m.injector;
    assert_eq!(rules(p), m.metadata["rules"], "rules");
    assert_eq!(Some(p.mutating), m.metadata["mutating"].as_bool(), "mutating");
    // The module supports the audit (its verify mode exists for it), but the injector's answer
    // in an audit is `pass` for every pod: its audit would report nothing.
    assert_eq!(m.metadata["backgroundAudit"], json!(true), "policy.yaml");
    assert_eq!(
        serde_json::to_value(&p.background_audit).unwrap(),
        json!(false),
        "the injector is not audited"
    );
    assert_eq!(
        resources(p),
        declared_resources(&m.metadata),
        "contextAwareResources"
    );
    let annotations = &m.metadata["annotations"];
    let module = format!(
        "registry://{}:v{}",
        annotations["io.kubewarden.policy.ociUrl"].as_str().unwrap(),
        annotations["io.kubewarden.policy.version"].as_str().unwrap()
    );
    assert_eq!(p.module, module, "module = ociUrl and version of policy.yaml");
    assert_eq!(p.policy_server, m.server.metadata.name.clone().unwrap());
    // the settings are deploy/settings/defaults.yaml
    assert_eq!(p.settings.0, yaml(&deploy("settings/defaults.yaml")));
}

#[test]
fn verify_policy_is_the_validating_twin() {
    let m = load();
    let (i, v) = (&m.injector, &m.verify);
    assert!(!v.mutating, "a validating policy");
    assert_eq!(
        serde_json::to_value(&v.background_audit).unwrap(),
        json!(false),
        "the audit policy audits the same decision: one report line per pod"
    );
    assert_eq!(
        rules(v),
        json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}]),
        "pods only: the verify mode passes everything else"
    );
    assert_eq!(
        resources(v),
        BTreeSet::from([
            ("v1".to_owned(), "ConfigMap".to_owned()),
            ("v1".to_owned(), "Namespace".to_owned())
        ]),
        "the decision reads the Namespace, and linkerd-config for the control plane's version"
    );
    assert!(resources(v).is_subset(&declared_resources(&m.metadata)));
    assert_eq!(v.module, i.module);
    assert_eq!(v.policy_server, i.policy_server);
    assert_eq!(
        v.namespace_selector, i.namespace_selector,
        "same pods as the injector"
    );
    assert_eq!(v.object_selector, i.object_selector);
    assert_eq!(v.failure_policy, Some(FailurePolicy::Fail), "fails closed");
    // same decision: the injector's settings plus the mode
    let mut expected = i.settings.0.clone();
    expected["policy"]["mode"] = json!("verify");
    assert_eq!(v.settings.0, expected);
    for raw in [&m.injector_raw, &m.verify_raw, &m.audit_raw] {
        assert_eq!(raw["spec"]["sideEffects"], "None");
    }
}

#[test]
fn audit_policy_is_the_verify_policy_for_the_audit_scanner() {
    let m = load();
    let (v, a) = (&m.verify, &m.audit);
    assert!(!a.mutating, "a validating policy");
    assert_eq!(
        serde_json::to_value(&a.background_audit).unwrap(),
        json!(true),
        "the audit scanner evaluates the running pods"
    );
    assert_eq!(
        m.audit_raw["spec"]["mode"], "monitor",
        "never refuses a pod at admission"
    );
    assert_eq!(
        a.failure_policy,
        Some(FailurePolicy::Ignore),
        "an audit policy's outage refuses no pod"
    );
    assert_eq!(rules(a), rules(v), "the pods the verify policy checks");
    assert_eq!(a.module, v.module);
    assert_eq!(a.policy_server, v.policy_server);
    assert_eq!(a.namespace_selector, v.namespace_selector);
    assert_eq!(a.object_selector, v.object_selector);
    // the verify policy's lookups, and the owner's that name the workload to restart
    let mut expected = resources(v);
    expected.extend([
        ("apps/v1".to_owned(), "ReplicaSet".to_owned()),
        ("batch/v1".to_owned(), "Job".to_owned()),
    ]);
    assert_eq!(resources(a), expected);
    assert_eq!(resources(a), declared_resources(&m.metadata));
    // the verify policy's settings, and stale proxies refused
    let mut settings = v.settings.0.clone();
    settings["policy"]["staleProxy"] = json!("reject");
    assert_eq!(a.settings.0, settings);
}

#[test]
fn selectors_are_linkerds() {
    let m = load();
    let values = yaml(&root().join("tests/fixtures/linkerd/charts/linkerd-control-plane/values.yaml"));
    let injector = &values["proxyInjector"];
    let ns: LabelSelector = serde_json::from_value(injector["namespaceSelector"].clone()).unwrap();
    let obj: LabelSelector = serde_json::from_value(injector["objectSelector"].clone()).unwrap();
    assert_eq!(m.injector.namespace_selector.as_ref(), Some(&ns));
    assert_eq!(m.injector.object_selector.as_ref(), Some(&obj));
    assert_eq!(
        m.injector
            .timeout_seconds
            .as_ref()
            .map(|t| serde_json::to_value(t).unwrap()),
        Some(injector["timeoutSeconds"].clone()),
        "Linkerd's webhook timeout"
    );
}

#[test]
fn timeouts_and_failure_policies() {
    let m = load();
    for (name, p) in [
        ("injector", &m.injector),
        ("verify", &m.verify),
        ("audit", &m.audit),
    ] {
        let timeout = serde_json::to_value(p.timeout_seconds.as_ref().expect("timeoutSeconds"))
            .unwrap()
            .as_i64()
            .unwrap();
        let eval = serde_json::to_value(p.timeout_eval_seconds.as_ref().expect("timeoutEvalSeconds"))
            .unwrap()
            .as_i64()
            .unwrap();
        assert!((1..=30).contains(&timeout), "{name}: timeoutSeconds {timeout}");
        assert!(
            (2..timeout).contains(&eval),
            "{name}: the evaluation deadline ({eval}s) must answer before the webhook timeout ({timeout}s)"
        );
        assert!(
            p.failure_policy.is_some(),
            "{name}: failurePolicy is a decision, not a default"
        );
    }
    // Fail needs a server that survives a node drain
    let replicas = m.server.spec.replicas;
    assert!(
        replicas >= 2,
        "failurePolicy: Fail with a single policy-server replica"
    );
    match &m.server.spec.max_unavailable {
        Some(IntOrString::Int(n)) => assert!(*n < replicas),
        other => panic!("maxUnavailable {other:?}"),
    }
}

// === the PolicyServer, its RBAC and verification ===

fn grants(rules: &[PolicyRule], group: &str, resource: &str, name: Option<&str>) -> bool {
    grants_verb(rules, "get", group, resource, name)
}

fn grants_verb(rules: &[PolicyRule], verb: &str, group: &str, resource: &str, name: Option<&str>) -> bool {
    rules.iter().any(|r| {
        r.api_groups
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|g| g == group)
            && r.resources.iter().flatten().any(|x| x == resource)
            && r.verbs.iter().any(|v| v == verb)
            && match (&r.resource_names, name) {
                (None, _) => true,
                (Some(names), Some(n)) => names.iter().any(|x| x == n),
                (Some(_), None) => false,
            }
    })
}

fn binds(subjects: &Option<Vec<Subject>>, sa: &str, namespace: &str) -> bool {
    subjects
        .iter()
        .flatten()
        .any(|s| s.kind == "ServiceAccount" && s.name == sa && s.namespace.as_deref() == Some(namespace))
}

/// Plural resource name of a kind the policy looks up.
fn plural(kind: &str) -> &'static str {
    match kind {
        "Namespace" => "namespaces",
        "ReplicaSet" => "replicasets",
        "Job" => "jobs",
        "ConfigMap" => "configmaps",
        other => panic!("no RBAC mapping for {other}"),
    }
}

#[test]
fn policy_server_can_make_every_lookup_and_no_more() {
    let m = load();
    let server_name = m.server.metadata.name.clone().unwrap();
    let sa = &m.server.spec.service_account_name;
    assert_eq!(m.service_accounts.len(), 1);
    let account = &m.service_accounts[0];
    assert_eq!(account.metadata.name.as_deref(), Some(sa.as_str()));
    let ns = account
        .metadata
        .namespace
        .clone()
        .expect("namespace of the ServiceAccount");
    assert_eq!(
        ns, "kubewarden",
        "PolicyServers run in the controller's namespace"
    );
    // pods of the server spread over nodes
    let affinity = serde_json::to_value(&m.server.spec.affinity).unwrap();
    assert_eq!(
        affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
            ["labelSelector"]["matchLabels"]["kubewarden/policy-server"],
        json!(server_name)
    );

    // rules reachable by the ServiceAccount
    let mut cluster_rules = Vec::new();
    for b in &m.cluster_role_bindings {
        assert!(
            binds(&b.subjects, sa, &ns),
            "{:?} binds someone else",
            b.metadata.name
        );
        assert_eq!(b.role_ref.kind, "ClusterRole");
        let role = m
            .cluster_roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(b.role_ref.name.as_str()))
            .expect("bound ClusterRole exists");
        cluster_rules.extend(role.rules.clone().unwrap_or_default());
    }
    let mut namespaced: BTreeMap<String, Vec<PolicyRule>> = BTreeMap::new();
    for b in &m.role_bindings {
        assert!(binds(&b.subjects, sa, &ns));
        assert_eq!(b.role_ref.kind, "Role");
        let role = m
            .roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(b.role_ref.name.as_str()))
            .expect("bound Role exists");
        assert_eq!(role.metadata.namespace, b.metadata.namespace);
        namespaced
            .entry(b.metadata.namespace.clone().unwrap())
            .or_default()
            .extend(role.rules.clone().unwrap_or_default());
    }
    // least privilege: `get` only, except `list` and `watch` of ConfigMaps in a namespace (the
    // control plane's, below); nothing wildcarded
    for r in cluster_rules.iter().chain(namespaced.values().flatten()) {
        let listing =
            r.verbs == ["list", "watch"] && r.resources.as_deref() == Some(&["configmaps".to_string()][..]);
        assert!(r.verbs == ["get"] || listing, "{r:?}");
        assert!(!cluster_rules.contains(r) || r.verbs == ["get"], "{r:?}");
        assert!(!r.resources.iter().flatten().any(|x| x.contains('*')), "{r:?}");
        assert!(!r.api_groups.iter().flatten().any(|x| x.contains('*')), "{r:?}");
    }

    // every lookup either policy may make is granted
    let settings = &m.injector.settings.0;
    let control_plane = settings["policy"]["controlPlaneNamespace"]
        .as_str()
        .unwrap_or("linkerd");
    let trust_roots = settings["policy"]["trustAnchorsConfigMap"]
        .as_str()
        .unwrap_or("linkerd-identity-trust-roots");
    let mut wanted = resources(&m.injector);
    wanted.extend(resources(&m.verify));
    wanted.extend(resources(&m.audit));
    for (api_version, kind) in wanted {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let resource = plural(&kind);
        let granted = if kind == "ConfigMap" {
            // only Linkerd's trust roots and values, in the control plane's namespace
            let rules = namespaced.get(control_plane);
            let values_from_cluster = settings["policy"]["valuesFrom"].as_str() != Some("settings");
            let linkerd_config = settings["policy"]["linkerdConfigMap"]
                .as_str()
                .unwrap_or("linkerd-config");
            let listed = settings["policy"]["configMapLookup"].as_str() != Some("get");
            rules.is_some_and(|rules| {
                grants(rules, group, resource, Some(trust_roots))
                    && (!values_from_cluster || grants(rules, group, resource, Some(linkerd_config)))
                    && (!listed
                        || ["list", "watch"]
                            .iter()
                            .all(|verb| grants_verb(rules, verb, group, resource, None)))
            })
        } else {
            grants(&cluster_rules, group, resource, None)
        };
        assert!(granted, "no RBAC for {api_version} {kind}");
    }
    assert!(
        !grants(&cluster_rules, "", "configmaps", None),
        "ConfigMaps are not granted cluster-wide"
    );
}

#[test]
fn verification_config_is_valid_and_names_this_project() {
    let m = load();
    let cm = m
        .config_maps
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(m.server.spec.verification_config.as_str()))
        .expect("the PolicyServer's verificationConfig ConfigMap");
    assert_eq!(cm.metadata.namespace.as_deref(), Some("kubewarden"));
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get("verification-config"))
        .expect("key verification-config");
    let raw: Value = serde_yaml_ng::from_str(text).unwrap();
    let config: VerificationConfig = typed("verification-config", &raw);
    assert_eq!(config.api_version, "v1");
    let source = m.metadata["annotations"]["io.kubewarden.policy.source"]
        .as_str()
        .unwrap();
    let mut path = source.trim_start_matches("https://github.com/").split('/');
    let (owner, repo) = (path.next().unwrap(), path.next().unwrap());
    assert!(
        config.all_of.iter().flatten().any(|s| matches!(s,
            Signature::GithubAction { owner: o, repo: Some(r), .. } if o == owner && r == repo)),
        "signed by {owner}/{repo}'s workflow"
    );
    for s in config.all_of.iter().flatten() {
        if let Signature::GenericIssuer {
            subject_equal,
            subject_url_prefix,
            ..
        } = s
        {
            assert!(
                subject_equal.is_some() != subject_url_prefix.is_some(),
                "one subject per genericIssuer: {s:?}"
            );
            // policy-fetcher appends "/" to a prefix that lacks one, which would change it
            assert!(
                subject_url_prefix.as_ref().is_none_or(|p| p.ends_with('/')),
                "{s:?}"
            );
        }
    }
    assert!(config.any_of.is_none());
}

// === settings through the module ===

fn policy() -> (Engine, Policy) {
    let path = std::env::var_os("INJECTOR_POLICY_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("policy.wasm"));
    assert!(
        path.exists(),
        "{} is missing: run `make policy.wasm` first",
        path.display()
    );
    let engine = Engine::new(EngineConfig::without_deadline()).unwrap();
    let policy = engine.load_policy_file(&path).unwrap();
    (engine, policy)
}

#[test]
fn every_settings_document_passes_validate_settings() {
    let m = load();
    let (_engine, policy) = policy();
    let host = Arc::new(HostContext::new(
        "deploy",
        BTreeSet::new(),
        Lookups::empty(),
        LogSink::Discard,
    ));
    let mut instance = policy.instantiate(&host).unwrap();
    let mut documents: Vec<(String, Value)> = ["defaults", "ha", "cni", "hardened"]
        .iter()
        .map(|n| {
            (
                format!("settings/{n}.yaml"),
                yaml(&deploy(&format!("settings/{n}.yaml"))),
            )
        })
        .collect();
    documents.push((
        "cluster-admission-policy.yaml".into(),
        m.injector.settings.0.clone(),
    ));
    documents.push(("verify-policy.yaml".into(), m.verify.settings.0.clone()));
    documents.push(("audit-policy.yaml".into(), m.audit.settings.0.clone()));
    for (name, doc) in &documents {
        let settings = PolicySettings::from_value(doc).unwrap();
        let answer = instance.validate_settings(&settings);
        assert!(answer.valid, "{name}: {:?}", answer.message);
    }
    // and the module does check: a typo in the policy block is refused
    let typo = PolicySettings::from_value(&json!({"policy": {"trustAnchor": "configMap"}})).unwrap();
    assert!(!instance.validate_settings(&typo).valid);
}

#[test]
fn settings_examples_say_what_they_claim() {
    let values_ha = yaml(&root().join("tests/fixtures/linkerd/charts/linkerd-control-plane/values-ha.yaml"));
    let ha = yaml(&deploy("settings/ha.yaml"));
    assert_eq!(
        ha["proxy"]["resources"], values_ha["proxy"]["resources"],
        "Linkerd's HA proxy resources"
    );
    assert_eq!(yaml(&deploy("settings/cni.yaml"))["cniEnabled"], true);
    let hardened = yaml(&deploy("settings/hardened.yaml"));
    // every restricted key is an annotation the policy reads
    let known = std::fs::read_to_string(root().join("src/annotations.rs")).unwrap()
        + &std::fs::read_to_string(root().join("src/render/config.rs")).unwrap();
    for key in hardened["policy"]["restrictedAnnotations"].as_array().unwrap() {
        let key = key.as_str().unwrap();
        let suffix = key.rsplit('/').next().unwrap();
        assert!(
            known.contains(&format!("\"{key}\"")) || known.contains(&format!("/{suffix}\"")),
            "{key}"
        );
    }
}

/// A trust-roots ConfigMap for `policy.trustAnchors: configMap`, and a `linkerd-config` whose
/// values change nothing from the chart defaults (the examples read it: `policy.valuesFrom`
/// defaults to `linkerdConfig`).
fn cluster() -> ClusterState {
    let pem = std::fs::read_to_string(
        root().join("tests/fixtures/linkerd/cli/cmd/testdata/valid-trust-anchors.pem"),
    )
    .unwrap();
    let mut state = ClusterState::new();
    state
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "linkerd-identity-trust-roots", "namespace": "linkerd"},
            "data": {"ca-bundle.crt": pem}}))
        .unwrap();
    state
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "linkerd-config", "namespace": "linkerd"},
            "data": {"values": "linkerdVersion: edge-26.8.3\n"}}))
        .unwrap();
    state
}

fn inject_with(
    policy: &Policy,
    settings: &Value,
    manifest: &str,
) -> Result<injector_host::linkerd::inject::InjectOutput, InjectError> {
    Injector::new(
        policy,
        PolicySettings::from_value(settings).unwrap(),
        InjectOptions::default(),
        cluster(),
        None,
    )
    .run(vec![Input::new("test.yaml", manifest)])
}

#[test]
fn settings_examples_inject_and_the_hardened_profile_restricts() {
    let (_engine, policy) = policy();
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n  containers: [{name: web, image: example.com/web:1}]\n";
    for name in ["defaults", "ha", "cni", "hardened"] {
        let settings = yaml(&deploy(&format!("settings/{name}.yaml")));
        let out = inject_with(&policy, &settings, pod).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.report.entries[0].injection, Injection::Injected, "{name}");
        let doc: Value = serde_yaml_ng::from_str(&out.yaml).unwrap();
        let inits: Vec<&str> = doc["spec"]["initContainers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        let first = if name == "cni" {
            "linkerd-network-validator"
        } else {
            "linkerd-init"
        };
        assert_eq!(inits, [first, "linkerd-proxy"], "{name}");
        if name == "ha" {
            assert_eq!(
                doc["spec"]["initContainers"][1]["resources"]["limits"]["memory"],
                "250Mi"
            );
        }
    }
    let hardened = yaml(&deploy("settings/hardened.yaml"));
    let evil = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {config.linkerd.io/proxy-image: example.com/evil-proxy}\nspec:\n  containers: [{name: web, image: example.com/web:1}]\n";
    match inject_with(&policy, &hardened, evil) {
        Err(InjectError::Rejected(msgs)) => assert_eq!(
            msgs,
            [
                "test.yaml: pod/web: rejected by the policy: annotation config.linkerd.io/proxy-image: \
                 pod authors may not set it in namespace shop (settings.policy.restrictedAnnotations)"
            ]
        ),
        other => panic!("a restricted override must be refused: {other:?}"),
    }
    // the exempt label lets a trusted namespace use it (the image must still be allowed)
    let trusted = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels: {linkerd-injector-policy.io/trusted-overrides: \"true\"}\n---\n\
        apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {config.linkerd.io/proxy-version: edge-26.9.1}\nspec:\n  containers: [{name: web, image: example.com/web:1}]\n";
    let out = inject_with(&policy, &hardened, trusted).unwrap();
    assert_eq!(out.report.entries[1].injection, Injection::Injected);
}

#[test]
fn misspelt_fields_are_caught() {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verb": ["get"]}]});
    // k8s-openapi ignores the unknown `verb` and defaults `verbs` to []: only the coverage check
    // sees the mistake
    assert_eq!(
        try_typed::<Role>("role", &role).unwrap_err(),
        format!(
            "role: a field was not understood:\n{role:#}\nparsed as\n{:#}",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": []}]})
        )
    );
    // a spec that is valid but for the misspelt key, so the error can only be about that key
    let cap = json!({"apiVersion": "policies.kubewarden.io/v1", "kind": "ClusterAdmissionPolicy",
        "metadata": {"name": "p"}, "spec": {"module": "m", "mutating": true, "timeoutSecond": 3,
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}]}});
    let mut fixed = cap.clone();
    let spec = fixed["spec"].as_object_mut().unwrap();
    let timeout = spec.remove("timeoutSecond").unwrap();
    spec.insert("timeoutSeconds".into(), timeout);
    typed::<ClusterAdmissionPolicy>("fixed", &fixed);
    assert_eq!(
        try_typed::<ClusterAdmissionPolicy>("cap", &cap).unwrap_err(),
        "cap: unknown field `timeoutSecond`, expected one of `backgroundAudit`, `failurePolicy`, \
         `matchConditions`, `matchPolicy`, `mode`, `module`, `mutating`, `objectSelector`, \
         `policyServer`, `rules`, `settings`, `sideEffects`, `timeoutSeconds`, \
         `timeoutEvalSeconds`, `namespaceSelector`, `contextAwareResources`, `message`"
    );
}

/// The verify policy, evaluated with exactly its own contextAwareResources, reaches its
/// decision: every lookup its settings make is allowed (a refused `linkerd-config` lookup would
/// reject with the ConfigMap's reason instead).
#[test]
fn verify_policy_may_make_every_lookup_it_needs() {
    let m = load();
    let (_engine, policy) = policy();
    let allowed = resources(&m.verify)
        .iter()
        .map(|(api_version, kind)| ContextAwareResource::new(api_version, kind))
        .collect();
    let mut state = cluster();
    state
        .insert(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "shop", "annotations": {"linkerd.io/inject": "enabled"}}}))
        .unwrap();
    let lookups = Lookups::new(LookupSource::Cluster(ClusterLookup::new(state, FaultPlan::new())));
    let host = Arc::new(HostContext::new("verify", allowed, lookups, LogSink::Discard));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"containers": [{"name": "web", "image": "example.com/web:1"}]}});
    let request = AdmissionRequest::create("verify-1".into(), Some("shop".into()), UserInfo::default(), pod);
    let settings = PolicySettings::from_value(&m.verify.settings.0).unwrap();
    let response = policy.evaluate(&host, &request, &settings).expect("evaluation");
    assert!(!response.allowed);
    assert_eq!(
        response.status.and_then(|s| s.message).as_deref(),
        Some(
            "pod is not meshed: linkerd.io/inject on namespace shop requires the Linkerd proxy, but the pod has no linkerd-proxy container (injection was skipped or failed; check the injector policy)"
        )
    );
}
