//! `injector-host annotate`: writes a policy's metadata into the module's
//! `io.kubewarden.metadata` custom section, in the form `kwctl annotate` writes it.
//!
//! Like kwctl (`crates/kwctl/src/annotate.rs` with policy-evaluator's `policy_metadata.rs`):
//! the metadata YAML is read into Kubewarden's `Metadata` shape (unknown keys dropped,
//! `backgroundAudit` defaulting to true, `executionMode` to `kubewarden-wapc`, `policyType` to
//! `kubernetes`), `protocolVersion` is asked from the module itself (`protocol_version` through
//! the engine; `Unknown` for other execution modes), the usage text (`-u README.md`) becomes the
//! `io.kubewarden.policy.usage` annotation, the result is validated with policy-evaluator's rules
//! and serialised as compact JSON with the same field order. Differences: kwctl re-emits the
//! whole module through walrus and records its own version as `io.kubewarden.kwctl`; this
//! keeps every byte of the module, replaces any previous metadata section, appends the new one
//! at the end, and writes no `io.kubewarden.kwctl` (a value given in the file is dropped, as
//! kwctl overwrites it).
//!
//! The files: this one is the command (its flags, the files it reads and writes) and
//! [`annotate()`], which joins the engine's `Metadata` (the metadata's shape and validation) and
//! `wasm.rs` (the section, the capability scan, the protocol version).

mod wasm;

use std::path::{Path, PathBuf};

use clap::Args;
use thiserror::Error;

use super::common::{CommandError, Output};
pub use kubewarden_engine::protocol::metadata::{
    ExecutionMode, Metadata, Operation, PolicyType, ProtocolVersion, Rule,
};
use kubewarden_engine::protocol::sections::{SectionError, sections};
use kubewarden_engine::runtime::engine::EngineError;
pub use wasm::{HOST_CAPABILITIES, detect_host_capabilities, protocol_version, write_metadata_section};

/// Annotation holding the usage text (`-u`).
pub const USAGE_ANNOTATION: &str = "io.kubewarden.policy.usage";
/// Annotation kwctl fills with its own version.
pub const KWCTL_VERSION_ANNOTATION: &str = "io.kubewarden.kwctl";

#[derive(Debug, Error)]
pub enum AnnotateError {
    #[error("Error unmarshalling metadata {0}")]
    Parse(#[source] serde_yaml_ng::Error),
    #[error("Metadata is invalid: {}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error("Error parsing wasm module: {0}")]
    Wasm(#[from] SectionError),
    #[error("Cannot compute ProtocolVersion used by the policy: {0}")]
    ProtocolVersion(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("cannot serialise the metadata: {0}")]
    Serialize(#[source] serde_json::Error),
}

/// What [`annotate`] produced.
#[derive(Debug, Clone)]
pub struct Annotated {
    pub module: Vec<u8>,
    pub metadata: Metadata,
    /// Differences between the declared `hostCapabilities` and what the module mentions.
    pub warnings: Vec<String>,
}

/// Annotates `module` with the metadata YAML and optional usage text.
pub fn annotate(module: &[u8], metadata_yaml: &str, usage: Option<&str>) -> Result<Annotated, AnnotateError> {
    let mut metadata = Metadata::from_yaml(metadata_yaml).map_err(AnnotateError::Parse)?;
    sections(module)?;
    metadata.protocol_version = Some(match metadata.execution_mode {
        ExecutionMode::KubewardenWapc => protocol_version(module)?,
        _ => ProtocolVersion::Unknown,
    });
    let mut annotations = metadata.annotations.take().unwrap_or_default();
    annotations.remove(KWCTL_VERSION_ANNOTATION);
    if let Some(u) = usage {
        annotations.insert(USAGE_ANNOTATION.into(), u.into());
    }
    metadata.annotations = Some(annotations);
    metadata.validate().map_err(AnnotateError::Invalid)?;
    let detected = detect_host_capabilities(module)?;
    let declared = metadata.host_capabilities.clone().unwrap_or_default();
    let mut warnings = Vec::new();
    let undeclared: Vec<&String> = detected.difference(&declared).collect();
    if !undeclared.is_empty() {
        warnings.push(format!(
            "host capabilities used by the policy but not declared in metadata: {undeclared:?}"
        ));
    }
    let unused: Vec<&String> = declared.difference(&detected).collect();
    if !unused.is_empty() {
        warnings.push(format!(
            "host capabilities declared in metadata but not detected in the policy: {unused:?}"
        ));
    }
    let json = metadata.to_section_json().map_err(AnnotateError::Serialize)?;
    Ok(Annotated {
        module: write_metadata_section(module, &json)?,
        metadata,
        warnings,
    })
}

#[derive(Debug, Args)]
pub struct AnnotateArgs {
    /// Policy metadata YAML (policy.yaml / metadata.yml)
    #[arg(short = 'm', long)]
    pub metadata_path: PathBuf,
    /// Usage text embedded as io.kubewarden.policy.usage (e.g. README.md)
    #[arg(short = 'u', long)]
    pub usage_path: Option<PathBuf>,
    /// Where to write the annotated module
    #[arg(short = 'o', long)]
    pub output_path: PathBuf,
    /// The policy module (.wasm)
    pub module: PathBuf,
}

/// An annotated module, not written yet. Two steps, [`prepare`] and [`Annotation::write`], so
/// that the command line prints the warnings before a failure to write, in the order kwctl
/// prints them.
pub struct Annotation<'a> {
    args: &'a AnnotateArgs,
    annotated: Annotated,
}

/// `injector-host annotate`, first step: reads the module, the metadata and the usage text, and
/// annotates the module.
pub fn prepare(args: &AnnotateArgs) -> Result<Annotation<'_>, CommandError> {
    let read = |what: &'static str, path: &Path| {
        std::fs::read(path).map_err(|source| CommandError::File {
            what,
            path: path.display().to_string(),
            source,
        })
    };
    let module = read("Error reading wasm file", &args.module)?;
    let metadata =
        String::from_utf8_lossy(&read("Error opening metadata file", &args.metadata_path)?).into_owned();
    let usage = match &args.usage_path {
        Some(p) => Some(String::from_utf8_lossy(&read("Error reading usage file", p)?).into_owned()),
        None => None,
    };
    let annotated = annotate(&module, &metadata, usage.as_deref())?;
    Ok(Annotation { args, annotated })
}

impl Annotation<'_> {
    /// The warnings for stderr, as kwctl words them.
    pub fn warnings(&self) -> Vec<String> {
        self.annotated
            .warnings
            .iter()
            .map(|w| format!("WARN {w}"))
            .collect()
    }

    /// `injector-host annotate`, second step: writes the annotated module; nothing for stdout.
    pub fn write(self) -> Result<Output, CommandError> {
        let path = &self.args.output_path;
        std::fs::write(path, &self.annotated.module).map_err(|source| CommandError::File {
            what: "cannot write",
            path: path.display().to_string(),
            source,
        })?;
        Ok(Output::default())
    }
}
