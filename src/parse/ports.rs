//! Ports, port ranges and port lists as Linkerd reads them (`pkg/util/portrange.go`, `parsing.go`).

use std::fmt;

/// Why a string is not a port or port range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    /// More than one `-`.
    #[error("invalid port range {input:?}: expected \"<port>\" or \"<lower>-<upper>\"")]
    Shape { input: String },
    /// The part before the `-` is not a port.
    #[error("invalid port range {input:?}: lower bound {bound:?} is not a port from 0 to 65535")]
    Lower { input: String, bound: String },
    /// The part after the `-` is not a port.
    #[error("invalid port range {input:?}: upper bound {bound:?} is not a port from 0 to 65535")]
    Upper { input: String, bound: String },
    /// `lower-upper` with `upper < lower`.
    #[error("invalid port range {input:?}: upper bound {upper} is below lower bound {lower}")]
    Reversed { input: String, lower: u16, upper: u16 },
}

/// An inclusive range of ports; a single port has `lower == upper`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRange {
    pub lower: u16,
    pub upper: u16,
}

// === impl PortRange ===

impl PortRange {
    /// The range holding only `port`.
    pub const fn single(port: u16) -> Self {
        Self {
            lower: port,
            upper: port,
        }
    }
}

impl fmt::Display for PortRange {
    /// `80` for a single port, `8000-8080` otherwise (Linkerd's `PortRange.ToString`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lower == self.upper {
            write!(f, "{}", self.lower)
        } else {
            write!(f, "{}-{}", self.lower, self.upper)
        }
    }
}

/// Parses `N` or `lo-hi` like Linkerd's `util.ParsePortRange`.
///
/// The string is split on every `-`: more than two parts is an error, so a negative bound never
/// parses (`-1` is an empty lower bound). Each bound is read with Go's `Atoi` (sign and leading
/// zeros accepted, no whitespace) and must be in 0..=65535, with `lo <= hi`.
pub fn parse_port_range(s: &str) -> Result<PortRange, PortError> {
    match decimal_port(s) {
        Some(port) => Ok(PortRange::single(port)),
        None => parse_range(s),
    }
}

/// One to five ASCII digits up to 65535: the port [`parse_port_range`] reads, told without its
/// general parse (the opaque-ports list is checked on every admission that reads it).
fn decimal_port(entry: &str) -> Option<u16> {
    if entry.is_empty() || entry.len() > 5 {
        return None;
    }
    let n = entry.bytes().try_fold(0u32, |n, b| {
        b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0'))
    })?;
    u16::try_from(n).ok()
}

/// [`parse_port_range`] for any entry: Go's integers, `-` between two.
fn parse_range(s: &str) -> Result<PortRange, PortError> {
    let mut bounds = s.split('-');
    let lower = bounds.next().unwrap_or_default();
    let upper = bounds.next();
    if bounds.next().is_some() {
        return Err(PortError::Shape { input: s.to_owned() });
    }
    let upper = upper.unwrap_or(lower);
    let lower_port = atoi_port(lower).ok_or_else(|| PortError::Lower {
        input: s.to_owned(),
        bound: lower.to_owned(),
    })?;
    let upper_port = atoi_port(upper).ok_or_else(|| PortError::Upper {
        input: s.to_owned(),
        bound: upper.to_owned(),
    })?;
    if upper_port < lower_port {
        return Err(PortError::Reversed {
            input: s.to_owned(),
            lower: lower_port,
            upper: upper_port,
        });
    }
    Ok(PortRange {
        lower: lower_port,
        upper: upper_port,
    })
}

/// The entries of a comma-separated list, as `list.split(',')` gives them (empty ones and
/// spaces kept).
pub fn entries(list: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(list);
    std::iter::from_fn(move || {
        let text = rest?;
        match text.bytes().position(|b| b == b',') {
            Some(at) => {
                // a comma is ASCII: both sides are whole characters
                rest = text.get(at + 1..);
                text.get(..at)
            }
            None => rest.take(),
        }
    })
}

/// Parses a comma-separated list of ports and ranges strictly, for validating settings such as
/// `proxyInit.ignoreInboundPorts`.
///
/// Empty entries (`""`, `"80,"`, `"80,,81"`) are skipped. Entries are **not** trimmed: Linkerd's
/// proxy-init hands each comma-separated entry to `ParsePortRange` as is and silently drops the
/// ones that fail, so `"80, 81"` would lose port 81 at run time; here it is an error naming
/// `" 81"` instead. Order and duplicates are kept.
pub fn parse_port_ranges(list: &str) -> Result<Vec<PortRange>, (String, PortError)> {
    entries(list)
        .filter(|entry| !entry.is_empty())
        .map(|entry| parse_port_range(entry).map_err(|e| (entry.to_owned(), e)))
        .collect()
}

/// Reads the `config.linkerd.io/opaque-ports` annotation like Linkerd's
/// `util.ParseContainerOpaquePorts`; never fails.
///
/// Split on `,` (one trailing comma is harmless), each entry trimmed of whitespace, empty entries
/// skipped. An entry equal to a container port name resolves through `named_ports` to that
/// `containerPort` (names win over numbers: a port named `"80"` shadows port 80); other entries
/// must parse with [`parse_port_range`], and those that do not are dropped, as Linkerd drops them
/// with a warning. Order and duplicates are kept (Linkerd does not deduplicate).
pub fn parse_opaque_ports(value: &str, named_ports: impl Fn(&str) -> Option<u16>) -> Vec<PortRange> {
    entries(value)
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .filter_map(|entry| match named_ports(entry) {
            Some(port) => Some(PortRange::single(port)),
            None => parse_port_range(entry).ok(),
        })
        .collect()
}

/// Joins ranges with `,` as Linkerd re-serialises opaque ports: `"25,587,8000-8080"`.
pub fn format_port_ranges(ranges: &[PortRange]) -> String {
    ranges
        .iter()
        .map(PortRange::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A port like Linkerd's `util.ParsePort`: Go's `strconv.Atoi` restricted to 0..=65535 (a sign
/// and leading zeros accepted, `+80`, `-0`, `0080`; whitespace not).
fn atoi_port(s: &str) -> Option<u16> {
    super::go::parse_int(s).and_then(|n| u16::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::zero("0", Some(0))]
    #[case::max("65535", Some(65535))]
    #[case::leading_zeros("00080", Some(80))]
    #[case::above_max("65536", None)]
    #[case::five_nines("99999", None)]
    #[case::six_digits("000080", None)]
    #[case::empty("", None)]
    #[case::sign("+80", None)]
    #[case::range("80-81", None)]
    #[case::name("http", None)]
    fn decimal_ports(#[case] entry: &str, #[case] expected: Option<u16>) {
        assert_eq!(decimal_port(entry), expected);
    }

    proptest::proptest! {
        /// The shortcut changes no answer: every entry reads as the general parse reads it.
        #[test]
        fn a_decimal_port_is_the_general_parse(entry in "[0-9+-]{0,7}") {
            proptest::prop_assert_eq!(parse_port_range(&entry), parse_range(&entry));
        }

        /// The entries are `str::split`'s, whatever the text around the commas.
        #[test]
        fn entries_are_split_on_commas(list in "[,0-9 a\u{e9}\u{2028}-]{0,12}") {
            let split: Vec<&str> = list.split(',').collect();
            proptest::prop_assert_eq!(entries(&list).collect::<Vec<_>>(), split);
        }
    }

    const fn range(lower: u16, upper: u16) -> PortRange {
        PortRange { lower, upper }
    }

    #[rstest]
    #[case::zero("0", Some(0))]
    #[case::http("80", Some(80))]
    #[case::max("65535", Some(65535))]
    #[case::plus("+80", Some(80))]
    #[case::minus_zero("-0", Some(0))]
    #[case::leading_zeros("0080", Some(80))]
    #[case::above_max("65536", None)]
    #[case::negative("-1", None)]
    #[case::huge("99999999999999999999", None)]
    #[case::empty("", None)]
    #[case::padded(" 80 ", None)]
    #[case::range("80-81", None)]
    #[case::hex("0x50", None)]
    #[case::name("http", None)]
    #[case::unicode_digits("８０", None)]
    fn parses_ports(#[case] input: &str, #[case] expected: Option<u16>) {
        assert_eq!(atoi_port(input), expected);
    }

    #[rstest]
    #[case::single("80", range(80, 80))]
    #[case::zero("0", range(0, 0))]
    #[case::max("65535", range(65535, 65535))]
    #[case::pair("8000-8080", range(8000, 8080))]
    #[case::equal_bounds("80-80", range(80, 80))]
    #[case::full("0-65535", range(0, 65535))]
    #[case::signed_bounds("+1-+5", range(1, 5))]
    #[case::leading_zeros("010-020", range(10, 20))]
    fn parses_port_ranges(#[case] input: &str, #[case] expected: PortRange) {
        assert_eq!(parse_port_range(input), Ok(expected));
    }

    #[rstest]
    #[case::empty("", PortError::Lower { input: "".into(), bound: "".into() })]
    #[case::negative("-1", PortError::Lower { input: "-1".into(), bound: "".into() })]
    #[case::open_upper("5-", PortError::Upper { input: "5-".into(), bound: "".into() })]
    #[case::too_many_dashes("1-2-3", PortError::Shape { input: "1-2-3".into() })]
    #[case::double_dash("1--5", PortError::Shape { input: "1--5".into() })]
    #[case::above_max("65536", PortError::Lower { input: "65536".into(), bound: "65536".into() })]
    #[case::upper_above_max("1-65536", PortError::Upper { input: "1-65536".into(), bound: "65536".into() })]
    #[case::reversed("10-5", PortError::Reversed { input: "10-5".into(), lower: 10, upper: 5 })]
    #[case::padded(" 80 ", PortError::Lower { input: " 80 ".into(), bound: " 80 ".into() })]
    #[case::spaced_range("80 - 90", PortError::Lower { input: "80 - 90".into(), bound: "80 ".into() })]
    #[case::name("http", PortError::Lower { input: "http".into(), bound: "http".into() })]
    #[case::unicode("８０", PortError::Lower { input: "８０".into(), bound: "８０".into() })]
    #[case::huge("1-99999999999999999999999", PortError::Upper { input: "1-99999999999999999999999".into(), bound: "99999999999999999999999".into() })]
    fn rejects_bad_port_ranges(#[case] input: &str, #[case] expected: PortError) {
        assert_eq!(parse_port_range(input), Err(expected));
    }

    #[test]
    fn explains_range_errors() {
        assert_eq!(
            parse_port_range("10-5").map_err(|e| e.to_string()),
            Err(r#"invalid port range "10-5": upper bound 5 is below lower bound 10"#.to_owned())
        );
        assert_eq!(
            parse_port_range("1-2-3").map_err(|e| e.to_string()),
            Err(r#"invalid port range "1-2-3": expected "<port>" or "<lower>-<upper>""#.to_owned())
        );
    }

    #[rstest]
    #[case::empty("", vec![])]
    #[case::default_skip("4567,4568", vec![range(4567, 4567), range(4568, 4568)])]
    #[case::with_range("25,8000-8080", vec![range(25, 25), range(8000, 8080)])]
    #[case::trailing_comma("80,", vec![range(80, 80)])]
    #[case::empty_entries(",80,,81,", vec![range(80, 80), range(81, 81)])]
    #[case::duplicates_kept("81,80,81", vec![range(81, 81), range(80, 80), range(81, 81)])]
    fn parses_port_lists(#[case] input: &str, #[case] expected: Vec<PortRange>) {
        assert_eq!(parse_port_ranges(input), Ok(expected));
    }

    #[rstest]
    #[case::space_after_comma("80, 81", " 81")]
    #[case::reversed("80,10-5", "10-5")]
    #[case::name("80,http", "http")]
    #[case::too_big("65536", "65536")]
    #[case::negative("-1", "-1")]
    fn rejects_bad_port_lists(#[case] input: &str, #[case] bad_entry: &str) {
        let entry = parse_port_ranges(input).map_err(|(entry, _)| entry);
        assert_eq!(entry, Err(bad_entry.to_owned()));
    }

    fn named(name: &str) -> Option<u16> {
        match name {
            "http" => Some(8080),
            "admin" => Some(9990),
            "80" => Some(8081), // a port *named* "80"
            "1-2" => Some(12),  // names can look like ranges
            _ => None,
        }
    }

    #[rstest]
    #[case::empty("", vec![])]
    #[case::default_list(
        "25,587,3306,4444,5432,6379,9300,11211",
        [25, 587, 3306, 4444, 5432, 6379, 9300, 11211].map(PortRange::single).to_vec()
    )]
    #[case::range("8000-8080", vec![range(8000, 8080)])]
    #[case::named("http", vec![range(8080, 8080)])]
    #[case::name_shadows_number("80", vec![range(8081, 8081)])]
    #[case::name_shadows_range("1-2", vec![range(12, 12)])]
    #[case::trimmed(" http , 3306 ,\t9000-9001 ", vec![range(8080, 8080), range(3306, 3306), range(9000, 9001)])]
    #[case::trailing_comma("3306,", vec![range(3306, 3306)])]
    #[case::empty_entries(",,3306,,", vec![range(3306, 3306)])]
    #[case::invalid_dropped("3306,nope,10-5,65536,-1,4444", vec![range(3306, 3306), range(4444, 4444)])]
    #[case::order_and_duplicates_kept("4444,25,4444", vec![range(4444, 4444), range(25, 25), range(4444, 4444)])]
    #[case::unknown_name("grpc", vec![])]
    #[case::unicode_space("\u{a0}25\u{3000}", vec![range(25, 25)])]
    #[case::zero("0", vec![range(0, 0)])]
    fn parses_opaque_ports(#[case] input: &str, #[case] expected: Vec<PortRange>) {
        assert_eq!(parse_opaque_ports(input, named), expected);
    }

    #[test]
    fn empty_entries_are_never_looked_up_as_names() {
        let ranges = parse_opaque_ports(" , ,", |name| {
            assert!(!name.is_empty());
            Some(1)
        });
        assert_eq!(ranges, vec![]);
    }

    #[rstest]
    #[case::empty(&[], "")]
    #[case::single(&[range(80, 80)], "80")]
    #[case::mixed(&[range(25, 25), range(8000, 8080), range(0, 0)], "25,8000-8080,0")]
    fn formats_port_lists(#[case] ranges: &[PortRange], #[case] expected: &str) {
        assert_eq!(format_port_ranges(ranges), expected);
    }

    #[test]
    fn round_trips_the_annotation() {
        let value = " 25, http,8000-8080,bogus,";
        assert_eq!(
            format_port_ranges(&parse_opaque_ports(value, named)),
            "25,8080,8000-8080"
        );
    }

    #[test]
    fn a_single_port_is_written_alone() {
        assert_eq!(PortRange::single(7).to_string(), "7");
    }
}
