//! The fast reader of Helm-written YAML (`helm_yaml`) against `serde_yaml_ng`, the parser it
//! stands in for: wherever the fast reader answers, its value is libyaml's value, key order
//! included; where it does not, `helm_yaml::from_str` is `serde_yaml_ng::from_str`.

mod common;

use common::{linkerd_config_values, repo_root};
use linkerd_injector_policy::helm_yaml;
use linkerd_injector_policy::settings::Settings;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use rstest::rstest;
use serde_json::{Map, Value};

/// libyaml's answer, as compact JSON (so key order counts).
fn full(text: &str) -> Result<String, String> {
    serde_yaml_ng::from_str::<Value>(text)
        .map(|v| v.to_string())
        .map_err(|e| e.to_string())
}

/// Checks the fast reader against libyaml; `true` when the fast reader answered.
fn agrees(text: &str) -> Result<bool, String> {
    let fast = helm_yaml::fast(text).map(|v| v.to_string());
    let full = full(text);
    let through = helm_yaml::from_str(text)
        .map(|v| v.to_string())
        .map_err(|e| e.to_string());
    if through != full {
        return Err(format!(
            "from_str {through:?} != serde_yaml_ng {full:?} for {text:?}"
        ));
    }
    match (fast, full) {
        (None, _) => Ok(false),
        (Some(f), Ok(l)) if f == l => Ok(true),
        (Some(f), other) => Err(format!("fast {f} != serde_yaml_ng {other:?} for {text:?}")),
    }
}

/// The same with only the top-level keys the module reads from values kept, against libyaml's
/// whole document with the other keys removed.
fn agrees_keeping(text: &str) -> Result<bool, String> {
    let keep = Settings::reads_from_values;
    let expected = serde_yaml_ng::from_str::<Value>(text)
        .map(|mut v| {
            if let Value::Object(map) = &mut v {
                map.retain(|k, _| keep(k));
            }
            v.to_string()
        })
        .map_err(|e| e.to_string());
    let through = helm_yaml::from_str_keeping(text, keep)
        .map(|v| v.to_string())
        .map_err(|e| e.to_string());
    if through != expected {
        return Err(format!(
            "from_str_keeping {through:?} != {expected:?} for {text:?}"
        ));
    }
    match (
        helm_yaml::fast_keeping(text, keep).map(|v| v.to_string()),
        expected,
    ) {
        (None, _) => Ok(false),
        (Some(f), Ok(l)) if f == l => Ok(true),
        (Some(f), other) => Err(format!("fast_keeping {f} != {other:?} for {text:?}")),
    }
}

/// Linkerd's own `linkerd-config` documents all take the fast reader.
#[rstest]
#[case::edge_26_5_1_default("edge-26.5.1", "install_default")]
#[case::edge_26_5_1_ha("edge-26.5.1", "install_ha_output")]
#[case::edge_26_5_1_helm("edge-26.5.1", "install_helm_control_plane_output")]
#[case::edge_26_8_3_default("edge-26.8.3", "install_default")]
#[case::edge_26_8_3_ha("edge-26.8.3", "install_ha_output")]
#[case::edge_26_8_3_helm("edge-26.8.3", "install_helm_control_plane_output")]
fn linkerd_config_values_take_the_fast_reader(#[case] tag: &str, #[case] golden: &str) {
    let text = linkerd_config_values(tag, golden);
    assert_eq!(agrees(&text), Ok(true));
    assert_eq!(agrees_keeping(&text), Ok(true));
    let kept = helm_yaml::from_str_keeping(&text, Settings::reads_from_values).unwrap();
    assert!(
        kept.get("proxy").is_some()
            && kept.get("controllerImage").is_none()
            && kept.get("identityTrustAnchorsPEM").is_none(),
        "{kept}"
    );
    // What the reader leaves out changes nothing: the same settings as from every settings key,
    // under each shipped settings document.
    let every = helm_yaml::from_str_keeping(&text, Settings::reads_top_level_key).unwrap();
    assert!(every.get("identityTrustAnchorsPEM").is_some());
    for doc in ["defaults", "ha", "cni", "hardened"] {
        let settings = shipped_settings(doc);
        assert_eq!(
            settings.over_values(kept.clone()),
            settings.over_values(every.clone()),
            "{tag} {golden} {doc}"
        );
    }
}

fn shipped_settings(doc: &str) -> Settings {
    let path = repo_root().join(format!("deploy/settings/{doc}.yaml"));
    let value: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    Settings::from_value(value).unwrap()
}

/// Other YAML of the repository: the benchmarks' control plane must be fast; hand-written files
/// (Linkerd's commented chart values, the shipped settings) must agree wherever it answers.
#[rstest]
#[case::benchmark_control_plane("host/data/linkerd-config-values.yaml", true)]
#[case::chart_values("tests/fixtures/linkerd/charts/linkerd-control-plane/values.yaml", false)]
#[case::chart_values_ha("tests/fixtures/linkerd/charts/linkerd-control-plane/values-ha.yaml", false)]
#[case::chart_values_edge_26_5_1("tests/fixtures/linkerd-versions/edge-26.5.1/values.yaml", false)]
#[case::settings_defaults("deploy/settings/defaults.yaml", true)]
#[case::settings_ha("deploy/settings/ha.yaml", false)]
#[case::settings_cni("deploy/settings/cni.yaml", false)]
#[case::settings_hardened("deploy/settings/hardened.yaml", false)]
fn repository_yaml(#[case] path: &str, #[case] must_be_fast: bool) {
    let text = std::fs::read_to_string(repo_root().join(path)).expect("file");
    let fast = agrees(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(fast || !must_be_fast, "{path}: the fast reader declined");
}

/// What the subset takes (`true`) and what it leaves to libyaml (`false`); either way the answer
/// equals libyaml's, errors included.
#[rstest]
#[case::mapping("a: b\nc: d\n", true)]
#[case::nested("a:\n  b:\n    c: 1\n", true)]
#[case::compact_sequence("a:\n- x\n- y\nb: 1\n", true)]
#[case::indented_sequence("a:\n  - x\n  - y\n", true)]
#[case::sequence_of_mappings("a:\n- k: v\n  l: w\n- k: z\n", true)]
#[case::sequence_in_sequence_mapping("a:\n- k:\n  - 1\n  - 2\n  l: w\n", true)]
#[case::null_items("a:\n-\n- x\n", true)]
#[case::literal_clip("a: |\n  x\n\n  y\n\n\nb: 1\n", true)]
#[case::literal_strip("a: |-\n  x\n  y\nb: 1\n", true)]
#[case::literal_deeper_lines("a: |\n  x\n    y\n  # not a comment\n", true)]
#[case::literal_at_end("a: |\n  x\n", true)]
#[case::literal_in_sequence_mapping("a:\n- pem: |\n    x\n  b: 1\n", true)]
#[case::literal_without_final_newline("a: |\n  x", false)]
#[case::literal_keep("a: |+\n  x\n\n", false)]
#[case::literal_indicator("a: |2\n   x\n", false)]
#[case::literal_leading_blank("a: |\n\n  x\n", false)]
#[case::literal_not_deeper("a: |\nb: 1\n", false)]
#[case::literal_in_sequence("a:\n- |\n  x\n", false)]
#[case::folded("a: >\n  x\n  y\n", false)]
#[case::anchor_alias("a: &x 1\nb: *x\n", false)]
#[case::tag("a: !!str 1\n", false)]
#[case::flow_mapping("a: {b: 1}\n", false)]
#[case::flow_sequence("a: [1, 2]\n", false)]
#[case::empty_flow("a: {}\nb: []\nc: {} # c\n", true)]
#[case::multi_line_plain("a: x\n  y\n", false)]
#[case::multi_line_quoted("a: \"x\n  y\"\n", false)]
#[case::escapes("a: \"x\\ny\"\n", false)]
#[case::double_quoted("a: \"x: y # z\"\nb: \"\"\nc: \"1\" # c\n", true)]
#[case::single_quoted("a: 'it''s'\nb: ''\nc: 'x: #y'\n", true)]
#[case::quote_then_text("a: \"x\"y\n", false)]
#[case::comments("# head\na: b # c\n  # indented comment\nc: d#e\nf: # null\n", true)]
#[case::trailing_spaces("a: b   \nc:   \n", true)]
#[case::float("a: 1.5\n", false)]
#[case::exponent("a: 1e3\n", false)]
#[case::hex("a: 0x1F\n", false)]
#[case::octal("a: 0o17\n", false)]
#[case::infinity("a: .inf\n", false)]
#[case::integers("a: 0\nb: -1\nc: +5\nd: 2103\ne: -0\n", true)]
#[case::leading_zeros("a: 0755\nb: -01\nc: +00\n", true)]
#[case::big_integer("a: 99999999999999999999\n", false)]
#[case::number_like_strings("a: 10.0.0.0/8\nb: 25%\nc: 1h0m0s\nd: 1.2.3\ne: 1_000\nf: 1e\n", true)]
#[case::null_and_bool_forms("a: ~\nb: null\nc: Null\nd: NULL\ne: true\nf: True\ng: FALSE\nh:\n", true)]
#[case::yaml_1_1_words("a: yes\nb: on\nc: off\nd: y\ne: nan\nf: infinity\n", true)]
#[case::dash_scalars("a: -x\nb: -foo-\n", true)]
#[case::double_sign("a: --\nb: +-1\n", false)]
#[case::dash_alone("a: -\n", false)]
#[case::colon_in_plain("a: http://x:80/y\nb: a:b\nc:\n- ::/0\nd: ?x\n", true)]
#[case::indicator_alone("a: ?\n", false)]
#[case::mapping_in_value("a: b: c\n", false)]
#[case::duplicate_key("a: 1\na: 2\n", false)]
#[case::duplicate_after_ascending_keys("a: 1\nb: 2\na: 3\n", false)]
#[case::duplicate_after_the_order_breaks("b: 1\na: 2\nb: 3\n", false)]
#[case::duplicate_nested_after_the_order_breaks("x:\n  c: 1\n  a: 2\n  c: 3\n", false)]
#[case::ascending_keys("a: 1\nb: 2\nc: 3\n", true)]
#[case::unordered_keys("c: 1\na: 2\nb: 3\n", true)]
#[case::null_key("null: 1\n", false)]
#[case::numeric_key("1: a\n", false)]
#[case::bool_key("true: a\n", false)]
#[case::merge_key("a:\n  <<: {b: 1}\n", false)]
#[case::quoted_key("\"a\": 1\n", false)]
#[case::complex_key("? a\n: b\n", false)]
#[case::tab("a:\tb\n", false)]
#[case::crlf("a: b\r\n", false)]
#[case::bom("\u{feff}a: b\n", false)]
#[case::document_start("---\na: 1\n", false)]
#[case::document_end("a: 1\n...\n", false)]
#[case::directive("%YAML 1.2\n---\na: 1\n", false)]
#[case::top_level_sequence("- a\n- b\n", false)]
#[case::top_level_scalar("x\n", false)]
#[case::empty("", false)]
#[case::only_comments("# nothing\n", false)]
#[case::indented_top("  a: 1\n", false)]
#[case::uneven_indentation("a:\n    b: 1\n  c: 2\n", false)]
#[case::sequence_after_entries("a:\n  b: 1\n  - c\n", false)]
#[case::nested_sequence("a:\n- - x\n", false)]
#[case::unicode("a: héllo wörld ✓\n", true)]
#[case::control_character("a: b\u{7}\n", false)]
// found by the `helm_yaml_agrees` fuzz target: libyaml ends a line at U+2028 and U+2029
#[case::line_separator("a: 1\u{2028}pr xo2:y\n", false)]
#[case::paragraph_separator("a: 1\u{2029}b\n", false)]
#[case::unclosed_quote("a: 'x\n", false)]
fn subset(#[case] text: &str, #[case] fast: bool) {
    assert_eq!(agrees(text), Ok(fast), "{text:?}");
    // the same document under a kept key and under a dropped one
    for key in ["proxy", "controller"] {
        let nested = format!(
            "{key}:\n{}",
            text.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        agrees_keeping(&nested).unwrap();
        agrees_keeping(&format!("{text}{key}: 1\n")).unwrap();
    }
    // and around the opaque-ports key, before it, after it and beside it
    let ports = "proxy:\n  opaquePorts: \"25\"\n";
    let indented: String = text.lines().map(|l| format!("  {l}\n")).collect();
    for doc in [
        format!("{text}{ports}"),
        format!("{ports}{text}"),
        format!("{ports}{indented}"),
        format!("proxy:\n{indented}  opaquePorts: \"25\"\n"),
    ] {
        agrees(&doc).unwrap();
        agrees_keeping(&doc).unwrap();
    }
}

/// Documents shaped around the opaque-ports key (a broken line before or after the `proxy`
/// block, quotes and flow collections running over lines, keys spelled almost like it): the
/// reader agrees with libyaml or declines. `true` where the subset reader takes the document.
#[rstest]
#[case::absent("a: 1\n", true)]
#[case::key_absent("proxy:\n  a: 1\n", true)]
#[case::plain("proxy:\n  a: 1\n  opaquePorts: 25,587 # c\nb: 2\n", true)]
#[case::quoted("proxy:\n  opaquePorts: \"25\"   \n", true)]
#[case::null_key("proxy:\n  opaquePorts:\n  b: 1\n", true)]
#[case::null_top("proxy: ~\nb: 1\n", true)]
#[case::empty_top("proxy: {}\n", true)]
#[case::bare_top("proxy:\n# c\nb: 1\n", true)]
#[case::bare_top_at_end("proxy:\n", true)]
#[case::compact_siblings(
    "proxy:\n  ports:\n  - 1\n  - name: x\n    v: 2\n  opaquePorts: \"3\"\n",
    true
)]
#[case::literal_before("a: |\n  proxy:\n    opaquePorts: 1\nb: 2\n", true)]
#[case::literal_sibling("proxy:\n  pem: |\n    x\n  opaquePorts: \"3\"\n", true)]
#[case::broken_after("proxy:\n  opaquePorts: \"9\"\nz: [unclosed\n", false)]
#[case::broken_deeper_after("proxy:\n  opaquePorts: \"9\"\nz:\n  y: 'x\n", false)]
#[case::quote_runs_on("a: \"x\nproxy:\n  opaquePorts: 1\"\n", false)]
#[case::quote_runs_on_inside("proxy:\n  a: \"x\n  opaquePorts: 1\"\n", false)]
#[case::flow_runs_on("a: [1,\nproxy: 2]\n", false)]
#[case::flow_mapping_inside("proxy:\n  a: {b: 1,\n  opaquePorts: 2}\n", false)]
#[case::block_scalar_ended_by_a_plain_line(
    "a:\n  k: |\n    x\n  j:\n    y: \"multi\n      line\"\nproxy:\n  opaquePorts: \"9\"\n",
    false
)]
#[case::broken_before("a: [unclosed\nproxy:\n  opaquePorts: \"9\"\n", false)]
#[case::closed_at_once_before(
    "a: {}\nb:\n  c: \"\"\n  d: []\n  e: \"x y\"\n  f: 'z'\nproxy:\n  g: \"\"\n  opaquePorts: \"9\"\n",
    true
)]
#[case::doubled_single_quote("a:\n  b: 'it''s'\nproxy:\n  opaquePorts: \"9\"\n", true)]
#[case::bracket_in_quotes("a:\n  b: \"[x\"\nproxy:\n  opaquePorts: \"9\"\n", true)]
#[case::quote_runs_on_before("a:\n  b: \"x\nproxy:\n  opaquePorts: 1\"\n", false)]
#[case::quote_runs_on_after_a_bracket("a:\n  b: \"x{\nproxy:\n  opaquePorts: 1\"\n", false)]
#[case::quote_runs_on_after_the_other_quote("a:\n  b: \"x'\nproxy:\n  opaquePorts: 1\"\n", false)]
#[case::quote_runs_on_after_a_quote("a:\n  b: \"\"\"\nproxy:\n  opaquePorts: 1\"\n", false)]
#[case::flow_runs_on_before("a:\n  b: {x\nproxy: ~\n  }\n", false)]
#[case::text_after_braces("a:\n  b: {}x\nproxy: ~\n", false)]
#[case::two_quoted_scalars("a:\n  b: \"x\" \"y\"\nproxy: ~\n", false)]
#[case::escape_in_quotes("a:\n  b: \"x\\\"y\"\nproxy: ~\n", false)]
#[case::carriage_returns("a: 1\rproxy:\r  opaquePorts: \"9\"\n", false)]
#[case::tab_separator("proxy:\n  \topaquePorts: \"9\"\n", false)]
#[case::line_separator("a: 1\u{2028}proxy: 2\n", false)]
#[case::indented_root("  proxy:\n    opaquePorts: \"9\"\n", false)]
#[case::quoted_top_key("\"proxy\":\n  opaquePorts: \"9\"\n", false)]
#[case::spaced_top_key("proxy :\n  opaquePorts: \"9\"\n", false)]
#[case::quoted_key("proxy:\n  \"opaquePorts\": \"9\"\n", false)]
#[case::duplicate_top("proxy:\n  a: 1\nproxy:\n  opaquePorts: \"9\"\n", false)]
#[case::duplicate_key("proxy:\n  opaquePorts: \"1\"\n  opaquePorts: \"9\"\n", false)]
#[case::merge_key("<<: {proxy: {opaquePorts: 1}}\n", false)]
#[case::top_sequence("proxy:\n- a\n", true)]
#[case::top_indented_sequence("proxy:\n  - a\n", true)]
#[case::top_alias("proxy: *p\n", false)]
#[case::top_literal("proxy: |\n  x\n", true)]
#[case::multi_line_plain("proxy:\n  opaquePorts: 25\n    ,26\n", false)]
#[case::multi_line_plain_after_blank("proxy:\n  opaquePorts: 25\n\n    ,26\n", false)]
#[case::comment_under_scalar("proxy:\n  opaquePorts: 25\n    # c\n", true)]
#[case::mapping_under_key("proxy:\n  opaquePorts:\n    a: 1\n", true)]
#[case::sequence_under_key("proxy:\n  opaquePorts:\n  - 1\n", true)]
#[case::literal_key("proxy:\n  opaquePorts: |\n    25\n", true)]
#[case::alias_key("proxy:\n  opaquePorts: *p\n", false)]
#[case::shallower_line("proxy:\n    a: 1\n  opaquePorts: \"9\"\n", false)]
#[case::scalar_under_top("proxy:\n  x\n", false)]
#[case::scalar_root("x\n", false)]
#[case::spaced_top_key_later("a: 1\nproxy :\n  opaquePorts: \"9\"\n", false)]
#[case::complex_key_later("a: 1\n? proxy\n: x\n", false)]
#[case::merge_key_inside("proxy:\n  a: 1\n  <<: {opaquePorts: \"9\"}\n", false)]
#[case::document_marker("---\nproxy: ~\n", false)]
#[case::empty("", false)]
#[case::only_comments("# c\n", false)]
fn around_the_opaque_ports_key(#[case] text: &str, #[case] fast: bool) {
    assert_eq!(agrees(text), Ok(fast), "{text:?}");
    agrees_keeping(text).unwrap();
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        "[ -~]{0,12}".prop_map(Value::String),
        "[a-z0-9.:#'\" -]{0,10}(\n[a-z #-]{0,8}){0,3}\n?".prop_map(Value::String),
        prop::sample::select(vec![
            "~", "yes", "0755", "-1", "1.5", "0x10", "null", "", " x ", "- x", "a: b"
        ])
        .prop_map(|s| Value::String(s.into())),
    ]
}

fn document() -> impl Strategy<Value = Value> {
    let key = "[a-zA-Z][a-zA-Z0-9./_-]{0,8}";
    let tree = scalar().prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    });
    prop::collection::vec((key, tree), 1..6)
        .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>()))
}

/// Edits that YAML's structure depends on, made at random places of Linkerd's default values.
fn edit() -> impl Strategy<Value = (prop::sample::Index, &'static str, usize)> {
    let pieces = vec![
        " ", "  ", "\n", ":", ": ", "- ", "-", "#", " #", "|", "|-", "\"", "'", "{", "[", "&a ", "*a", "!",
        "0", "1.5", "\t", "\\", "~", "a",
    ];
    (
        any::<prop::sample::Index>(),
        prop::sample::select(pieces),
        0usize..3,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Documents written by libyaml's emitter: where the fast reader answers, it agrees.
    #[test]
    fn emitted_documents_agree(doc in document()) {
        let text = serde_yaml_ng::to_string(&doc).expect("emit");
        agrees(&text).map_err(TestCaseError::fail)?;
    }

    /// Linkerd's default values with up to three edits (insertions or deletions): the fast
    /// reader agrees with libyaml or declines, and never answers where libyaml fails.
    #[test]
    fn edited_linkerd_values_agree(edits in edits()) {
        let text = edited_values(edits);
        agrees(&text).map_err(TestCaseError::fail)?;
        agrees_keeping(&text).map_err(TestCaseError::fail)?;
    }

    /// The same with the edits made in and before the `proxy` block, and with carriage
    /// returns and tabs among the pieces.
    #[test]
    fn values_edited_in_the_proxy_block_agree(edits in prop::collection::vec(edit_in_proxy_block(), 1..4)) {
        let text = edited_values_at(edits);
        agrees(&text).map_err(TestCaseError::fail)?;
        agrees_keeping(&text).map_err(TestCaseError::fail)?;
    }
}

/// An edit placed between the start of Linkerd's default values and the end of the
/// `opaquePorts` line, most of them in the `proxy` block.
fn edit_in_proxy_block() -> impl Strategy<Value = (usize, &'static str, usize)> {
    let text = linkerd_config_values("edge-26.8.3", "install_default");
    let block = text.find("\nproxy:").expect("proxy block");
    let key = text.find("  opaquePorts:").expect("opaquePorts") + 40;
    let pieces = vec![
        " ",
        "  ",
        "\n",
        ":",
        ": ",
        "- ",
        "#",
        "|",
        "\"",
        "'",
        "{",
        "[",
        "&a ",
        "*a",
        "\t",
        "\r",
        "~",
        "\nproxy:\n",
        "\n  opaquePorts: 1\n",
        "\n    x\n",
    ];
    (
        prop_oneof![3 => block..key, 1 => 0..block],
        prop::sample::select(pieces),
        0usize..3,
    )
}

fn edits() -> impl Strategy<Value = Vec<(prop::sample::Index, &'static str, usize)>> {
    prop::collection::vec(edit(), 1..4)
}

/// Linkerd's default values with `edits` applied.
fn edited_values(edits: Vec<(prop::sample::Index, &'static str, usize)>) -> String {
    let mut text = linkerd_config_values("edge-26.8.3", "install_default");
    for (at, piece, delete) in edits {
        let i = at.index(text.len() + 1);
        edit_at(&mut text, i, piece, delete);
    }
    text
}

/// Linkerd's default values with edits at byte offsets (clamped to the edited text).
fn edited_values_at(edits: Vec<(usize, &'static str, usize)>) -> String {
    let mut text = linkerd_config_values("edge-26.8.3", "install_default");
    for (at, piece, delete) in edits {
        let i = at.min(text.len());
        edit_at(&mut text, i, piece, delete);
    }
    text
}

/// Deletes `delete` bytes at `i`, or inserts `piece` there when `delete` is 0.
fn edit_at(text: &mut String, mut i: usize, piece: &str, delete: usize) {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    let mut end = (i + delete).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    text.replace_range(i..end, if delete > 0 { "" } else { piece });
}

/// The edited documents exercise the fast reader, not only the fallback: "declined" agrees
/// trivially, so a reader that declined everything would pass `edited_linkerd_values_agree`.
#[test]
fn edited_documents_mostly_take_the_fast_reader() {
    let (mut fast, total) = (0, 400);
    for edits in samples(edits(), total) {
        if agrees(&edited_values(edits)).expect("agrees") {
            fast += 1;
        }
    }
    println!("{fast} of {total} edited documents took the fast reader");
    assert!(
        fast * 2 >= total,
        "only {fast} of {total} edited documents took the fast reader"
    );
}

/// The generated documents exercise the fast reader, not only the fallback.
#[test]
fn emitted_documents_mostly_take_the_fast_reader() {
    let (mut fast, total) = (0, 300);
    for doc in samples(document(), total) {
        let text = serde_yaml_ng::to_string(&doc).expect("emit");
        if agrees(&text).expect("agrees") {
            fast += 1;
        }
    }
    assert!(
        fast * 4 >= total,
        "only {fast} of {total} emitted documents took the fast reader"
    );
}

/// `n` values of `strategy`, the same on every run.
fn samples<S: Strategy>(strategy: S, n: usize) -> Vec<S::Value> {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..n)
        .map(|_| strategy.new_tree(&mut runner).expect("tree").current())
        .collect()
}
