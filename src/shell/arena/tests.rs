//! The stack allocator against random sequences of allocations, frees, resizes and foreign
//! growth, and its named cases.

use super::{Arena, Memory, PAGE};
use proptest::prelude::*;

/// Linear memory as a `Vec`, from address `BASE` (the module's data below it), that someone
/// else may grow too.
struct Pages {
    bytes: Vec<u8>,
    limit: usize,
}

const BASE: usize = 2 * PAGE;

impl Pages {
    fn new(limit_pages: usize) -> Self {
        Self {
            bytes: Vec::new(),
            limit: limit_pages * PAGE,
        }
    }

    fn end(&self) -> usize {
        BASE + self.bytes.len()
    }

    fn at(&mut self, at: usize, len: usize) -> &mut [u8] {
        &mut self.bytes[at - BASE..at - BASE + len]
    }
}

impl Memory for Pages {
    fn grow(&mut self, pages: usize) -> Option<usize> {
        let end = self.end();
        if self.bytes.len() + pages * PAGE > self.limit {
            return None;
        }
        self.bytes.resize(self.bytes.len() + pages * PAGE, 0);
        Some(end)
    }

    fn read(&self, at: usize) -> u32 {
        let i = at - BASE;
        u32::from_le_bytes(self.bytes[i..i + 4].try_into().unwrap())
    }

    fn write(&mut self, at: usize, value: u32) {
        self.at(at, 4).copy_from_slice(&value.to_le_bytes());
    }

    fn copy(&mut self, from: usize, to: usize, len: usize) {
        self.bytes.copy_within(from - BASE..from - BASE + len, to - BASE);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Alloc {
        size: usize,
        align_log: u32,
    },
    Free(prop::sample::Index),
    Realloc(prop::sample::Index, usize),
    /// Another user of the memory grows it (wasi-libc's `sbrk`, say).
    ForeignGrow,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1usize..300, 0u32..5).prop_map(|(size, align_log)| Op::Alloc { size, align_log }),
        1 => (1usize..70_000, 0u32..2).prop_map(|(size, align_log)| Op::Alloc { size, align_log }),
        3 => any::<prop::sample::Index>().prop_map(Op::Free),
        2 => (any::<prop::sample::Index>(), 1usize..600).prop_map(|(i, n)| Op::Realloc(i, n)),
        1 => (any::<prop::sample::Index>(), 1usize..140_000).prop_map(|(i, n)| Op::Realloc(i, n)),
        1 => Just(Op::ForeignGrow),
    ]
}

/// A live block: where, how large, its alignment, and the byte it was filled with.
#[derive(Debug, Clone, Copy)]
struct Block {
    at: usize,
    size: usize,
    align: usize,
    fill: u8,
}

/// Runs `ops`, checking after each that every live block is aligned, inside the memory, apart
/// from every other, and still holds what was written into it.
fn run(arena: &mut Arena, memory: &mut Pages, ops: &[Op], foreign: bool) -> Vec<Block> {
    let mut live: Vec<Block> = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        let fill = (n % 251) as u8 + 1;
        match op {
            Op::Alloc { size, align_log } => {
                let align = 1 << align_log;
                let at = arena.alloc(memory, *size, align).expect("the memory grows");
                memory.at(at, *size).fill(fill);
                live.push(Block {
                    at,
                    size: *size,
                    align,
                    fill,
                });
            }
            Op::Free(i) if !live.is_empty() => {
                let block = live.swap_remove(i.index(live.len()));
                arena.free(memory, block.at);
            }
            Op::Realloc(i, new_size) if !live.is_empty() => {
                let n = i.index(live.len());
                let block = &mut live[n];
                let at = arena
                    .realloc(memory, block.at, block.size, block.align, *new_size)
                    .expect("the memory grows");
                let kept = block.size.min(*new_size);
                assert!(
                    memory.at(at, kept).iter().all(|&b| b == block.fill),
                    "realloc keeps the bytes"
                );
                memory.at(at, *new_size).fill(fill);
                *block = Block {
                    at,
                    size: *new_size,
                    align: block.align,
                    fill,
                };
            }
            Op::ForeignGrow if foreign => {
                memory.grow(1).expect("the memory grows");
            }
            _ => {}
        }
        check(memory, &live);
    }
    live
}

fn check(memory: &mut Pages, live: &[Block]) {
    let mut spans: Vec<(usize, usize)> = live.iter().map(|b| (b.at, b.at + b.size)).collect();
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "blocks overlap: {spans:?}");
    }
    for block in live {
        assert_eq!(block.at % block.align, 0, "{block:?} is aligned");
        assert!(
            block.at >= BASE && block.at + block.size <= memory.end(),
            "{block:?} is in the memory"
        );
        assert!(
            memory.at(block.at, block.size).iter().all(|&b| b == block.fill),
            "{block:?} kept its bytes"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Blocks never overlap and keep their bytes, whatever the order of allocations, frees and
    /// resizes, and whether or not someone else grows the memory in between.
    #[test]
    fn blocks_are_apart_and_kept(ops in prop::collection::vec(op(), 1..120), foreign: bool) {
        let (mut arena, mut memory) = (Arena::new(), Pages::new(400));
        run(&mut arena, &mut memory, &ops, foreign);
    }

    /// A call that frees everything it allocated leaves the stack where it found it: under a
    /// block that stays (the engine's registry), as many calls as one grow the memory as one.
    #[test]
    fn a_call_that_frees_everything_leaves_no_trace(ops in prop::collection::vec(op(), 1..80)) {
        let (mut arena, mut memory) = (Arena::new(), Pages::new(400));
        let kept = arena.alloc(&mut memory, 24, 8).unwrap();
        let top = arena.top;
        let mut pages = None;
        for _ in 0..5 {
            for block in run(&mut arena, &mut memory, &ops, false) {
                arena.free(&mut memory, block.at);
            }
            prop_assert_eq!(arena.top, top);
            prop_assert_eq!(arena.last, kept - 8);
            prop_assert_eq!(*pages.get_or_insert(memory.end()), memory.end());
        }
    }
}

#[test]
fn freed_blocks_go_when_the_one_above_them_goes() {
    let (mut arena, mut memory) = (Arena::new(), Pages::new(4));
    let a = arena.alloc(&mut memory, 10, 1).unwrap();
    let b = arena.alloc(&mut memory, 10, 8).unwrap();
    let c = arena.alloc(&mut memory, 10, 4).unwrap();
    assert_eq!((a, b, c), (BASE + 8, BASE + 32, BASE + 52));
    arena.free(&mut memory, a);
    arena.free(&mut memory, b);
    assert_eq!(arena.top, BASE + 62, "held up by c");
    arena.free(&mut memory, c);
    assert_eq!((arena.top, arena.last), (BASE, 0));
    assert_eq!(arena.alloc(&mut memory, 10, 1), Some(a), "the same place again");
}

#[test]
fn the_top_block_grows_and_shrinks_in_place() {
    let (mut arena, mut memory) = (Arena::new(), Pages::new(4));
    let a = arena.alloc(&mut memory, 16, 8).unwrap();
    assert_eq!(arena.realloc(&mut memory, a, 16, 8, 2 * PAGE), Some(a));
    assert_eq!(
        memory.end(),
        BASE + 3 * PAGE,
        "grown by the pages the block needs"
    );
    assert_eq!(arena.realloc(&mut memory, a, 2 * PAGE, 8, 8), Some(a));
    assert_eq!(arena.top, a + 8);
}

#[test]
fn a_block_under_another_moves_to_grow_and_stays_to_shrink() {
    let (mut arena, mut memory) = (Arena::new(), Pages::new(4));
    let a = arena.alloc(&mut memory, 16, 4).unwrap();
    let b = arena.alloc(&mut memory, 16, 4).unwrap();
    assert_eq!(arena.realloc(&mut memory, a, 16, 4, 8), Some(a));
    let moved = arena.realloc(&mut memory, a, 8, 4, 32).unwrap();
    assert!(moved > b);
    arena.free(&mut memory, moved);
    arena.free(&mut memory, b);
    assert_eq!(arena.top, BASE, "the moved block's old place went with b");
}

#[test]
fn memory_grown_by_someone_else_is_left_alone() {
    let (mut arena, mut memory) = (Arena::new(), Pages::new(8));
    let a = arena.alloc(&mut memory, PAGE - 8, 4).unwrap();
    let theirs = memory.grow(1).unwrap();
    let b = arena.alloc(&mut memory, 64, 4).unwrap();
    assert_eq!(b, theirs + PAGE + 8, "past the other user's page");
    arena.free(&mut memory, b);
    arena.free(&mut memory, a);
    assert_eq!(arena.top, theirs + PAGE, "never back below the other user's page");
    assert_eq!(arena.alloc(&mut memory, 64, 4), Some(b));
}

#[test]
fn no_memory_left_is_none() {
    let (mut arena, mut memory) = (Arena::new(), Pages::new(2));
    assert!(arena.alloc(&mut memory, PAGE, 4).is_some());
    assert_eq!(arena.alloc(&mut memory, 2 * PAGE, 4), None);
    assert_eq!(arena.alloc(&mut memory, usize::MAX - 2, 4), None);
}
