//! Go `time.ParseDuration`, and the way Linkerd re-prints a parsed duration for the proxy.

/// Why a string is not a Go duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not of the form `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`.
    #[error(
        "invalid duration {input:?}: expected a number with a unit such as \"300ms\", \"1.5h\" or \"2h45m\""
    )]
    Syntax { input: String },
    /// A number without a unit (only a lone `0` may omit it).
    #[error("invalid duration {input:?}: missing unit after a number (use ns, us, ms, s, m, h)")]
    MissingUnit { input: String },
    /// A unit Go does not know.
    #[error("invalid duration {input:?}: unknown unit {unit:?} (use ns, us, ms, s, m, h)")]
    UnknownUnit { input: String, unit: String },
    /// Larger than Go's `time.Duration` (about 292 years).
    #[error("invalid duration {input:?}: out of range (at most 2562047h47m16.854775807s)")]
    Overflow { input: String },
}

const LIMIT: u64 = 1 << 63;

/// Parses a duration like Go's `time.ParseDuration`, returning nanoseconds.
///
/// An optional sign, then one or more decimal numbers (optional fraction) each followed by a unit
/// (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`): `"300ms"`, `"-1.5h"`, `"2h45m"`. A lone `"0"`
/// (optionally signed) needs no unit. Fractions are converted with Go's float arithmetic, so the
/// result is the same nanosecond Go computes.
pub fn parse_go_duration(s: &str) -> Result<i64, DurationError> {
    let syntax = || DurationError::Syntax { input: s.to_owned() };
    let overflow = || DurationError::Overflow { input: s.to_owned() };

    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..).unwrap_or_default()),
        Some(b'+') => (false, s.get(1..).unwrap_or_default()),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(syntax());
    }

    let mut total: u64 = 0;
    while !rest.is_empty() {
        let b = rest.as_bytes();
        if !b.first().is_some_and(|&c| c == b'.' || c.is_ascii_digit()) {
            return Err(syntax());
        }

        // integer part
        let (int_digits, after_int) = split_digits(b);
        let int_len = int_digits.len();
        let int_part = leading_int(int_digits).ok_or_else(overflow)?;
        let mut i = int_len;

        // fraction
        let (mut fraction, mut scale, mut frac_len) = (0u64, 1f64, 0);
        if let Some(after_dot) = after_int.strip_prefix(b".") {
            let (frac_digits, _) = split_digits(after_dot);
            frac_len = frac_digits.len();
            (fraction, scale) = leading_fraction(frac_digits);
            i += 1 + frac_len;
        }
        if int_len == 0 && frac_len == 0 {
            return Err(syntax()); // ".s", "-.s"
        }

        // unit: everything up to the next '.' or digit
        let unit_len = b
            .iter()
            .skip(i)
            .take_while(|&&c| !(c == b'.' || c.is_ascii_digit()))
            .count();
        if unit_len == 0 {
            return Err(DurationError::MissingUnit { input: s.to_owned() });
        }
        // `i` and `i + unit_len` sit on ASCII bytes or the end, so these are char boundaries.
        let unit_str = rest.get(i..i + unit_len).ok_or_else(syntax)?;
        let unit = unit_nanos(unit_str).ok_or_else(|| DurationError::UnknownUnit {
            input: s.to_owned(),
            unit: unit_str.to_owned(),
        })?;
        rest = rest.get(i + unit_len..).ok_or_else(syntax)?;

        if int_part > LIMIT / unit {
            return Err(overflow());
        }
        let mut value = int_part * unit;
        if fraction > 0 {
            // Go: v += uint64(float64(f) * (float64(unit) / scale)); at most 3.6e12, never negative.
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let nanos = (fraction as f64 * (unit as f64 / scale)) as u64;
            value = value.checked_add(nanos).ok_or_else(overflow)?;
            if value > LIMIT {
                return Err(overflow());
            }
        }
        // Go adds in uint64 and checks afterwards; 2^63 + 2^63 wraps to 0 there too.
        total = total.wrapping_add(value);
        if total > LIMIT {
            return Err(overflow());
        }
    }

    if negative {
        // -(2^63) is i64::MIN; everything smaller in magnitude negates normally.
        Ok(0i64.wrapping_sub_unsigned(total))
    } else {
        i64::try_from(total).map_err(|_| overflow())
    }
}

/// Formats nanoseconds as whole milliseconds, `"<n>ms"`, as Linkerd does for connect timeouts and
/// the shutdown grace period (`fmt.Sprintf("%dms", int(d.Seconds()*1000))`).
pub fn format_millis(nanos: i64) -> String {
    format!("{}ms", whole_millis(nanos))
}

/// Formats nanoseconds as whole seconds, `"<n>s"`, as Linkerd does for discovery cache timeouts
/// (`fmt.Sprintf("%ds", int(d.Seconds()))`): `500ms` → `"0s"`.
pub fn format_seconds(nanos: i64) -> String {
    format!("{}s", whole_seconds(nanos))
}

/// `int(d.Seconds()*1000)`: milliseconds through Go's float seconds, truncated toward zero.
///
/// This is not always `d.Milliseconds()`: `1001ms` becomes 1000 because `1.001*1000` is
/// `1000.9999999999999` in float64.
#[allow(clippy::cast_possible_truncation)]
pub fn whole_millis(nanos: i64) -> i64 {
    (go_seconds(nanos) * 1000.0) as i64
}

/// `int64(d.Seconds())`: whole seconds through Go's float seconds, truncated toward zero (used
/// for `close-wait-timeout` too).
#[allow(clippy::cast_possible_truncation)]
pub fn whole_seconds(nanos: i64) -> i64 {
    go_seconds(nanos) as i64
}

/// Go's `Duration.Seconds()`: whole seconds plus the nanosecond remainder, in float64.
#[allow(clippy::cast_precision_loss)]
pub fn go_seconds(nanos: i64) -> f64 {
    const SECOND: i64 = 1_000_000_000;
    let secs = nanos / SECOND;
    let rem = nanos % SECOND;
    secs as f64 + rem as f64 / 1e9
}

/// Go's `leadingInt`: digits to `u64`, an error past 2^63.
/// `b` split after its leading ASCII digits.
fn split_digits(b: &[u8]) -> (&[u8], &[u8]) {
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    // `n` counts bytes of `b`, so the split is always in range.
    b.split_at_checked(n).unwrap_or((b, &[]))
}

fn leading_int(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |x, &c| {
        if x > LIMIT / 10 {
            return None;
        }
        let x = x * 10 + u64::from(c - b'0');
        (x <= LIMIT).then_some(x)
    })
}

/// Go's `leadingFraction`: digits to `(value, 10^kept)`, silently dropping precision on overflow.
fn leading_fraction(digits: &[u8]) -> (u64, f64) {
    let (mut x, mut scale) = (0u64, 1f64);
    for &c in digits {
        if x > (LIMIT - 1) / 10 {
            break;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            break;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale)
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        // U+00B5 micro sign and U+03BC Greek mu, as Go accepts both
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const MS: i64 = 1_000_000;
    const S: i64 = 1_000 * MS;

    #[rstest]
    #[case::zero("0", 0)]
    #[case::signed_zero("-0", 0)]
    #[case::plus_zero("+0", 0)]
    #[case::zero_with_unit("0s", 0)]
    #[case::millis("1000ms", 1000 * MS)]
    #[case::seconds("5s", 5 * S)]
    #[case::hours("90h", 90 * 3600 * S)]
    #[case::minutes("5m", 300 * S)]
    #[case::nanos("7ns", 7)]
    #[case::micros("7us", 7_000)]
    #[case::micro_sign("7\u{b5}s", 7_000)]
    #[case::greek_mu("7\u{3bc}s", 7_000)]
    #[case::compound("2h45m", (2 * 3600 + 45 * 60) * S)]
    #[case::compound_out_of_order("1s1h", 3601 * S)]
    #[case::repeated_unit("1s1s", 2 * S)]
    #[case::fraction("1.5h", 5400 * S)]
    #[case::leading_dot(".5s", 500 * MS)]
    #[case::trailing_dot("1.s", S)]
    #[case::negative("-1.5s", -1500 * MS)]
    #[case::plus("+10ms", 10 * MS)]
    #[case::leading_zeros("0010s", 10 * S)]
    #[case::long_fraction("1.0000000000000000000000001s", S)]
    #[case::sub_nano_fraction("0.9ns", 0)]
    #[case::max("9223372036854775807ns", i64::MAX)]
    #[case::min("-9223372036854775808ns", i64::MIN)]
    #[case::max_hours("2562047h47m16.854775807s", i64::MAX)]
    // Go adds the parts in uint64 and only checks for > 2^63 afterwards, so 2^63 + 2^63 wraps to 0.
    #[case::go_wraparound("9223372036854775808ns9223372036854775808ns", 0)]
    fn parses_durations(#[case] input: &str, #[case] nanos: i64) {
        assert_eq!(parse_go_duration(input), Ok(nanos));
    }

    #[rstest]
    #[case::empty("")]
    #[case::sign_only("-")]
    #[case::plus_only("+")]
    #[case::unit_only("s")]
    #[case::dot_unit(".s")]
    #[case::signed_dot_unit("-.s")]
    #[case::double_sign("--1s")]
    #[case::space(" 1s")]
    #[case::unicode_digit("١s")]
    fn rejects_malformed_durations(#[case] input: &str) {
        assert!(
            matches!(parse_go_duration(input), Err(DurationError::Syntax { .. })),
            "{input:?}"
        );
    }

    #[rstest]
    #[case::bare_number("5")]
    #[case::double_zero("00")]
    #[case::negative_number("-1")]
    #[case::bare_after_unit("1s5")]
    #[case::fraction("1.5")]
    fn requires_units(#[case] input: &str) {
        assert_eq!(
            parse_go_duration(input),
            Err(DurationError::MissingUnit {
                input: input.to_owned()
            })
        );
    }

    #[rstest]
    #[case::x("5x", "x")]
    #[case::upper("5S", "S")]
    #[case::days("1d", "d")]
    #[case::words("1sec", "sec")]
    #[case::exponent("1e3s", "e")]
    // anything up to the next digit or '.' is the unit, spaces included
    #[case::inner_space("1 s", " s")]
    #[case::trailing_space("1s ", "s ")]
    #[case::unicode("5秒", "秒")]
    #[case::trailing_garbage("1s!", "s!")]
    fn rejects_unknown_units(#[case] input: &str, #[case] unit: &str) {
        assert_eq!(
            parse_go_duration(input),
            Err(DurationError::UnknownUnit {
                input: input.to_owned(),
                unit: unit.to_owned()
            })
        );
    }

    #[rstest]
    #[case::above_max("9223372036854775808ns")]
    #[case::huge_int("99999999999999999999s")]
    #[case::too_many_hours("2562048h")]
    #[case::sum_over_max("2562047h47m16.854775808s")]
    #[case::fraction_over("9223372036.854775808s")]
    #[case::below_min("-9223372036854775809ns")]
    fn rejects_out_of_range(#[case] input: &str) {
        assert_eq!(
            parse_go_duration(input),
            Err(DurationError::Overflow {
                input: input.to_owned()
            })
        );
    }

    #[test]
    fn explains_errors() {
        let message = |s: &str| parse_go_duration(s).map_err(|e| e.to_string());
        assert_eq!(
            message("5x"),
            Err(r#"invalid duration "5x": unknown unit "x" (use ns, us, ms, s, m, h)"#.to_owned())
        );
        assert_eq!(
            message("5"),
            Err(r#"invalid duration "5": missing unit after a number (use ns, us, ms, s, m, h)"#.to_owned())
        );
    }

    #[rstest]
    #[case::default_outbound(1000 * MS, "1000ms")]
    #[case::seconds(5 * S, "5000ms")]
    #[case::sub_milli(999_999, "0ms")]
    #[case::truncates(1_500_999, "1ms")]
    #[case::float_seconds(1001 * MS, "1000ms")]
    #[case::negative(-1500 * MS, "-1500ms")]
    #[case::zero(0, "0ms")]
    #[case::max(i64::MAX, "9223372036854ms")]
    fn formats_millis_like_linkerd(#[case] nanos: i64, #[case] expected: &str) {
        assert_eq!(format_millis(nanos), expected);
    }

    #[rstest]
    #[case::default_outbound(5 * S, "5s")]
    #[case::half_second(500 * MS, "0s")]
    #[case::minutes(90 * S, "90s")]
    #[case::truncates(1999 * MS, "1s")]
    #[case::negative(-1500 * MS, "-1s")]
    #[case::max(i64::MAX, "9223372036s")]
    #[case::min(i64::MIN, "-9223372036s")]
    fn formats_seconds_like_linkerd(#[case] nanos: i64, #[case] expected: &str) {
        assert_eq!(format_seconds(nanos), expected);
    }
}
