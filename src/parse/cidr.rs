//! CIDR blocks as Go's `net.ParseCIDR` reads them (Go 1.22+, built on `net/netip`).

use std::fmt;
use std::net::IpAddr;

/// Why a string is not a CIDR block.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// No `/`.
    #[error("invalid CIDR {input:?}: expected <address>/<prefix length>, e.g. \"10.0.0.0/8\"")]
    MissingPrefix { input: String },
    /// The part before the `/` is not an IP address.
    #[error("invalid CIDR {input:?}: {reason}")]
    Address { input: String, reason: &'static str },
    /// The part after the `/` is not a decimal number within the address size.
    #[error("invalid CIDR {input:?}: prefix length must be a decimal number from 0 to {max}")]
    PrefixLength { input: String, max: u8 },
}

/// An address with a prefix length, as written (host bits are kept; see [`Cidr::network`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

// === impl Cidr ===

impl Cidr {
    /// The address with its host bits cleared (Go's `IPNet.IP`).
    #[cfg(test)]
    pub fn network(&self) -> IpAddr {
        use std::net::{Ipv4Addr, Ipv6Addr};
        match self.addr {
            IpAddr::V4(v4) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Parses `<address>/<prefix length>` like Go's `net.ParseCIDR`.
///
/// * IPv4 is a dotted quad of decimal octets without leading zeros (`010.0.0.0/8` is rejected,
///   as Go does since 1.17); the prefix length is at most 32.
/// * IPv6 is any RFC 4291 text form (`::/0`, `fd00::/8`, `::ffff:10.0.0.1/104`), at most four hex
///   digits a group; the prefix length is at most 128, also for IPv4-mapped addresses, which stay
///   IPv6. Zones (`fe80::1%eth0`) are rejected.
/// * The prefix length is decimal digits only (leading zeros accepted, no sign).
/// * Nothing is trimmed: surrounding whitespace is an error.
pub fn parse_cidr(s: &str) -> Result<Cidr, CidrError> {
    let Some((addr, prefix)) = s.split_once('/') else {
        return Err(CidrError::MissingPrefix { input: s.to_owned() });
    };
    let addr = parse_addr(addr).map_err(|reason| CidrError::Address {
        input: s.to_owned(),
        reason,
    })?;
    let max: u8 = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = parse_prefix(prefix)
        .filter(|&p| p <= max)
        .ok_or_else(|| CidrError::PrefixLength {
            input: s.to_owned(),
            max,
        })?;
    Ok(Cidr { addr, prefix })
}

/// Parses a comma-separated CIDR list the way Linkerd validates `clusterNetworks`.
///
/// `""` is an empty list. Otherwise leading and trailing commas are dropped (all of them, Go's
/// `strings.Trim(s, ",")`) and every remaining entry must be a CIDR: entries are not trimmed and
/// an empty entry in the middle is an error. The error gives the entry's index in that list, the
/// entry and the reason.
pub fn parse_cidr_list(s: &str) -> Result<Vec<Cidr>, (usize, String, CidrError)> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    s.trim_matches(',')
        .split(',')
        .enumerate()
        .map(|(i, entry)| parse_cidr(entry).map_err(|e| (i, entry.to_owned(), e)))
        .collect()
}

/// Go's `dtoi` on the whole string: at least one digit, nothing else (std's parser would also
/// take a `+`).
fn parse_prefix(s: &str) -> Option<u8> {
    if s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// Go's `netip.ParseAddr` as `net.ParseCIDR` uses it: std's parser, which has Go's grammar.
///
/// Both reject leading zeros in IPv4 octets (also in an IPv6 address's embedded IPv4), allow at
/// most four hex digits an IPv6 group and an embedded IPv4 only as the last 32 bits, and need
/// `::` to stand for at least one group. They differ on zones: Go's `ParseAddr` accepts
/// `fe80::1%eth0` and `ParseCIDR` then rejects it; std has no zone syntax, which is the same
/// answer. Std's error carries no reason, so [`why_not_an_address`] gives one.
fn parse_addr(s: &str) -> Result<IpAddr, &'static str> {
    s.parse().map_err(|_| why_not_an_address(s))
}

/// Why std refused `s`, in Go's words where the cause is one a user is likely to have written.
fn why_not_an_address(s: &str) -> &'static str {
    // Go's rule: the first `.` or `:` says which family was meant.
    let is_ipv4 = s.bytes().find(|b| matches!(b, b'.' | b':')) == Some(b'.');
    let leading_zero = |f: &str| f.len() > 1 && f.starts_with('0') && f.bytes().all(|b| b.is_ascii_digit());
    if s.contains('%') {
        "IPv6 zones are not allowed"
    } else if is_ipv4 && s.split('.').any(leading_zero) {
        "IPv4 field has a leading zero"
    } else if is_ipv4 {
        "expected an IPv4 address of 4 decimal fields from 0 to 255"
    } else if s.contains(':') {
        "expected an IPv6 address: 8 groups of 1 to 4 hex digits, at most one `::`, \
         an embedded IPv4 address only at the end"
    } else {
        "expected an IPv4 or IPv6 address"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::net::Ipv4Addr;

    fn cidr(addr: &str, prefix: u8) -> Cidr {
        Cidr {
            addr: addr.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            prefix,
        }
    }

    #[rstest]
    #[case::ten("10.0.0.0/8", cidr("10.0.0.0", 8))]
    #[case::cgnat("100.64.0.0/10", cidr("100.64.0.0", 10))]
    #[case::host_bits_kept("192.168.1.7/16", cidr("192.168.1.7", 16))]
    #[case::v4_all("0.0.0.0/0", cidr("0.0.0.0", 0))]
    #[case::v4_host("255.255.255.255/32", cidr("255.255.255.255", 32))]
    #[case::prefix_leading_zeros("10.0.0.0/008", cidr("10.0.0.0", 8))]
    #[case::v6_all("::/0", cidr("::", 0))]
    #[case::ula("fd00::/8", cidr("fd00::", 8))]
    #[case::v6_host("::1/128", cidr("::1", 128))]
    #[case::v6_full("2001:db8:0:0:0:0:0:1/64", cidr("2001:db8::1", 64))]
    #[case::v6_upper("FD00:ABCD::/32", cidr("fd00:abcd::", 32))]
    #[case::v6_trailing_ellipsis("1:2:3:4:5:6:7::/112", cidr("1:2:3:4:5:6:7:0", 112))]
    #[case::v6_leading_zero_groups("0001:0db8::/32", cidr("1:db8::", 32))]
    #[case::mapped("::ffff:10.0.0.1/104", cidr("::ffff:10.0.0.1", 104))]
    #[case::mapped_full_prefix("::ffff:10.0.0.1/128", cidr("::ffff:10.0.0.1", 128))]
    #[case::embedded_v4_full("0:0:0:0:0:ffff:1.2.3.4/96", cidr("::ffff:1.2.3.4", 96))]
    #[case::embedded_v4_compat("::1.2.3.4/96", cidr("::102:304", 96))]
    fn parses_cidrs(#[case] input: &str, #[case] expected: Cidr) {
        assert_eq!(parse_cidr(input), Ok(expected));
    }

    #[rstest]
    #[case::no_prefix("10.0.0.0")]
    #[case::empty("")]
    #[case::empty_prefix("10.0.0.0/")]
    #[case::empty_addr("/8")]
    #[case::v4_prefix_too_long("10.0.0.0/33")]
    #[case::v6_prefix_too_long("::/129")]
    #[case::huge_prefix("10.0.0.0/99999999999999999999")]
    #[case::signed_prefix("10.0.0.0/+8")]
    #[case::negative_prefix("10.0.0.0/-1")]
    #[case::mask_prefix("10.0.0.0/255.0.0.0")]
    #[case::two_slashes("10.0.0.0/8/8")]
    #[case::leading_zero_octet("010.0.0.0/8")]
    #[case::octet_too_big("256.0.0.0/8")]
    #[case::three_octets("10.0.0/8")]
    #[case::five_octets("10.0.0.0.0/8")]
    #[case::empty_octet("10..0.0/8")]
    #[case::trailing_dot("10.0.0./8")]
    #[case::leading_space(" 10.0.0.0/8")]
    #[case::trailing_space("10.0.0.0/8 ")]
    #[case::space_before_slash("10.0.0.0 /8")]
    #[case::hostname("localhost/8")]
    #[case::zone("fe80::1%eth0/64")]
    #[case::empty_zone("fe80::1%/64")]
    #[case::v4_zone("1.2.3.4%eth0/8")]
    #[case::five_hex_digits("fd000::/8")]
    #[case::too_many_groups("1:2:3:4:5:6:7:8:9/64")]
    #[case::too_few_groups("1:2:3:4:5:6:7/64")]
    #[case::two_ellipses("1::2::3/64")]
    #[case::ellipsis_with_full_groups("1:2:3:4:5:6:7:8::/64")]
    #[case::single_leading_colon(":1::/64")]
    #[case::single_trailing_colon("1::2:/64")]
    #[case::triple_colon(":::/64")]
    #[case::misplaced_v4("1.2.3.4::/64")]
    #[case::v4_not_last("::1.2.3.4:5/64")]
    #[case::v4_without_ellipsis("1:2:3:4:5:1.2.3.4/64")]
    #[case::mapped_leading_zero("::ffff:010.0.0.1/104")]
    #[case::unicode_digits("١٠.0.0.0/8")]
    #[case::fullwidth_slash("10.0.0.0／8")]
    fn rejects_bad_cidrs(#[case] input: &str) {
        assert!(parse_cidr(input).is_err(), "{input:?}");
    }

    #[test]
    fn explains_errors() {
        let message = |s: &str| parse_cidr(s).map_err(|e| e.to_string());
        assert_eq!(
            message("10.0.0.0/33"),
            Err(
                r#"invalid CIDR "10.0.0.0/33": prefix length must be a decimal number from 0 to 32"#
                    .to_owned()
            )
        );
        assert_eq!(
            message("010.0.0.0/8"),
            Err(r#"invalid CIDR "010.0.0.0/8": IPv4 field has a leading zero"#.to_owned())
        );
        assert_eq!(
            message("10.0.0.0"),
            Err(
                r#"invalid CIDR "10.0.0.0": expected <address>/<prefix length>, e.g. "10.0.0.0/8""#
                    .to_owned()
            )
        );
    }

    #[rstest]
    #[case::v4("192.168.1.7/16", "192.168.0.0")]
    #[case::v4_zero("192.168.1.7/0", "0.0.0.0")]
    #[case::v4_host("192.168.1.7/32", "192.168.1.7")]
    #[case::v6("fd12:3456::1/8", "fd00::")]
    #[case::v6_zero("fd12::1/0", "::")]
    #[case::v6_host("fd12::1/128", "fd12::1")]
    fn computes_networks(#[case] input: &str, #[case] network: &str) {
        let network: IpAddr = network.parse().unwrap_or(IpAddr::V4(Ipv4Addr::BROADCAST));
        assert_eq!(parse_cidr(input).map(|c| c.network()), Ok(network));
    }

    #[test]
    fn displays_as_written() {
        assert_eq!(cidr("fd00::", 8).to_string(), "fd00::/8");
        assert_eq!(cidr("10.0.0.0", 8).to_string(), "10.0.0.0/8");
    }

    #[rstest]
    #[case::empty("", vec![])]
    #[case::default_networks(
        "10.0.0.0/8,100.64.0.0/10,172.16.0.0/12,192.168.0.0/16,fd00::/8",
        vec![cidr("10.0.0.0", 8), cidr("100.64.0.0", 10), cidr("172.16.0.0", 12), cidr("192.168.0.0", 16), cidr("fd00::", 8)]
    )]
    #[case::single("0.0.0.0/0", vec![cidr("0.0.0.0", 0)])]
    #[case::outer_commas(",,10.0.0.0/8,::/0,,", vec![cidr("10.0.0.0", 8), cidr("::", 0)])]
    fn parses_cidr_lists(#[case] input: &str, #[case] expected: Vec<Cidr>) {
        assert_eq!(parse_cidr_list(input), Ok(expected));
    }

    #[rstest]
    #[case::only_comma(",", 0, "")]
    #[case::inner_empty("10.0.0.0/8,,::/0", 1, "")]
    #[case::space_after_comma("10.0.0.0/8, fd00::/8", 1, " fd00::/8")]
    #[case::bad_second("10.0.0.0/8,10.0.0.0/33", 1, "10.0.0.0/33")]
    #[case::bad_first_after_commas(",10.0.0.0", 0, "10.0.0.0")]
    fn rejects_bad_cidr_lists(#[case] input: &str, #[case] index: usize, #[case] entry: &str) {
        let err = parse_cidr_list(input).map_err(|(i, e, _)| (i, e));
        assert_eq!(err, Err((index, entry.to_owned())));
    }
}
