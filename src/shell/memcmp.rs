//! The module's `memcmp`, eight bytes at a time. wasi-libc's compares a byte per loop turn, and
//! every key compared (serde's field names, map lookups, sorted inserts) calls it: it was the
//! largest single function of a typical admission once policy-server's epoch check at each loop
//! head is counted (benches/notes.md row BK). A definition in the module's own code is linked
//! before the C library's, which is then never pulled in.

use crate::word;

/// `memcmp` for the policy module only: the playground's wasm32-unknown-unknown build and the
/// native builds keep their own. Never inlined: LTO inlined it into its 273 callers, which made
/// the module 8 % larger and no faster. rustc exports every unmangled function of a cdylib, so
/// the module exports `memcmp` too; engines call only `wapc_init` and `__guest_call`.
///
/// # Safety
///
/// C's contract: `a` and `b` each point at `n` readable bytes.
#[cfg(not(test))]
#[expect(
    unsafe_code,
    reason = "C's memcmp takes raw pointers; an archive's member (wasi-libc's memcmp) is only linked for a symbol still undefined, so this definition is the one linked"
)]
#[unsafe(no_mangle)]
#[inline(never)]
unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    if n == 0 {
        return 0;
    }
    // SAFETY: the caller's contract, above; n > 0, so neither pointer is a dangling empty one.
    let (a, b) = unsafe { (std::slice::from_raw_parts(a, n), std::slice::from_raw_parts(b, n)) };
    compare(a, b)
}

/// The sign of the first byte (unsigned) at which `a` and `b` differ, over their common length;
/// 0 when none does. No slice comparison inside: that would call `memcmp`.
pub(crate) fn compare(a: &[u8], b: &[u8]) -> i32 {
    let n = a.len().min(b.len());
    if n < 8 {
        return compare_short(a, b, n);
    }
    let mut at = 0;
    loop {
        // the last word overlaps the one before it, whose bytes were equal
        let from = at.min(n - 8);
        let (Some(x), Some(y)) = (word_at(a, from), word_at(b, from)) else {
            return 0;
        };
        if x != y {
            return differing(x, y);
        }
        if from + 8 >= n {
            return 0;
        }
        at = from + 8;
    }
}

/// Up to seven bytes: two overlapping four-byte halves, or bytes one by one below four.
fn compare_short(a: &[u8], b: &[u8], n: usize) -> i32 {
    if n >= 4 {
        for from in [0, n - 4] {
            let (x, y) = (half_at(a, from), half_at(b, from));
            if x != y {
                return differing(x, y);
            }
        }
        return 0;
    }
    for i in 0..n {
        let (x, y) = (a.get(i).copied(), b.get(i).copied());
        if x != y {
            return i32::from(x.unwrap_or(0)) - i32::from(y.unwrap_or(0));
        }
    }
    0
}

fn word_at(bytes: &[u8], from: usize) -> Option<u64> {
    bytes.get(from..from + 8).and_then(word::of)
}

fn half_at(bytes: &[u8], from: usize) -> u64 {
    let half = bytes
        .get(from..from + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok());
    u64::from(u32::from_le_bytes(half.unwrap_or_default()))
}

/// The sign of the lowest-addressed differing byte of two little-endian words that differ.
fn differing(x: u64, y: u64) -> i32 {
    let shift = (x ^ y).trailing_zeros() / 8 * 8;
    i32::from((x >> shift) as u8) - i32::from((y >> shift) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    #[rstest]
    #[case::empty(b"", b"", 0)]
    #[case::one_byte_less(b"a", b"b", -1)]
    #[case::high_byte_is_unsigned(b"\xff", b"\x01", 0xfe)]
    #[case::three_equal(b"abc", b"abc", 0)]
    #[case::four_last_differs(b"abcd", b"abce", -1)]
    #[case::seven_first_half(b"abXdefg", b"abcdefg", i32::from(b'X') - i32::from(b'c'))]
    #[case::seven_overlap(b"abcdefX", b"abcdefg", i32::from(b'X') - i32::from(b'g'))]
    #[case::eight_equal(b"policyXY", b"policyXY", 0)]
    #[case::nine_in_the_overlap(b"abcdefghZ", b"abcdefghA", i32::from(b'Z') - i32::from(b'A'))]
    #[case::first_of_two_differences(b"aXcdefghijY", b"aYcdefghijX", i32::from(b'X') - i32::from(b'Y'))]
    #[case::second_word(b"0123456789abcdefQ", b"0123456789abcdefR", -1)]
    fn compares_as_memcmp(#[case] a: &[u8], #[case] b: &[u8], #[case] sign: i32) {
        assert_eq!(compare(a, b), sign);
    }

    proptest! {
        /// The same order as slices compare by, at every length and every differing position.
        #[test]
        fn orders_as_slices(a in proptest::collection::vec(any::<u8>(), 0..40), flip in any::<prop::sample::Index>(), by in 1u8..) {
            let mut b = a.clone();
            if let Some(at) = (!b.is_empty()).then(|| flip.index(b.len())) {
                b[at] = b[at].wrapping_add(by);
            }
            prop_assert_eq!(compare(&a, &b).signum(), a.cmp(&b) as i32);
            let expected = a.iter().zip(&b).find(|(x, y)| x != y).map_or(0, |(x, y)| i32::from(*x) - i32::from(*y));
            prop_assert_eq!(compare(&a, &b), expected);
        }
    }
}
