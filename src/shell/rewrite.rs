//! The mutated object written from the request's own bytes: the object's text copied as it
//! came, with an edit's additions written in at their places. No JSON tree of the pod is built
//! or written again; the engine parses the answer and diffs it with the request's object, so
//! the order of keys is not part of the answer (new keys follow a map's own).
//!
//! An edit is carried out as [`Edit::apply`] carries it out on the tree that a JSON reader makes
//! of the same text: a key on the way to an addition that is repeated is edited at each of its
//! places, so the last one, which the tree holds, is edited too.

use crate::admission::admit::Edit;
use crate::render::additions::{Addition, Item};
use crate::shell::json_out;
use crate::shell::scan::Scanner;

/// One addition, with what is left of its path from the object being written.
type Pending<'e> = (&'e [&'static str], &'e Addition);

/// Writes `text` (one JSON object, as the payload reader took it) with `edit` carried out into
/// `out`; `Some(false)` when the edit's path leads to no object (nothing is added, as on the
/// tree), `None` when the text is not what the reader took.
pub(crate) fn rewrite(text: &str, edit: &Edit, out: &mut Vec<u8>) -> Option<bool> {
    let pending: Vec<Pending<'_>> = edit.additions.0.iter().map(|(p, a)| (*p, a)).collect();
    let mut w = Rewriter {
        s: Scanner::new(text),
        text,
        out,
    };
    let placed = w.along(edit.path, &pending)?;
    w.s.end().then_some(placed)
}

/// What becomes of a member's value.
enum Member {
    Copied,
    Written,
    /// Left out (its key is one an addition sets).
    Dropped,
}

struct Rewriter<'t, 'o> {
    s: Scanner<'t>,
    text: &'t str,
    out: &'o mut Vec<u8>,
}

impl Rewriter<'_, '_> {
    /// A comma unless nothing was `written` before in this object or list, which now has.
    fn comma(&mut self, written: &mut bool) {
        if std::mem::replace(written, true) {
            self.out.push(b',');
        }
    }

    /// The value at the scanner, copied as it is.
    fn copy(&mut self) -> Option<()> {
        self.s.space();
        let start = self.s.at;
        self.s.skip()?;
        self.out
            .extend_from_slice(self.text.get(start..self.s.at)?.as_bytes());
        Some(())
    }

    /// Follows `path` (objects only, never made) to the template, and adds there.
    fn along(&mut self, path: &[&str], pending: &[Pending<'_>]) -> Option<bool> {
        self.s.space();
        if self.s.peek()? != b'{' {
            self.copy()?;
            return Some(false);
        }
        let Some((key, rest)) = path.split_first() else {
            self.object(pending)?;
            return Some(true);
        };
        let mut placed = false;
        self.members(|w, k| {
            if k != *key {
                return Some(Member::Copied);
            }
            placed |= w.along(rest, pending)?;
            Some(Member::Written)
        })?;
        Some(placed)
    }

    /// An object's members, keys as they came: `each` says what becomes of a member's value.
    /// Writes the braces and separators; says how many members were written.
    fn members(&mut self, mut each: impl FnMut(&mut Self, &str) -> Option<Member>) -> Option<usize> {
        self.s.open(b'{')?;
        self.out.push(b'{');
        let mut written = 0;
        self.s.space();
        if self.s.peek() == Some(b'}') {
            self.s.at += 1;
            self.out.push(b'}');
            self.s.close()?;
            return Some(written);
        }
        loop {
            self.s.space();
            let start = self.s.at;
            if self.s.next()? != b'"' {
                return None;
            }
            let key = self.s.string()?;
            let raw_key = self.text.get(start..self.s.at)?;
            if self.s.next()? != b':' {
                return None;
            }
            let mark = self.out.len();
            if written > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(raw_key.as_bytes());
            self.out.push(b':');
            match each(self, &key)? {
                Member::Copied => self.copy()?,
                Member::Written => {}
                Member::Dropped => {
                    self.s.space();
                    self.s.skip()?;
                    self.out.truncate(mark);
                }
            }
            if self.out.len() > mark {
                written += 1;
            }
            match self.s.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
        self.out.push(b'}');
        self.s.close()?;
        Some(written)
    }

    /// The object at the scanner with `pending` carried out in it.
    fn object(&mut self, pending: &[Pending<'_>]) -> Option<()> {
        let keys = first_keys(pending);
        let mut seen = vec![false; keys.len()];
        let written = self.members(|w, k| {
            let Some(i) = keys.iter().position(|x| *x == k) else {
                return Some(Member::Copied);
            };
            if let Some(seen) = seen.get_mut(i) {
                *seen = true;
            }
            w.value(&below(pending, k))?;
            Some(Member::Written)
        })?;
        // the closing brace is written; what was not there goes before it
        self.out.pop();
        let missing = keys
            .iter()
            .zip(&seen)
            .filter(|(_, seen)| !**seen)
            .map(|(k, _)| *k);
        self.fresh_members(missing, pending, written > 0)?;
        self.out.push(b'}');
        Some(())
    }

    /// `"key":<what pending makes under it>` members, comma-separated (`written`: members
    /// before them).
    fn fresh_members<'k>(
        &mut self,
        keys: impl Iterator<Item = &'k str>,
        pending: &[Pending<'_>],
        mut written: bool,
    ) -> Option<()> {
        for key in keys {
            self.comma(&mut written);
            json_out::append(self.out, key).ok()?;
            self.out.push(b':');
            self.fresh(&below(pending, key))?;
        }
        Some(())
    }

    /// The value at the scanner with `pending` (paths from it) carried out; made anew when it
    /// is not of the addition's shape, as the tree's edit replaces it.
    fn value(&mut self, pending: &[Pending<'_>]) -> Option<()> {
        self.s.space();
        let shape = self.s.peek()?;
        match pending {
            [([], Addition::Strings(set))] if shape == b'{' => {
                let kept = self.members(|_, k| {
                    Some(match set.contains_key(k) {
                        true => Member::Dropped,
                        false => Member::Copied,
                    })
                })?;
                self.out.pop();
                self.entries(set.iter(), kept > 0)?;
                self.out.push(b'}');
            }
            [([], Addition::List { first, last })] if shape == b'[' => self.list(first, last)?,
            // additions below this value, which is an object
            _ if shape == b'{' && !matches!(pending, [([], _)]) => self.object(pending)?,
            _ => {
                self.s.skip()?;
                self.fresh(pending)?;
            }
        }
        Some(())
    }

    /// A list with items put before and after its own.
    fn list(&mut self, first: &[Item], last: &[Item]) -> Option<()> {
        self.s.open(b'[')?;
        self.out.push(b'[');
        let mut any = false;
        for item in first {
            self.item(item, &mut any)?;
        }
        self.s.space();
        if self.s.peek() == Some(b']') {
            self.s.at += 1;
        } else {
            loop {
                self.comma(&mut any);
                self.copy()?;
                match self.s.next()? {
                    b',' => {}
                    b']' => break,
                    _ => return None,
                }
            }
        }
        self.s.close()?;
        for item in last {
            self.item(item, &mut any)?;
        }
        self.out.push(b']');
        Some(())
    }

    fn item(&mut self, item: &Item, any: &mut bool) -> Option<()> {
        self.comma(any);
        json_out::append(self.out, item).ok()
    }

    /// `"key":"value"` entries, comma-separated (`written`: members before them).
    fn entries<'k>(
        &mut self,
        entries: impl Iterator<Item = (&'k String, &'k String)>,
        mut written: bool,
    ) -> Option<()> {
        for (k, v) in entries {
            self.comma(&mut written);
            json_out::append(self.out, k).ok()?;
            self.out.push(b':');
            json_out::append(self.out, v).ok()?;
        }
        Some(())
    }

    /// What `pending` makes where nothing was.
    fn fresh(&mut self, pending: &[Pending<'_>]) -> Option<()> {
        match pending {
            [([], Addition::Strings(set))] => {
                self.out.push(b'{');
                self.entries(set.iter(), false)?;
                self.out.push(b'}');
            }
            [([], Addition::List { first, last })] => {
                self.out.push(b'[');
                let mut any = false;
                for item in first.iter().chain(last) {
                    self.item(item, &mut any)?;
                }
                self.out.push(b']');
            }
            _ => {
                self.out.push(b'{');
                self.fresh_members(first_keys(pending).into_iter(), pending, false)?;
                self.out.push(b'}');
            }
        }
        Some(())
    }
}

/// The distinct first keys of the pending paths, in order.
fn first_keys<'e>(pending: &[Pending<'e>]) -> Vec<&'e str> {
    let mut keys: Vec<&str> = Vec::new();
    for (path, _) in pending {
        if let Some(k) = path.first()
            && !keys.contains(k)
        {
            keys.push(k);
        }
    }
    keys
}

/// The additions under `key`, with their paths from it.
fn below<'e>(pending: &[Pending<'e>], key: &str) -> Vec<Pending<'e>> {
    pending
        .iter()
        .filter_map(|(path, a)| match path.split_first() {
            Some((k, rest)) if *k == key => Some((rest, *a)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::ProxyContainer;
    use crate::render::additions::{Additions, Path};
    use rstest::rstest;
    use serde_json::{Value, json};

    const POD: Path = &[];
    const TEMPLATE: Path = &["spec", "template"];

    fn edit(path: Path) -> Edit {
        let strings = |pairs: &[(&str, &str)]| {
            Addition::Strings(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let proxy = Item::Proxy(Box::new(ProxyContainer::blank()));
        Edit {
            path,
            additions: Additions(vec![
                (
                    &["metadata", "annotations"],
                    strings(&[("a", "1"), ("b\"q", "2")]),
                ),
                (&["metadata", "labels"], strings(&[])),
                (
                    &["spec", "initContainers"],
                    Addition::List {
                        first: vec![Item::Value(json!({"name": "init"})), proxy],
                        last: vec![],
                    },
                ),
                (
                    &["spec", "volumes"],
                    Addition::List {
                        first: vec![],
                        last: vec![Item::Value(json!({"name": "v"}))],
                    },
                ),
            ]),
        }
    }

    /// The rewritten text, read back, and the tree a JSON reader makes of the text with the
    /// edit applied (both `None` when the edit finds no place).
    fn both(text: &str, path: Path) -> (Option<Value>, Option<Value>) {
        let mut out = Vec::new();
        let placed = rewrite(text, &edit(path), &mut out).expect("a JSON object");
        let ours = placed.then(|| serde_json::from_slice::<Value>(&out).expect("JSON"));
        let mut tree: Value = serde_json::from_str(text).unwrap();
        let applied = edit(path).apply(&mut tree);
        (ours, applied.then_some(tree))
    }

    #[rstest]
    #[case::bare_pod(r#"{"spec": {}}"#, POD)]
    #[case::everything_there(
        r#"{"metadata": {"annotations": {"a": "0", "z": "9"}, "labels": {"l": "x"}, "name": "p"},
            "spec": {"initContainers": [{"name": "i"}], "volumes": [], "containers": [{"name": "c"}]}}"#,
        POD
    )]
    #[case::nulls_replaced(r#"{"metadata": null, "spec": {"initContainers": null, "volumes": 3}}"#, POD)]
    #[case::maps_not_objects(r#"{"metadata": {"annotations": [1], "labels": "x"}, "spec": {}}"#, POD)]
    #[case::only_set_keys(
        r#"{"metadata": {"annotations": {"a": "old", "b\"q": "old", "a": "again"}}, "spec": {}}"#,
        POD
    )]
    #[case::escaped_keys(
        r#"{"met\u0061data": {"annot\u0061tions": {"\u0061": "old"}}, "spec": {"volumes": [1]}}"#,
        POD
    )]
    #[case::repeated_path_keys(
        r#"{"metadata": {"labels": {"x": "1"}}, "spec": {"volumes": [1]}, "metadata": {}, "spec": {"volumes": [2, 3]}}"#,
        POD
    )]
    #[case::whitespace(" { \"spec\" : { \"volumes\" : [ 1 , { } ] } , \"x\" : [ ] } ", POD)]
    #[case::template(
        r#"{"kind": "Deployment", "spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "w"}},
            "spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "\n\"x\""}]}]}}}}"#,
        TEMPLATE
    )]
    #[case::no_template(r#"{"spec": {"template": null}}"#, TEMPLATE)]
    #[case::no_spec(r#"{"metadata": {}}"#, TEMPLATE)]
    #[case::empty_template(r#"{"spec": {"template": {}}}"#, TEMPLATE)]
    fn writes_what_the_tree_holds(#[case] text: &str, #[case] path: Path) {
        let (ours, tree) = both(text, path);
        assert_eq!(ours, tree);
    }

    #[test]
    fn copies_the_rest_as_it_came() {
        let text = r#"{"spec":{"n":1.0e+2,"s":"\u00e9\/","volumes":[]},"metadata":{"annotations":{}}}"#;
        let mut out = Vec::new();
        let edit = Edit {
            path: POD,
            additions: Additions::annotations([("k".to_string(), "v".to_string())].into()),
        };
        assert_eq!(rewrite(text, &edit, &mut out), Some(true));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"spec":{"n":1.0e+2,"s":"\u00e9\/","volumes":[]},"metadata":{"annotations":{"k":"v"}}}"#
        );
    }

    #[test]
    fn refuses_text_that_is_not_one_object() {
        for text in [
            r#"{"spec": {}"#,
            r#"{"spec": {}} x"#,
            r#"{"spec": [}"#,
            "",
            r#"{"a" 1}"#,
        ] {
            assert_eq!(rewrite(text, &edit(POD), &mut Vec::new()), None, "{text}");
        }
    }

    proptest::proptest! {
        /// Any object, with the paths the edit follows planted in it at random.
        #[test]
        fn any_object_as_the_tree(object in crate::shell::json_out::tests::document(), at_spec: bool, pretty: bool) {
            let mut object = object;
            let copy = object.clone();
            if let Value::Object(map) = &mut object && at_spec {
                map.insert("spec".into(), json!({"volumes": [copy], "metadata": {"annotations": {"a": "x"}}}));
            }
            let text = if pretty { serde_json::to_string_pretty(&object).unwrap() } else { object.to_string() };
            if object.is_object() {
                let (ours, tree) = both(&text, POD);
                proptest::prop_assert_eq!(ours, tree);
            }
        }
    }
}
