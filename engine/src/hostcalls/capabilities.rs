//! The host-capability allow-list (`--allowed-host-capabilities`, a PolicyServer's
//! `hostCapabilities`): which `namespace/operation` paths a policy may call. Patterns are `*`,
//! a known path prefix ending in `/*` (`oci/*`, `oci/v1/*`) or an exact known path; anything
//! else is refused when the list is built, as policy-evaluator does. `tracing/log` is never gated.

use std::collections::BTreeSet;

use thiserror::Error;

/// Every host-capability path policy-evaluator knows.
pub const KNOWN_PATHS: &[&str] = &[
    "crypto/v1/is_certificate_trusted",
    "kubernetes/can_i",
    "kubernetes/get_resource",
    "kubernetes/list_resources_all",
    "kubernetes/list_resources_by_namespace",
    "net/v1/dns_lookup_host",
    "oci/v1/manifest_digest",
    "oci/v1/oci_manifest",
    "oci/v1/oci_manifest_config",
    "oci/v1/verify",
    "oci/v2/verify",
];

#[derive(Debug, Error, PartialEq, Eq)]
pub enum CapabilityError {
    #[error("invalid host capability pattern: pattern must not be empty")]
    Empty,
    #[error(
        "invalid host capability pattern {0:?}: wildcard '*' must be the entire last path segment (e.g. 'oci/*')"
    )]
    Wildcard(String),
    #[error("invalid host capability pattern {pattern:?}: unknown path; known paths: {known}")]
    Unknown { pattern: String, known: String },
}

/// What a policy may call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HostCapabilities {
    /// Everything (`*`): what the controller writes for cluster-wide policies.
    #[default]
    AllowAll,
    Patterns {
        prefixes: BTreeSet<String>,
        exact: BTreeSet<String>,
    },
}

impl HostCapabilities {
    /// Builds the list from patterns; an empty list denies everything.
    pub fn new<S: AsRef<str>>(patterns: impl IntoIterator<Item = S>) -> Result<Self, CapabilityError> {
        let mut prefixes = BTreeSet::new();
        let mut exact = BTreeSet::new();
        for pattern in patterns {
            let p = pattern.as_ref().trim();
            if p.is_empty() {
                return Err(CapabilityError::Empty);
            }
            if p == "*" {
                return Ok(Self::AllowAll);
            }
            match p.strip_suffix('*') {
                Some(prefix) if prefix.ends_with('/') && !prefix.contains('*') => {
                    check_known(p, |known| known.starts_with(prefix))?;
                    prefixes.insert(prefix.to_owned());
                }
                Some(_) => return Err(CapabilityError::Wildcard(p.to_owned())),
                None if p.contains('*') => return Err(CapabilityError::Wildcard(p.to_owned())),
                None => {
                    check_known(p, |known| known == p)?;
                    exact.insert(p.to_owned());
                }
            }
        }
        Ok(Self::Patterns { prefixes, exact })
    }

    /// Whether a call to `path` (`namespace/operation`) is allowed.
    pub fn allows(&self, path: &str) -> bool {
        match self {
            Self::AllowAll => true,
            Self::Patterns { prefixes, exact } => {
                exact.contains(path) || prefixes.iter().any(|p| path.starts_with(p.as_str()))
            }
        }
    }
}

fn check_known(pattern: &str, matches: impl Fn(&str) -> bool) -> Result<(), CapabilityError> {
    if KNOWN_PATHS.iter().any(|k| matches(k)) {
        Ok(())
    } else {
        Err(CapabilityError::Unknown {
            pattern: pattern.to_owned(),
            known: KNOWN_PATHS.join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::all(&["*"], "oci/v1/verify", true)]
    #[case::prefix(&["kubernetes/*"], "kubernetes/get_resource", true)]
    #[case::other_prefix(&["oci/*"], "kubernetes/get_resource", false)]
    #[case::versioned_prefix(&["oci/v1/*"], "oci/v2/verify", false)]
    #[case::exact(&["kubernetes/get_resource"], "kubernetes/get_resource", true)]
    #[case::exact_other(&["kubernetes/get_resource"], "kubernetes/can_i", false)]
    #[case::empty_list_denies(&[], "kubernetes/get_resource", false)]
    fn allows(#[case] patterns: &[&str], #[case] path: &str, #[case] expected: bool) {
        assert_eq!(HostCapabilities::new(patterns).unwrap().allows(path), expected);
    }

    #[rstest]
    #[case::empty("", CapabilityError::Empty)]
    #[case::partial_wildcard("oci/v*", CapabilityError::Wildcard("oci/v*".into()))]
    #[case::inner_wildcard("oci/*/verify", CapabilityError::Wildcard("oci/*/verify".into()))]
    #[case::unknown("kubernetes/get", CapabilityError::Unknown { pattern: "kubernetes/get".into(), known: KNOWN_PATHS.join(", ") })]
    #[case::unknown_prefix("dns/*", CapabilityError::Unknown { pattern: "dns/*".into(), known: KNOWN_PATHS.join(", ") })]
    fn refuses(#[case] pattern: &str, #[case] expected: CapabilityError) {
        assert_eq!(HostCapabilities::new([pattern]).unwrap_err(), expected);
    }
}
