//! `policy.yaml` (Kubewarden metadata) and `artifacthub-pkg.yml` agree with each other and with
//! what the module does.

use serde_json::{Value, json};
use std::collections::BTreeSet;

fn yaml(file: &str) -> Value {
    let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn policy_metadata_declares_what_the_module_needs() {
    let m = yaml("policy.yaml");
    assert_eq!(m["mutating"], json!(true));
    assert_eq!(m["executionMode"], json!("kubewarden-wapc"));
    // verify mode answers the audit scanner (deploy/audit-policy.yaml)
    assert_eq!(m["backgroundAudit"], json!(true));
    assert_eq!(
        m["rules"],
        json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "services"], "operations": ["CREATE"]}])
    );
    // Exactly the kinds the core looks up (admission/, values/config_maps.rs, values/trust.rs):
    // an undeclared one would be refused by the engine, an extra one granted for nothing.
    #[derive(serde::Deserialize, Debug, PartialEq, Eq, PartialOrd, Ord)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Resource {
        api_version: String,
        kind: String,
    }
    let declared: BTreeSet<Resource> = serde_json::from_value(m["contextAwareResources"].clone()).unwrap();
    let looked_up: BTreeSet<Resource> = [
        ("v1", "Namespace"),
        ("apps/v1", "ReplicaSet"),
        ("batch/v1", "Job"),
        ("v1", "ConfigMap"),
    ]
    .into_iter()
    .map(|(api, kind)| Resource {
        api_version: api.into(),
        kind: kind.into(),
    })
    .collect();
    assert_eq!(declared, looked_up);
    assert_eq!(
        m["annotations"]["io.kubewarden.policy.version"],
        json!(env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn artifacthub_package_agrees_with_policy_metadata() {
    let m = yaml("policy.yaml");
    let a = yaml("artifacthub-pkg.yml");
    let ann = &m["annotations"];
    assert_eq!(a["version"], ann["io.kubewarden.policy.version"]);
    assert_eq!(a["name"], ann["io.kubewarden.policy.title"]);
    assert_eq!(a["displayName"], ann["io.artifacthub.displayName"]);
    assert_eq!(a["description"], ann["io.kubewarden.policy.description"]);
    assert_eq!(a["license"], ann["io.kubewarden.policy.license"]);
    let image = format!(
        "{}:v{}",
        ann["io.kubewarden.policy.ociUrl"].as_str().unwrap(),
        a["version"].as_str().unwrap()
    );
    assert_eq!(a["containersImages"][0]["image"], json!(image));
    let aa = &a["annotations"];
    assert_eq!(
        aa["kubewarden/mutation"],
        json!(m["mutating"].as_bool().unwrap().to_string())
    );
    let rules: Value = serde_yaml_ng::from_str(aa["kubewarden/rules"].as_str().unwrap()).unwrap();
    assert_eq!(rules, m["rules"]);
    let car: Value =
        serde_yaml_ng::from_str(aa["kubewarden/contextAwareResources"].as_str().unwrap()).unwrap();
    assert_eq!(car, m["contextAwareResources"]);
    assert_eq!(aa["kubewarden/resources"], ann["io.artifacthub.resources"]);
}
