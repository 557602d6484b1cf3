//! The WebAssembly side of `annotate`: the metadata section replaced in the module (every other
//! byte kept), the host capabilities its data segments mention (kwctl's `wasm_scanner`), and its
//! protocol version asked from the module itself through the engine.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::AnnotateError;
use kubewarden_engine::hostcalls::lookup::Lookups;
use kubewarden_engine::protocol::metadata::METADATA_SECTION;
use kubewarden_engine::protocol::metadata::ProtocolVersion;
use kubewarden_engine::protocol::sections::{Section, SectionError, append_custom_section, sections};
use kubewarden_engine::runtime::callback::{HostContext, LogSink};
use kubewarden_engine::runtime::engine::{Engine, EngineConfig};

/// Host capability operations policy-evaluator knows, as `(namespace, operation)`.
pub const HOST_CAPABILITIES: &[(&str, &str)] = &[
    ("crypto", "v1/is_certificate_trusted"),
    ("kubernetes", "can_i"),
    ("kubernetes", "get_resource"),
    ("kubernetes", "list_resources_all"),
    ("kubernetes", "list_resources_by_namespace"),
    ("net", "v1/dns_lookup_host"),
    ("oci", "v1/manifest_digest"),
    ("oci", "v1/oci_manifest"),
    ("oci", "v1/oci_manifest_config"),
    ("oci", "v1/verify"),
    ("oci", "v2/verify"),
];

/// The module with every `io.kubewarden.metadata` section removed and `data` appended as the
/// new one; every other section is kept byte for byte.
pub fn write_metadata_section(module: &[u8], data: &[u8]) -> Result<Vec<u8>, AnnotateError> {
    let sections = sections(module)?;
    let mut out = module[..8].to_vec();
    for s in sections.iter().filter(|s| !is_metadata(s)) {
        out.extend_from_slice(s.bytes);
    }
    append_custom_section(&mut out, METADATA_SECTION, data);
    Ok(out)
}

fn is_metadata(section: &Section<'_>) -> bool {
    section.custom.is_some_and(|(name, _)| name == METADATA_SECTION)
}

/// The host capabilities the module's data segments mention, like kwctl's `wasm_scanner`
/// (namespace and operation strings present; an operation that is a prefix of a longer one must
/// also occur on its own).
pub fn detect_host_capabilities(module: &[u8]) -> Result<BTreeSet<String>, AnnotateError> {
    let mut data = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let wasmparser::Payload::DataSection(reader) = payload.map_err(SectionError::from)? {
            for segment in reader {
                let segment = segment.map_err(SectionError::from)?;
                data.extend_from_slice(segment.data);
                data.push(0xff);
            }
        }
    }
    let find = |needle: &[u8], from: usize| {
        data.get(from..).and_then(|d| {
            d.windows(needle.len())
                .position(|w| w == needle)
                .map(|p| p + from)
        })
    };
    let mut found = BTreeSet::new();
    for (namespace, operation) in HOST_CAPABILITIES {
        if find(namespace.as_bytes(), 0).is_none() {
            continue;
        }
        let longer: Vec<&str> = HOST_CAPABILITIES
            .iter()
            .map(|(_, o)| *o)
            .filter(|o| o != operation && o.starts_with(operation))
            .collect();
        let present = if longer.is_empty() {
            find(operation.as_bytes(), 0).is_some()
        } else {
            longer.iter().all(|l| {
                let mut from = 0;
                while let Some(p) = find(operation.as_bytes(), from) {
                    if !data[p..].starts_with(l.as_bytes()) {
                        return true;
                    }
                    from = p + 1;
                }
                false
            })
        };
        if present {
            found.insert(format!("{namespace}/{operation}"));
        }
    }
    Ok(found)
}

/// Asks the module for its protocol version, through the engine.
pub fn protocol_version(module: &[u8]) -> Result<ProtocolVersion, AnnotateError> {
    let engine = Engine::new(EngineConfig::without_deadline())?;
    let policy = engine.load_policy("policy.wasm", module)?;
    let host = Arc::new(HostContext::new(
        policy.name(),
        BTreeSet::new(),
        Lookups::empty(),
        LogSink::Discard,
    ));
    let instance = policy.instantiate(&host)?;
    let version = instance
        .protocol_version()
        .map_err(|e| AnnotateError::ProtocolVersion(e.to_string()))?;
    match version.as_str() {
        "v1" => Ok(ProtocolVersion::V1),
        _ => Ok(ProtocolVersion::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_engine::protocol::sections::custom_section;

    fn module_with(customs: &[(&str, &[u8])]) -> Vec<u8> {
        // a type section with no types, then the custom sections
        let mut m = b"\0asm\x01\0\0\0\x01\x01\x00".to_vec();
        for (name, data) in customs {
            append_custom_section(&mut m, name, data);
        }
        m
    }

    #[test]
    fn replaces_the_metadata_section_and_keeps_the_rest() {
        let module = module_with(&[(METADATA_SECTION, b"{\"old\":1}"), ("producers", b"x")]);
        let big = vec![b'a'; 300];
        let out = write_metadata_section(&module, &big).unwrap();
        assert_eq!(custom_section(&out, METADATA_SECTION).unwrap().unwrap(), &big[..]);
        assert_eq!(custom_section(&out, "producers").unwrap().unwrap(), b"x");
        assert_eq!(sections(&out).unwrap().len(), 3);
        assert!(out.starts_with(&module_with(&[])));
        assert!(write_metadata_section(b"\0asm\x01\0\0", b"").is_err());
        assert!(write_metadata_section(b"(module)", b"").is_err());
    }
}
