//! The known-key table against the Linkerd documents it is generated from, and its cost.

use super::*;
use crate::values::settings::Settings;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `values` documents of the `linkerd-config` ConfigMaps under tests/fixtures/, by file.
fn linkerd_config_values() -> Vec<(PathBuf, Value)> {
    let dir = root().join("tests/fixtures/linkerd-config");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|tag| tag.unwrap().path())
        .filter(|tag| tag.is_dir())
        .flat_map(|tag| std::fs::read_dir(tag).into_iter().flatten())
        .map(|f| f.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(
        files.len(),
        6,
        "three ConfigMaps for each of edge-26.5.1 and edge-26.8.3"
    );
    files
        .into_iter()
        .map(|f| {
            let values = yaml(&f)["data"]["values"].as_str().map(str::to_owned);
            let values = values.unwrap_or_else(|| panic!("{}: no data.values", f.display()));
            let doc = serde_yaml_ng::from_str(&values).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (f, doc)
        })
        .collect()
}

/// Every values document whose keys are known: the chart's at both ends of the window, its HA
/// overlay, the `linkerd-config` values, and the injector's own `Settings`.
fn sources() -> Vec<(String, Value)> {
    let chart = root().join("tests/fixtures/linkerd/charts/linkerd-control-plane");
    let mut docs = vec![
        (
            "edge-26.8.3 values.yaml".to_owned(),
            yaml(&chart.join("values.yaml")),
        ),
        (
            "edge-26.8.3 values-ha.yaml".to_owned(),
            yaml(&chart.join("values-ha.yaml")),
        ),
        (
            "edge-26.5.1 values.yaml".to_owned(),
            yaml(&root().join("tests/fixtures/linkerd-versions/edge-26.5.1/values.yaml")),
        ),
    ];
    docs.extend(
        linkerd_config_values()
            .into_iter()
            .map(|(f, v)| (f.display().to_string(), v)),
    );
    let mut settings = serde_json::to_value(Settings::default()).unwrap();
    // The policy block's fields are PolicyOptions' own (`policy_fields`), not in the table.
    settings["policy"] = Value::Object(Map::new());
    docs.push(("Settings::default()".to_owned(), settings));
    docs
}

fn key_paths(map: &Map<String, Value>, parent: &str, source: &str, out: &mut BTreeSet<String>) {
    for (key, value) in map {
        let path = if parent.is_empty() {
            key.clone()
        } else {
            format!("{parent}.{key}")
        };
        let free_form = FREE_FORM.contains(&path.as_str());
        assert!(
            !key.contains('.'),
            "{source}: key `{path}` has a dot: add its map to FREE_FORM"
        );
        if let (Value::Object(sub), false) = (value, free_form) {
            key_paths(sub, &path, source, out);
        }
        out.insert(path);
    }
}

fn generated() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for (source, doc) in sources() {
        key_paths(doc.as_object().unwrap(), "", &source, &mut keys);
    }
    keys
}

/// The table as Rust source: one line per top-level key, wrapped at 110 columns.
fn render(keys: &BTreeSet<String>) -> String {
    let mut out = String::from("#[rustfmt::skip]\npub(super) const KNOWN: &[&str] = &[\n");
    let mut line = String::new();
    let mut group = "";
    for key in keys {
        let top = key.split('.').next().unwrap_or(key);
        let item = format!("\"{key}\",");
        if !line.is_empty() && (top != group || line.len() + 1 + item.len() > 110) {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if line.is_empty() {
            line.push_str("   ");
        }
        line.push(' ');
        line.push_str(&item);
        group = top;
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str("];\n");
    out
}

#[test]
fn table_matches_linkerds_values() {
    let want = generated();
    let have: BTreeSet<String> = KNOWN.iter().map(|k| k.to_string()).collect();
    if want == have {
        return;
    }
    let table = render(&want);
    if std::env::var_os("UPDATE_KNOWN_KEYS").is_some() {
        let file = root().join("src/values/settings/known_keys/table.rs");
        let text = std::fs::read_to_string(&file).unwrap();
        // the file's doc comment stays; the table after it is replaced
        let head = text
            .split_once("#[rustfmt::skip]")
            .map_or(text.as_str(), |(h, _)| h);
        std::fs::write(&file, format!("{head}{table}")).unwrap();
        return;
    }
    panic!(
        "the known-key table disagrees with Linkerd's values documents\nmissing: {:?}\nextra: {:?}\n\
         corrected table (or run with UPDATE_KNOWN_KEYS=1):\n{table}",
        want.difference(&have).collect::<Vec<_>>(),
        have.difference(&want).collect::<Vec<_>>(),
    );
}

#[test]
fn table_is_sorted_for_binary_search() {
    assert!(
        KNOWN.windows(2).all(|w| w[0] < w[1]),
        "KNOWN must be sorted and unique"
    );
}

#[test]
fn free_form_paths_are_known_leaves() {
    for path in FREE_FORM {
        assert!(
            KNOWN.binary_search(path).is_ok(),
            "{path} is not a key of Linkerd's values"
        );
        let sub = sub_keys(KNOWN, &mut path.to_string());
        assert!(sub.is_empty(), "{path} has sub-keys in the table: {sub:?}");
    }
}

#[test]
fn sub_keys_are_the_block_below_a_path() {
    let ports = [
        "proxy.ports.admin",
        "proxy.ports.control",
        "proxy.ports.inbound",
        "proxy.ports.outbound",
    ];
    assert_eq!(sub_keys(KNOWN, &mut "proxy.ports".to_string()), ports);
    assert_eq!(sub_keys(KNOWN, &mut "proxy.uid".to_string()), &[] as &[&str]);
    assert_eq!(sub_keys(KNOWN, &mut "proxy.resources".to_string()).len(), 9);
}

/// The captured field names are exactly the keys `PolicyOptions` serialises.
#[test]
fn policy_fields_are_policy_options_fields() {
    let serialised = serde_json::to_value(PolicyOptions::default()).unwrap();
    let mut want: Vec<&str> = serialised
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut have = policy_fields().to_vec();
    want.sort_unstable();
    have.sort_unstable();
    assert_eq!(have, want);
    assert!(have.contains(&"trustAnchors"));
}

/// The fastest of 300 rounds of 10 calls: the machine is shared, and the minimum is the cost
/// without preemption.
fn time_per_call(doc: &Value, f: impl Fn(&Value) -> usize) -> (usize, std::time::Duration) {
    const CALLS: u32 = 10;
    let found = f(doc);
    let round = || {
        let start = std::time::Instant::now();
        for _ in 0..CALLS {
            std::hint::black_box(f(std::hint::black_box(doc)));
        }
        start.elapsed() / CALLS
    };
    (found, (0..300).map(|_| round()).min().unwrap_or_default())
}

/// `cargo test --profile host -p linkerd-injector-policy --lib known_keys -- --ignored --nocapture`
/// (the `host` profile: optimised, without the module's fat LTO).
#[test]
#[ignore = "timing printout"]
fn cost_of_the_check() {
    let defaults = yaml(&root().join("deploy/settings/defaults.yaml"));
    let mut docs = vec![("deploy/settings/defaults.yaml".to_owned(), defaults)];
    docs.extend(
        linkerd_config_values()
            .into_iter()
            .map(|(f, v)| (f.display().to_string(), v)),
    );
    for (name, doc) in &docs {
        let (unknown, check) = time_per_call(doc, |d| unknown_keys(d).len());
        let (_, settings) = time_per_call(doc, |d| Settings::from_value(d.clone()).map_or(0, |_| 1));
        let keys = generated_count(doc);
        println!("{name}: {keys} keys, {unknown} unknown: check {check:?}, whole from_value {settings:?}");
    }
}

fn generated_count(doc: &Value) -> usize {
    fn count(v: &Value) -> usize {
        v.as_object()
            .map_or(0, |m| m.values().map(|v| 1 + count(v)).sum())
    }
    count(doc)
}
