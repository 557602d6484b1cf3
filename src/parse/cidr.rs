//! CIDR blocks as Go's `net.ParseCIDR` reads them (Go 1.22+, built on `net/netip`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
    pub fn network(&self) -> IpAddr {
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

/// Go's `dtoi` on the whole string: at least one digit, nothing else.
fn parse_prefix(s: &str) -> Option<u8> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match s.trim_start_matches('0') {
        "" => Some(0),
        digits => digits.parse().ok(),
    }
}

/// Go's `netip.ParseAddr`, without zones.
fn parse_addr(s: &str) -> Result<IpAddr, &'static str> {
    for b in s.bytes() {
        match b {
            b'.' => return parse_ipv4(s.as_bytes()).map(|o| IpAddr::V4(Ipv4Addr::from(o))),
            b':' => return parse_ipv6(s.as_bytes()).map(|a| IpAddr::V6(Ipv6Addr::from(a))),
            b'%' => return Err("IPv6 zones are not allowed"),
            _ => {}
        }
    }
    Err("expected an IPv4 or IPv6 address")
}

fn parse_ipv4(s: &[u8]) -> Result<[u8; 4], &'static str> {
    let mut octets = [0u8; 4];
    let mut fields = s.split(|&b| b == b'.');
    for octet in &mut octets {
        let field = fields.next().ok_or("IPv4 address has fewer than 4 fields")?;
        *octet = parse_ipv4_field(field)?;
    }
    if fields.next().is_some() {
        return Err("IPv4 address has more than 4 fields");
    }
    Ok(octets)
}

fn parse_ipv4_field(field: &[u8]) -> Result<u8, &'static str> {
    if field.is_empty() {
        return Err("IPv4 field must have at least one digit");
    }
    if !field.iter().all(u8::is_ascii_digit) {
        return Err("IPv4 field has a character that is not a digit");
    }
    if field.len() > 1 && field[0] == b'0' {
        return Err("IPv4 field has a leading zero");
    }
    field
        .iter()
        .try_fold(0u16, |v, &d| {
            let v = v * 10 + u16::from(d - b'0');
            (v <= 255).then_some(v)
        })
        .and_then(|v| u8::try_from(v).ok())
        .ok_or("IPv4 field has value >255")
}

fn parse_ipv6(input: &[u8]) -> Result<[u8; 16], &'static str> {
    if input.contains(&b'%') {
        return Err("IPv6 zones are not allowed");
    }
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    let mut s = input;
    if let Some(rest) = s.strip_prefix(b"::") {
        ellipsis = Some(0);
        s = rest;
        if s.is_empty() {
            return Ok(ip);
        }
    }

    let mut i = 0;
    while i < 16 {
        let digits = s.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits == 0 {
            return Err("each colon-separated field must have at least one hex digit");
        }
        if digits > 4 {
            return Err("each group must have 4 or fewer hex digits");
        }
        let (group, rest) = s.split_at(digits);

        if rest.first() == Some(&b'.') {
            // trailing IPv4 in the last 32 bits
            if ellipsis.is_none() && i != 12 {
                return Err("embedded IPv4 address must replace the final 2 fields");
            }
            if i + 4 > 16 {
                return Err("too many hex fields to fit an embedded IPv4 address");
            }
            let v4 = parse_ipv4(s)?;
            ip[i..i + 4].copy_from_slice(&v4);
            i += 4;
            s = &[];
            break;
        }

        let value = std::str::from_utf8(group)
            .ok()
            .and_then(|g| u16::from_str_radix(g, 16).ok())
            .ok_or("IPv6 group is not hexadecimal")?;
        ip[i..i + 2].copy_from_slice(&value.to_be_bytes());
        i += 2;

        s = rest;
        if s.is_empty() {
            break;
        }
        if s[0] != b':' {
            return Err("unexpected character, want colon");
        }
        if s.len() == 1 {
            return Err("colon must be followed by more characters");
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return Err("multiple :: in address");
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }

    if !s.is_empty() {
        return Err("trailing characters after IPv6 address");
    }
    if i < 16 {
        let Some(at) = ellipsis else {
            return Err("IPv6 address too short");
        };
        let gap = 16 - i;
        ip.copy_within(at..i, at + gap);
        ip[at..at + gap].fill(0);
    } else if ellipsis.is_some() {
        return Err("the :: must expand to at least one field of zeros");
    }
    Ok(ip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

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
