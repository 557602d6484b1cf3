//! One key two levels down (`proxy.opaquePorts`), read from the few lines that can hold it:
//! the top-level keys that could be the top key, the keys of its block that could be the key,
//! and every line that opens a quote or a flow bracket before that block ends and does not close
//! it at once (such a line could run on and hide the key). The other lines are passed over at
//! one test each and nothing else is parsed, so this costs a fraction of the subset reader,
//! which reads every line.
//!
//! It answers only where the document's shape around the key is certain; anything else is
//! `None`, and the caller reads the document whole. Where libyaml parses the document, an answer
//! is libyaml's value at the key. Unlike [`super::fast_along`], a document that libyaml refuses
//! elsewhere (away from the key's lines) may still get an answer: that is the point of reading
//! one key.
//!
//! [`skim_along_json`] reads the document where it lies in a host call's JSON answer, its
//! escapes left in: unescaping the 8 KB of `linkerd-config` cost as much as skimming it.
//! [`skim_json_string`] does so from the string's first byte on and finds where it ends, so the
//! answer's reader need not search the 8 KB for that quote as well.

use super::marks::Marks;
use super::{Scalar, after_dash, is_dash, scalar, split_key, split_word_key};
use crate::word;
use serde_json::{Map, Value};

/// The document with only `top` and `top.key` built, as [`super::fast_along`] builds it for the
/// path `[top, key]`: `{}` without `top`, `{top: null}`, `{top: {}}` without `key`, or
/// `{top: {key: node}}`; `None` when unsure.
pub fn skim_along(text: &str, top: &str, key: &str) -> Option<Value> {
    skim::<false>(text, top, key).map(|(node, _)| node)
}

/// [`skim_along`] over the document as a JSON string writes it, between its quotes: `\n` is a
/// line break, `\"`, `\\` and `\/` the bytes they stand for. `None` for any other escape (a
/// tab, a carriage return, a `\u`), as for anything else it is unsure of; where it answers,
/// [`skim_along`] gives the same answer for the unescaped text.
pub fn skim_along_json(json: &str, top: &str, key: &str) -> Option<Value> {
    let (node, end) = skim::<true>(json, top, key)?;
    (end == json.len()).then_some(node)
}

/// [`skim_along_json`] over a JSON string that runs on past its closing quote (a host call's
/// answer from the string's first byte on): its answer and where the string ends, the closing
/// quote's index, found in the same pass. `None` when unsure or when no quote closes it.
pub fn skim_json_string(text: &str, top: &str, key: &str) -> Option<(Value, usize)> {
    skim::<true>(text, top, key).filter(|&(_, end)| end < text.len())
}

/// The answer and where the text ends: at its length, or (`JSON`) at a quote no backslash
/// escapes, which closes the string.
fn skim<const JSON: bool>(text: &str, top: &str, key: &str) -> Option<(Value, usize)> {
    let mut skim = Skim {
        top,
        key,
        mapping: false,
        block: Block::Before,
        value: Found::Absent,
        literal: None,
    };
    // from one marked byte to the next: each line's end and the classes of its bytes
    let bytes = text.as_bytes();
    let mut marks = Marks::new(bytes);
    let mut start = 0;
    let mut unescaped = String::new();
    while start <= bytes.len() {
        if let Some((column, key)) = skim.passes_over() {
            start = pass_over::<JSON>(bytes, &mut marks, start, column, key)?;
            if start > bytes.len() {
                break;
            }
        }
        let (end, next, classes) = line_end::<JSON>(bytes, &mut marks)?;
        let indent = word::leading_spaces(bytes.get(start..end)?);
        if start + indent < end && skim.reads(indent) {
            let body = text.get(start + indent..end)?;
            let body = if JSON && classes & ESCAPED != 0 {
                unescape(body, &mut unescaped);
                &unescaped
            } else {
                body
            };
            let trimmed = body.bytes().rposition(|b| b != b' ').map_or(0, |i| i + 1);
            skim.line(indent, body.get(..trimmed)?, classes)?;
        }
        if classes & CLOSED != 0 {
            return Some((skim.finish()?, end));
        }
        start = next;
    }
    Some((skim.finish()?, bytes.len()))
}

/// Where the line whose marks come next ends, where the next one starts, and the classes of its
/// bytes; `None` for a byte the skim refuses.
fn line_end<const JSON: bool>(bytes: &[u8], marks: &mut Marks<'_>) -> Option<(usize, usize, u8)> {
    let mut classes = 0;
    while let Some(at) = marks.next() {
        match mark::<JSON>(bytes, at) {
            (BREAK, next) => return Some((at, next, classes)),
            (CLOSED, next) => return Some((at, next, classes | CLOSED)),
            (REFUSED, _) => return None,
            (class, next) => {
                classes |= class;
                marks.skip_to(next);
            }
        }
    }
    Some((bytes.len(), bytes.len() + 1, classes))
}

/// From the line at `start`, past the lines [`Skim::line`] would leave as they are
/// ([`Skim::passes_over`]): deeper than `column` or another key than `key` at it, with no byte
/// that could start a block scalar (nor the quote that closes a JSON string), and no opener of
/// a node unless it closes at once ([`closed_at_once`]).
/// Where the first line it stops at starts (past the end when none), the marks from that
/// line's start on; `None` for a byte the skim refuses. One test per line break, where
/// reading a line costs several times that.
fn pass_over<const JSON: bool>(
    bytes: &[u8],
    marks: &mut Marks<'_>,
    mut start: usize,
    column: usize,
    key: &str,
) -> Option<usize> {
    'lines: while deeper(bytes, start, column) || other_key_at(bytes, start, column, key) {
        while let Some(at) = marks.next() {
            match mark::<JSON>(bytes, at) {
                (BREAK, next) => {
                    start = next;
                    continue 'lines;
                }
                (REFUSED, _) => return None,
                (class, next) if class & (OPENER | BAR | CLOSED) != 0 => {
                    if class & (BAR | CLOSED) == 0
                        && let Some(after) = closed_at_once::<JSON>(bytes, marks, next)
                    {
                        start = after;
                        continue 'lines;
                    }
                    // the line is read from its start, this mark included
                    marks.restart_at(start);
                    return Some(start);
                }
                (_, next) => marks.skip_to(next),
            }
        }
        return Some(bytes.len() + 1);
    }
    Some(start)
}

/// Where the next line starts, when the line's first opener (the text after it at `next`) is
/// closed before anything else is marked, with the line's break right after: `""`,
/// `{}`, `[]`, or a quoted scalar with no escape, quote or other opener inside. Nothing on such
/// a line runs on to the next (most lines of `toYaml` output that hold an opener: an empty
/// string or map after a key). `None` leaves the line to be read; the marks are then past where
/// it stopped.
fn closed_at_once<const JSON: bool>(bytes: &[u8], marks: &mut Marks<'_>, next: usize) -> Option<usize> {
    let open = *bytes.get(next.checked_sub(1)?)?;
    let closed = match open {
        b'{' | b'[' => {
            let close = if open == b'{' { b'}' } else { b']' };
            (*bytes.get(next)? == close).then_some(next + 1)?
        }
        b'"' | b'\'' => {
            marks.skip_to(next);
            let (class, after) = mark::<JSON>(bytes, marks.next()?);
            (class & OPENER != 0 && *bytes.get(after - 1)? == open).then_some(after)?
        }
        _ => return None,
    };
    marks.skip_to(closed);
    let at = marks.next()?;
    match mark::<JSON>(bytes, at) {
        (BREAK, line) if at == closed => Some(line),
        _ => None,
    }
}

/// Whether the line at `start` has more than `column` spaces before anything else.
fn deeper(bytes: &[u8], start: usize, column: usize) -> bool {
    bytes
        .get(start..=start + column)
        .is_some_and(|indent| indent.iter().all(|&b| b == b' '))
}

/// Whether the line at `start` holds [`other_key`] than `key` at `column`.
fn other_key_at(bytes: &[u8], start: usize, column: usize, key: &str) -> bool {
    bytes
        .get(start..start + column)
        .is_some_and(|indent| indent.iter().all(|&b| b == b' '))
        && other_key(bytes.get(start + column..).unwrap_or_default(), key)
}

/// A line's text with the escapes [`mark`] lets through decoded (each stands for the byte
/// after its backslash), into `out`. The line is ASCII: other bytes are refused.
fn unescape(json: &str, out: &mut String) {
    out.clear();
    let mut rest = json;
    while let Some(at) = rest.bytes().position(|b| b == b'\\') {
        out.push_str(rest.get(..at).unwrap_or_default());
        out.push_str(rest.get(at + 1..at + 2).unwrap_or_default());
        rest = rest.get(at + 2..).unwrap_or_default();
    }
    out.push_str(rest);
}

/// The class of the marked byte at `at` and where the text after it starts. `JSON`: the text
/// is a JSON string's, escapes left in: `\n` is the line break, `\"`, `\\` and `\/` stand for
/// their second byte, any other escape is refused, and a quote closes the string.
fn mark<const JSON: bool>(bytes: &[u8], at: usize) -> (u8, usize) {
    let Some(&b) = bytes.get(at) else {
        return (REFUSED, at + 1);
    };
    if JSON && b == b'\\' {
        let class = match bytes.get(at + 1) {
            Some(b'n') => BREAK,
            Some(b'"') => OPENER | ESCAPED,
            Some(b'\\' | b'/') => ESCAPED,
            _ => REFUSED,
        };
        return (class, at + 2);
    }
    if JSON && b == b'"' {
        return (CLOSED, at + 1);
    }
    (CLASS.get(usize::from(b)).copied().unwrap_or(REFUSED), at + 1)
}

/// Byte classes, one table lookup per byte of the document.
const BREAK: u8 = 1;
/// A quote or a flow bracket: what may open a node running over several lines.
const OPENER: u8 = 2;
/// What may start a block scalar.
const BAR: u8 = 4;
/// `\r` and (outside ASCII) NEL, LS and PS are line breaks to libyaml, and a tab after the
/// indentation is a separator: each could move a key onto a line this reader does not see.
/// Other control bytes are not YAML at all.
const REFUSED: u8 = 8;
/// An escape of a JSON string (`\"`, `\\`, `\/`), decoded before the line is read.
const ESCAPED: u8 = 16;
/// The quote that closes a JSON string: the text ends there.
const CLOSED: u8 = 32;

pub(super) static CLASS: [u8; 256] = classes();

#[expect(
    clippy::indexing_slicing,
    reason = "b < 256 by the loop bound, and a const fn cannot call get_mut"
)]
const fn classes() -> [u8; 256] {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b'\n' => BREAK,
            b'"' | b'\'' | b'[' | b'{' => OPENER,
            b'|' | b'>' => BAR,
            0..0x20 | 0x7f.. => REFUSED,
            _ => 0,
        };
        b += 1;
    }
    table
}

/// Where the reader is relative to the top key's block.
#[derive(Clone, Copy, PartialEq)]
enum Block {
    Before,
    /// Inside it; the column of its keys once its first line is seen.
    Inside(Option<usize>),
    After,
}

/// What was found for the top key and its child.
enum Found {
    Absent,
    /// `top:` with a scalar on its line (`~`, `null`, `{}`).
    TopScalar(Value),
    /// `top:` with a block under it; `key`'s node once settled.
    Block(Option<Value>),
    /// `key:` seen; its node is settled by the next line with content, which must not continue it.
    Pending(Option<Value>),
}

struct Skim<'k> {
    top: &'k str,
    key: &'k str,
    /// Whether the root is known to be a mapping (a key was split at column 0); until then a
    /// line with content must be at column 0.
    mapping: bool,
    block: Block,
    value: Found,
    /// Inside a `|` or `>` block scalar: the column its content must be deeper than.
    literal: Option<usize>,
}

impl Skim<'_> {
    /// Whether a line with content at `indent` can matter: not one under the top key's block
    /// or deeper than a block scalar's key.
    fn reads(&self, indent: usize) -> bool {
        indent == 0 || !(self.block == Block::After || self.literal.is_some_and(|column| indent > column))
    }

    /// The column of the keys this reader looks for next, and the key sought there: a line
    /// with no byte that could open a node (nor start a block scalar) changes nothing when it
    /// is deeper than that column, or holds another key at it ([`other_key`]). Such lines lie
    /// before or after the top key's block, or in it, with no block scalar and no `key:` open
    /// above them. [`Skim::line`] would read them and leave everything as it was; this spares
    /// the reading. `None` while each line must be read.
    fn passes_over(&self) -> Option<(usize, &str)> {
        let settled = self.mapping && self.literal.is_none() && !self.value_pending();
        match self.block {
            _ if !settled => None,
            Block::Before | Block::After => Some((0, self.top)),
            Block::Inside(column) => Some((column?, self.key)),
        }
    }

    /// One line with content: `body` without its indentation and trailing spaces, `classes`
    /// the classes of its bytes.
    fn line(&mut self, indent: usize, body: &str, classes: u8) -> Option<()> {
        // deeper lines of a block scalar are its content, any text at all ([`Skim::reads`])
        self.literal = None;
        if body.starts_with('#') {
            // a comment deeper than a pending scalar: leave the question to libyaml
            let deeper =
                matches!((self.value_pending(), self.block), (true, Block::Inside(Some(c))) if indent > c);
            return if deeper { None } else { Some(()) };
        }
        if !self.mapping && indent != 0 {
            return None; // a root that is not a block mapping at column 0
        }
        self.settle(indent, body)?;
        if indent == 0 {
            self.end_block();
        }
        if self.block != Block::After {
            if classes & OPENER != 0 && !one_line(body) {
                return None;
            }
            if classes & BAR != 0 {
                self.literal = literal_column(indent, body);
            }
        }
        if indent == 0 {
            self.top_level(body)
        } else {
            self.child(indent, body)
        }
    }

    fn value_pending(&self) -> bool {
        matches!(self.value, Found::Pending(_))
    }

    /// A pending `key:` ends at a line no deeper than its own: then its node is known.
    fn settle(&mut self, indent: usize, body: &str) -> Option<()> {
        let Found::Pending(node) = &mut self.value else {
            return Some(());
        };
        let Block::Inside(Some(column)) = self.block else {
            return None;
        };
        // deeper: a block under `key:` or the continuation of its scalar; at its column, a
        // dash: a sequence under `key:`
        if indent > column || (indent == column && node.is_none() && is_dash(body)) {
            return None;
        }
        self.value = Found::Block(Some(node.take().unwrap_or(Value::Null)));
        Some(())
    }

    fn top_level(&mut self, body: &str) -> Option<()> {
        // the first line decides that the root is a mapping
        if self.mapping && other_key(body.as_bytes(), self.top) {
            return Some(());
        }
        let (key, rest) = split_key(body)?;
        self.mapping = true;
        if key != self.top {
            return Some(());
        }
        if !matches!(self.value, Found::Absent) {
            return None; // a second `top:`
        }
        if rest.is_empty() {
            self.block = Block::Inside(None);
            self.value = Found::Block(None);
        } else {
            let node = match scalar(rest)? {
                Scalar::Null => Value::Null,
                Scalar::EmptyMapping => Value::Object(Map::new()),
                _ => return None,
            };
            self.block = Block::After;
            self.value = Found::TopScalar(node);
        }
        Some(())
    }

    fn child(&mut self, indent: usize, body: &str) -> Option<()> {
        let Block::Inside(column) = self.block else {
            return Some(());
        };
        let (column, first) = match column {
            Some(c) => (c, false),
            None if is_dash(body) => return None, // `top` holds a sequence
            None => {
                self.block = Block::Inside(Some(indent));
                (indent, true)
            }
        };
        if indent != column || is_dash(body) {
            // shallower is not YAML; deeper or a dash at the column belongs to a sibling
            return (indent >= column).then_some(());
        }
        // the first line decides that `top` holds a mapping
        if !first && other_key(body.as_bytes(), self.key) {
            return Some(());
        }
        let (key, rest) = split_key(body)?;
        if key != self.key {
            return Some(());
        }
        if !matches!(self.value, Found::Block(None)) {
            return None; // a second `key:`
        }
        let node = if rest.is_empty() {
            None
        } else {
            Some(scalar(rest)?.into_node().into_value())
        };
        self.value = Found::Pending(node);
        Some(())
    }

    /// The top key's block ends at the next top-level key (or the end): with no line in it,
    /// `top:` is null.
    fn end_block(&mut self) {
        if let Block::Inside(column) = self.block {
            if column.is_none() {
                self.value = Found::TopScalar(Value::Null);
            }
            self.block = Block::After;
        }
    }

    fn finish(mut self) -> Option<Value> {
        if !self.mapping {
            return None; // no line with content
        }
        self.end_block();
        let under_top = match self.value {
            Found::Absent => return Some(Value::Object(Map::new())),
            Found::TopScalar(node) => node,
            Found::Block(None) => Value::Object(Map::new()),
            Found::Block(Some(node)) | Found::Pending(Some(node)) => single(self.key, node),
            Found::Pending(None) => single(self.key, Value::Null),
        };
        Some(single(self.top, under_top))
    }
}

fn single(key: &str, node: Value) -> Value {
    Value::Object(Map::from_iter([(key.to_string(), node)]))
}

/// The column a block scalar started on this line must be deeper than: its key's, or the
/// dash's for `- |`.
fn literal_column(indent: usize, body: &str) -> Option<usize> {
    let (column, node) = if is_dash(body) {
        after_dash(indent, body)?
    } else {
        (indent, body)
    };
    if node.starts_with(['|', '>']) {
        return Some(indent);
    }
    let (_, rest) = split_key(node)?;
    rest.starts_with(['|', '>']).then_some(column)
}

/// A line that starts with a letter or digit is a plain key (or no YAML at all), and it is not
/// `key` unless it starts with it: no need to split it.
fn other_key(body: &[u8], key: &str) -> bool {
    let (Some(&first), key) = (body.first(), key.as_bytes()) else {
        return false;
    };
    // the first bytes alone tell most keys apart, without a call to compare the rest
    first.is_ascii_alphanumeric() && (key.first() != Some(&first) || !body.starts_with(key))
}

/// Whether a line is whole nodes the subset reader takes on one line (so nothing it opens runs
/// on): a key with a one-line scalar, nothing or a block-scalar header after it, a comment, or
/// such a node after a dash.
fn one_line(body: &str) -> bool {
    let body = match is_dash(body).then(|| after_dash(0, body)).flatten() {
        Some((_, item)) => item,
        None => body,
    };
    if body.is_empty() || body.starts_with('#') {
        return true;
    }
    // most such lines in `toYaml` output: an empty string, mapping or list after a word
    if let Some((_, "\"\"" | "{}" | "[]")) = split_word_key(body) {
        return true;
    }
    match split_key(body) {
        Some((_, rest)) => rest.is_empty() || rest.starts_with(['|', '>']) || scalar(rest).is_some(),
        None => !is_dash(body) && scalar(body).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::{skim_along, skim_along_json};
    use rstest::rstest;
    use serde_json::json;

    /// Escapes a JSON string may hold: the three that stand for plain bytes are read, a line
    /// break ends the line, and every other (a tab, a carriage return, a code point) is left
    /// to the whole read, as the bytes they stand for are by the plain skim.
    #[rstest]
    #[case::line_breaks(r#"a: 1\nproxy:\n  opaquePorts: \"25,587\"\n"#, Some(json!({"proxy": {"opaquePorts": "25,587"}})))]
    #[case::escaped_backslash_and_slash(r#"a: x\\y\/z\nproxy:\n  opaquePorts: 3306\n"#, Some(json!({"proxy": {"opaquePorts": 3306}})))]
    #[case::backslash_n_is_no_break(r#"a: x\\nproxy: 1"#, Some(json!({})))]
    #[case::tab(r#"a:\t1\nproxy: ~"#, None)]
    #[case::carriage_return(r#"a: 1\r\nproxy: ~"#, None)]
    #[case::code_point(r#"a: \u0031\nproxy: ~"#, None)]
    #[case::lone_backslash_at_the_end(r#"proxy: ~\n\"#, None)]
    fn json_escapes(#[case] json: &str, #[case] expected: Option<serde_json::Value>) {
        assert_eq!(skim_along_json(json, "proxy", "opaquePorts"), expected);
        if let Ok(text) = serde_json::from_str::<String>(&format!("\"{json}\"")) {
            let plain = skim_along(&text, "proxy", "opaquePorts");
            assert!(expected.is_none() || plain == expected, "{plain:?}");
        }
    }

    /// Over an answer from the string's first byte on, the skim ends at the quote that no
    /// backslash escapes, and answers only when one closes the string.
    #[rstest]
    #[case::closed(r#"proxy:\n  opaquePorts: \"25\"\n", "proxy": 1}"#, Some((json!({"proxy": {"opaquePorts": "25"}}), 31)))]
    #[case::after_an_escaped_backslash(r#"a: x\\", "b": "proxy: ~"#, Some((json!({}), 6)))]
    #[case::not_closed(r#"proxy:\n  opaquePorts: 25\n"#, None)]
    #[case::closed_inside_a_line(r#"proxy:\n  opaquePorts: 25", "proxy"#, Some((json!({"proxy": {"opaquePorts": 25}}), 25)))]
    fn json_string_ends_at_its_closing_quote(
        #[case] answer: &str,
        #[case] expected: Option<(serde_json::Value, usize)>,
    ) {
        let got = super::skim_json_string(answer, "proxy", "opaquePorts");
        assert_eq!(got, expected);
        if let Some((_, end)) = got {
            assert_eq!(answer.as_bytes()[end], b'"');
            let doc = skim_along_json(&answer[..end], "proxy", "opaquePorts");
            assert_eq!(doc, got.map(|(doc, _)| doc));
        }
    }
}
