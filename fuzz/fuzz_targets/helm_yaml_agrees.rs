//! Arbitrary text through the subset reader of Helm's YAML and through `serde_yaml_ng`: wherever
//! the subset reader answers, libyaml parses the document to the same value, key order included,
//! with every top-level key and with only some of them kept.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkerd_injector_policy::helm_yaml;
use serde_json::Value;

/// A filter that keeps about half of any document's top-level keys (the module keeps those its
/// settings read, which arbitrary text rarely names).
fn keep(key: &str) -> bool {
    key.len() % 2 == 0
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(fast) = helm_yaml::fast(text) {
        let full: Value = serde_yaml_ng::from_str(text).unwrap_or_else(|e| {
            panic!("the subset reader answered {fast} where libyaml failed ({e}) for {text:?}")
        });
        // compared as text: with `preserve_order`, maps equal in another key order are `==`
        assert_eq!(fast.to_string(), full.to_string(), "for {text:?}");
    }
    if let Some(kept) = helm_yaml::read_keeping(text, keep) {
        let full = helm_yaml::libyaml_keeping(text, keep)
            .unwrap_or_else(|e| panic!("the subset reader answered where libyaml failed ({e}) for {text:?}"));
        assert_eq!(kept.into_value().to_string(), full.to_string(), "for {text:?}");
    }
});
