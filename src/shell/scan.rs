//! JSON read in one pass by a reader of our own, for what the module keeps of its inputs: the
//! `validate` payload's request fields and settings, and host-call answers under a lookup's
//! masks (a ConfigMap's, or a List of them, `data` and `metadata.name`; a Namespace's
//! `metadata.annotations` and `labels`). serde_json spends about a hundred instructions on each
//! escape of a string, even one it skips (and `linkerd-config`'s 8 KB of values hold one every
//! twenty bytes), and its visitors on every token; here strings are scanned eight bytes at a
//! time, a common escape costs a few instructions, and values are built straight into
//! `serde_json::Value`s (a number and a string with a `\u` escape are still serde_json's).
//!
//! It answers only where it is sure it reads as serde_json does: masks among `data`,
//! `metadata.annotations` and `metadata.labels`, over objects whose kept fields are null or maps
//! of strings (a name: a string), a payload and request that are objects, nesting well within
//! serde_json's limit, and text serde_json accepts. Anything else is `None`, and the serde
//! readers ([`super::masked`], [`super::payload`]) read the input instead, errors included.

use crate::cluster::StringReader;
use crate::shell::payload::{Payload, RequestFields, Shape};
use crate::word;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The object as [`super::masked::object`] reads it with `masks`, or `None` when unsure.
pub(crate) fn object(text: &str, masks: &[&str]) -> Option<Value> {
    let keep = Keep::of(masks)?;
    let mut s = Scanner::new(text);
    let object = s.kept(keep)?;
    s.end().then_some(object)
}

/// The items of a List as [`super::masked::items`] reads them with `masks`, or `None` when unsure.
pub(crate) fn items(text: &str, masks: &[&str]) -> Option<Vec<Value>> {
    let keep = Keep::of(masks)?;
    last_items(text, |s| s.items(keep))
}

/// The string at `data.<key>` of the first item named `name` of a List, as the text writes it
/// between its quotes, where [`items`] reads the List with the mask `data`: the fields [`items`]
/// keeps are checked as it checks them, but for that string's escapes and bytes, which are left
/// to its reader; nothing is built. `None` when unsure (another string of `data` with a `\u`
/// escape), or when the item or the string is not there.
pub(crate) fn item_data_string<'a>(
    text: &'a str,
    name: &str,
    key: &str,
    read: StringReader<'_>,
) -> Option<&'a str> {
    last_items(text, |s| s.first_named(name, key, &mut *read))?
}

/// A List's `items` as `read` reads them, where the whole text is one this reader is sure of:
/// the last `items` counts, as in a JSON tree, and the List's other fields are skipped.
fn last_items<'a, T>(text: &'a str, mut read: impl FnMut(&mut Scanner<'a>) -> Option<T>) -> Option<T> {
    let mut s = Scanner::new(text);
    let mut items = None;
    s.object(|s, key| match &*key {
        "items" => {
            items = Some(read(s)?);
            Some(())
        }
        _ => s.skip(),
    })?;
    if !s.end() {
        return None;
    }
    items
}

/// The `validate` payload as [`Shape<Payload>`]'s serde reading gives it, or `None` when unsure.
pub(crate) fn payload(text: &str) -> Option<Payload> {
    let mut s = Scanner::new(text);
    let mut payload = Payload::default();
    // a key repeated is read again, so the last one counts, as in a JSON tree
    s.object(|s, key| match &*key {
        "request" => {
            payload.request = Some(Shape::Object(s.request()?));
            Some(())
        }
        "settings" => {
            payload.settings = s.value()?;
            Some(())
        }
        _ => s.skip(),
    })?;
    s.end().then_some(payload)
}

/// What the masks keep (`metadata.name` always, as the general reader's paths do).
#[derive(Clone, Copy)]
struct Keep {
    data: bool,
    annotations: bool,
    labels: bool,
}

impl Keep {
    /// `None` for masks this reader does not read (none at all: the whole object).
    fn of(masks: &[&str]) -> Option<Self> {
        let mut keep = Keep {
            data: false,
            annotations: false,
            labels: false,
        };
        for mask in masks {
            match *mask {
                "data" => keep.data = true,
                "metadata.annotations" => keep.annotations = true,
                "metadata.labels" => keep.labels = true,
                _ => return None,
            }
        }
        (!masks.is_empty()).then_some(keep)
    }

    /// Whether `key` of `metadata` is kept.
    fn in_metadata(self, key: &str) -> bool {
        match key {
            "name" => true,
            "annotations" => self.annotations,
            "labels" => self.labels,
            _ => false,
        }
    }
}

/// Where a value of the request's object lies, for what is left out of its tree. The core reads
/// a container's name, image, ports (their number and name), probes (their `httpGet` port),
/// mounts and security context, never its environment, arguments, resources, pull policy,
/// lifecycle or termination message; of a pod's spec, never its scheduling, DNS, restart or
/// service-account fields, nor more of a volume than its name; of a Service's, only its ports;
/// of metadata, its name, namespace, labels, annotations and owners; never the object's
/// `status`. What is left out is still checked as JSON, and the answer is written from the
/// object's text ([`super::rewrite`]), so nothing of it is lost.
#[derive(Clone, Copy, PartialEq)]
enum Prune {
    /// Any value but the request's object: built whole.
    Whole,
    Root,
    Any,
    Metadata,
    Spec,
    Containers,
    Container,
    /// A container's `ports`, and one of them: its number and name are read.
    Ports,
    Port,
    /// A container's liveness or readiness probe, and its `httpGet`: only that port is read.
    Probe,
    HttpGet,
    Volumes,
    Volume,
}

/// A container's fields the core never reads.
const CONTAINER_UNREAD: &[&str] = &[
    "args",
    "command",
    "env",
    "envFrom",
    "resources",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "startupProbe",
    "lifecycle",
    "workingDir",
];

/// Metadata fields the core never reads (the server's own, and the name a controller asks for).
fn metadata_unread(key: &str) -> bool {
    matches!(
        key,
        "managedFields"
            | "creationTimestamp"
            | "generateName"
            | "uid"
            | "resourceVersion"
            | "generation"
            | "finalizers"
    )
}

/// A spec's fields the core never reads: a pod's scheduling, DNS, restart and service-account
/// fields, and a Service's all but its ports (neither a pod's spec nor a workload's has those
/// fields; a workload's `selector` is not read either).
fn spec_unread(key: &str) -> bool {
    matches!(
        key,
        "affinity"
            | "tolerations"
            | "topologySpreadConstraints"
            | "schedulerName"
            | "priority"
            | "preemptionPolicy"
            | "dnsPolicy"
            | "restartPolicy"
            | "enableServiceLinks"
            | "terminationGracePeriodSeconds"
            | "serviceAccountName"
            | "serviceAccount"
            | "selector"
            | "type"
            | "clusterIP"
            | "clusterIPs"
            | "ipFamilies"
            | "ipFamilyPolicy"
            | "sessionAffinity"
            | "sessionAffinityConfig"
            | "internalTrafficPolicy"
            | "externalTrafficPolicy"
    )
}

impl Prune {
    /// Where the value of member `key` lies; `None` when it is left out.
    fn member(self, key: &str) -> Option<Prune> {
        let left_out = match self {
            Prune::Whole => return Some(Prune::Whole),
            Prune::Root => key == "status",
            Prune::Metadata => metadata_unread(key),
            Prune::Spec => spec_unread(key),
            Prune::Container => CONTAINER_UNREAD.contains(&key),
            Prune::Volume => key != "name",
            Prune::Port => !matches!(key, "containerPort" | "name"),
            Prune::Probe => key != "httpGet",
            Prune::HttpGet => key != "port",
            Prune::Any | Prune::Containers | Prune::Volumes | Prune::Ports => false,
        };
        if left_out {
            return None;
        }
        Some(match (self, key) {
            (_, "metadata") => Prune::Metadata,
            (_, "spec") => Prune::Spec,
            (_, "containers" | "initContainers" | "ephemeralContainers") => Prune::Containers,
            (Prune::Spec, "volumes") => Prune::Volumes,
            (Prune::Container, "ports") => Prune::Ports,
            (Prune::Container, "livenessProbe" | "readinessProbe") => Prune::Probe,
            (Prune::Probe, "httpGet") => Prune::HttpGet,
            _ => Prune::Any,
        })
    }

    /// Where the items of a list lie.
    fn item(self) -> Prune {
        match self {
            Prune::Whole => Prune::Whole,
            Prune::Containers => Prune::Container,
            Prune::Ports => Prune::Port,
            Prune::Volumes => Prune::Volume,
            _ => Prune::Any,
        }
    }
}

/// Below serde_json's recursion limit (128), so a document this reader takes, serde_json takes.
const MAX_DEPTH: usize = 64;

pub(super) struct Scanner<'a> {
    text: &'a str,
    pub(super) at: usize,
    depth: usize,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self {
            text,
            at: 0,
            depth: 0,
        }
    }

    /// Whether only whitespace is left.
    pub(super) fn end(&mut self) -> bool {
        self.space();
        self.at == self.text.len()
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    pub(super) fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, consumed.
    pub(super) fn next(&mut self) -> Option<u8> {
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

    pub(super) fn open(&mut self, bracket: u8) -> Option<()> {
        if self.next()? != bracket || self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        Some(())
    }

    /// After the closing bracket.
    pub(super) fn close(&mut self) -> Option<()> {
        self.depth -= 1;
        Some(())
    }

    /// The request's four fields the core reads.
    fn request(&mut self) -> Option<RequestFields> {
        let mut fields = RequestFields::default();
        self.object(|s, key| {
            let slot = match &*key {
                "kind" => &mut fields.kind,
                "operation" => &mut fields.operation,
                "namespace" => &mut fields.namespace,
                "object" => {
                    let start = s.at;
                    fields.object = s.pruned(Prune::Root)?;
                    fields.object_span = Some(start..s.at);
                    return Some(());
                }
                _ => return s.skip(),
            };
            *slot = s.value()?;
            Some(())
        })?;
        Some(fields)
    }

    /// Any JSON value, built.
    fn value(&mut self) -> Option<Value> {
        self.pruned(Prune::Whole)
    }

    /// A value built but for what [`Prune`] leaves out where it lies.
    fn pruned(&mut self, at: Prune) -> Option<Value> {
        match self.peek()? {
            b'{' => {
                let mut map = Map::new();
                self.object(|s, key| {
                    let Some(below) = at.member(&key) else {
                        return s.skip();
                    };
                    let value = s.pruned(below)?;
                    map.insert(key.into_owned(), value);
                    Some(())
                })?;
                Some(Value::Object(map))
            }
            b'[' => {
                let mut items = Vec::new();
                let each = at.item();
                self.array(|s| {
                    items.push(s.pruned(each)?);
                    Some(())
                })?;
                Some(Value::Array(items))
            }
            b'"' => {
                self.at += 1;
                self.string().map(|s| Value::String(s.into_owned()))
            }
            b't' => self.literal("true").map(|()| Value::Bool(true)),
            b'f' => self.literal("false").map(|()| Value::Bool(false)),
            b'n' => self.literal("null").map(|()| Value::Null),
            // the grammar checked here, the number itself (integer or float) serde_json's
            _ => {
                let start = self.at;
                self.number()?;
                serde_json::from_str(self.text.get(start..self.at)?).ok()
            }
        }
    }

    /// The `items` array: objects, each kept as the masks keep it.
    fn items(&mut self, keep: Keep) -> Option<Vec<Value>> {
        let mut items = Vec::new();
        self.array(|s| {
            items.push(s.kept(keep)?);
            Some(())
        })?;
        Some(items)
    }

    /// An object with what `keep` names.
    fn kept(&mut self, keep: Keep) -> Option<Value> {
        let mut kept = Map::new();
        self.object(|s, key| {
            let value = match &*key {
                "data" if keep.data => s.strings()?,
                "metadata" => s.metadata(keep)?,
                // a key the masks name as a whole: left to the general reader
                dotted if dotted.starts_with("metadata.") || dotted.starts_with("data.") => return None,
                _ => return s.skip(),
            };
            kept.insert(key.into_owned(), value);
            Some(())
        })?;
        Some(Value::Object(kept))
    }

    /// The `items` array as [`Scanner::items`] reads it, for the `data.<key>` string of the
    /// first item named `name` (`Some(None)`: no such item, or no string there).
    fn first_named(&mut self, name: &str, key: &str, read: StringReader<'_>) -> Option<Option<&'a str>> {
        let mut found = None;
        self.array(|s| {
            let (item_name, string) = s.named_item(key, &mut *read)?;
            if found.is_none() && item_name.as_deref() == Some(name) {
                found = Some(string);
            }
            Some(())
        })?;
        Some(found.flatten())
    }

    /// An item as [`Scanner::kept`] reads it with the mask `data`: its name, and its
    /// `data.<key>` string as written.
    fn named_item(
        &mut self,
        key: &str,
        read: StringReader<'_>,
    ) -> Option<(Option<Cow<'a, str>>, Option<&'a str>)> {
        let (mut name, mut string) = (None, None);
        self.object(|s, k| {
            match &*k {
                "data" => string = s.written_strings(key, &mut *read)?,
                "metadata" => name = s.metadata_name()?,
                dotted if dotted.starts_with("metadata.") || dotted.starts_with("data.") => return None,
                _ => return s.skip(),
            }
            Some(())
        })?;
        Some((name, string))
    }

    /// `metadata` as [`Scanner::metadata`] reads it for its name alone.
    fn metadata_name(&mut self) -> Option<Option<Cow<'a, str>>> {
        let mut name = None;
        self.object(|s, k| {
            if &*k != "name" {
                return s.skip();
            }
            if s.next()? != b'"' {
                return None;
            }
            name = Some(s.string()?);
            Some(())
        })?;
        Some(name)
    }

    /// [`Scanner::strings`] for the string at `key`, as written.
    fn written_strings(&mut self, key: &str, read: StringReader<'_>) -> Option<Option<&'a str>> {
        if self.peek()? == b'n' {
            return self.literal("null").map(|()| None);
        }
        let mut string = None;
        self.object(|s, k| {
            if s.next()? != b'"' {
                return None;
            }
            if *k != *key {
                return s.written_string().map(drop);
            }
            // a second one would replace this one unchecked
            if string.is_some() {
                return None;
            }
            string = Some(s.string_as_written(&mut *read)?);
            Some(())
        })?;
        Some(string)
    }

    /// The string whose opening quote was just read, as written, up to the first quote that
    /// no backslash escapes: its escapes and bytes are left unchecked, for a reader that
    /// refuses any it does not know ([`crate::cluster::Cluster::json_string`]). `read` reads it
    /// first, and where it finds that quote, the search for it is spared.
    fn string_as_written(&mut self, read: StringReader<'_>) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let found = self.text.get(start..).and_then(read).map(|end| start + end);
        let mut quote = found.filter(|&q| closes(bytes, start, q));
        let mut from = start;
        while quote.is_none() {
            let q = word::next_equal(bytes, from, b'"')?;
            quote = closes(bytes, start, q).then_some(q);
            from = q + 1;
        }
        let quote = quote?;
        self.at = quote + 1;
        self.text.get(start..quote)
    }

    /// The string whose opening quote was just read, as written (its escapes checked as
    /// [`Scanner::skip_string`] checks them). `None` at a `\u` escape, whose code point only
    /// serde_json checks when it builds the string.
    fn written_string(&mut self) -> Option<&'a str> {
        let start = self.at;
        self.skip_string(false)?;
        self.text.get(start..self.at - 1)
    }

    /// Null, or a map of strings.
    fn strings(&mut self) -> Option<Value> {
        if self.peek()? == b'n' {
            return self.literal("null").map(|()| Value::Null);
        }
        let mut map = Map::new();
        self.object(|s, key| {
            let value = s.string_value()?;
            map.insert(key.into_owned(), Value::String(value));
            Some(())
        })?;
        Some(Value::Object(map))
    }

    /// `metadata` with what `keep` names of it: its name (a string), its annotations and labels.
    fn metadata(&mut self, keep: Keep) -> Option<Value> {
        let mut kept = Map::new();
        self.object(|s, key| {
            if !keep.in_metadata(&key) {
                return s.skip();
            }
            let value = match &*key {
                "name" => Value::String(s.string_value()?),
                _ => s.strings()?,
            };
            kept.insert(key.into_owned(), value);
            Some(())
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
    pub(super) fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(|s, _| s.skip()),
            b'[' => self.array(Self::skip),
            b'"' => {
                self.at += 1;
                self.skip_string(true)
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
    pub(super) fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.at;
        let at = word::next_json_special(self.text.as_bytes(), start)?;
        match self.text.as_bytes().get(at)? {
            b'"' => {
                self.at = at + 1;
                Some(Cow::Borrowed(self.text.get(start..at)?))
            }
            b'\\' => self.unescaped(start, at).map(Cow::Owned),
            // a control character, which JSON strings may not hold
            _ => None,
        }
    }

    /// The string opened before `start`, whose first escape is at `first`, with its escapes
    /// decoded. Plain bytes are copied a word at a time, the word written whole and the part
    /// of it from its first special byte on written over: a values document has an escape
    /// every twenty bytes or so, and a copy call per run between them cost more than the rest.
    /// Out of line: most strings have no escape, and their path stays small.
    #[inline(never)]
    fn unescaped(&mut self, start: usize, first: usize) -> Option<String> {
        let bytes = self.text.as_bytes();
        let mut out = Vec::with_capacity(2 * (first - start) + 64);
        out.extend_from_slice(bytes.get(start..first)?);
        let mut at = first;
        loop {
            // plain bytes up to the next special one: sixteen at a time, eight near the end
            loop {
                if let Some(block) = word::block(bytes, at) {
                    out.extend_from_slice(&block);
                    let bits = word::json_special_bits(block);
                    if bits == 0 {
                        at += 16;
                        continue;
                    }
                    let i = bits.trailing_zeros() as usize;
                    out.truncate(out.len() - 16 + i);
                    at += i;
                    break;
                }
                let Some(x) = bytes.get(at..at + 8).and_then(word::of) else {
                    break;
                };
                out.extend_from_slice(&x.to_le_bytes());
                match word::lowest(word::json_special(x)) {
                    None => at += 8,
                    Some(i) => {
                        out.truncate(out.len() - 8 + i);
                        at += i;
                        break;
                    }
                }
            }
            match *bytes.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    // the text's own bytes with ASCII escapes replaced by ASCII: still UTF-8,
                    // checked again with the vector checker (`String::from_utf8`'s byte loop
                    // cost more than the copy)
                    return simdutf8::basic::from_utf8(&out).ok().map(str::to_owned);
                }
                b'\\' => {
                    let decoded = match *bytes.get(at + 1)? {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        // code points and surrogate pairs: the whole string is serde_json's
                        b'u' => return self.string_by_serde(start).map(Cow::into_owned),
                        _ => return None,
                    };
                    out.push(decoded);
                    at += 2;
                }
                // a control character, which JSON strings may not hold
                b if b < 0x20 => return None,
                // fewer than eight bytes left in the text
                b => {
                    out.push(b);
                    at += 1;
                }
            }
        }
    }

    /// The string opened before `start` (its quote at `start - 1`), read by serde_json.
    fn string_by_serde(&mut self, start: usize) -> Option<Cow<'a, str>> {
        self.at = start;
        self.skip_string(true)?;
        let quoted = self.text.get(start.checked_sub(1)?..self.at)?;
        serde_json::from_str(quoted).ok().map(Cow::Owned)
    }

    /// Skips the string whose opening quote was just read, checking its escapes as serde_json
    /// does when it skips one (a `\u` needs four hex digits, not a valid code point); `None` at
    /// a `\u` unless `code_points`.
    fn skip_string(&mut self, code_points: bool) -> Option<()> {
        let bytes = self.text.as_bytes();
        loop {
            let at = word::next_json_special(bytes, self.at)?;
            match bytes.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    return Some(());
                }
                b'\\' => {
                    let width = match bytes.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                        b'u' if code_points
                            && bytes.get(at + 2..at + 6)?.iter().all(u8::is_ascii_hexdigit) =>
                        {
                            6
                        }
                        _ => return None,
                    };
                    self.at = at + width;
                }
                _ => return None,
            }
        }
    }
}

/// Whether the byte at `quote` is a quote that no backslash after `start` escapes.
fn closes(bytes: &[u8], start: usize, quote: usize) -> bool {
    bytes.get(quote) == Some(&b'"')
        && bytes
            .get(start..quote)
            .is_some_and(|before| before.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0)
}

#[cfg(test)]
mod tests;
