//! The policy module's global allocator: [`Arena`]'s stack of blocks over the module's linear
//! memory. The only `unsafe` here is what a global allocator is: reading and writing the
//! arena's own headers and blocks, and growing the memory.

use super::arena::{Arena, Memory, PAGE};
use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::ptr::null_mut;

/// The module's linear memory. The arena passes only addresses inside memory it grew: its
/// headers, and blocks it handed out.
struct Linear;

#[expect(unsafe_code, reason = "an allocator reads and writes the memory it manages")]
impl Memory for Linear {
    fn grow(&mut self, pages: usize) -> Option<usize> {
        match core::arch::wasm32::memory_grow::<0>(pages) {
            usize::MAX => None,
            previous => previous.checked_mul(PAGE),
        }
    }

    fn read(&self, at: usize) -> u32 {
        // SAFETY: a header the arena wrote, 4-aligned, inside the memory
        unsafe { (at as *const u32).read() }
    }

    fn write(&mut self, at: usize, value: u32) {
        // SAFETY: a header's place, 4-aligned, inside memory the arena grew
        unsafe { (at as *mut u32).write(value) }
    }

    fn copy(&mut self, from: usize, to: usize, len: usize) {
        // SAFETY: a live block and a new one of at least `len` bytes, so apart
        unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, len) }
    }
}

/// The arena behind the `#[global_allocator]` of `src/lib.rs`.
pub(crate) struct StackAllocator(UnsafeCell<Arena>);

impl StackAllocator {
    pub(crate) const fn new() -> Self {
        Self(UnsafeCell::new(Arena::new()))
    }

    #[expect(
        unsafe_code,
        reason = "the arena's one reference, as the allocator is never re-entered"
    )]
    #[expect(clippy::mut_from_ref, reason = "the global allocator's state behind `&self`")]
    fn arena(&self) -> &mut Arena {
        // SAFETY: the module runs one thread (wasm32 without atomics) and the arena allocates
        // nothing itself, so no two references to it are ever alive at once
        unsafe { &mut *self.0.get() }
    }
}

// SAFETY: wasm32 without the atomics feature runs one thread.
#[expect(
    unsafe_code,
    reason = "a static allocator must be Sync; the module has one thread"
)]
unsafe impl Sync for StackAllocator {}

#[expect(unsafe_code, reason = "GlobalAlloc is an unsafe trait")]
// SAFETY: blocks are aligned as asked, apart from every live block, and kept as written until
// freed or resized (src/shell/arena/tests.rs checks all three over random sequences)
unsafe impl GlobalAlloc for StackAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.arena()
            .alloc(&mut Linear, layout.size(), layout.align())
            .map_or(null_mut(), |at| at as *mut u8)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        self.arena().free(&mut Linear, ptr as usize);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.arena()
            .realloc(&mut Linear, ptr as usize, layout.size(), layout.align(), new_size)
            .map_or(null_mut(), |at| at as *mut u8)
    }
}
