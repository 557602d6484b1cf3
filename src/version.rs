//! Linkerd release tags, the window of edge releases this policy renders exactly, the injector
//! changes inside that window, and which release's injector renders a given `linkerdVersion`.
//!
//! Pure: no settings, no admission types. The caller passes `linkerdVersion` of the values in
//! effect and the `policy.renderVersion` pin.
#![forbid(unsafe_code)]

use std::fmt;

/// An edge release, `edge-YY.M.N`, ordered by release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    year: u16,
    month: u16,
    n: u16,
}

impl Edge {
    pub const fn new(year: u16, month: u16, n: u16) -> Self {
        Self { year, month, n }
    }

    /// `config.linkerd.io/proxy-additional-env` is read (and inherited from the namespace);
    /// before, Linkerd's injector did not know the annotation (linkerd2#15156).
    pub fn reads_additional_env_annotation(self) -> bool {
        self >= ADDITIONAL_ENV_ANNOTATION
    }

    /// Whether this release's injector knows `key` (reads it, passes it down from the namespace).
    pub fn knows_annotation(self, key: &str) -> bool {
        key != crate::annotations::ADDITIONAL_ENV || self.reads_additional_env_annotation()
    }

    /// The chart's `proxy.nativeSidecar` default is `true` (linkerd2#15267).
    pub fn native_sidecar_by_default(self) -> bool {
        self >= NATIVE_SIDECAR_DEFAULT
    }

    /// `LINKERD2_PROXY_TRACE_COLLECTOR_SVC_NAME` ends in the trust domain; before, in the
    /// cluster domain (linkerd2#15404).
    pub fn trace_collector_identity_from_trust_domain(self) -> bool {
        self >= TRACE_COLLECTOR_TRUST_DOMAIN
    }

    /// Inside [`OLDEST`]..=[`NEWEST`].
    pub fn in_window(self) -> bool {
        (OLDEST..=NEWEST).contains(&self)
    }
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "edge-{}.{}.{}", self.year, self.month, self.n)
    }
}

/// The oldest and newest releases whose injector this policy renders exactly.
pub const OLDEST: Edge = Edge::new(26, 1, 1);
pub const NEWEST: Edge = Edge::new(26, 8, 3);

/// First releases with each injector change (Linkerd's history).
pub const ADDITIONAL_ENV_ANNOTATION: Edge = Edge::new(26, 4, 3);
pub const NATIVE_SIDECAR_DEFAULT: Edge = Edge::new(26, 5, 2);
pub const TRACE_COLLECTOR_TRUST_DOMAIN: Edge = Edge::new(26, 7, 1);

/// What a version string is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    Edge(Edge),
    /// `stable-X.Y.Z`: the stable channel, older than every edge release in the window.
    Stable,
    /// Not a release tag: a development build (`dev-undefined`, `git-…`, `edge-26.8.3-1-g…`)
    /// or a placeholder of Linkerd's goldens (`install-control-plane-version`).
    Other,
}

impl Tag {
    pub fn parse(s: &str) -> Self {
        if let Some([year, month, n]) = s.strip_prefix("edge-").and_then(numbers) {
            Tag::Edge(Edge::new(year, month, n))
        } else if s.strip_prefix("stable-").and_then(numbers).is_some() {
            Tag::Stable
        } else {
            Tag::Other
        }
    }
}

/// `A.B.C` of decimal numbers, nothing else (no sign, no suffix).
fn numbers(s: &str) -> Option<[u16; 3]> {
    let mut parts = s.split('.').map(|p| {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<u16>().ok())
            .flatten()
    });
    let out = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(out)
}

/// Which release's injector renders, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendering {
    pub version: Edge,
    pub basis: Basis,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Basis {
    /// `linkerdVersion` is a release inside the window.
    Values,
    /// `policy.renderVersion` chose it.
    Pinned,
    /// `linkerdVersion` is not a release tag: the newest rendering, as Linkerd's own
    /// development builds and fixtures are the current code.
    NotARelease,
    /// `linkerdVersion` is a release outside the window (this string): the newest rendering.
    OutsideWindow(String),
}

impl Rendering {
    /// The rendering for `linkerd_version`, unless `pin` chooses one.
    pub fn of(linkerd_version: &str, pin: Option<Edge>) -> Self {
        let (version, basis) = match (pin, Tag::parse(linkerd_version)) {
            (Some(pinned), _) => (pinned, Basis::Pinned),
            (None, Tag::Edge(e)) if e.in_window() => (e, Basis::Values),
            (None, Tag::Other) => (NEWEST, Basis::NotARelease),
            (None, Tag::Edge(_) | Tag::Stable) => (NEWEST, Basis::OutsideWindow(linkerd_version.to_string())),
        };
        Self { version, basis }
    }

    /// The release `linkerdVersion` names when it is outside the window.
    pub fn outside_window(&self) -> Option<&str> {
        match &self.basis {
            Basis::OutsideWindow(v) => Some(v),
            _ => None,
        }
    }

    /// The `rendering` audit annotation when the rendering is not the values' release:
    /// both versions, so an audit log shows what was rendered for what.
    pub fn audit_note(&self) -> Option<String> {
        self.outside_window().map(|theirs| {
            format!(
                "{} for linkerdVersion {theirs} (outside {})",
                self.version,
                window()
            )
        })
    }
}

/// `edge-26.1.1 to edge-26.8.3`, for messages.
pub fn window() -> String {
    format!("{OLDEST} to {NEWEST}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const fn e(year: u16, month: u16, n: u16) -> Edge {
        Edge::new(year, month, n)
    }

    #[rstest]
    #[case::edge("edge-26.5.1", Tag::Edge(e(26, 5, 1)))]
    #[case::edge_two_digit_month("edge-26.12.10", Tag::Edge(e(26, 12, 10)))]
    #[case::edge_2025("edge-25.12.3", Tag::Edge(e(25, 12, 3)))]
    #[case::stable("stable-2.14.0", Tag::Stable)]
    #[case::stable_patch("stable-2.14.10", Tag::Stable)]
    #[case::dev_undefined("dev-undefined", Tag::Other)]
    #[case::install_placeholder("install-control-plane-version", Tag::Other)]
    #[case::helm_placeholder("linkerd-version", Tag::Other)]
    #[case::cli_placeholder("test-inject-control-plane-version", Tag::Other)]
    #[case::git_describe("edge-26.8.3-1-gb24cd4059", Tag::Other)]
    #[case::git_sha("git-b24cd405", Tag::Other)]
    #[case::two_parts("edge-26.8", Tag::Other)]
    #[case::four_parts("edge-26.8.3.1", Tag::Other)]
    #[case::empty_part("edge-26..3", Tag::Other)]
    #[case::signed("edge-+26.8.3", Tag::Other)]
    #[case::too_big("edge-70000.1.1", Tag::Other)]
    #[case::v_prefix("v2.14.0", Tag::Other)]
    #[case::stable_rc("stable-2.14.0-rc1", Tag::Other)]
    #[case::uppercase("EDGE-26.8.3", Tag::Other)]
    #[case::empty("", Tag::Other)]
    fn parses(#[case] s: &str, #[case] tag: Tag) {
        assert_eq!(Tag::parse(s), tag);
    }

    #[rstest]
    #[case::patch(e(26, 4, 2), e(26, 4, 3))]
    #[case::month_before_patch(e(26, 4, 9), e(26, 5, 1))]
    #[case::numeric_not_textual(e(26, 9, 1), e(26, 10, 1))]
    #[case::year(e(25, 12, 3), e(26, 1, 1))]
    fn orders(#[case] older: Edge, #[case] newer: Edge) {
        assert!(older < newer);
    }

    #[rstest]
    #[case::before_oldest(e(25, 12, 3), false)]
    #[case::oldest(e(26, 1, 1), true)]
    #[case::inside(e(26, 5, 1), true)]
    #[case::newest(e(26, 8, 3), true)]
    #[case::after_newest(e(26, 8, 4), false)]
    #[case::next_month(e(26, 9, 1), false)]
    fn window_bounds(#[case] v: Edge, #[case] inside: bool) {
        assert_eq!(v.in_window(), inside);
    }

    /// Each change on both sides of its first tag: (additional-env, native default, trust domain).
    #[rstest]
    #[case::oldest(e(26, 1, 1), [false, false, false])]
    #[case::before_additional_env(e(26, 4, 2), [false, false, false])]
    #[case::additional_env(e(26, 4, 3), [true, false, false])]
    #[case::before_native_default(e(26, 5, 1), [true, false, false])]
    #[case::native_default(e(26, 5, 2), [true, true, false])]
    #[case::before_trust_domain(e(26, 6, 3), [true, true, false])]
    #[case::trust_domain(e(26, 7, 1), [true, true, true])]
    #[case::newest(e(26, 8, 3), [true, true, true])]
    fn changes(#[case] v: Edge, #[case] has: [bool; 3]) {
        assert_eq!(
            [
                v.reads_additional_env_annotation(),
                v.native_sidecar_by_default(),
                v.trace_collector_identity_from_trust_domain(),
            ],
            has
        );
    }

    #[rstest]
    #[case::in_window("edge-26.5.1", None, e(26, 5, 1), Basis::Values)]
    #[case::oldest("edge-26.1.1", None, e(26, 1, 1), Basis::Values)]
    #[case::newest("edge-26.8.3", None, NEWEST, Basis::Values)]
    #[case::dev_undefined("dev-undefined", None, NEWEST, Basis::NotARelease)]
    #[case::placeholder("install-control-plane-version", None, NEWEST, Basis::NotARelease)]
    #[case::edge_2025("edge-25.12.3", None, NEWEST, Basis::OutsideWindow("edge-25.12.3".into()))]
    #[case::newer_edge("edge-26.9.1", None, NEWEST, Basis::OutsideWindow("edge-26.9.1".into()))]
    #[case::stable("stable-2.14.0", None, NEWEST, Basis::OutsideWindow("stable-2.14.0".into()))]
    #[case::pin_over_placeholder("dev-undefined", Some(e(26, 5, 1)), e(26, 5, 1), Basis::Pinned)]
    #[case::pin_over_release("edge-26.8.3", Some(e(26, 4, 2)), e(26, 4, 2), Basis::Pinned)]
    #[case::pin_over_outside("stable-2.14.0", Some(e(26, 8, 3)), NEWEST, Basis::Pinned)]
    fn rendering(
        #[case] values: &str,
        #[case] pin: Option<Edge>,
        #[case] version: Edge,
        #[case] basis: Basis,
    ) {
        assert_eq!(Rendering::of(values, pin), Rendering { version, basis });
    }

    #[rstest]
    #[case::additional_env_before(e(26, 4, 2), crate::annotations::ADDITIONAL_ENV, false)]
    #[case::additional_env_from(e(26, 4, 3), crate::annotations::ADDITIONAL_ENV, true)]
    #[case::other_key_oldest(OLDEST, crate::annotations::PROXY_IMAGE, true)]
    fn knows_annotations(#[case] v: Edge, #[case] key: &str, #[case] known: bool) {
        assert_eq!(v.knows_annotation(key), known);
    }

    #[test]
    fn audit_note_names_both_versions_only_outside_the_window() {
        assert_eq!(
            Rendering::of("edge-26.9.1", None).audit_note().as_deref(),
            Some("edge-26.8.3 for linkerdVersion edge-26.9.1 (outside edge-26.1.1 to edge-26.8.3)")
        );
        for quiet in [
            Rendering::of("edge-26.5.1", None),
            Rendering::of("dev-undefined", None),
            Rendering::of("edge-26.9.1", Some(e(26, 5, 1))),
        ] {
            assert_eq!(quiet.audit_note(), None, "{quiet:?}");
        }
    }

    #[test]
    fn displays_as_the_tag() {
        assert_eq!(NEWEST.to_string(), "edge-26.8.3");
        assert_eq!(window(), "edge-26.1.1 to edge-26.8.3");
        assert_eq!(Tag::parse(&OLDEST.to_string()), Tag::Edge(OLDEST));
    }
}
