//! `injector-host scaffold artifacthub`: generates `artifacthub-pkg.yml` from the policy metadata
//! (`policy.yaml`) and the Rancher UI form (`questions-ui.yml`), in the exact text
//! `kwctl scaffold artifacthub -m policy.yaml -q questions-ui.yml` prints, so the file can be
//! regenerated here and at release time by kwctl without a diff (besides `createdAt`).
//!
//! This module owns the mapping metadata -> package (kwctl 1.36's
//! `policy-evaluator/src/policy_artifacthub.rs`): field order, which annotations are required and
//! in which order they are checked (the first problem found is the error), the install text, the
//! `kubewarden/*` annotations (a sorted map, so `contextAwareResources` comes first), and the
//! normalisations kwctl applies by parsing values as URLs (`url` crate), OCI references
//! (`oci-spec`), semantic versions and RFC 5322 address lists. The YAML is written with
//! serde_yaml_ng 0.9, whose emitter is the one kwctl's `yaml_serde` 0.10 uses (same libyaml port,
//! unlimited width), so quoting and block styles agree.
//!
//! Checked against a real kwctl 1.36.0-beta.1 on this repository's files (byte-identical, `-o`
//! and stdout) and on variants: OCI names (Docker Hub, ports, uppercase, tags), URLs (case,
//! default ports, user info, percent-encoding, IPv6, errors), release tags, author lists (bare
//! and quoted entries, mail-parser's quirks, email errors), keywords and semver errors.
//! Not reproduced: IDNA host names, `.`/`..` path segments and backslashes in URLs (rejected or
//! kept as written), RFC 5322 comments and groups and quoted local parts in the author list, and
//! the serde position suffix of an invalid `minimumKubewardenVersion`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use thiserror::Error;

use crate::commands::annotate::Metadata;

/// kwctl's comment header, byte for byte (the space after `artifacthub-pkg.yml` included).
pub const HEADER: &str = "# Kubewarden Artifacthub Package config
#
# Use this config to submit the policy to https://artifacthub.io.
#
# This config can be saved to its default location with:
#   kwctl scaffold artifacthub > artifacthub-pkg.yml ";

pub const VERSION: &str = "io.kubewarden.policy.version";
pub const TITLE: &str = "io.kubewarden.policy.title";
pub const DESCRIPTION: &str = "io.kubewarden.policy.description";
pub const AUTHOR: &str = "io.kubewarden.policy.author";
pub const URL: &str = "io.kubewarden.policy.url";
pub const SOURCE: &str = "io.kubewarden.policy.source";
pub const LICENSE: &str = "io.kubewarden.policy.license";
pub const OCI_URL: &str = "io.kubewarden.policy.ociUrl";
pub const HIDDEN_UI: &str = "io.kubewarden.hidden-ui";
pub const DISPLAY_NAME: &str = "io.artifacthub.displayName";
pub const RESOURCES: &str = "io.artifacthub.resources";
pub const KEYWORDS: &str = "io.artifacthub.keywords";
pub const RELEASE_TAG: &str = "com.github.release.tag";

/// The metadata file names kwctl looks for when `-m` is not given.
pub const METADATA_FILES: &[&str] = &["metadata.yml", "metadata.yaml"];
/// The questions file names kwctl looks for when `-q` is not given.
pub const QUESTIONS_FILES: &[&str] = &[
    "questions-ui.yml",
    "questions-ui.yaml",
    "questions.yml",
    "questions.yaml",
];

/// Why no package could be generated; the messages are kwctl's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ArtifactHubError {
    #[error("path to metadata file not provided, plus 'metadata.yml' not found")]
    NoMetadataFile,
    #[error("Error opening metadata file: {0}")]
    OpenMetadata(String),
    #[error("Error reading questions file: {0}")]
    ReadQuestions(String),
    #[error("Error unmarshalling metadata {0}")]
    Metadata(String),
    #[error("no annotations in policy metadata. policy metadata must specify annotations")]
    NoAnnotations,
    #[error("policy version must be in semver: {0}")]
    NoSemverVersion(String),
    #[error("questions-ui content cannot be empty")]
    EmptyQuestionsUI,
    #[error("policy metadata must specify \"{0}\" in annotations")]
    MissingAnnotation(&'static str),
    // kwctl quotes the Debug form of the key, hence the doubled quotes
    #[error("annotation \"{annot:?}\" in policy metadata must be a well formed URL: {error:?}")]
    MalformedURL { annot: &'static str, error: String },
    #[error("annotation \"{0}\" in policy metadata is malformed, must be csv values")]
    MalformedCSV(&'static str),
    #[error("annotation \"{0}\" in policy metadata is malformed, must be csv values of \"name <email>\"")]
    MalformedCSVEmail(&'static str),
    #[error("annotation \"{annot:?}\" in policy metadata must be a well formed email: {error:?}")]
    MalformedEmail { annot: &'static str, error: String },
    #[error("--created-at must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z, got {0:?}")]
    CreatedAt(String),
}

type Result<T> = std::result::Result<T, ArtifactHubError>;

/// `artifacthub-pkg.yml`, fields in kwctl's order (serde writes them in declaration order).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    version: String,
    name: String,
    display_name: String,
    created_at: String,
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    license: Option<String>,
    #[serde(rename = "homeURL", skip_serializing_if = "Option::is_none")]
    home_url: Option<String>,
    containers_images: Vec<NameImage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keywords: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    links: Option<Vec<Link>>,
    install: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    maintainers: Option<Vec<Maintainer>>,
    provider: Provider,
    recommendations: Vec<Recommendation>,
    annotations: BTreeMap<&'static str, String>,
}

#[derive(Debug, Serialize)]
struct NameImage {
    name: &'static str,
    image: String,
}

#[derive(Debug, PartialEq, Eq, Serialize)]
struct Link {
    name: &'static str,
    url: String,
}

#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct Maintainer {
    pub name: String,
    pub email: String,
}

#[derive(Debug, Serialize)]
struct Provider {
    name: &'static str,
}

#[derive(Debug, Serialize)]
struct Recommendation {
    url: &'static str,
}

/// `scaffold artifacthub` on files: `-m` (else `metadata.yml` / `metadata.yaml` in the current
/// directory, as kwctl), `-q` (else the first of [`QUESTIONS_FILES`] there), `--created-at`
/// (else now). Returns the file's text.
pub fn scaffold(
    metadata_path: Option<&Path>,
    questions_path: Option<&Path>,
    created_at: Option<&str>,
) -> Result<String> {
    let metadata_path = metadata_path
        .map(Path::to_path_buf)
        .or_else(|| find_file(METADATA_FILES))
        .ok_or(ArtifactHubError::NoMetadataFile)?;
    let metadata =
        std::fs::read_to_string(&metadata_path).map_err(|e| ArtifactHubError::OpenMetadata(e.to_string()))?;
    let questions = questions_path
        .map(Path::to_path_buf)
        .or_else(|| find_file(QUESTIONS_FILES))
        .map(|p| std::fs::read_to_string(p).map_err(|e| ArtifactHubError::ReadQuestions(e.to_string())))
        .transpose()?;
    let created_at = created_at.map_or_else(|| rfc3339_utc(SystemTime::now()), str::to_owned);
    generate(&metadata, questions.as_deref(), &created_at)
}

fn find_file(names: &[&str]) -> Option<PathBuf> {
    names.iter().map(PathBuf::from).find(|p| p.exists())
}

/// The whole file: metadata YAML (the `-m` file's text), the questions file's text, and the
/// `createdAt` value (RFC 3339; see [`rfc3339_utc`]).
pub fn generate(metadata_yaml: &str, questions: Option<&str>, created_at: &str) -> Result<String> {
    let metadata = Metadata::from_yaml(metadata_yaml).map_err(|e| match e {
        crate::commands::annotate::AnnotateError::Parse(source) => {
            ArtifactHubError::Metadata(source.to_string())
        }
        other => ArtifactHubError::Metadata(other.to_string()),
    })?;
    from_metadata(&metadata, questions, created_at)
}

/// [`generate`] for already parsed metadata.
pub fn from_metadata(metadata: &Metadata, questions: Option<&str>, created_at: &str) -> Result<String> {
    if !is_rfc3339(created_at) {
        return Err(ArtifactHubError::CreatedAt(created_at.to_owned()));
    }
    if let Some(v) = &metadata.minimum_kubewarden_version {
        // kwctl's Metadata holds a semver::Version: anything else fails to deserialise
        check_semver(v).map_err(|e| ArtifactHubError::Metadata(format!("minimumKubewardenVersion: {e}")))?;
    }
    let package = package(metadata, questions, created_at)?;
    let yaml = serde_yaml_ng::to_string(&package).expect("the package is plain strings, lists and maps");
    Ok(format!("{HEADER}\n{yaml}"))
}

/// Builds the package, checking in kwctl's order so the same input gives the same first error.
fn package(metadata: &Metadata, questions: Option<&str>, created_at: &str) -> Result<Package> {
    let annots = metadata
        .annotations
        .as_ref()
        .filter(|a| !a.is_empty())
        .ok_or(ArtifactHubError::NoAnnotations)?;
    let version = required(annots, VERSION)?;
    check_semver(version).map_err(ArtifactHubError::NoSemverVersion)?;
    if questions == Some("") {
        return Err(ArtifactHubError::EmptyQuestionsUI);
    }
    let name = required(annots, TITLE)?.to_owned();
    let display_name = required(annots, DISPLAY_NAME)?.to_owned();
    let description = required(annots, DESCRIPTION)?.to_owned();
    let home_url = annots.get(URL).map(|u| normalize_url(URL, u)).transpose()?;
    let image = oci_image(annots, version)?;
    Ok(Package {
        version: version.to_owned(),
        name,
        display_name,
        created_at: created_at.to_owned(),
        description,
        license: annots.get(LICENSE).cloned(),
        home_url,
        containers_images: vec![NameImage {
            name: "policy",
            image: image.clone(),
        }],
        keywords: keywords(annots)?,
        links: links(annots, version)?,
        install: install_text(&image),
        maintainers: annots.get(AUTHOR).map(|a| maintainers(a)).transpose()?,
        provider: Provider { name: "kubewarden" },
        recommendations: vec![Recommendation {
            url: "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller",
        }],
        annotations: kubewarden_annotations(annots, metadata, questions),
    })
}

fn required<'a>(annots: &'a BTreeMap<String, String>, key: &'static str) -> Result<&'a str> {
    annots
        .get(key)
        .map(String::as_str)
        .ok_or(ArtifactHubError::MissingAnnotation(key))
}

/// `<ociUrl>:v<version>`, normalised as an OCI reference (`docker.io/library/` for bare names).
fn oci_image(annots: &BTreeMap<String, String>, version: &str) -> Result<String> {
    let oci_url = required(annots, OCI_URL)?;
    normalize_reference(&format!("{oci_url}:v{version}")).map_err(|error| ArtifactHubError::MalformedURL {
        annot: OCI_URL,
        error: error.to_owned(),
    })
}

/// kwctl's install text; the scaffold command has no `--allow-context-aware` (kwctl adds none,
/// whatever the policy's contextAwareResources).
fn install_text(image: &str) -> String {
    format!(
        "The policy can be obtained using [kwctl](https://docs.kubewarden.io/howtos/install-kwctl):
```console
kwctl pull {image}
```
Then, generate the policy manifest and tune it to your liking. For example:
```console
kwctl scaffold manifest -t ClusterAdmissionPolicy registry://{image}
```
"
    )
}

/// `io.artifacthub.keywords` as a list; kwctl trims spaces only (not tabs) and refuses empty
/// entries.
fn keywords(annots: &BTreeMap<String, String>) -> Result<Option<Vec<String>>> {
    let Some(csv) = annots.get(KEYWORDS) else {
        return Ok(None);
    };
    let words: Vec<String> = csv.split(',').map(|w| w.trim_matches(' ').to_owned()).collect();
    if words.iter().any(String::is_empty) {
        return Err(ArtifactHubError::MalformedCSV(KEYWORDS));
    }
    Ok(Some(words))
}

/// `source`, preceded by the release's `policy.wasm` when the source is on github.com (the tag
/// is `com.github.release.tag`, form-urlencoded, else `v<version>`).
fn links(annots: &BTreeMap<String, String>, version: &str) -> Result<Option<Vec<Link>>> {
    let Some(source) = annots.get(SOURCE) else {
        return Ok(None);
    };
    let source = normalize_url(SOURCE, source)?;
    let source_link = Link {
        name: "source",
        url: source.clone(),
    };
    if url_host(&source) != Some("github.com") {
        return Ok(Some(vec![source_link]));
    }
    let release = match annots.get(RELEASE_TAG) {
        Some(tag) => form_urlencode(tag),
        None => format!("v{version}"),
    };
    let wasm = normalize_url(
        SOURCE,
        &format!("{source}/releases/download/{release}/policy.wasm"),
    )?;
    Ok(Some(vec![
        Link {
            name: "policy",
            url: wasm,
        },
        source_link,
    ]))
}

/// `kubewarden/*` annotations. The map is sorted, as kwctl's BTreeMap, so
/// `kubewarden/contextAwareResources` is first and `kubewarden/rules` last.
fn kubewarden_annotations(
    annots: &BTreeMap<String, String>,
    metadata: &Metadata,
    questions: Option<&str>,
) -> BTreeMap<&'static str, String> {
    let mut out = BTreeMap::new();
    out.insert("kubewarden/mutation", metadata.mutating.to_string());
    if !metadata.context_aware_resources.is_empty() {
        out.insert(
            "kubewarden/contextAwareResources",
            yaml_text(&metadata.context_aware_resources),
        );
    }
    out.insert("kubewarden/rules", yaml_text(&metadata.rules));
    if let Some(q) = questions {
        out.insert("kubewarden/questions-ui", q.to_owned());
    }
    // kwctl parses the value with `FromStr` into a String, so any text is copied as is
    if let Some(hidden) = annots.get(HIDDEN_UI) {
        out.insert("kubewarden/hidden-ui", hidden.clone());
    }
    if let Some(resources) = annots.get(RESOURCES) {
        out.insert("kubewarden/resources", resources.clone());
    }
    out
}

/// The rules and resources as the YAML text kwctl embeds (its own `serde_yaml_ng::to_string`).
fn yaml_text<T: Serialize>(value: &T) -> String {
    serde_yaml_ng::to_string(value).expect("rules and resources are strings and lists")
}

// === maintainers: an RFC 5322 address list ("Name <a@b>, Other <c@d>") ===

/// `io.kubewarden.policy.author` as maintainers, read as kwctl's mail-parser reads a `To:`
/// header (checked against kwctl 1.36): entries are split on commas outside quotes and angle
/// brackets, empty ones skipped; `name <address>` ignores what follows `>`; an entry without
/// brackets is an address (after an optional quoted name) when a comma follows it, and is dropped
/// when it is the last one. No entry at all is a malformed list.
pub fn maintainers(author: &str) -> Result<Vec<Maintainer>> {
    let parts = split_addresses(author);
    let last = parts.len() - 1;
    let found: Vec<Maintainer> = parts
        .into_iter()
        .enumerate()
        .filter_map(|(i, part)| maintainer(part.trim(), i < last))
        .collect::<Result<_>>()?;
    if found.is_empty() {
        return Err(ArtifactHubError::MalformedCSVEmail(AUTHOR));
    }
    Ok(found)
}

fn split_addresses(list: &str) -> Vec<&str> {
    let (mut parts, mut start, mut quoted, mut angle) = (Vec::new(), 0, false, false);
    for (i, c) in list.char_indices() {
        match c {
            '"' if !angle => quoted = !quoted,
            '<' if !quoted => angle = true,
            '>' if !quoted => angle = false,
            ',' if !quoted && !angle => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&list[start..]);
    parts
}

/// One entry; `None` when mail-parser yields no address for it.
fn maintainer(entry: &str, comma_follows: bool) -> Option<Result<Maintainer>> {
    let (name, address) = match entry.split_once('<') {
        Some((name, rest)) => {
            let address = rest.split_once('>').map_or(rest, |(a, _)| a);
            (unquote(name.trim()), address.trim())
        }
        None if entry.is_empty() || !comma_follows => return None,
        None => match quoted_prefix(entry) {
            Some((name, rest)) => (name, rest.trim()),
            None => (String::new(), entry),
        },
    };
    let checked = check_email(address).map_err(|error| ArtifactHubError::MalformedEmail {
        annot: AUTHOR,
        error: error.to_owned(),
    });
    Some(checked.map(|()| Maintainer {
        name,
        email: address.to_owned(),
    }))
}

/// `"quoted name" rest` as (name, rest).
fn quoted_prefix(entry: &str) -> Option<(String, &str)> {
    let inner = entry.strip_prefix('"')?;
    let end = inner.find('"')?;
    Some((inner[..end].to_owned(), &inner[end + 1..]))
}

fn unquote(name: &str) -> String {
    let inner = name
        .strip_prefix('"')
        .and_then(|n| n.strip_suffix('"'))
        .unwrap_or(name);
    inner.replace("\\\"", "\"").replace("\\\\", "\\")
}

/// The address checks of the `email_address` crate kwctl uses, in its order and words (quoted
/// local parts and domain literals are not accepted here).
fn check_email(address: &str) -> std::result::Result<(), &'static str> {
    let Some((local, domain)) = address.rsplit_once('@') else {
        return Err("Missing separator character '@'.");
    };
    let atext = |c: char| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii();
    if local.is_empty() {
        return Err("Local part is empty.");
    }
    if local.len() > 64 {
        return Err("Local part is too long. Length limit: 64");
    }
    if local
        .split('.')
        .any(|atom| atom.is_empty() || !atom.chars().all(atext))
    {
        return Err("Invalid character.");
    }
    if domain.is_empty() {
        return Err("Domain is empty.");
    }
    if domain.len() > 254 {
        return Err("Domain is too long. Length limit: 254");
    }
    for label in domain.split('.') {
        if label.is_empty() {
            return Err("A sub-domain is empty.");
        }
        let edges = label.starts_with(char::is_alphanumeric) && label.ends_with(char::is_alphanumeric);
        if !edges {
            return Err("Invalid character.");
        }
        if label.len() > 63 {
            return Err("A sub-domain is too long. Length limit: 63");
        }
        if !label.chars().all(atext) {
            return Err("Invalid character.");
        }
    }
    Ok(())
}

// === URLs, as the `url` crate serialises them ===

/// Schemes the WHATWG URL standard calls special, with their default ports.
const SPECIAL_SCHEMES: &[(&str, Option<u16>)] = &[
    ("http", Some(80)),
    ("https", Some(443)),
    ("ws", Some(80)),
    ("wss", Some(443)),
    ("ftp", Some(21)),
    ("file", None),
];

/// A URL as `Url::parse(..).to_string()` writes it: scheme and host lowercased, the default
/// port dropped, `/` for an empty path of a special scheme, spaces, quotes, angle brackets and
/// non-ASCII characters percent-encoded. The error texts are the `url` crate's.
pub fn normalize_url(annot: &'static str, input: &str) -> Result<String> {
    url_string(input.trim_matches(|c: char| c <= ' ')).map_err(|error| ArtifactHubError::MalformedURL {
        annot,
        error: error.to_owned(),
    })
}

fn url_string(input: &str) -> std::result::Result<String, &'static str> {
    // the url crate removes tabs and newlines anywhere
    let input: String = input
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let (scheme, rest) = input.split_once(':').ok_or("relative URL without a base")?;
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok {
        return Err("relative URL without a base");
    }
    let scheme = scheme.to_ascii_lowercase();
    let special = SPECIAL_SCHEMES.iter().find(|(s, _)| *s == scheme);
    let Some(after) = rest.strip_prefix("//") else {
        if special.is_some() && scheme != "file" {
            return Err("relative URL without a base");
        }
        return Ok(format!("{scheme}:{}", encode(rest, PATH_SET)));
    };
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, tail) = after.split_at(end);
    let authority = authority_string(authority, special.is_some(), special.and_then(|(_, port)| *port))?;
    if special.is_some_and(|(s, _)| *s != "file") && authority.is_empty() {
        return Err("empty host");
    }
    let tail = if special.is_some() && (tail.is_empty() || tail.starts_with(['?', '#'])) {
        format!("/{tail}")
    } else {
        tail.to_owned()
    };
    Ok(format!("{scheme}://{authority}{}", encode_tail(&tail)))
}

/// `user:password@host:port`: user and password percent-encoded apart, the host lowercased for
/// special schemes only (others keep an opaque host as written), the scheme's default port
/// dropped.
fn authority_string(
    authority: &str,
    special: bool,
    default_port: Option<u16>,
) -> std::result::Result<String, &'static str> {
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (host, port) = split_port(hostport);
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._~[]:".contains(c))
    {
        return Err("invalid domain character");
    }
    let mut out = String::new();
    if let Some(u) = userinfo {
        let parts: Vec<String> = u.splitn(2, ':').map(|p| encode(p, USERINFO_SET)).collect();
        out.push_str(&parts.join(":"));
        out.push('@');
    }
    out.push_str(&if special {
        host.to_ascii_lowercase()
    } else {
        host.to_owned()
    });
    match port {
        None | Some("") => {}
        Some(p) => {
            let n: u16 = p.parse().map_err(|_| "invalid port number")?;
            if Some(n) != default_port {
                out.push_str(&format!(":{n}"));
            }
        }
    }
    Ok(out)
}

/// `host:port` (an IPv6 host is bracketed) as (host, port).
fn split_port(hostport: &str) -> (&str, Option<&str>) {
    if let Some(close) = hostport.strip_prefix('[').and_then(|h| h.find(']')) {
        let end = close + 2;
        return (&hostport[..end], hostport[end..].strip_prefix(':'));
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (hostport, None),
    }
}

/// Path, query and fragment, each with its percent-encode set.
fn encode_tail(tail: &str) -> String {
    let (before_fragment, fragment) = match tail.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (tail, None),
    };
    let (path, query) = match before_fragment.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (before_fragment, None),
    };
    let mut out = encode(path, PATH_SET);
    if let Some(q) = query {
        out.push('?');
        out.push_str(&encode(q, QUERY_SET));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(&encode(f, FRAGMENT_SET));
    }
    out
}

const FRAGMENT_SET: &str = " \"<>`";
const QUERY_SET: &str = " \"#<>'";
const PATH_SET: &str = " \"#<>?`{}";
const USERINFO_SET: &str = " \"#<>?`{}/:;=@[\\]^|";

/// Percent-encodes controls, non-ASCII bytes and the characters of `set`.
fn encode(text: &str, set: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() && !c.is_ascii_control() && !set.contains(c) {
            out.push(c);
        } else {
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// The host of a normalised URL (`Url::host_str`).
fn url_host(url: &str) -> Option<&str> {
    let after = url.split_once("://")?.1;
    let authority = &after[..after.find(['/', '?', '#']).unwrap_or(after.len())];
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(hostport.rsplit_once(':').map_or(hostport, |(h, _)| h))
}

/// `application/x-www-form-urlencoded` bytes, as `url::form_urlencoded::byte_serialize`.
fn form_urlencode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

// === OCI references, as oci-spec parses and prints them ===

/// `name:tag` checked against the distribution reference grammar and printed with its registry
/// (`docker.io` when the first component is not a host, `library/` for Docker Hub's single-name
/// repositories). The error texts are oci-spec's.
pub fn normalize_reference(reference: &str) -> std::result::Result<String, &'static str> {
    if reference.is_empty() {
        return Err("repository name must have at least one component");
    }
    let last_slash = reference.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match reference[last_slash..].rfind(':') {
        Some(i) => (
            &reference[..last_slash + i],
            Some(&reference[last_slash + i + 1..]),
        ),
        None => (reference, None),
    };
    if !valid_name(name) || !tag.is_none_or(valid_tag) {
        return Err("invalid reference format");
    }
    let (registry, repository) = split_domain(name);
    if repository.len() > 255 {
        return Err("repository name must not be more than 255 characters");
    }
    Ok(format!("{registry}/{repository}:{}", tag.unwrap_or("latest")))
}

fn valid_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    let all_paths = |p: &[&str]| !p.is_empty() && p.iter().all(|c| valid_path_component(c));
    all_paths(&parts) || (parts.len() > 1 && valid_domain(parts[0]) && all_paths(&parts[1..]))
}

/// `[a-z0-9]+` joined by `.`, `_`, `__` or runs of `-`.
fn valid_path_component(component: &str) -> bool {
    let b = component.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !b.first().is_some_and(alnum) || !b.last().is_some_and(alnum) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|c| !alnum(c)).count();
        let sep = &component[i..i + run];
        let sep_ok = run == 0 || matches!(sep, "." | "_" | "__") || sep.bytes().all(|c| c == b'-');
        if !sep_ok {
            return false;
        }
        i += run.max(1);
    }
    true
}

/// Host labels (`[a-zA-Z0-9]`, inner `-`) joined by dots, with an optional `:port`.
fn valid_domain(domain: &str) -> bool {
    let (host, port) = match domain.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (domain, None),
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
    };
    host.split('.').all(label_ok)
        && port.is_none_or(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
}

/// `[\w][\w.-]{0,127}`.
fn valid_tag(tag: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    tag.chars().count() <= 128
        && tag.starts_with(word)
        && tag.chars().all(|c| word(c) || c == '.' || c == '-')
}

/// Docker's `splitDomain`.
fn split_domain(name: &str) -> (String, String) {
    let (mut domain, mut remainder) = match name.split_once('/') {
        Some((left, right)) if left.contains(['.', ':']) || left == "localhost" => {
            (left.to_owned(), right.to_owned())
        }
        _ => ("docker.io".to_owned(), name.to_owned()),
    };
    if domain == "index.docker.io" {
        domain = "docker.io".to_owned();
    }
    if domain == "docker.io" && !remainder.contains('/') {
        remainder = format!("library/{remainder}");
    }
    (domain, remainder)
}

// === semantic versions and timestamps ===

/// Where a semantic version failed to parse, in the `semver` crate's words.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    Major,
    Minor,
    Patch,
    Pre,
    Build,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Major => "major version number",
            Part::Minor => "minor version number",
            Part::Patch => "patch version number",
            Part::Pre => "pre-release identifier",
            Part::Build => "build metadata",
        }
    }
}

/// A semantic version as `semver::Version::parse` (what kwctl uses) accepts it, with its error
/// texts: `MAJOR.MINOR.PATCH` without leading zeros, optional `-pre.release` and `+build`.
pub fn check_semver(v: &str) -> std::result::Result<(), String> {
    if v.is_empty() {
        return Err("empty string, expected a semver version".into());
    }
    let mut rest = v;
    for part in [Part::Major, Part::Minor, Part::Patch] {
        rest = number(rest, part)?;
        if part != Part::Patch {
            rest = match rest.strip_prefix('.') {
                Some(r) => r,
                None => return Err(unexpected_after(rest, part)),
            };
        }
    }
    let mut part = Part::Patch;
    for (sign, next) in [('-', Part::Pre), ('+', Part::Build)] {
        if let Some(r) = rest.strip_prefix(sign) {
            part = next;
            rest = identifiers(r, part)?;
        }
    }
    match rest.chars().next() {
        None => Ok(()),
        Some(_) => Err(unexpected_after(rest, part)),
    }
}

fn unexpected_after(rest: &str, part: Part) -> String {
    match rest.chars().next() {
        Some(c) => format!("unexpected character {c:?} after {}", part.name()),
        None => format!("unexpected end of input while parsing {}", part.name()),
    }
}

/// A number without leading zero; returns what follows it.
fn number(input: &str, part: Part) -> std::result::Result<&str, String> {
    let len = input.bytes().take_while(u8::is_ascii_digit).count();
    let digits = &input[..len];
    match input.chars().next() {
        None => Err(format!("unexpected end of input while parsing {}", part.name())),
        Some(c) if len == 0 => Err(format!(
            "unexpected character {c:?} while parsing {}",
            part.name()
        )),
        _ if len > 1 && digits.starts_with('0') => Err(format!("invalid leading zero in {}", part.name())),
        _ if digits.parse::<u64>().is_err() => Err(format!("value of {} exceeds u64::MAX", part.name())),
        _ => Ok(&input[len..]),
    }
}

/// Dot-separated `[0-9A-Za-z-]+` identifiers (numeric pre-release ones without leading zero);
/// returns what follows them.
fn identifiers(input: &str, part: Part) -> std::result::Result<&str, String> {
    let mut rest = input;
    loop {
        let len = rest
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'-')
            .count();
        let segment = &rest[..len];
        if len == 0 {
            return Err(format!("empty identifier segment in {}", part.name()));
        }
        let numeric = segment.bytes().all(|c| c.is_ascii_digit());
        if part == Part::Pre && numeric && len > 1 && segment.starts_with('0') {
            return Err(format!("invalid leading zero in {}", part.name()));
        }
        match rest[len..].strip_prefix('.') {
            Some(r) => rest = r,
            None => return Ok(&rest[len..]),
        }
    }
}

/// `time`'s RFC 3339 form of a UTC instant, as kwctl writes `OffsetDateTime::now_utc()`:
/// `Z`, and the fraction only when there is one, without trailing zeros.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let day_secs = secs % 86_400;
    let mut out = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        day_secs / 3600,
        day_secs % 3600 / 60,
        day_secs % 60
    );
    let nanos = since.subsec_nanos();
    if nanos != 0 {
        out.push('.');
        out.push_str(format!("{nanos:09}").trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, fields in range.
pub fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let num = |range: std::ops::Range<usize>, max: u32| {
        s.get(range)
            .filter(|t| t.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|t| t.parse::<u32>().ok())
            .is_some_and(|n| n <= max)
    };
    let shape =
        b.len() >= 20 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':';
    let date_time = shape
        && num(0..4, 9999)
        && num(5..7, 12)
        && num(8..10, 31)
        && num(11..13, 23)
        && num(14..16, 59)
        && num(17..19, 60)
        && s[5..7] != *"00"
        && s[8..10] != *"00";
    if !date_time {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &frac[digits..];
    }
    rest == "Z"
        || (rest.len() == 6
            && rest.starts_with(['+', '-'])
            && rest.as_bytes()[3] == b':'
            && num(s.len() - 5..s.len() - 3, 23)
            && num(s.len() - 2..s.len(), 59))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_written_like_time_rfc3339() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::new(1_780_000_000, 120_000_000);
        assert_eq!(rfc3339_utc(t), "2026-05-28T20:26:40.12Z");
        let leap = UNIX_EPOCH + Duration::new(951_782_400, 7);
        assert_eq!(rfc3339_utc(leap), "2000-02-29T00:00:00.000000007Z");
        assert!(is_rfc3339("2026-11-30T00:00:00Z"));
        assert!(is_rfc3339("2023-01-19T14:46:21.5+02:00"));
        assert!(!is_rfc3339("2026-11-30 00:00:00Z"));
        assert!(!is_rfc3339("2026-13-30T00:00:00Z"));
        assert!(!is_rfc3339("2026-11-30T00:00:00"));
        assert!(!is_rfc3339("2026-11-30T00:00:00.Z"));
    }

    #[test]
    fn urls_are_normalised_like_the_url_crate() {
        let n = |u| url_string(u);
        assert_eq!(n("https://github.com/a/b"), Ok("https://github.com/a/b".into()));
        assert_eq!(n("HTTPS://GitHub.COM"), Ok("https://github.com/".into()));
        assert_eq!(
            n("https://example.com:443/x?q=a b#f g"),
            Ok("https://example.com/x?q=a%20b#f%20g".into())
        );
        assert_eq!(
            n("https://example.com:8443/é"),
            Ok("https://example.com:8443/%C3%A9".into())
        );
        assert_eq!(
            n("mailto:someone@example.com"),
            Ok("mailto:someone@example.com".into())
        );
        // checked against kwctl 1.36
        assert_eq!(
            n("https://user:pw@Example.com:443"),
            Ok("https://user:pw@example.com/".into())
        );
        assert_eq!(n("git://Host.example"), Ok("git://Host.example".into()));
        assert_eq!(n("http://[::1]:8080/x"), Ok("http://[::1]:8080/x".into()));
        assert_eq!(n("http://[::1]"), Ok("http://[::1]/".into()));
        assert_eq!(n("github.com/a/b"), Err("relative URL without a base"));
        assert_eq!(n("https://"), Err("empty host"));
        assert_eq!(n("https://example.com:99999/"), Err("invalid port number"));
        assert_eq!(url_host("https://u@github.com:8080/x"), Some("github.com"));
        assert_eq!(form_urlencode("linkerd/v0.1.0 rc"), "linkerd%2Fv0.1.0+rc");
    }

    #[test]
    fn references_are_normalised_like_oci_spec() {
        let r = normalize_reference;
        assert_eq!(r("ghcr.io/a/b:v0.1.0"), Ok("ghcr.io/a/b:v0.1.0".into()));
        assert_eq!(r("busybox:v1.0.0"), Ok("docker.io/library/busybox:v1.0.0".into()));
        assert_eq!(
            r("kubewarden/policy:v1.0.0"),
            Ok("docker.io/kubewarden/policy:v1.0.0".into())
        );
        assert_eq!(r("index.docker.io/x:v1"), Ok("docker.io/library/x:v1".into()));
        assert_eq!(
            r("localhost:5000/my_repo__x.y-z:v1"),
            Ok("localhost:5000/my_repo__x.y-z:v1".into())
        );
        assert_eq!(r("ghcr.io/Upper/b:v1"), Err("invalid reference format"));
        assert_eq!(r("ghcr.io/a/b:v1.0.0+build"), Err("invalid reference format"));
        assert_eq!(r("ghcr.io/a/b:latest:v1.0.0"), Err("invalid reference format"));
        assert_eq!(r("ghcr.io/a/-b:v1"), Err("invalid reference format"));
        assert_eq!(r("ghcr.io/a/b..c:v1"), Err("invalid reference format"));
    }

    #[test]
    fn authors_become_maintainers() {
        let m = |name: &str, email: &str| Maintainer {
            name: name.into(),
            email: email.into(),
        };
        assert_eq!(
            maintainers("Tux Tuxedo <tux@example.com>, Pidgin <pidgin@example.com>"),
            Ok(vec![
                m("Tux Tuxedo", "tux@example.com"),
                m("Pidgin", "pidgin@example.com")
            ])
        );
        assert_eq!(
            maintainers("\"Doe, Jane\" <jane@example.com>,,<x@example.com>"),
            Ok(vec![m("Doe, Jane", "jane@example.com"), m("", "x@example.com")])
        );
        assert_eq!(maintainers(""), Err(ArtifactHubError::MalformedCSVEmail(AUTHOR)));
        // mail-parser's reading, as kwctl 1.36 answers: a last bare entry is dropped, one
        // followed by a comma is an address, text after `>` is ignored
        assert_eq!(
            maintainers("x@example.com"),
            Err(ArtifactHubError::MalformedCSVEmail(AUTHOR))
        );
        assert_eq!(
            maintainers("Bar <b@e.com> trailing, x@example.com"),
            Ok(vec![m("Bar", "b@e.com")])
        );
        assert_eq!(
            maintainers("x@example.com, \"Foo Bar\" y@example.com,"),
            Ok(vec![m("", "x@example.com"), m("Foo Bar", "y@example.com")])
        );
        assert_eq!(
            maintainers("Foo Bar, Bar <b@e.com>").unwrap_err().to_string(),
            "annotation \"\"io.kubewarden.policy.author\"\" in policy metadata must be a well formed \
             email: \"Missing separator character '@'.\""
        );
        assert_eq!(
            maintainers("Foo missing@chevrons.com, Bar <bar@example.com>")
                .unwrap_err()
                .to_string(),
            "annotation \"\"io.kubewarden.policy.author\"\" in policy metadata must be a well formed \
             email: \"Invalid character.\""
        );
        assert!(matches!(
            maintainers("Bar <#$%#$%>"),
            Err(ArtifactHubError::MalformedEmail { .. })
        ));
    }

    #[test]
    fn versions_are_semver() {
        for ok in [
            "0.1.0",
            "1.35.0",
            "1.36.0-beta.1",
            "1.0.0-rc.1+build.5",
            "10.20.30",
        ] {
            assert_eq!(check_semver(ok), Ok(()), "{ok}");
        }
        // semver's words, as kwctl prints them
        let cases = [
            ("", "empty string, expected a semver version"),
            (
                "1.35",
                "unexpected end of input while parsing minor version number",
            ),
            (
                "v1.35.0",
                "unexpected character 'v' while parsing major version number",
            ),
            ("01.2.3", "invalid leading zero in major version number"),
            ("1.2.3-", "empty identifier segment in pre-release identifier"),
            ("1.2.3-01", "invalid leading zero in pre-release identifier"),
            ("1.2.3+", "empty identifier segment in build metadata"),
            ("1.2.3-a..b", "empty identifier segment in pre-release identifier"),
            ("1.2.3 ", "unexpected character ' ' after patch version number"),
            (
                "1.2.3-a_b",
                "unexpected character '_' after pre-release identifier",
            ),
            ("1,2.3", "unexpected character ',' after major version number"),
            (
                "99999999999999999999.0.0",
                "value of major version number exceeds u64::MAX",
            ),
        ];
        for (bad, message) in cases {
            assert_eq!(check_semver(bad), Err(message.to_owned()), "{bad:?}");
        }
    }
}
