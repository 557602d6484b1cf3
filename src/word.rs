//! Eight bytes tested at once, one flag (the byte's high bit) per byte that passes a test: the
//! per-byte loops of the YAML readers and of the answer's string escaping were among the
//! module's largest costs. A borrow or carry only spills into later bytes, so the lowest flag of
//! each test, and of a union of tests, is exact. [`next_equal`], which crosses the 8 KB of
//! `linkerd-config`'s values, tests sixteen at once as a vector (`wide`: wasm SIMD in the module,
//! SSE2 natively); for the short strings of most other scans a vector step cost more than it saved.

use wide::u8x16;

pub const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

pub fn of(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(<[u8; 8]>::try_from(bytes).ok()?))
}

/// Bytes below 0x20: each borrows into its own high bit (a byte with the high bit set is
/// not one, and is masked out).
pub fn control(x: u64) -> u64 {
    x.wrapping_sub(ONES * 0x20) & !x & HIGH_BITS
}

/// Zero bytes: each borrows into its own high bit.
pub fn zero(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGH_BITS
}

/// Bytes equal to `b`.
pub fn equal(x: u64, b: u8) -> u64 {
    zero(x ^ (ONES * u64::from(b)))
}

/// Where the lowest flagged byte sits.
pub fn lowest(flags: u64) -> Option<usize> {
    (flags != 0).then(|| flags.trailing_zeros() as usize / 8)
}

const LOW_BITS: u64 = !HIGH_BITS;

/// ASCII bytes from `lo` to `hi` (`hi` < 0x80), exact for each byte: with the high bits cleared
/// first neither sum carries out of a byte, and bytes that had one set are masked out.
fn ascii_in(x: u64, lo: u8, hi: u8) -> u64 {
    let low = x & LOW_BITS;
    let at_least = low + ONES * u64::from(0x80 - lo);
    let above = low + ONES * u64::from(0x7f - hi);
    at_least & !above & !x & HIGH_BITS
}

/// Bytes equal to `b`, exact for each byte (no borrow spills into the next).
fn exactly(x: u64, b: u8) -> u64 {
    let y = x ^ (ONES * u64::from(b));
    !(((y & LOW_BITS).wrapping_add(LOW_BITS)) | y) & HIGH_BITS
}

/// Bytes that cannot be part of a YAML word (`A-Z a-z 0-9 _ - . /`), exact for each byte:
/// `-`, `.`, `/` and the digits are one run (0x2d-0x39), and `| 0x20` folds capitals onto
/// small letters.
pub fn not_word(x: u64) -> u64 {
    let word = ascii_in(x | (ONES * 0x20), b'a', b'z') | ascii_in(x, b'-', b'9') | exactly(x, b'_');
    !word & HIGH_BITS
}

/// Bytes a JSON string cannot hold as they are: a control character, a quote or a backslash
/// (what the answer's writer escapes and what the input reader stops at).
pub fn json_special(x: u64) -> u64 {
    control(x) | equal(x, b'"') | equal(x, b'\\')
}

/// [`json_special`] for sixteen bytes at once, one bit each.
pub fn json_special_bits(block: [u8; 16]) -> u32 {
    let x = u8x16::new(block);
    let special =
        x.min(u8x16::splat(0x1f)).simd_eq(x) | x.simd_eq(u8x16::splat(b'"')) | x.simd_eq(u8x16::splat(b'\\'));
    special.to_bitmask()
}

/// Bytes that are not printable ASCII (`' '..='~'`), sixteen at once, one bit each.
pub fn unplain_bits(block: [u8; 16]) -> u32 {
    let x = u8x16::new(block);
    (x.min(u8x16::splat(0x1f)).simd_eq(x) | x.max(u8x16::splat(0x7f)).simd_eq(x)).to_bitmask()
}

/// [`json_special`] for one byte.
pub fn is_json_special(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Where the first [`json_special`] byte at or after `from` sits, eight bytes tested at once.
pub fn next_json_special(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(x) = bytes.get(at..at + 8).and_then(of) {
        if let Some(i) = lowest(json_special(x)) {
            return Some(at + i);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    rest.iter().position(|&b| is_json_special(b)).map(|i| at + i)
}

/// How many spaces `bytes` starts with, eight bytes tested at once (the indentation of a
/// YAML line).
pub fn leading_spaces(bytes: &[u8]) -> usize {
    let mut at = 0;
    while let Some(x) = bytes.get(at..at + 8).and_then(of) {
        if let Some(i) = lowest(!exactly(x, b' ') & HIGH_BITS) {
            return at + i;
        }
        at += 8;
    }
    let rest = bytes.get(at..).unwrap_or_default();
    at + rest.iter().take_while(|&&b| b == b' ').count()
}

/// Where the first byte `b` at or after `from` sits, sixteen bytes tested at once, then eight.
pub fn next_equal(bytes: &[u8], from: usize, b: u8) -> Option<usize> {
    let mut at = from;
    while let Some(block) = sixteen(bytes, at) {
        let bits = block.simd_eq(u8x16::splat(b)).to_bitmask();
        if bits != 0 {
            return Some(at + bits.trailing_zeros() as usize);
        }
        at += 16;
    }
    while let Some(x) = bytes.get(at..at + 8).and_then(of) {
        if let Some(i) = lowest(equal(x, b)) {
            return Some(at + i);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    rest.iter().position(|&c| c == b).map(|i| at + i)
}

/// The sixteen bytes from `at`, when there are sixteen: a vector test's block.
pub fn block(bytes: &[u8], at: usize) -> Option<[u8; 16]> {
    bytes.get(at..at + 16)?.try_into().ok()
}

/// [`block`] as one vector.
fn sixteen(bytes: &[u8], at: usize) -> Option<u8x16> {
    block(bytes, at).map(u8x16::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bytes near the specials and their borrow partners: a quote, a backslash, a control
    /// byte, the bytes one above each, and plain and non-ASCII ones.
    fn near_special() -> impl Strategy<Value = u8> {
        prop::sample::select(vec![
            b'"', b'#', b'\\', b']', 0x00, 0x01, 0x1f, b' ', b'a', 0x7f, 0x80, 0xc3, 0xff,
        ])
    }

    /// The vector test against the byte test, for every byte value at every position.
    #[test]
    fn json_special_bits_are_the_byte_test() {
        for filler in [b'a', b'"', 0x00, 0xff] {
            for at in 0..16 {
                for b in 0..=255u8 {
                    let mut block = [filler; 16];
                    block[at] = b;
                    let expected = block
                        .iter()
                        .enumerate()
                        .fold(0, |bits, (i, &c)| bits | u32::from(is_json_special(c)) << i);
                    assert_eq!(json_special_bits(block), expected, "{block:?}");
                }
            }
        }
    }

    /// The vector test against the byte rule, for every byte value at every position.
    #[test]
    fn unplain_bits_are_the_byte_rule() {
        for filler in [b'a', b' ', b'~', b'\n', 0xff] {
            for at in 0..16 {
                for b in 0..=255u8 {
                    let mut block = [filler; 16];
                    block[at] = b;
                    let expected = block.iter().enumerate().fold(0, |bits, (i, c)| {
                        bits | u32::from(!(b' '..=b'~').contains(c)) << i
                    });
                    assert_eq!(unplain_bits(block), expected, "{block:?}");
                }
            }
        }
    }

    proptest! {
        /// The first special byte at or after any start, wherever it and the text's end fall
        /// against the words.
        #[test]
        fn finds_the_first_special_byte(bytes in prop::collection::vec(near_special(), 0..40), from in 0usize..40) {
            let from = from.min(bytes.len());
            let expected = bytes.iter().skip(from).position(|&b| b < 0x20 || b == b'"' || b == b'\\').map(|i| from + i);
            prop_assert_eq!(next_json_special(&bytes, from), expected);
        }

        /// The first byte equal to any, and the spaces a text starts with, against byte loops.
        #[test]
        fn finds_bytes_and_counts_spaces(
            bytes in prop::collection::vec(prop::sample::select(vec![b' ', b'!', 0x1f, 0xa0, b'"', 0x00]), 0..40),
            from in 0usize..40,
            spaces in 0usize..20,
        ) {
            let from = from.min(bytes.len());
            let expected = bytes.iter().skip(from).position(|&b| b == b'"').map(|i| from + i);
            prop_assert_eq!(next_equal(&bytes, from, b'"'), expected);
            let text = [vec![b' '; spaces], bytes.clone()].concat();
            let expected = text.iter().take_while(|&&b| b == b' ').count();
            prop_assert_eq!(leading_spaces(&text), expected);
        }
    }
}
