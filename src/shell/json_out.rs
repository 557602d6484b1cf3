//! The answer written as `serde_json::to_vec` writes it (compact JSON, the same bytes), with
//! strings escaped eight bytes at a time: serde_json tests each byte of a string against its
//! escape table, and the answer's strings (8 KB for a typical injected pod, the pod's own and
//! the proxy's) made that loop 5 % of an injection's guest instructions.
//!
//! Numbers are written by serde_json itself; a map key that is not a string is an error here,
//! and [`to_vec`] then hands the whole value to serde_json.

use crate::word;
use serde::Serialize;
use serde::ser;
use serde_json::Error;

/// `serde_json::to_vec(value)`, byte for byte.
#[cfg(test)]
fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    append(&mut out, value).map(|()| out)
}

/// `serde_json::to_writer(out, value)`, byte for byte: ours where it can, serde_json's where
/// it cannot (a map key that is not a string).
pub(crate) fn append<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), Error> {
    let mark = out.len();
    let mut writer = Writer {
        out: std::mem::take(out),
    };
    let written = value.serialize(&mut writer);
    *out = writer.out;
    if written.is_err() {
        out.truncate(mark);
        serde_json::to_writer(&mut *out, value)?;
    }
    Ok(())
}

struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn number<N: Serialize>(&mut self, n: N) -> Result<(), Error> {
        serde_json::to_writer(&mut self.out, &n)
    }

    fn string(&mut self, s: &str) {
        self.out.push(b'"');
        escape_into(&mut self.out, s.as_bytes());
        self.out.push(b'"');
    }

    fn compound(&mut self, open: u8, close: &'static [u8]) -> Compound<'_> {
        self.out.push(open);
        Compound {
            writer: self,
            first: true,
            close,
        }
    }

    /// `{"variant":` before a variant's content.
    fn variant(&mut self, variant: &str) {
        self.out.push(b'{');
        self.string(variant);
        self.out.push(b':');
    }

    /// A variant's list or mapping, closed with the variant's own brace.
    fn variant_compound(&mut self, variant: &str, open: u8, close: &'static [u8]) -> Compound<'_> {
        self.variant(variant);
        self.compound(open, close)
    }
}

/// Appends `bytes` (UTF-8) with JSON's escapes, as serde_json writes them.
fn escape_into(out: &mut Vec<u8>, bytes: &[u8]) {
    if copy_plain(out, bytes).is_none() {
        escape_slowly(out, bytes);
    }
}

/// [`escape_into`] for a string with a byte to escape (a few of an answer's): out of line, so
/// that the plain strings' path stays small (cranelift spills a large function's state on
/// every call).
#[cold]
#[inline(never)]
fn escape_slowly(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut start = 0;
    while let Some(at) = word::next_json_special(bytes, start) {
        out.extend_from_slice(bytes.get(start..at).unwrap_or_default());
        let byte = bytes.get(at).copied().unwrap_or_default();
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let hex = |n: u8| HEX.get(usize::from(n)).copied().unwrap_or_default();
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex(byte >> 4), hex(byte & 0xf)]);
            }
        }
        start = at + 1;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
}

/// Appends `bytes` when none of them is escaped (most of an answer's strings), in fixed-size
/// pieces: the last piece overlaps the one before it, which is written over. A copy of a
/// length known only at run time is a wasmtime builtin call, about a hundred instructions, more
/// than the rest of a short string's writing. `None`, with nothing appended, when a byte needs
/// an escape.
fn copy_plain(out: &mut Vec<u8>, bytes: &[u8]) -> Option<()> {
    let (mark, n) = (out.len(), bytes.len());
    if n < 8 {
        let (Some(first), Some(last)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) else {
            if bytes.iter().any(|&b| word::is_json_special(b)) {
                return None;
            }
            out.extend_from_slice(bytes);
            return Some(());
        };
        // the two halves overlap: one test covers every byte
        let x = u64::from(u32::from_le_bytes(*first)) | u64::from(u32::from_le_bytes(*last)) << 32;
        return overlapping(out, mark + n, word::json_special(x), first, last);
    }
    if n < 16 {
        let (first, last) = (bytes.first_chunk::<8>()?, bytes.last_chunk::<8>()?);
        let special =
            word::json_special(u64::from_le_bytes(*first)) | word::json_special(u64::from_le_bytes(*last));
        return overlapping(out, mark + n, special, first, last);
    }
    // sixteen bytes a step, tested as one vector (the proxy's environment runs to long names
    // and values)
    let last = bytes.last_chunk::<16>()?;
    for chunk in bytes.chunks_exact(16) {
        let block = chunk.first_chunk::<16>()?;
        if word::json_special_bits(*block) != 0 {
            out.truncate(mark);
            return None;
        }
        out.extend_from_slice(block);
    }
    if n % 16 != 0 {
        if word::json_special_bits(*last) != 0 {
            out.truncate(mark);
            return None;
        }
        out.truncate(mark + n - 16);
        out.extend_from_slice(last);
    }
    Some(())
}

/// `first` then `last` written so that they end at `end` (the two overlap), unless `special`
/// flags a byte of either.
fn overlapping<const N: usize>(
    out: &mut Vec<u8>,
    end: usize,
    special: u64,
    first: &[u8; N],
    last: &[u8; N],
) -> Option<()> {
    if special != 0 {
        return None;
    }
    out.extend_from_slice(first);
    out.truncate(end - N);
    out.extend_from_slice(last);
    Some(())
}

/// A list or mapping being written.
struct Compound<'w> {
    writer: &'w mut Writer,
    first: bool,
    close: &'static [u8],
}

impl Compound<'_> {
    fn comma(&mut self) {
        if !self.first {
            self.writer.out.push(b',');
        }
        self.first = false;
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.comma();
        value.serialize(&mut *self.writer)
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        self.comma();
        self.writer.string(key);
        self.writer.out.push(b':');
        value.serialize(&mut *self.writer)
    }

    fn close(self) -> Result<(), Error> {
        self.writer.out.extend_from_slice(self.close);
        Ok(())
    }
}

/// Numbers, written by serde_json.
macro_rules! numbers {
    ($($method:ident: $type:ty),* $(,)?) => {
        $(fn $method(self, v: $type) -> Result<(), Error> {
            self.number(v)
        })*
    };
}

/// The compounds whose entries are values alone.
macro_rules! elements {
    ($($compound:ident :: $method:ident),*) => {
        $(impl ser::$compound for Compound<'_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.element(value)
            }
            fn end(self) -> Result<(), Error> {
                self.close()
            }
        })*
    };
}

/// The compounds whose entries are named fields.
macro_rules! fields {
    ($($compound:ident),*) => {
        $(impl ser::$compound for Compound<'_> {
            type Ok = ();
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
                self.field(key, value)
            }
            fn end(self) -> Result<(), Error> {
                self.close()
            }
        })*
    };
}

impl<'w> ser::Serializer for &'w mut Writer {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'w>;
    type SerializeTuple = Compound<'w>;
    type SerializeTupleStruct = Compound<'w>;
    type SerializeTupleVariant = Compound<'w>;
    type SerializeMap = Compound<'w>;
    type SerializeStruct = Compound<'w>;
    type SerializeStructVariant = Compound<'w>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    numbers! {
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_u128: u128, serialize_f32: f32, serialize_f64: f64,
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.string(v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        let mut list = self.compound(b'[', b"]");
        for b in v {
            list.element(b)?;
        }
        list.close()
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.variant(variant);
        value.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'w>, Error> {
        Ok(self.compound(b'[', b"]"))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Compound<'w>, Error> {
        Ok(self.compound(b'[', b"]"))
    }
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'w>, Error> {
        Ok(self.compound(b'[', b"]"))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'w>, Error> {
        Ok(self.variant_compound(variant, b'[', b"]}"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'w>, Error> {
        Ok(self.compound(b'{', b"}"))
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'w>, Error> {
        Ok(self.compound(b'{', b"}"))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'w>, Error> {
        Ok(self.variant_compound(variant, b'{', b"}}"))
    }
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.comma();
        let at = self.writer.out.len();
        key.serialize(&mut *self.writer)?;
        // only a string starts with a quote; serde_json writes other keys its own way
        if self.writer.out.get(at) != Some(&b'"') {
            return Err(ser::Error::custom("key must be a string"));
        }
        self.writer.out.push(b':');
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(&mut *self.writer)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// Strings of every length up to three sixteen-byte blocks, plain or with one byte to
    /// escape at any position, written after text already in the buffer (which a piece written
    /// over must keep).
    #[test]
    fn strings_of_every_length_are_serde_jsons() {
        for len in 0..50 {
            let plain: String = "abcdefghijklmnopqrstuvwxyz".chars().cycle().take(len).collect();
            let mut cases = vec![plain.clone()];
            for at in 0..len {
                for special in ['"', '\\', '\n'] {
                    let mut s = plain.clone();
                    s.replace_range(at..=at, &special.to_string());
                    cases.push(s);
                }
            }
            for s in cases {
                let mut out = b"[1,".to_vec();
                append(&mut out, &s).unwrap();
                let expected = [b"[1,".as_slice(), &serde_json::to_vec(&s).unwrap()].concat();
                assert_eq!(out, expected, "{s:?}");
            }
        }
    }

    /// Every byte escaped as serde_json escapes it, at every position of a word and after one.
    #[test]
    fn strings_are_serde_jsons() {
        for b in 0..0x80u8 {
            for at in 0..17 {
                let mut s = "abcdefghijklmnopq".to_string();
                s.insert(at, char::from(b));
                assert_eq!(to_vec(&s).unwrap(), serde_json::to_vec(&s).unwrap(), "{s:?}");
            }
        }
        for s in [
            "",
            "é\"\\\u{1f}ü",
            "日本語\n\t\r\u{8}\u{c}\u{7f}",
            "\u{2028}/<>",
            "\"\"\"\"\"\"\"\"\"",
        ] {
            assert_eq!(to_vec(s).unwrap(), serde_json::to_vec(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn documents_are_serde_jsons() {
        #[derive(Serialize)]
        enum E {
            Unit,
            New(u8),
            Tuple(i64, f64),
            Struct { a: Option<bool> },
        }
        #[derive(Serialize)]
        struct S<'a> {
            e: Vec<E>,
            bytes: &'a [u8],
            t: (char, (), f32),
            #[serde(skip_serializing_if = "Option::is_none")]
            skipped: Option<u8>,
            keys: std::collections::BTreeMap<&'a str, &'a str>,
        }
        let s = S {
            e: vec![
                E::Unit,
                E::New(7),
                E::Tuple(i64::MIN, 1.5e300),
                E::Struct { a: Some(true) },
            ],
            bytes: &[0, 255],
            t: ('"', (), f32::NAN),
            skipped: None,
            keys: [("-1", "a"), ("\u{0}", "b\n")].into(),
        };
        assert_eq!(to_vec(&s).unwrap(), serde_json::to_vec(&s).unwrap());
        let v = json!({"a": [1, -2, 3.25, u64::MAX, null, true, {}, []], "b\"": {"c": "d\u{1}"}});
        assert_eq!(to_vec(&v).unwrap(), serde_json::to_vec(&v).unwrap());
        // keys serde_json writes its own way (quoted numbers) are left to it
        let numbers: std::collections::BTreeMap<i32, bool> = [(-1, true), (2, false)].into();
        assert_eq!(to_vec(&numbers).unwrap(), serde_json::to_vec(&numbers).unwrap());
        let units: std::collections::BTreeMap<(), u8> = [((), 1)].into();
        assert!(to_vec(&units).is_err() && serde_json::to_vec(&units).is_err());
    }

    proptest::proptest! {
        /// Any JSON document (any Unicode in its strings and keys), the same bytes.
        #[test]
        fn any_document_is_serde_jsons(value in document()) {
            proptest::prop_assert_eq!(to_vec(&value).unwrap(), serde_json::to_vec(&value).unwrap());
        }
    }

    pub(crate) fn document() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            ".*".prop_map(serde_json::Value::from),
            "[\\u{0}-\\u{7f}\"\\\\]{0,40}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(".*", inner, 0..8)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
