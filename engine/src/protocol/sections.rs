//! The sections of a binary WebAssembly module, read with `wasmparser` and written with
//! `wasm-encoder`: a custom section by name, every section's bytes (so a module can be rewritten
//! keeping them), and a custom section appended. The one reader of module bytes in the host.

use std::ops::Range;

use thiserror::Error;
use wasm_encoder::Section as _;
use wasmparser::{Encoding, Parser, Payload};

/// Why a module's sections cannot be read.
#[derive(Debug, Error)]
pub enum SectionError {
    #[error("not a WebAssembly binary (no \\0asm magic)")]
    NotBinary,
    #[error("not a core WebAssembly module (version 1)")]
    NotCoreModule,
    #[error("malformed WebAssembly module: {0}")]
    Malformed(#[from] wasmparser::BinaryReaderError),
}

/// One section of a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section<'a> {
    pub id: u8,
    /// The whole section, id and size included.
    pub bytes: &'a [u8],
    /// A custom section's name and data.
    pub custom: Option<(&'a str, &'a [u8])>,
}

/// Every section of a core module, in order.
pub fn sections(module: &[u8]) -> Result<Vec<Section<'_>>, SectionError> {
    if !module.starts_with(b"\0asm") {
        return Err(SectionError::NotBinary);
    }
    let mut out = Vec::new();
    // sections are contiguous: each starts where the previous one ended (8: after the header)
    let mut start = 8;
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        if let Payload::Version { encoding, .. } = &payload
            && *encoding != Encoding::Module
        {
            return Err(SectionError::NotCoreModule);
        }
        let custom = match &payload {
            Payload::CustomSection(c) => Some((c.name(), c.data())),
            _ => None,
        };
        if let Some((id, Range { end, .. })) = payload.as_section() {
            let bytes = module.get(start..end).ok_or(SectionError::NotCoreModule)?;
            out.push(Section { id, bytes, custom });
            start = end;
        }
    }
    Ok(out)
}

/// The data of the custom section `name`; `None` for a text (WAT) module, which has none.
pub fn custom_section<'a>(module: &'a [u8], name: &str) -> Result<Option<&'a [u8]>, SectionError> {
    if !module.starts_with(b"\0asm") {
        return Ok(None);
    }
    Ok(sections(module)?
        .into_iter()
        .find_map(|s| s.custom.filter(|(n, _)| *n == name).map(|(_, data)| data)))
}

/// Appends a custom section `name` holding `data` to `out`.
pub fn append_custom_section(out: &mut Vec<u8>, name: &str, data: &[u8]) {
    wasm_encoder::CustomSection {
        name: name.into(),
        data: data.into(),
    }
    .append_to(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module_with(customs: &[(&str, &[u8])]) -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        for (name, data) in customs {
            append_custom_section(&mut m, name, data);
        }
        m
    }

    #[test]
    fn finds_custom_sections_by_name() {
        let m = module_with(&[("producers", b"x"), ("io.kubewarden.metadata", b"{}")]);
        assert_eq!(
            custom_section(&m, "io.kubewarden.metadata").unwrap(),
            Some(&b"{}"[..])
        );
        assert_eq!(custom_section(&m, "producers").unwrap(), Some(&b"x"[..]));
        assert_eq!(custom_section(&m, "other").unwrap(), None);
        assert_eq!(custom_section(b"(module)", "producers").unwrap(), None);
        let s = sections(&m).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].bytes, b"\0\x0b\x09producersx");
    }

    #[test]
    fn refuses_what_is_not_a_core_module() {
        let mut truncated = module_with(&[("other", b"xyz")]);
        truncated.truncate(truncated.len() - 1);
        assert!(matches!(
            custom_section(&truncated, "other"),
            Err(SectionError::Malformed(_))
        ));
        assert!(matches!(sections(b"(module)"), Err(SectionError::NotBinary)));
        assert!(matches!(
            sections(b"\0asm\x0d\0\x01\0"),
            Err(SectionError::NotCoreModule)
        ));
        assert!(matches!(
            sections(b"\0asm\x01\0\0"),
            Err(SectionError::Malformed(_))
        ));
    }
}
