//! YAML as Helm writes it, read fast: the `values` of `linkerd-config` are `toYaml` output (block
//! mappings and sequences, one-line scalars, `|` blocks for PEM bundles). Every admission runs in
//! a fresh instance, so the document is parsed on each one; libyaml through `serde_yaml_ng` spent
//! most of the module's time there.
//!
//! The reader takes only a strict subset of YAML and answers `None` for anything else (anchors,
//! tags, flow collections, multi-line plain or quoted scalars, floats, tabs, ...). Then
//! [`from_str`] hands the whole document to `serde_yaml_ng`, so what the policy sees, and every
//! error message, is exactly `serde_yaml_ng`'s answer. `tests/helm_yaml.rs` checks the two agree.
//!
//! For one key two levels down (`proxy.opaquePorts`, all an object outside the mesh needs),
//! [`skim_along`] reads only the lines that can hold it.

use crate::word;
use serde_json::{Number, Value};
use std::borrow::Cow;

mod marks;
mod node;
mod skim;
pub use node::Node;
pub use skim::{skim_along, skim_along_json, skim_json_string};

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
    read_top_level(Reader::new(text)?, keep)
}

/// The subset reader, building only the mappings along `path` and the node at its end: the
/// document as [`fast`] reads it with every other key left out (the rest is still read, so a
/// document outside the subset is declined all the same).
pub fn fast_along<'a>(text: &'a str, path: &'a [&'a str]) -> Option<Value> {
    let mut reader = Reader::new(text)?;
    reader.path = Some(path);
    // `entry` builds only the keys along the path, the top-level one included
    read_top_level(reader, |_: &str| true).map(Node::into_value)
}

fn read_top_level<'a>(mut reader: Reader<'a>, keep: impl Fn(&str) -> bool) -> Option<Node<'a>> {
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
        let after_last = self.items.last().is_none_or(|(last, _)| before(last, key));
        if !(after_last && self.ascending) && self.items.iter().any(|(k, _)| *k == key) {
            return None;
        }
        self.ascending &= after_last;
        self.items.push((key, value));
        Some(())
    }
}

/// `a < b`, the first bytes compared first: sibling keys often differ there, and `str`'s
/// comparison calls `memcmp`.
fn before(a: &str, b: &str) -> bool {
    match a.as_bytes().first().cmp(&b.as_bytes().first()) {
        std::cmp::Ordering::Equal => a < b,
        order => order.is_lt(),
    }
}

struct Reader<'a> {
    lines: Vec<&'a str>,
    pos: usize,
    ends_with_newline: bool,
    /// Whether values are built; off for a top-level key the caller does not keep, whose
    /// block is still read, so that a document libyaml refuses is never taken.
    build: bool,
    /// With a path, only the entries along it are built ([`fast_along`]).
    path: Option<&'a [&'a str]>,
    /// How many mapping entries enclose the current one.
    depth: usize,
    /// The last line [`Reader::peek`] found: its position, indentation and content.
    peeked: Option<(usize, usize, &'a str)>,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Option<Self> {
        // One pass splits the lines and checks the characters: only printable ones, no tabs,
        // CRs or byte-order marks (libyaml's rules there are subtle, so such documents take the
        // full parser).
        let mut lines = Vec::with_capacity(text.len() / 24);
        let (mut start, mut non_ascii) = (0, false);
        let bytes = text.as_bytes();
        let mut from = 0;
        while from < bytes.len() {
            // the bytes that are not plain printable ASCII, sixteen at a time, then one
            let (mut bits, width) = match word::block(bytes, from) {
                Some(block) => (word::unplain_bits(block), 16),
                None => (
                    u32::from(bytes.get(from).is_some_and(|b| !(b' '..=b'~').contains(b))),
                    1,
                ),
            };
            while bits != 0 {
                let at = from + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                match *bytes.get(at)? {
                    b'\n' => {
                        lines.push(text.get(start..at)?);
                        start = at + 1;
                    }
                    b if b >= 0x80 => non_ascii = true,
                    _ => return None,
                }
            }
            from += width;
        }
        lines.push(text.get(start..)?);
        if non_ascii && !text.chars().all(|c| c.is_ascii() || plain_unicode(c)) {
            return None;
        }
        // document markers and directives (byte patterns: `starts_with` calls `memcmp`)
        if lines.iter().any(|l| {
            matches!(
                l.as_bytes(),
                [b'-', b'-', b'-', ..] | [b'.', b'.', b'.', ..] | [b'%', ..]
            )
        }) {
            return None;
        }
        Some(Self {
            lines,
            pos: 0,
            ends_with_newline: text.ends_with('\n'),
            build: true,
            path: None,
            depth: 0,
            peeked: None,
        })
    }

    /// The next line with content (blank and comment lines skipped), not consumed. A line is
    /// peeked at several times (by each enclosing block), so the last answer is kept.
    #[inline]
    fn peek(&mut self) -> Option<(usize, &'a str)> {
        if let Some((pos, indent, text)) = self.peeked
            && pos == self.pos
        {
            return Some((indent, text));
        }
        self.peek_next()
    }

    /// [`Reader::peek`] at a line not peeked at yet.
    #[inline(never)]
    fn peek_next(&mut self) -> Option<(usize, &'a str)> {
        while let Some(line) = self.lines.get(self.pos) {
            // byte loops: the trims' pattern machinery cost more than the rest of the peek
            let bytes = line.as_bytes();
            let indent = word::leading_spaces(bytes);
            if indent < bytes.len() && bytes.get(indent) != Some(&b'#') {
                let end = bytes.iter().rposition(|&b| b != b' ').map_or(indent, |i| i + 1);
                let found = (indent, line.get(indent..end)?);
                self.peeked = Some((self.pos, found.0, found.1));
                return Some(found);
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
        let outer = self.build;
        if let Some(path) = self.path {
            self.build = outer && path.get(self.depth).is_none_or(|k| *k == key);
        }
        self.depth += 1;
        let value = match rest {
            "" => self.nested(indent, true),
            "|" => self.literal(indent, true),
            "|-" => self.literal(indent, false),
            _ => scalar(rest).map(|s| self.value(s)),
        };
        self.depth -= 1;
        let built = self.build;
        self.build = outer;
        let value = value?;
        if !built {
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

/// Non-ASCII characters libyaml takes as printable without question.
fn plain_unicode(c: char) -> bool {
    c >= '\u{a0}' && !matches!(c, '\u{feff}' | '\u{fffe}' | '\u{ffff}')
}

/// `key: rest` or `key:` with a plain key that resolves to a string; `rest` without its
/// leading spaces, "" when empty or a comment.
fn split_key(line: &str) -> Option<(&str, &str)> {
    split_word_key(line).or_else(|| split_other_key(line))
}

/// [`split_key`] for a line [`split_word_key`] leaves: out of line, so that the word keys'
/// path stays small (cranelift spills a large function's state on every call).
#[inline(never)]
fn split_other_key(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = match find_pair(line, b':', b' ') {
        Some(at) => (line.get(..at)?, line.get(at + 2..)?),
        None => (line.strip_suffix(':')?, ""),
    };
    let bad = key.is_empty() || key.ends_with(' ') || find_pair(key, b' ', b'#').is_some();
    if bad || key == "<<" || starts_with_indicator(key) || !resolves_to_string(key) {
        return None;
    }
    let rest = after_spaces(rest);
    Some((key, if rest.starts_with('#') { "" } else { rest }))
}

/// Bytes of a word: a key or a scalar made of them alone has no indicator, space, comment or
/// colon inside, so none of the checks of [`split_key`] and [`scalar`] can apply to it. A table:
/// the comparisons of a `matches!` cost 7 % more of the reader's time in the module.
#[expect(
    clippy::indexing_slicing,
    reason = "b < 256 by the loop bound, and a const fn cannot call get_mut"
)]
const fn word_bytes() -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/');
        b += 1;
    }
    table
}
static WORD: [bool; 256] = word_bytes();

/// Length of the run of word bytes at the start of `bytes`.
fn word_len(bytes: &[u8]) -> usize {
    let mut at = 0;
    // eight bytes at a time while eight are left: keys and values run ten to thirty bytes
    while let Some(x) = bytes.get(at..at + 8).and_then(word::of) {
        match word::lowest(word::not_word(x)) {
            Some(i) => return at + i,
            None => at += 8,
        }
    }
    let rest = bytes.get(at..).unwrap_or_default();
    let end = rest
        .iter()
        .position(|&b| !WORD.get(usize::from(b)).copied().unwrap_or(false));
    at + end.unwrap_or(rest.len())
}

/// [`split_key`] for the line almost every key of `toYaml` output is, `word:` or `word: rest`
/// with a word starting with a letter, in one pass over the key; `None` leaves the line to the
/// general rules (which give the same answer wherever this one answers).
fn split_word_key(line: &str) -> Option<(&str, &str)> {
    let bytes = line.as_bytes();
    if !bytes.first()?.is_ascii_alphabetic() {
        return None;
    }
    let end = word_len(bytes);
    // a short word may be null or a boolean, which is not a string key
    if end <= 5 && !resolves_to_string(line.get(..end)?) {
        return None;
    }
    let rest = match bytes.get(end..)? {
        [b':'] => "",
        [b':', b' ', ..] => after_spaces(line.get(end + 2..)?),
        _ => return None,
    };
    Some((line.get(..end)?, if rest.starts_with('#') { "" } else { rest }))
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
    // a word starting with a letter or digit is a plain scalar as it stands
    if text.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
        && word_len(text.as_bytes()) == text.len()
    {
        return resolve_plain(text);
    }
    other_scalar(text)
}

/// [`scalar`] for a text that is not a word: out of line, as [`split_other_key`].
#[inline(never)]
fn other_scalar(text: &str) -> Option<Scalar<'_>> {
    if let Some(quoted) = text.strip_prefix('"') {
        let end = find_byte(quoted, b'"')?;
        let (content, after) = (quoted.get(..end)?, quoted.get(end + 1..)?);
        return (!content.contains('\\') && ends_after_quote(after)).then_some(Scalar::Str(content.into()));
    }
    if let Some(quoted) = text.strip_prefix('\'') {
        return single_quoted(quoted);
    }
    let plain = match find_pair(text, b' ', b'#') {
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
    if find_pair(plain, b':', b' ').is_some() || plain.ends_with(':') {
        return None;
    }
    resolve_plain(plain)
}

/// The rest of a `'...'` scalar after its opening quote (`''` is a quote).
fn single_quoted(text: &str) -> Option<Scalar<'_>> {
    let mut content = String::new();
    let mut rest = text;
    loop {
        let end = find_byte(rest, b'\'')?;
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

/// `text` without its leading spaces. Byte loops here and in [`find_byte`]: `str`'s pattern
/// searches cost more per call than the short runs they search.
fn after_spaces(text: &str) -> &str {
    let spaces = text.bytes().take_while(|&b| b == b' ').count();
    text.get(spaces..).unwrap_or_default()
}

/// Where the first `byte` (ASCII) of `text` sits.
fn find_byte(text: &str, byte: u8) -> Option<usize> {
    text.bytes().position(|b| b == byte)
}

/// Where `first` directly followed by `second` occurs (byte scan: `str::find` with a string
/// pattern builds a searcher per call, which dominated this reader's time).
fn find_pair(text: &str, first: u8, second: u8) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = bytes.get(from..)?.iter().position(|&b| b == first) {
        let at = from + at;
        if bytes.get(at + 1) == Some(&second) {
            return Some(at);
        }
        from = at + 1;
    }
    None
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
    // after a leading digit (so not `inf` or `nan`), a byte no float has (`100ms`,
    // `10.0.0.0/8`) spares Rust's float parser
    let not_float = unsigned.starts_with(|c: char| c.is_ascii_digit())
        && unsigned
            .bytes()
            .any(|b| !(b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')));
    let float = !not_float && unsigned.parse::<f64>().is_ok();
    if radix || unsigned.starts_with(['.', '+', '-']) || float {
        return None;
    }
    Some(Scalar::Str(text.into()))
}

#[cfg(test)]
mod tests {
    use super::WORD;
    use crate::word;

    proptest::proptest! {
        /// [`super::before`] is `<`, for keys that share a first byte or are one another's
        /// prefix.
        #[test]
        fn before_is_less_than(a in "[ab\\x00]{0,10}", b in "[ab\\x00]{0,10}") {
            proptest::prop_assert_eq!(super::before(&a, &b), a < b);
        }
    }

    /// `word_len`'s two statements of a word byte agree: the eight-at-once test and the table
    /// its last bytes are looked up in, for every byte at every position, next to word bytes
    /// and next to bytes whose borrows or carries could spill into it.
    #[test]
    fn not_word_is_the_table() {
        for filler in [b'a', b'_', b'-', b'/', b'9', b'Z', 0x00, 0x7f, 0x80, 0xff] {
            for at in 0..8 {
                for b in 0..=255u8 {
                    let mut bytes = [filler; 8];
                    bytes[at] = b;
                    let flags = word::not_word(u64::from_le_bytes(bytes));
                    for (i, c) in bytes.iter().enumerate() {
                        let is_word = WORD[usize::from(*c)];
                        assert_eq!(flags >> (8 * i + 7) & 1 == 1, !is_word, "{bytes:?} at {i}");
                    }
                }
            }
        }
    }
}
