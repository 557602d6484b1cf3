//! Manifests as `kubectl` reads them, kept byte for byte: inputs (files, directories, stdin),
//! split into YAML documents or JSON values with the text between them, and the objects of a
//! document (itself, or the items of a `List` or array). Nothing here knows a policy; `inject`
//! rewrites only the documents the module changed and copies every other byte.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

/// An input that cannot be read.
#[derive(Debug, Error)]
#[error("cannot read {path}: {source}")]
pub struct ReadError {
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

/// One input text and where it came from (a path, or `<stdin>`).
#[derive(Debug, Clone)]
pub struct Input {
    pub origin: String,
    pub text: String,
}

impl Input {
    pub fn new(origin: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            origin: origin.into(),
            text: text.into(),
        }
    }
}

/// Reads the named inputs: `-` is stdin, a directory is read recursively (files ending in
/// `.yaml`, `.yml` or `.json`, in path order), any other path is read as it is.
pub fn read_inputs(paths: &[String]) -> Result<Vec<Input>, ReadError> {
    let mut inputs = Vec::new();
    for p in paths {
        if p == "-" {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|source| ReadError {
                path: "<stdin>".into(),
                source,
            })?;
            inputs.push(Input::new("<stdin>", text));
            continue;
        }
        let path = Path::new(p);
        if path.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files)?;
            files.sort();
            for f in files {
                inputs.push(read_file(&f)?);
            }
        } else {
            inputs.push(read_file(path)?);
        }
    }
    Ok(inputs)
}

fn read_file(path: &Path) -> Result<Input, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadError {
        path: path.display().to_string(),
        source,
    })?;
    Ok(Input::new(path.display().to_string(), text))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ReadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ReadError {
        path: dir.display().to_string(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| ReadError {
            path: dir.display().to_string(),
            source,
        })?;
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(path);
        }
    }
    Ok(())
}

// === splitting a stream into documents, keeping their text ===

/// A piece of an input: separator text (copied verbatim) or a document.
#[derive(Debug, Clone)]
pub enum Piece {
    Separator(Range<usize>),
    Document(Document),
}

#[derive(Debug, Clone)]
pub struct Document {
    pub range: Range<usize>,
    /// Values parsed from the text (none for an empty or comment-only document).
    pub values: Vec<Value>,
}

#[derive(Debug)]
pub struct Parsed {
    pub input: Input,
    pub json: bool,
    pub pieces: Vec<Piece>,
}

fn is_json(text: &str) -> bool {
    matches!(
        text.trim_start_matches('\u{feff}').trim_start().chars().next(),
        Some('{' | '[')
    )
}

/// A line that is a YAML document marker (`---` or `...` followed by nothing, blanks or a
/// comment). At column 0 such a line can never be document content.
pub fn marker(line: &str) -> Option<(&'static str, &str)> {
    for m in ["---", "..."] {
        if let Some(rest) = line.strip_prefix(m)
            && (rest.is_empty() || rest.starts_with([' ', '\t']))
        {
            return Some((m, rest));
        }
    }
    None
}

fn split_yaml(input: &Input) -> Result<Vec<Piece>, Vec<String>> {
    let text = input.text.as_str();
    let mut pieces = Vec::new();
    let mut errors = Vec::new();
    let mut start = 0;
    let mut start_line = 1;
    let mut pos = 0;
    let mut push = |range: Range<usize>, first_line: usize, pieces: &mut Vec<Piece>| {
        if range.is_empty() {
            return;
        }
        match parse_yaml_chunk(&text[range.clone()]) {
            Ok(values) => pieces.push(Piece::Document(Document { range, values })),
            Err((line, column, message)) => errors.push(format!(
                "{}:{}:{}: cannot parse YAML: {}",
                input.origin,
                first_line + line - 1,
                column,
                shift_lines(&message, first_line - 1)
            )),
        }
    };
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let line_no = index + 1;
        let bare = line.trim_end_matches(['\n', '\r']);
        if let Some((m, rest)) = marker(bare) {
            push(start..pos, start_line, &mut pieces);
            let rest = rest.trim();
            if m == "---" && !rest.is_empty() && !rest.starts_with('#') {
                // `--- value`: the marker line belongs to the document
                start = pos;
                start_line = line_no;
            } else {
                pieces.push(Piece::Separator(pos..pos + line.len()));
                start = pos + line.len();
                start_line = line_no + 1;
            }
        }
        pos += line.len();
    }
    push(start..text.len(), start_line, &mut pieces);
    if errors.is_empty() {
        Ok(pieces)
    } else {
        Err(errors)
    }
}

/// Parses one document's text; errors carry the line and column within the chunk, and a message
/// whose own `line N` mentions are still relative to the chunk.
fn parse_yaml_chunk(chunk: &str) -> Result<Vec<Value>, (usize, usize, String)> {
    let mut values = Vec::new();
    for de in serde_yaml_ng::Deserializer::from_str(chunk) {
        match Value::deserialize(de) {
            Ok(Value::Null) => {}
            Ok(v) => values.push(v),
            Err(e) => {
                let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
                let message = e.to_string();
                let message = message
                    .strip_suffix(&format!(" at line {line} column {column}"))
                    .map(str::to_owned)
                    .unwrap_or_else(|| message.replacen(&format!(" at line {line} column {column}"), "", 1));
                return Err((line, column, message));
            }
        }
    }
    Ok(values)
}

/// Adds `offset` to every `line N` in a parser message.
fn shift_lines(message: &str, offset: usize) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let (head, tail) = rest.split_at(at + 5);
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        match tail[..digits].parse::<usize>() {
            Ok(n) if digits > 0 => out.push_str(&(n + offset).to_string()),
            _ => out.push_str(&tail[..digits]),
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

fn split_json(input: &Input) -> Result<Vec<Piece>, Vec<String>> {
    let text = input.text.as_str();
    let mut pieces = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut prev = 0;
    loop {
        let start = prev + (text[prev..].len() - text[prev..].trim_start().len());
        match stream.next() {
            None => break,
            Some(Ok(value)) => {
                let end = stream.byte_offset();
                pieces.push(Piece::Separator(prev..start));
                pieces.push(Piece::Document(Document {
                    range: start..end,
                    values: vec![value],
                }));
                prev = end;
            }
            Some(Err(e)) => {
                let mut message = e.to_string();
                if let Some(at) = message.rfind(" at line ") {
                    message.truncate(at);
                }
                return Err(vec![format!(
                    "{}:{}:{}: cannot parse JSON: {message}",
                    input.origin,
                    e.line(),
                    e.column()
                )]);
            }
        }
    }
    pieces.push(Piece::Separator(prev..text.len()));
    Ok(pieces)
}

pub fn parse_input(input: Input) -> Result<Parsed, Vec<String>> {
    let json = is_json(&input.text);
    let pieces = if json {
        split_json(&input)?
    } else {
        split_yaml(&input)?
    };
    Ok(Parsed { input, json, pieces })
}

// === objects ===

pub fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

pub fn is_list(v: &Value) -> bool {
    str_at(v, "/kind").is_some_and(|k| k.ends_with("List")) && v.get("items").is_some_and(Value::is_array)
}

/// Calls `f` on every object of a document value: itself, or the items of a `List` / array.
pub fn for_each_object(v: &Value, f: &mut impl FnMut(&Value)) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| for_each_object(i, f)),
        _ if is_list(v) => {
            if let Some(Value::Array(items)) = v.get("items") {
                items.iter().for_each(|i| for_each_object(i, f));
            }
        }
        Value::Object(_) => f(v),
        _ => {}
    }
}

// === output ===

/// Between inputs, and before every JSON document: ends the output so far with a newline and a
/// `---` marker, unless the next text starts with its own marker.
pub fn separate(yaml: &mut String, next_starts_with_marker: bool) {
    if yaml.is_empty() {
        return;
    }
    if !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    if !next_starts_with_marker && !yaml.ends_with("---\n") {
        yaml.push_str("---\n");
    }
}

/// The comment and blank lines before a document's content, kept when it is rewritten.
pub fn leading_comments(text: &str) -> String {
    text.split_inclusive('\n')
        .take_while(|l| {
            let t = l.trim();
            t.is_empty() || t.starts_with('#')
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Vec<String> {
        let input = Input::new("t.yaml", text);
        split_yaml(&input)
            .unwrap()
            .into_iter()
            .map(|p| match p {
                Piece::Separator(r) => format!("S{:?}", &text[r]),
                Piece::Document(d) => format!("D{}{:?}", d.values.len(), &text[d.range]),
            })
            .collect()
    }

    #[test]
    fn splits_yaml_keeping_every_byte() {
        let text = "# head\na: 1\n---\nb: 2\n--- # c\n\n---\n...\nc: 3";
        let p = pieces(text);
        assert_eq!(
            p,
            vec![
                r##"D1"# head\na: 1\n""##,
                r#"S"---\n""#,
                r#"D1"b: 2\n""#,
                r##"S"--- # c\n""##,
                r#"D0"\n""#,
                r#"S"---\n""#,
                r#"S"...\n""#,
                r#"D1"c: 3""#,
            ]
        );
        assert_eq!(pieces("--- {a: 1}\n"), vec![r#"D1"--- {a: 1}\n""#]);
        // `----` and `---x` are content, not markers
        assert_eq!(pieces("a: |\n  x\n---x: 1\n").len(), 1);
    }

    #[test]
    fn parse_errors_name_file_and_line() {
        let input = Input::new("bad.yaml", "a: 1\n---\nb: 1\nc: [\n");
        let err = split_yaml(&input).unwrap_err();
        assert_eq!(err.len(), 1);
        assert!(
            err[0].starts_with("bad.yaml:4:") || err[0].starts_with("bad.yaml:5:"),
            "{err:?}"
        );
        assert_eq!(
            shift_lines("x at line 3 column 2, y at line 1", 10),
            "x at line 13 column 2, y at line 11"
        );
        let input = Input::new("x.json", "{\"a\": 1}\n{\"b\": }");
        let err = split_json(&input).unwrap_err();
        assert!(err[0].starts_with("x.json:2:"), "{err:?}");
    }

    #[test]
    fn json_streams_and_lists() {
        let input = Input::new(
            "x.json",
            " {\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\"}]}\n[1]\n",
        );
        let p = split_json(&input).unwrap();
        let docs: Vec<&Document> = p
            .iter()
            .filter_map(|p| match p {
                Piece::Document(d) => Some(d),
                _ => None,
            })
            .collect();
        assert_eq!(docs.len(), 2);
        assert!(is_list(&docs[0].values[0]));
        let mut n = 0;
        for_each_object(&docs[0].values[0], &mut |_| n += 1);
        assert_eq!(n, 1);
    }
}
