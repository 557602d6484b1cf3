//! Kubernetes resource quantities (`resource.ParseQuantity` in k8s.io/apimachinery).

/// Why a string is not a Kubernetes quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not `<signed number><suffix>` (Kubernetes' `ErrFormatWrong`).
    #[error(
        "invalid quantity {input:?}: expected a number with an optional suffix, such as \"100m\", \"1.5\", \"64Mi\" or \"1e3\""
    )]
    Format { input: String },
    /// The suffix is not a known one (Kubernetes' `ErrSuffix`).
    #[error(
        "invalid quantity {input:?}: unknown suffix {suffix:?} (use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or e<exponent>)"
    )]
    Suffix { input: String, suffix: String },
    /// No digits where Kubernetes needs some (Kubernetes' `ErrNumeric`, e.g. `"-Pi"`).
    #[error("invalid quantity {input:?}: expected digits before the suffix")]
    Numeric { input: String },
}

/// A parsed quantity: `digits × 10^exp10`, plus how Kubernetes stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    /// Decimal digits of the magnitude without leading zeros; empty for zero.
    digits: Vec<u8>,
    exp10: i64,
    /// Kubernetes' fast `int64Amount` form `(value, scale)`, when `ParseQuantity` produces one
    /// (otherwise it keeps an arbitrary-precision `inf.Dec`).
    int64_amount: Option<(i64, i32)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// What Kubernetes' `parseQuantityString` splits a quantity into.
struct Scanned<'a> {
    positive: bool,
    /// The numeric text, with sign and leading zeros (Kubernetes' `value`).
    value: &'a [u8],
    /// Integer digits without leading zeros (`"0"` when there are none, as Kubernetes does).
    num: &'a [u8],
    /// Fraction digits as written.
    denom: &'a [u8],
    suffix: &'a [u8],
}

// === impl Quantity ===

impl Quantity {
    /// Parses a quantity exactly as Kubernetes' `resource.ParseQuantity` accepts it.
    ///
    /// An optional sign, decimal digits with an optional fraction (`"1."`, `".5"` and even `"."`
    /// are accepted), then an optional suffix: decimal SI `n u m k M G T P E`, binary SI
    /// `Ki Mi Gi Ti Pi Ei`, or an exponent `e`/`E` followed by an optionally signed integer.
    /// Spaces, unknown suffixes (`"1Kb"`, `"1K"`) and extra dots (`"1.2.3"`) are errors. Like
    /// Kubernetes, values finer than 1n are rounded up to 1n and binary values are capped at
    /// 2^63-1.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        let input = s.as_bytes();
        if input.is_empty() {
            return Err(QuantityError::Format { input: s.to_owned() });
        }
        if s == "0" {
            return Ok(Quantity::zero());
        }
        let scanned = scan(input).ok_or_else(|| QuantityError::Format { input: s.to_owned() })?;
        let (exponent, format) = interpret_suffix(scanned.suffix).ok_or_else(|| QuantityError::Suffix {
            input: s.to_owned(),
            suffix: String::from_utf8_lossy(scanned.suffix).into_owned(),
        })?;

        if let Some(quantity) = fast_path(&scanned, exponent, format) {
            return Ok(quantity);
        }

        // Kubernetes' inf.Dec path: the numeric text must hold at least one digit.
        if !scanned.value.iter().any(u8::is_ascii_digit) {
            return Err(QuantityError::Numeric { input: s.to_owned() });
        }
        let mut digits: Vec<u8> = scanned
            .num
            .iter()
            .chain(scanned.denom)
            .map(|d| d - b'0')
            .collect();
        strip_leading_zeros(&mut digits);
        let denom_len = i64::try_from(scanned.denom.len()).unwrap_or(i64::MAX);
        let exp10 = if format == Format::BinarySi {
            for _ in 0..exponent {
                double(&mut digits);
            }
            -denom_len
        } else {
            // inf.Dec scale arithmetic is int32 and wraps, as in Go.
            let denom_scale = i32::try_from(scanned.denom.len()).unwrap_or(i32::MAX);
            -i64::from(denom_scale.wrapping_add(exponent.wrapping_neg()))
        };
        let mut quantity = Quantity {
            negative: !scanned.positive,
            digits,
            exp10,
            int64_amount: None,
        };
        quantity.round_up_to_nano();
        if format == Format::BinarySi {
            quantity.cap_at_max_int64();
        }
        if quantity.digits.is_empty() {
            quantity.negative = false;
        }
        Ok(quantity)
    }

    /// The value rounded up to an integer, like Kubernetes' `Quantity.Value()`: `500m` → 1,
    /// `1.5` → 2, `2500m` → 3, `1Ki` → 1024.
    ///
    /// Negative values round away from zero (`-1.5` → -2), as Kubernetes does for most of them
    /// (its arbitrary-precision path rounds some toward +∞ instead). Saturates at
    /// `i64::MAX`/`i64::MIN` where Kubernetes returns 0 or a wrapped value.
    #[cfg(test)]
    pub fn ceil_value(&self) -> i64 {
        let magnitude = self.ceil_magnitude();
        let signed = if self.negative {
            -i128::from(magnitude)
        } else {
            i128::from(magnitude)
        };
        i64::try_from(signed).unwrap_or(if self.negative { i64::MIN } else { i64::MAX })
    }

    /// Whole CPU cores the way Linkerd's `ToWholeCPUCores` computes them: `RoundUp(0)` then
    /// `AsInt64()`.
    ///
    /// `None` where Linkerd gets an error (it logs it and uses 0 workers): values Kubernetes keeps
    /// in arbitrary precision (`"1.5Ki"`, `"0.1n"`, `"1Pi"`, more than 18 digits, exponents below
    /// -9) and values beyond `i64`. Otherwise equal to [`Quantity::ceil_value`].
    pub fn to_whole_cpu_cores(&self) -> Option<i64> {
        let (value, scale) = self.int64_amount?;
        if scale >= 0 {
            let mut result = value;
            for _ in 0..scale {
                if result == 0 {
                    break;
                }
                result = result.checked_mul(10)?;
            }
            return Some(result);
        }
        // round away from zero (fast-path scales are never below -9)
        let divisor = 10i64.checked_pow(scale.unsigned_abs())?;
        let quotient = value / divisor;
        let bump = i64::from(value % divisor != 0);
        Some(if value < 0 {
            quotient - bump
        } else {
            quotient + bump
        })
    }

    /// The value as an `f64`, correctly rounded (Kubernetes' `AsApproximateFloat64` may be off
    /// in the last bit); out-of-range values are infinite.
    #[cfg(test)]
    pub fn as_f64(&self) -> f64 {
        if self.digits.is_empty() {
            return 0.0;
        }
        let mut literal = String::with_capacity(self.digits.len() + 24);
        if self.negative {
            literal.push('-');
        }
        literal.extend(self.digits.iter().map(|&d| char::from(b'0' + d)));
        literal.push_str(&format!("e{}", self.exp10));
        literal.parse().unwrap_or(f64::NAN)
    }

    /// Whether the value is below zero.
    #[cfg(test)]
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// Whether the value is zero.
    #[cfg(test)]
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    fn zero() -> Quantity {
        Quantity {
            negative: false,
            digits: Vec::new(),
            exp10: 0,
            int64_amount: Some((0, 0)),
        }
    }

    fn from_int64_amount(value: i64, scale: i32) -> Quantity {
        let mut digits: Vec<u8> = value
            .unsigned_abs()
            .to_string()
            .bytes()
            .map(|d| d - b'0')
            .collect();
        strip_leading_zeros(&mut digits);
        Quantity {
            negative: value < 0,
            digits,
            exp10: i64::from(scale),
            int64_amount: Some((value, scale)),
        }
    }

    /// `ceil(|value|)`, saturating at `u64::MAX`.
    fn ceil_magnitude(&self) -> u64 {
        let len = i64::try_from(self.digits.len()).unwrap_or(i64::MAX);
        let int_len = len.saturating_add(self.exp10);
        if self.digits.is_empty() {
            return 0;
        }
        if int_len > 20 {
            return u64::MAX;
        }
        let int_len = usize::try_from(int_len.max(0)).unwrap_or(0);
        let (int_digits, frac_digits) = self.digits.split_at(int_len.min(self.digits.len()));
        let zeros = int_len.saturating_sub(self.digits.len());
        let integer = int_digits
            .iter()
            .chain(std::iter::repeat_n(&0, zeros))
            .try_fold(0u64, |acc, &d| acc.checked_mul(10)?.checked_add(u64::from(d)));
        let fraction = frac_digits.iter().any(|&d| d != 0);
        integer
            .and_then(|i| i.checked_add(u64::from(fraction)))
            .unwrap_or(u64::MAX)
    }

    /// Kubernetes rounds non-zero values up (away from zero) to a multiple of 1n.
    fn round_up_to_nano(&mut self) {
        if self.digits.is_empty() || self.exp10 >= -9 {
            return;
        }
        let drop = usize::try_from(-9 - self.exp10).unwrap_or(usize::MAX);
        let keep = self.digits.len().saturating_sub(drop);
        let dropped_nonzero = self.digits.get(keep..).is_some_and(|d| d.iter().any(|&d| d != 0));
        self.digits.truncate(keep);
        self.exp10 = -9;
        if dropped_nonzero {
            increment(&mut self.digits);
        }
        strip_leading_zeros(&mut self.digits);
    }

    /// Kubernetes caps binary-suffixed values at 2^63-1 (`maxAllowed`).
    fn cap_at_max_int64(&mut self) {
        const MAX: u64 = i64::MAX.unsigned_abs();
        // |value| > MAX exactly when its ceiling is
        if self.ceil_magnitude() > MAX {
            self.digits = MAX.to_string().bytes().map(|d| d - b'0').collect();
            self.exp10 = 0;
        }
    }
}

/// Kubernetes' `parseQuantityString`; `None` is `ErrFormatWrong`.
fn scan(s: &[u8]) -> Option<Scanned<'_>> {
    let end = s.len();
    let mut pos = 0;
    let mut positive = true;
    match s.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }

    // leading zeros; all zeros is zero
    while s.get(pos) == Some(&b'0') {
        pos += 1;
    }
    if pos >= end {
        return Some(Scanned {
            positive,
            value: b"0",
            num: b"0",
            denom: b"",
            suffix: b"",
        });
    }

    let num_start = pos;
    pos += count_digits(within(s, pos..));
    let mut num = within(s, num_start..pos);
    if pos >= end {
        return Some(Scanned {
            positive,
            value: s,
            num,
            denom: b"",
            suffix: b"",
        });
    }
    if num.is_empty() {
        num = b"0";
    }

    let mut denom: &[u8] = b"";
    if s.get(pos) == Some(&b'.') {
        pos += 1;
        let denom_start = pos;
        pos += count_digits(within(s, pos..));
        denom = within(s, denom_start..pos);
        if pos >= end {
            return Some(Scanned {
                positive,
                value: s,
                num,
                denom,
                suffix: b"",
            });
        }
    }
    let value = within(s, ..pos);

    let suffix_start = pos;
    pos += within(s, pos..)
        .iter()
        .take_while(|c| b"eEinumkKMGTP".contains(c))
        .count();
    if matches!(s.get(pos), Some(b'-' | b'+')) {
        pos += 1;
    }
    pos += count_digits(within(s, pos..));
    (pos >= end).then_some(Scanned {
        positive,
        value,
        num,
        denom,
        suffix: within(s, suffix_start..),
    })
}

/// `s[range]`. `scan` only moves its positions over bytes of `s` and never past `end`, so every
/// range it asks for is in bounds and the empty fallback is unreachable.
fn within<R: std::slice::SliceIndex<[u8], Output = [u8]>>(s: &[u8], range: R) -> &[u8] {
    s.get(range).unwrap_or_default()
}

fn count_digits(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// Kubernetes' suffixer: `(exponent, format)`, `None` is `ErrSuffix`.
fn interpret_suffix(suffix: &[u8]) -> Option<(i32, Format)> {
    let (binary, exponent) = match suffix {
        b"n" => (false, -9),
        b"u" => (false, -6),
        b"m" => (false, -3),
        b"" => (false, 0),
        b"k" => (false, 3),
        b"M" => (false, 6),
        b"G" => (false, 9),
        b"T" => (false, 12),
        b"P" => (false, 15),
        b"E" => (false, 18),
        b"Ki" => (true, 10),
        b"Mi" => (true, 20),
        b"Gi" => (true, 30),
        b"Ti" => (true, 40),
        b"Pi" => (true, 50),
        b"Ei" => (true, 60),
        [b'e' | b'E', rest @ ..] if !rest.is_empty() => {
            let exponent = super::go::parse_int(std::str::from_utf8(rest).ok()?)?;
            // Kubernetes narrows with int32(parsed), which wraps
            #[allow(clippy::cast_possible_truncation)]
            return Some((exponent as i32, Format::DecimalExponent));
        }
        _ => return None,
    };
    let format = if binary {
        Format::BinarySi
    } else {
        Format::DecimalSi
    };
    Some((exponent, format))
}

/// Kubernetes' `int64Amount` fast path of `ParseQuantity`, when it applies.
fn fast_path(scanned: &Scanned<'_>, exponent: i32, format: Format) -> Option<Quantity> {
    let num_len = i32::try_from(scanned.num.len()).ok()?;
    let denom_len = i32::try_from(scanned.denom.len()).ok()?;
    let (mut scale, precision, multiplier) = match format {
        Format::DecimalSi | Format::DecimalExponent => (
            exponent,
            18i32.saturating_sub(num_len.saturating_add(denom_len)),
            1i64,
        ),
        Format::BinarySi if exponent >= 0 && denom_len == 0 => {
            // Kubernetes: int32(float32(exponent)*3/10), exact for the six binary exponents
            let decimal_digits = exponent * 3 / 10;
            (
                0,
                14i32.saturating_sub(num_len).saturating_sub(decimal_digits),
                1i64.checked_shl(exponent.unsigned_abs())?,
            )
        }
        Format::BinarySi => return None,
    };
    if precision < 0 {
        return None;
    }
    scale = scale.wrapping_sub(denom_len);
    if scale < -9 {
        return None;
    }
    let shifted: String = scanned
        .num
        .iter()
        .chain(scanned.denom)
        .map(|&d| char::from(d))
        .collect();
    let value = super::go::parse_int(&shifted)?;
    let mut result = value.checked_mul(multiplier)?;
    if !scanned.positive {
        result = -result;
    }
    Some(Quantity::from_int64_amount(result, scale))
}

fn strip_leading_zeros(digits: &mut Vec<u8>) {
    let zeros = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..zeros);
}

/// Multiplies a big-endian decimal digit vector by two.
fn double(digits: &mut Vec<u8>) {
    let mut carry = 0;
    for d in digits.iter_mut().rev() {
        let v = *d * 2 + carry;
        *d = v % 10;
        carry = v / 10;
    }
    if carry > 0 {
        digits.insert(0, carry);
    }
}

/// Adds one to a big-endian decimal digit vector.
fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn parse(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[rstest]
    #[case::zero("0", 0)]
    #[case::plain("3", 3)]
    #[case::milli("500m", 1)]
    #[case::milli_exact("2000m", 2)]
    #[case::milli_round_up("2500m", 3)]
    #[case::fraction("1.5", 2)]
    #[case::tiny_fraction("0.001", 1)]
    #[case::leading_dot(".5", 1)]
    #[case::trailing_dot("1.", 1)]
    #[case::plus("+2", 2)]
    #[case::negative("-1.5", -2)]
    #[case::negative_zero("-0", 0)]
    #[case::zeros("000", 0)]
    #[case::leading_zeros("0010", 10)]
    #[case::kibi("1Ki", 1024)]
    #[case::mebi("20Mi", 20 * 1024 * 1024)]
    #[case::fractional_mebi("1.5Mi", 1_572_864)]
    #[case::kilo("1k", 1000)]
    #[case::mega("250M", 250_000_000)]
    #[case::exa("1E", 1_000_000_000_000_000_000)]
    #[case::nano("1n", 1)]
    #[case::micro("1u", 1)]
    #[case::exponent("1e3", 1000)]
    #[case::upper_exponent("1E3", 1000)]
    #[case::signed_exponent("15e-1", 2)]
    #[case::plus_exponent("2e+2", 200)]
    #[case::exbi("1Ei", 1 << 60)]
    #[case::max("9223372036854775807", i64::MAX)]
    #[case::saturates("9223372036854775808", i64::MAX)]
    #[case::saturates_exponent("1e30", i64::MAX)]
    #[case::saturates_negative("-1e30", i64::MIN)]
    #[case::binary_capped("8Ei", i64::MAX)]
    #[case::many_digits("123456789012345678901234567890e-20", 1_234_567_891)]
    #[case::sub_nano_rounds_up("0.0000000001", 1)]
    fn rounds_up_like_kubernetes_value(#[case] input: &str, #[case] expected: i64) {
        assert_eq!(parse(input).ceil_value(), expected);
    }

    #[rstest]
    #[case::empty("")]
    #[case::space(" ")]
    #[case::leading_space(" 1")]
    #[case::trailing_space("1 ")]
    #[case::inner_space("1 Mi")]
    #[case::two_dots("1.2.3")]
    #[case::bad_suffix_chars("1Kb")]
    #[case::letters("abc")]
    #[case::percent("50%")]
    #[case::comma("1,5")]
    #[case::exponent_then_suffix("1e3Mi")]
    #[case::suffix_then_garbage("1Mi!")]
    #[case::unicode("１")]
    #[case::unicode_suffix("1µ")]
    fn rejects_malformed(#[case] input: &str) {
        assert_eq!(
            Quantity::parse(input),
            Err(QuantityError::Format {
                input: input.to_owned()
            })
        );
    }

    #[rstest]
    #[case::upper_k("1K", "K")]
    #[case::lower_ki("1ki", "ki")]
    #[case::mi_lower("1mi", "mi")]
    #[case::bare_exponent("1e", "e")]
    #[case::exponent_sign_only("1e+", "e+")]
    #[case::double_exponent("1ee5", "ee5")]
    #[case::stacked("1kM", "kM")]
    #[case::micro_nano("1un", "un")]
    #[case::binary_with_digits("1Ki5", "Ki5")]
    #[case::exponent_overflow("1e99999999999999999999", "e99999999999999999999")]
    // after the number, a sign and digits are read as a (bad) suffix
    #[case::double_sign("--1", "-1")]
    fn rejects_unknown_suffixes(#[case] input: &str, #[case] suffix: &str) {
        assert_eq!(
            Quantity::parse(input),
            Err(QuantityError::Suffix {
                input: input.to_owned(),
                suffix: suffix.to_owned()
            })
        );
    }

    #[rstest]
    // Kubernetes' arbitrary-precision path needs a digit in the number...
    #[case::sign_pebi("-Pi")]
    #[case::bare_pebi("Pi")]
    #[case::dot_exbi(".Ei")]
    #[case::dot_tiny_exponent(".e-20")]
    fn rejects_missing_digits(#[case] input: &str) {
        assert_eq!(
            Quantity::parse(input),
            Err(QuantityError::Numeric {
                input: input.to_owned()
            })
        );
    }

    #[rstest]
    // ...while its int64 path accepts these as zero.
    #[case::plus("+")]
    #[case::minus("-")]
    #[case::dot(".")]
    #[case::sign_dot("-.")]
    #[case::bare_kibi("Ki")]
    #[case::bare_milli("m")]
    #[case::bare_exponent("e5")]
    #[case::dot_exponent(".e-5")]
    fn accepts_kubernetes_zero_quirks(#[case] input: &str) {
        let q = parse(input);
        assert!(q.is_zero(), "{input:?}");
        assert_eq!(q.ceil_value(), 0);
    }

    #[rstest]
    #[case::one("1", Some(1))]
    #[case::milli("100m", Some(1))]
    #[case::milli_many("1500m", Some(2))]
    #[case::fraction("2.5", Some(3))]
    #[case::negative("-1.5", Some(-2))]
    #[case::nano("1n", Some(1))]
    #[case::zero("0", Some(0))]
    #[case::zero_milli("0m", Some(0))]
    #[case::kilo("2k", Some(2000))]
    #[case::tebi("1Ti", Some(1 << 40))]
    #[case::exponent("1e3", Some(1000))]
    #[case::eighteen_digits("123456789012345678", Some(123_456_789_012_345_678))]
    // Kubernetes keeps these as inf.Dec, so AsInt64 fails and Linkerd logs an error
    #[case::nineteen_digits("1234567890123456789", None)]
    #[case::fractional_binary("1.5Ki", None)]
    #[case::pebi("1Pi", None)]
    #[case::big_tebi("1000Ti", None)]
    #[case::below_nano("0.1n", None)]
    #[case::tiny_exponent("1e-10", None)]
    // int64 form but too big for int64
    #[case::overflow("1e19", None)]
    #[case::huge_exponent("1e100", None)]
    #[case::zero_huge_exponent("0e100", Some(0))]
    fn computes_linkerd_whole_cores(#[case] input: &str, #[case] expected: Option<i64>) {
        assert_eq!(parse(input).to_whole_cpu_cores(), expected);
    }

    #[rstest]
    #[case::milli("100m", 0.1)]
    #[case::plain("2", 2.0)]
    #[case::mebi("1Mi", 1_048_576.0)]
    #[case::fractional_mebi("1.5Mi", 1_572_864.0)]
    #[case::negative("-2.5", -2.5)]
    #[case::exponent("25e-1", 2.5)]
    #[case::zero("0", 0.0)]
    #[case::sub_nano("1e-12", 1e-9)]
    #[case::binary_cap("16Ei", 9_223_372_036_854_775_808.0)]
    #[case::huge("1e400", f64::INFINITY)]
    fn converts_to_f64(#[case] input: &str, #[case] expected: f64) {
        assert_eq!(parse(input).as_f64(), expected);
    }

    #[rstest]
    #[case::binary_fraction_nano_round("1.0000000001Ki", 1_025)]
    #[case::nano_round_many_digits("0.00000000000000000000001", 1)]
    #[case::negative_tiny("-0.0000000001", -1)]
    fn rounds_like_inf_dec(#[case] input: &str, #[case] expected: i64) {
        assert_eq!(parse(input).ceil_value(), expected);
    }

    #[test]
    fn wraps_exponents_like_go_int32() {
        // int32(4294967296) == 0 in Go, so this is 1
        assert_eq!(parse("1e4294967296").ceil_value(), 1);
        assert_eq!(parse("1e4294967296").to_whole_cpu_cores(), Some(1));
    }

    #[test]
    fn explains_errors() {
        let message = |s: &str| Quantity::parse(s).map_err(|e| e.to_string());
        assert_eq!(
            message("1Kb"),
            Err(r#"invalid quantity "1Kb": expected a number with an optional suffix, such as "100m", "1.5", "64Mi" or "1e3""#.to_owned())
        );
        assert_eq!(
            message("1K"),
            Err(r#"invalid quantity "1K": unknown suffix "K" (use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or e<exponent>)"#.to_owned())
        );
    }

    #[test]
    fn reports_sign() {
        assert!(parse("-1").is_negative());
        assert!(!parse("-0").is_negative());
        assert!(!parse("1").is_negative());
    }
}
