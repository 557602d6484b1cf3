//! Shared test support: fixtures and comparisons (`fixtures.rs`, shared with the host's
//! through-the-module suite), the conformance settings, and the core called directly.
#![allow(dead_code)]

mod fixtures;
pub use fixtures::*;

use linkerd_injector_policy::admit::{self, Request};
use linkerd_injector_policy::cluster::MemoryCluster;
use linkerd_injector_policy::outcome::Outcome;
use linkerd_injector_policy::settings::Settings;
use serde_json::Value;

/// A cluster holding `objects` and a neutral `linkerd-config` (the default values source).
pub fn cluster(mut objects: Vec<Value>) -> MemoryCluster {
    objects.push(neutral_linkerd_config());
    MemoryCluster::new(objects)
}

/// The configuration Linkerd's webhook tests assume, as policy settings.
pub fn webhook_settings() -> Settings {
    Settings::from_value(webhook_settings_json()).expect("conformance settings are valid")
}

pub fn admit(kind: &str, object: &Value, ns: &str, settings: &Settings, cluster: &MemoryCluster) -> Outcome {
    let req = Request {
        kind,
        operation: "CREATE",
        namespace: ns,
        object,
    };
    admit::admit(&req, settings, cluster)
}

/// The `mutated_object` of a guest answer as the guest wrote it.
pub fn mutated_bytes(answer: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        mutated_object: Option<&'a serde_json::value::RawValue>,
    }
    let raw: Raw<'_> = serde_json::from_slice(answer).unwrap();
    raw.mutated_object.map(|m| m.get().to_owned())
}
