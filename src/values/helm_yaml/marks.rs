//! The bytes of a values document that the skim looks at: those with a class (a line break, a
//! quote, a flow bracket, a block scalar's indicator, anything not printable ASCII) and the
//! backslash, found sixteen at a time (wasm SIMD in the module, SSE2 natively). The skim steps
//! from one to the next, so the text between them, most of `linkerd-config`'s 8 KB, costs the
//! vector test alone.

use super::skim::CLASS;
use wide::i8x16;

/// The positions of the marked bytes, in order.
pub(super) struct Marks<'t> {
    bytes: &'t [u8],
    /// Where the sixteen bytes of `bits` start.
    block: usize,
    /// The marked bytes of the block not given yet, one bit each.
    bits: u32,
}

impl<'t> Marks<'t> {
    pub(super) fn new(bytes: &'t [u8]) -> Self {
        Self {
            bytes,
            block: 0,
            bits: block_bits(bytes, 0),
        }
    }

    /// The marks from `at` on, those already given included.
    pub(super) fn restart_at(&mut self, at: usize) {
        self.block = at;
        self.bits = block_bits(self.bytes, at);
    }

    /// Leaves out the marks before `at`: the byte after a backslash is the escape's.
    pub(super) fn skip_to(&mut self, at: usize) {
        match at.checked_sub(self.block) {
            Some(shift) if shift < 16 => self.bits &= u32::MAX << shift,
            _ => self.restart_at(at),
        }
    }
}

impl Iterator for Marks<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.bits == 0 {
            self.block += 16;
            if self.block >= self.bytes.len() {
                return None;
            }
            self.bits = block_bits(self.bytes, self.block);
        }
        let at = self.block + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(at)
    }
}

/// Whether the skim looks at byte `b`.
pub(super) fn marked(b: u8) -> bool {
    b == b'\\' || CLASS.get(usize::from(b)).is_some_and(|&c| c != 0)
}

/// The marked bytes of the sixteen from `at` (those left at the end of the text), one bit each.
fn block_bits(bytes: &[u8], at: usize) -> u32 {
    match crate::word::block(bytes, at) {
        Some(block) => vector_bits(block),
        None => bytes
            .get(at..)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .fold(0, |bits, (i, &b)| bits | u32::from(marked(b)) << i),
    }
}

/// [`marked`] for sixteen bytes at once.
fn vector_bits(block: [u8; 16]) -> u32 {
    let x = i8x16::new(block.map(u8::cast_signed));
    let each = |b: u8| i8x16::splat(b.cast_signed());
    let folded = x | each(0x20); // `[` as `{`, `\` as `|`
    // not printable ASCII: with `' '..='~'` moved to 0x21..=0x7f, one signed comparison finds
    // the bytes below it and those from 0x7f on (which wrap to negative)
    let m = (x + each(1)).simd_lt(each(0x21))
        | folded.simd_eq(each(b'{'))
        | folded.simd_eq(each(b'|'))
        | x.simd_eq(each(b'\''))
        | x.simd_eq(each(b'"'))
        | x.simd_eq(each(b'>'));
    m.to_bitmask()
}

#[cfg(test)]
mod tests {
    use super::{Marks, marked, vector_bits};
    use proptest::prelude::*;

    /// The vector test against the table, for every byte value at every position, among plain
    /// bytes and among marked ones.
    #[test]
    fn vector_test_is_the_table() {
        for filler in [b'a', b' ', b'~', b'\n', b'"', 0xff, 0x00, b'\\'] {
            for at in 0..16 {
                for b in 0..=255u8 {
                    let mut block = [filler; 16];
                    block[at] = b;
                    let expected = block
                        .iter()
                        .enumerate()
                        .fold(0u32, |bits, (i, &c)| bits | u32::from(marked(c)) << i);
                    assert_eq!(vector_bits(block), expected, "{block:?}");
                }
            }
        }
    }

    fn near_marked() -> impl Strategy<Value = u8> {
        prop::sample::select(b"a \"'\\n{[|>\x7f\xc3".to_vec())
    }

    proptest! {
        /// From a restart, the marks from there on, those given before included.
        #[test]
        fn restart_gives_the_marks_again(bytes in prop::collection::vec(near_marked(), 0..70), taken in 0usize..10, at in 0usize..70) {
            let mut marks = Marks::new(&bytes);
            marks.by_ref().take(taken).for_each(drop);
            marks.restart_at(at);
            let expected: Vec<usize> = (at..bytes.len()).filter(|&i| marked(bytes[i])).collect();
            prop_assert_eq!(marks.collect::<Vec<_>>(), expected);
        }

        /// Every marked byte, in order, across blocks and the text's last bytes, and from where
        /// a skip leaves the marks.
        #[test]
        fn marks_are_the_marked_bytes(bytes in prop::collection::vec(near_marked(), 0..70), skips in prop::collection::vec(0usize..80, 0..6)) {
            let mut marks = Marks::new(&bytes);
            let (mut from, mut skips) = (0, skips.into_iter());
            loop {
                let expected = (from..bytes.len()).find(|&i| marked(bytes[i]));
                let got = marks.next();
                prop_assert_eq!(got, expected);
                let Some(at) = got else { break };
                from = at + 1;
                if let Some(skip) = skips.next().filter(|&s| s > at) {
                    marks.skip_to(skip);
                    from = skip;
                }
            }
        }
    }
}
