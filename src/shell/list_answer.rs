//! A ConfigMap List answer read in one pass for what the control plane's reads keep of each item:
//! `metadata.name` and `data`. serde_json spends about a hundred instructions on each escape of a
//! string, even one it skips, and `linkerd-config`'s 8 KB of values hold an escape every twenty
//! bytes (its newlines and quotes): reading that answer was a fifth of a typical admission. Here
//! strings are scanned eight bytes at a time and a common escape costs a few instructions.
//!
//! It answers only where it is sure: a List of objects whose `data` is null or a map of strings,
//! in JSON serde_json reads the same way. Anything else (a `\u` escape in a key, a nesting deeper
//! than serde_json's limit allows, a shape the mask would keep differently, any text serde_json
//! would refuse) is `None`, and [`super::masked::items`] reads the answer instead.

use crate::word;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The items as [`super::masked::items`] reads them with the mask `data`, or `None` when unsure.
pub(crate) fn config_map_items(text: &str) -> Option<Vec<Value>> {
    let mut s = Scanner {
        text,
        at: 0,
        depth: 0,
    };
    let mut items = None;
    // the last `items` counts, as in a JSON tree
    s.object(|s, key| match &*key {
        "items" => {
            items = Some(s.items()?);
            Some(())
        }
        _ => s.skip(),
    })?;
    s.space();
    (s.at == text.len()).then_some(items).flatten()
}

/// Below serde_json's recursion limit (128), so a document this reader takes, serde_json takes.
const MAX_DEPTH: usize = 64;

struct Scanner<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, consumed.
    fn next(&mut self) -> Option<u8> {
        self.space();
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// An object, `each` reading every value (after its key and colon).
    fn object(&mut self, mut each: impl FnMut(&mut Self, Cow<'a, str>) -> Option<()>) -> Option<()> {
        self.open(b'{')?;
        self.space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return self.close();
        }
        loop {
            if self.next()? != b'"' {
                return None;
            }
            let key = self.string()?;
            if self.next()? != b':' {
                return None;
            }
            self.space();
            each(self, key)?;
            match self.next()? {
                b',' => {}
                b'}' => return self.close(),
                _ => return None,
            }
        }
    }

    /// An array, `each` reading every element.
    fn array(&mut self, mut each: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.open(b'[')?;
        self.space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return self.close();
        }
        loop {
            self.space();
            each(self)?;
            match self.next()? {
                b',' => {}
                b']' => return self.close(),
                _ => return None,
            }
        }
    }

    fn open(&mut self, bracket: u8) -> Option<()> {
        if self.next()? != bracket || self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        Some(())
    }

    /// After the closing bracket.
    fn close(&mut self) -> Option<()> {
        self.depth -= 1;
        Some(())
    }

    /// The `items` array: objects, each kept as the mask keeps it.
    fn items(&mut self) -> Option<Vec<Value>> {
        let mut items = Vec::new();
        self.array(|s| {
            let mut kept = Map::new();
            s.object(|s, key| {
                let value = match &*key {
                    "data" => s.data()?,
                    "metadata" => s.metadata()?,
                    // a key the mask's paths name as a whole: left to the general reader
                    "metadata.name" => return None,
                    _ => return s.skip(),
                };
                kept.insert(key.into_owned(), value);
                Some(())
            })?;
            items.push(Value::Object(kept));
            Some(())
        })?;
        Some(items)
    }

    /// `data`: null, or a map of strings.
    fn data(&mut self) -> Option<Value> {
        if self.peek()? == b'n' {
            return self.literal("null").map(|()| Value::Null);
        }
        let mut data = Map::new();
        self.object(|s, key| {
            let value = s.string_value()?;
            data.insert(key.into_owned(), Value::String(value));
            Some(())
        })?;
        Some(Value::Object(data))
    }

    /// `metadata` with only its `name` kept (a string).
    fn metadata(&mut self) -> Option<Value> {
        let mut kept = Map::new();
        self.object(|s, key| match &*key {
            "name" => {
                let name = s.string_value()?;
                kept.insert("name".to_owned(), Value::String(name));
                Some(())
            }
            _ => s.skip(),
        })?;
        Some(Value::Object(kept))
    }

    fn string_value(&mut self) -> Option<String> {
        if self.next()? != b'"' {
            return None;
        }
        self.string().map(Cow::into_owned)
    }

    /// Any JSON value, checked and skipped.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(|s, _| s.skip()),
            b'[' => self.array(Self::skip),
            b'"' => {
                self.at += 1;
                self.skip_string()
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        let end = self.at + word.len();
        (self.text.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// JSON's number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits()?,
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digits()?;
        }
        Some(())
    }

    /// One digit or more.
    fn digits(&mut self) -> Option<()> {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        (self.at > start).then_some(())
    }

    /// The string whose opening quote was just read: borrowed unless it has escapes.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.at;
        let mut owned: Option<String> = None;
        loop {
            let at = next_special(self.text.as_bytes(), self.at)?;
            let segment = self.text.get(self.at..at)?;
            match self.text.as_bytes().get(at)? {
                b'"' => {
                    self.at = at + 1;
                    return Some(match owned {
                        None => Cow::Borrowed(segment),
                        Some(mut s) => {
                            s.push_str(segment);
                            Cow::Owned(s)
                        }
                    });
                }
                b'\\' => {
                    let escape = self.text.as_bytes().get(at + 1).copied()?;
                    let decoded = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        // code points and surrogate pairs: the whole string is serde_json's
                        b'u' => return self.string_by_serde(start),
                        _ => return None,
                    };
                    let s = owned.get_or_insert_with(|| String::with_capacity(2 * (at - start) + 16));
                    s.push_str(segment);
                    s.push(decoded);
                    self.at = at + 2;
                }
                // a control character, which JSON strings may not hold
                _ => return None,
            }
        }
    }

    /// The string opened before `start` (its quote at `start - 1`), read by serde_json.
    fn string_by_serde(&mut self, start: usize) -> Option<Cow<'a, str>> {
        self.at = start;
        self.skip_string()?;
        let quoted = self.text.get(start.checked_sub(1)?..self.at)?;
        serde_json::from_str(quoted).ok().map(Cow::Owned)
    }

    /// Skips the string whose opening quote was just read, checking its escapes as serde_json
    /// does when it skips one (a `\u` needs four hex digits, not a valid code point).
    fn skip_string(&mut self) -> Option<()> {
        let bytes = self.text.as_bytes();
        loop {
            let at = next_special(bytes, self.at)?;
            match bytes.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    return Some(());
                }
                b'\\' => {
                    let width = match bytes.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                        b'u' if bytes.get(at + 2..at + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                        _ => return None,
                    };
                    self.at = at + width;
                }
                _ => return None,
            }
        }
    }
}

/// Where the first quote, backslash or control character at or after `from` sits; eight bytes
/// tested at once.
fn next_special(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(x) = bytes.get(at..at + 8).and_then(word::of) {
        let flags = word::control(x) | word::equal(x, b'"') | word::equal(x, b'\\');
        if let Some(i) = word::lowest(flags) {
            return Some(at + i);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    rest.iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
        .map(|i| at + i)
}

#[cfg(test)]
mod tests;
