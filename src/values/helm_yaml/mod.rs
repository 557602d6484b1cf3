//! YAML as Helm writes it, read fast: the `values` of `linkerd-config` are `toYaml` output (block
//! mappings and sequences, one-line scalars, `|` blocks for PEM bundles). Every admission runs in
//! a fresh instance, so the document is parsed on each one, and libyaml through `serde_yaml_ng`
//! is slow at it.
//!
//! The reader takes only a strict subset of YAML and answers `None` for anything else (anchors,
//! tags, flow collections, multi-line plain or quoted scalars, floats, tabs, ...). Then
//! [`from_str`] hands the whole document to `serde_yaml_ng`, so what the policy sees, and every
//! error message, is exactly `serde_yaml_ng`'s answer. `tests/helm_yaml.rs` (properties) and the
//! `helm_yaml_agrees` fuzz target check that the two never answer differently.

use serde_json::{Number, Value};
use std::borrow::Cow;

mod node;
pub use node::Node;

/// Parses a YAML document into JSON values, exactly as `serde_yaml_ng::from_str` does.
pub fn from_str(text: &str) -> Result<Value, serde_yaml_ng::Error> {
    from_str_keeping(text, |_| true)
}

/// [`from_str`], then only the top-level keys `keep` accepts: the others are checked as YAML
/// but never built (most of `linkerd-config`'s values are for other components).
pub fn from_str_keeping(text: &str, keep: impl Fn(&str) -> bool) -> Result<Value, serde_yaml_ng::Error> {
    match fast_keeping(text, &keep) {
        Some(value) => Ok(value),
        None => libyaml_keeping(text, keep),
    }
}

/// `serde_yaml_ng` alone, keeping the top-level keys `keep` accepts: for a document the subset
/// reader declined.
pub fn libyaml_keeping(text: &str, keep: impl Fn(&str) -> bool) -> Result<Value, serde_yaml_ng::Error> {
    let mut value: Value = serde_yaml_ng::from_str(text)?;
    if let Value::Object(map) = &mut value {
        map.retain(|key, _| keep(key));
    }
    Ok(value)
}

/// The subset reader alone: `None` when the document is outside the subset (or not YAML).
/// Public so the tests can tell which reader answered.
pub fn fast(text: &str) -> Option<Value> {
    fast_keeping(text, |_: &str| true)
}

/// The subset reader, building only the top-level keys `keep` accepts.
pub fn fast_keeping(text: &str, keep: impl Fn(&str) -> bool) -> Option<Value> {
    read_keeping(text, keep).map(Node::into_value)
}

/// [`fast_keeping`] as the reader's own tree, borrowing from `text`: what the settings decode
/// reads the control plane's values from.
pub fn read_keeping<'a>(text: &'a str, keep: impl Fn(&str) -> bool) -> Option<Node<'a>> {
    let mut reader = Reader::new(text)?;
    let mut map = Entries::default();
    reader.peek()?;
    while let Some((indent, line)) = reader.peek() {
        if indent != 0 || is_dash(line) {
            return None;
        }
        reader.pos += 1;
        let (key, rest) = split_key(line)?;
        reader.build = keep(key);
        reader.entry(0, key, rest, &mut map)?;
    }
    Some(Node::Map(map.items))
}

/// A block mapping's entries as read, and whether their keys are in ascending order so far.
struct Entries<'a> {
    items: Vec<(&'a str, Node<'a>)>,
    ascending: bool,
}

impl Default for Entries<'_> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            ascending: true,
        }
    }
}

impl<'a> Entries<'a> {
    /// Adds an entry; `None` for a repeated key, which libyaml refuses. `toYaml` writes keys
    /// sorted, so a key after the last of ascending keys is new without a scan of the others.
    fn push(&mut self, key: &'a str, value: Node<'a>) -> Option<()> {
        let after_last = self.items.last().is_none_or(|(last, _)| *last < key);
        if !(after_last && self.ascending) && self.items.iter().any(|(k, _)| *k == key) {
            return None;
        }
        self.ascending &= after_last;
        self.items.push((key, value));
        Some(())
    }
}

struct Reader<'a> {
    lines: Vec<&'a str>,
    pos: usize,
    ends_with_newline: bool,
    /// Whether values are built; off for a top-level key the caller does not keep, whose
    /// block is still read, so that a document libyaml refuses is never taken.
    build: bool,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Option<Self> {
        // Only printable characters: no tabs, CRs or byte-order marks (libyaml's rules there
        // are subtle, so such documents take the full parser).
        if !text
            .chars()
            .all(|c| c == '\n' || (' '..='~').contains(&c) || plain_unicode(c))
        {
            return None;
        }
        let lines: Vec<&str> = text.split('\n').collect();
        // document markers and directives
        if lines
            .iter()
            .any(|l| l.starts_with("---") || l.starts_with("...") || l.starts_with('%'))
        {
            return None;
        }
        Some(Self {
            lines,
            pos: 0,
            ends_with_newline: text.ends_with('\n'),
            build: true,
        })
    }

    /// The next line with content (blank and comment lines skipped), not consumed: its
    /// indentation and its text without the spaces around it.
    fn peek(&mut self) -> Option<(usize, &'a str)> {
        while let Some(line) = self.lines.get(self.pos) {
            let content = line.trim_start_matches(' ');
            if !content.is_empty() && !content.starts_with('#') {
                return Some((line.len() - content.len(), content.trim_end_matches(' ')));
            }
            self.pos += 1;
        }
        None
    }

    /// A block mapping whose keys sit at column `indent`; `map` holds entries already read.
    fn mapping(&mut self, indent: usize, mut map: Entries<'a>) -> Option<Node<'a>> {
        while let Some((at, line)) = self.peek() {
            if at < indent {
                break;
            }
            if at > indent || is_dash(line) {
                return None;
            }
            self.pos += 1;
            let (key, rest) = split_key(line)?;
            self.entry(indent, key, rest, &mut map)?;
        }
        Some(Node::Map(map.items))
    }

    /// One `key: value` line, split by [`split_key`] (and the block under it).
    fn entry(&mut self, indent: usize, key: &'a str, rest: &'a str, map: &mut Entries<'a>) -> Option<()> {
        let value = match rest {
            "" => self.nested(indent, true),
            "|" => self.literal(indent, true),
            "|-" => self.literal(indent, false),
            _ => scalar(rest).map(|s| self.value(s)),
        }?;
        if !self.build {
            return Some(());
        }
        map.push(key, value)
    }

    /// The node under `key:` or `-` with nothing after it: a deeper block, a sequence at the
    /// key's own column (`toYaml` writes lists that way), or null.
    fn nested(&mut self, indent: usize, compact_sequence: bool) -> Option<Node<'a>> {
        match self.peek() {
            Some((at, line)) if at > indent && is_dash(line) => self.sequence(at),
            Some((at, _)) if at > indent => self.mapping(at, Entries::default()),
            Some((at, line)) if at == indent && compact_sequence && is_dash(line) => self.sequence(at),
            _ => Some(Node::Null),
        }
    }

    /// A block sequence whose dashes sit at column `indent`.
    fn sequence(&mut self, indent: usize) -> Option<Node<'a>> {
        let mut items = Vec::new();
        while let Some((at, line)) = self.peek() {
            if at < indent || (at == indent && !is_dash(line)) {
                break;
            }
            if at > indent {
                return None;
            }
            self.pos += 1;
            let (column, body) = after_dash(indent, line)?;
            let item = self.item(indent, column, body)?;
            if self.build {
                items.push(item);
            }
        }
        Some(Node::Seq(items))
    }

    /// One sequence item: a scalar, a mapping starting on the dash's line, or a deeper block.
    fn item(&mut self, indent: usize, column: usize, body: &'a str) -> Option<Node<'a>> {
        if body.is_empty() || body.starts_with('#') {
            return self.nested(indent, false);
        }
        if is_dash(body) || body.starts_with('|') {
            return None;
        }
        if let Some((key, rest)) = split_key(body) {
            let mut map = Entries::default();
            self.entry(column, key, rest, &mut map)?;
            return self.mapping(column, map);
        }
        Some(self.value(scalar(body)?))
    }

    fn value(&self, scalar: Scalar<'a>) -> Node<'a> {
        if self.build {
            scalar.into_node()
        } else {
            Node::Null
        }
    }

    /// A `|` (clip) or `|-` (strip) block under a key at column `indent`.
    fn literal(&mut self, indent: usize, clip: bool) -> Option<Node<'a>> {
        let first = self.lines.get(self.pos)?;
        let body = after_spaces(first);
        let content_indent = first.len() - body.len();
        if body.is_empty() || content_indent <= indent {
            return None;
        }
        let mut text = String::new();
        while let Some(line) = self.lines.get(self.pos) {
            let body = after_spaces(line);
            let at = line.len() - body.len();
            if body.is_empty() {
                // spaces beyond the block's indentation are content: left to libyaml
                if at >= content_indent {
                    return None;
                }
                text.push('\n');
            } else if at >= content_indent {
                if self.build {
                    text.push_str(line.get(content_indent..)?);
                }
                text.push('\n');
            } else {
                break;
            }
            self.pos += 1;
        }
        if self.pos >= self.lines.len() && !self.ends_with_newline {
            return None;
        }
        text.truncate(text.trim_end_matches('\n').len());
        if clip {
            text.push('\n');
        }
        Some(Node::Str(text.into()))
    }
}

fn is_dash(line: &str) -> bool {
    line == "-" || line.starts_with("- ")
}

/// The column and text of what follows the dash of a line at `indent` that [`is_dash`] takes.
fn after_dash(indent: usize, line: &str) -> Option<(usize, &str)> {
    let after = line.get(1..)?;
    let body = after_spaces(after);
    Some((indent + 1 + after.len() - body.len(), body))
}

/// Non-ASCII characters libyaml takes as printable without question: not a byte-order mark, and
/// not U+2028 or U+2029, which end a line in YAML 1.1.
fn plain_unicode(c: char) -> bool {
    c >= '\u{a0}' && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}')
}

/// `key: rest` or `key:` with a plain key that resolves to a string; `rest` without its
/// leading spaces, "" when empty or a comment.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = match line.find(": ") {
        Some(at) => (line.get(..at)?, line.get(at + 2..)?),
        None => (line.strip_suffix(':')?, ""),
    };
    let bad = key.is_empty() || key.ends_with(' ') || key.contains(" #");
    if bad || key == "<<" || starts_with_indicator(key) || !resolves_to_string(key) {
        return None;
    }
    let rest = after_spaces(rest);
    Some((key, if rest.starts_with('#') { "" } else { rest }))
}

/// Characters that may not start a plain scalar here (or that start a construct left to
/// libyaml).
fn starts_with_indicator(text: &str) -> bool {
    matches!(
        text.as_bytes().first(),
        Some(
            b'-' | b'?'
                | b':'
                | b','
                | b'['
                | b']'
                | b'{'
                | b'}'
                | b'#'
                | b'&'
                | b'*'
                | b'!'
                | b'|'
                | b'>'
                | b'\''
                | b'"'
                | b'%'
                | b'@'
                | b'`'
        )
    )
}

/// A one-line scalar, not yet a `Value` (values of keys not kept are never built).
enum Scalar<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    EmptyMapping,
    EmptySequence,
}

impl<'a> Scalar<'a> {
    fn into_node(self) -> Node<'a> {
        match self {
            Scalar::Null => Node::Null,
            Scalar::Bool(b) => Node::Bool(b),
            Scalar::Number(n) => Node::Number(n),
            Scalar::Str(s) => Node::Str(s),
            Scalar::EmptyMapping => Node::Map(Vec::new()),
            Scalar::EmptySequence => Node::Seq(Vec::new()),
        }
    }
}

/// A one-line scalar after `key: ` or `- `.
fn scalar(text: &str) -> Option<Scalar<'_>> {
    if let Some(quoted) = text.strip_prefix('"') {
        let end = quoted.find('"')?;
        let (content, after) = (quoted.get(..end)?, quoted.get(end + 1..)?);
        return (!content.contains('\\') && ends_after_quote(after)).then_some(Scalar::Str(content.into()));
    }
    if let Some(quoted) = text.strip_prefix('\'') {
        return single_quoted(quoted);
    }
    let plain = match text.find(" #") {
        Some(comment) => text.get(..comment)?.trim_end_matches(' '),
        None => text,
    };
    match plain {
        "{}" => return Some(Scalar::EmptyMapping),
        "[]" => return Some(Scalar::EmptySequence),
        _ => {}
    }
    // `-`, `?` and `:` start a plain scalar when a non-space follows (`-1`, `::/0`)
    let indicator_then_char = text.starts_with(['-', '?', ':']) && text.get(1..2).is_some_and(|c| c != " ");
    if starts_with_indicator(text) && !indicator_then_char {
        return None;
    }
    if plain.contains(": ") || plain.ends_with(':') {
        return None;
    }
    resolve_plain(plain)
}

/// The rest of a `'...'` scalar after its opening quote (`''` is a quote).
fn single_quoted(text: &str) -> Option<Scalar<'_>> {
    let mut content = String::new();
    let mut rest = text;
    loop {
        let end = rest.find('\'')?;
        content.push_str(rest.get(..end)?);
        let after = rest.get(end + 1..)?;
        match after.strip_prefix('\'') {
            Some(more) => {
                content.push('\'');
                rest = more;
            }
            None => return ends_after_quote(after).then_some(Scalar::Str(content.into())),
        }
    }
}

/// `text` without its leading spaces.
fn after_spaces(text: &str) -> &str {
    text.trim_start_matches(' ')
}

/// A plain key must resolve to a string (libyaml would give `1:` or `null:` another key).
fn resolves_to_string(key: &str) -> bool {
    matches!(resolve_plain(key), Some(Scalar::Str(_)))
}

/// After a closing quote: only spaces, or spaces then a comment.
fn ends_after_quote(after: &str) -> bool {
    let trimmed = after_spaces(after);
    trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < after.len())
}

/// A plain scalar's value under the YAML 1.2 core schema as `serde_yaml_ng` resolves it:
/// null, booleans and decimal integers here; anything that could be another kind of number
/// (floats, `0x`/`0o`/`0b`, `.inf`) is `None`, for libyaml.
fn resolve_plain(text: &str) -> Option<Scalar<'_>> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Scalar::Null),
        "true" | "True" | "TRUE" => return Some(Scalar::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Scalar::Bool(false)),
        _ => {}
    }
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..)?),
        Some(b'+') => (false, text.get(1..)?),
        Some(b) if b.is_ascii_digit() || *b == b'.' => (false, text),
        _ => return Some(Scalar::Str(text.into())),
    };
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        if unsigned.len() > 1 && unsigned.starts_with('0') {
            // leading zeros make a string in YAML 1.2
            return Some(Scalar::Str(text.into()));
        }
        return if negative {
            text.parse::<i64>().ok().map(|n| Scalar::Number(n.into()))
        } else {
            unsigned.parse::<u64>().ok().map(|n| Scalar::Number(n.into()))
        };
    }
    let radix = ["0x", "0o", "0b"].iter().any(|p| unsigned.starts_with(p));
    let float = unsigned.parse::<f64>().is_ok();
    if radix || unsigned.starts_with(['.', '+', '-']) || float {
        return None;
    }
    Some(Scalar::Str(text.into()))
}
