//! Finds the line of a key path (`proxy.ports.admin`, `spec.containers[1]`) in the text the user
//! typed, so errors that name a field can point at it. Block-style YAML is followed by
//! indentation; JSON (text starting with `{`) by the keys' order of appearance. A hint only:
//! `None` when the path cannot be followed.

/// The 1-based line of `path` in `text`.
pub fn key_line(text: &str, path: &str) -> Option<usize> {
    let segments = segments(path);
    if segments.is_empty() {
        return None;
    }
    if text.trim_start().starts_with('{') {
        json_line(text, &segments)
    } else {
        yaml_line(text, &segments)
    }
}

/// `a.b[2].c` as `[("a", None), ("b", Some(2)), ("c", None)]`.
fn segments(path: &str) -> Vec<(&str, Option<usize>)> {
    path.split('.')
        .filter(|s| !s.is_empty())
        .map(|s| match s.split_once('[') {
            Some((key, rest)) => (key, rest.trim_end_matches(']').parse().ok()),
            None => (s, None),
        })
        .collect()
}

struct Line<'a> {
    number: usize,
    indent: usize,
    content: &'a str,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    text.lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let content = raw.trim_start();
            (!content.is_empty() && !content.starts_with('#')).then(|| Line {
                number: i + 1,
                indent: raw.len() - content.len(),
                content,
            })
        })
        .collect()
}

/// `content` declares `key` (plain, single- or double-quoted) as a mapping key.
fn declares(content: &str, key: &str) -> bool {
    let rest = [("", ""), ("\"", "\""), ("'", "'")]
        .iter()
        .find_map(|(open, close)| {
            content
                .strip_prefix(open)
                .and_then(|c| c.strip_prefix(key))
                .and_then(|c| c.strip_prefix(close))
        });
    rest.is_some_and(|r| r.trim_start().starts_with(':'))
}

/// Splits `- key: v` into the indentation of `key` and `key: v`.
fn unlist<'a>(line: &Line<'a>) -> (usize, &'a str) {
    let mut indent = line.indent;
    let mut content = line.content;
    while let Some(rest) = content.strip_prefix('-') {
        if !(rest.is_empty() || rest.starts_with(' ')) {
            break;
        }
        let trimmed = rest.trim_start();
        indent += content.len() - trimmed.len();
        content = trimmed;
    }
    (indent, content)
}

fn yaml_line(text: &str, segments: &[(&str, Option<usize>)]) -> Option<usize> {
    let lines = lines(text);
    // The search starts at `start`; the block's lines are indented more than `parent`, except
    // a sequence item's own `- key:` line (`own`), where the item's first key sits.
    let mut start = 0;
    let mut own = false;
    let mut parent: Option<usize> = None;
    let mut found = None;
    for (key, index) in segments {
        let mut hit = None;
        for (i, line) in lines.iter().enumerate().skip(start) {
            let inside = parent.is_none_or(|p| line.indent > p || (own && i == start));
            if !inside {
                return None;
            }
            let (indent, content) = unlist(line);
            if declares(content, key) {
                hit = Some((i, indent));
                break;
            }
        }
        let (i, indent) = hit?;
        found = Some(lines[i].number);
        parent = Some(indent);
        start = i + 1;
        own = false;
        if let Some(n) = index {
            // The n-th `-` item of the block sequence under the key.
            let first = lines.get(start)?;
            if !first.content.starts_with('-') || first.indent < indent {
                return None;
            }
            let item_indent = first.indent;
            let (j, item) = lines
                .iter()
                .enumerate()
                .skip(start)
                .take_while(|(_, l)| {
                    l.indent > item_indent || (l.indent == item_indent && l.content.starts_with('-'))
                })
                .filter(|(_, l)| l.indent == item_indent)
                .nth(*n)?;
            found = Some(item.number);
            parent = Some(item_indent);
            start = j;
            own = true;
        }
    }
    found
}

fn json_line(text: &str, segments: &[(&str, Option<usize>)]) -> Option<usize> {
    let mut offset = 0;
    for (key, _) in segments {
        let needle = format!("\"{key}\"");
        let mut from = offset;
        loop {
            let at = from + text[from..].find(&needle)?;
            let after = at + needle.len();
            if text[after..].trim_start().starts_with(':') {
                offset = after;
                break;
            }
            from = after;
        }
    }
    Some(text[..offset].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::key_line;

    const YAML: &str = "\
# settings
proxy:
  image:
    name: x
  ports:
    admin: 0
    'control': 1
clusterNetworks: \"10.0.0.0/33\"
";

    #[test]
    fn yaml_keys() {
        assert_eq!(key_line(YAML, "proxy"), Some(2));
        assert_eq!(key_line(YAML, "proxy.ports.admin"), Some(6));
        assert_eq!(key_line(YAML, "proxy.ports.control"), Some(7));
        assert_eq!(key_line(YAML, "clusterNetworks"), Some(8));
        assert_eq!(key_line(YAML, "proxy.ports.missing"), None);
        // `name` exists, but not under `ports`.
        assert_eq!(key_line(YAML, "proxy.ports.name"), None);
    }

    #[test]
    fn yaml_sequences() {
        let text = "\
spec:
  initContainers:
  - name: a
  containers:
  - name: one
    image: x
  - name: two
    env:
    - name: E
  - image: three
";
        assert_eq!(key_line(text, "spec.containers[0]"), Some(5));
        assert_eq!(key_line(text, "spec.containers[1]"), Some(7));
        assert_eq!(key_line(text, "spec.containers[2]"), Some(10));
        assert_eq!(key_line(text, "spec.containers[1].env"), Some(8));
        assert_eq!(key_line(text, "spec.containers[2].image"), Some(10));
        assert_eq!(key_line(text, "spec.containers[3]"), None);
    }

    #[test]
    fn json_keys() {
        let text = "{\n  \"proxy\": {\n    \"ports\": {\"admin\": 0}\n  }\n}";
        assert_eq!(key_line(text, "proxy.ports.admin"), Some(3));
        assert_eq!(key_line(text, "nothing"), None);
    }
}
