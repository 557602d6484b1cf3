//! The module's allocator as plain logic: a stack of blocks over linear memory. Every admission
//! runs in a fresh instance and frees most of what it allocates in the reverse order, so a block
//! is taken from the top of the stack and the top comes back down over every freed block when the
//! last live one above them goes. A general allocator (talc) spent 12 % of the typical pod's
//! instructions keeping bins for memory the instance never reused (benches/notes.md, row DB).
//!
//! Each block is preceded by an 8-byte header: where the stack's top was before it, and the
//! header of the block below it, with the lowest bit set once the block is freed. A block freed
//! under a live one stays until that one goes, so the worst case is a bump allocator's (every
//! byte allocated in a call), and a call that frees everything it allocated leaves the stack
//! where it found it: an instance that serves many calls (`kwctl bench`) does not grow.
//!
//! [`Memory`] is the linear memory in the module (`super::allocator`) and a `Vec` in the tests.

/// Where the blocks live.
pub(crate) trait Memory {
    /// Grows the memory by `pages` pages of [`PAGE`] bytes: the first address of the new pages,
    /// or `None` when it cannot grow.
    fn grow(&mut self, pages: usize) -> Option<usize>;
    fn read(&self, at: usize) -> u32;
    fn write(&mut self, at: usize, value: u32);
    /// Copies `len` bytes from `from` to `to`; the two ranges do not overlap.
    fn copy(&mut self, from: usize, to: usize, len: usize);
}

/// WebAssembly's page size.
pub(crate) const PAGE: usize = 64 * 1024;

const HEADER: usize = 8;
/// The header's second word: the block below, and [`FREED`].
const LINK: usize = 4;
const FREED: u32 = 1;

/// The stack's state. An address of 0 is no block: the blocks start above the module's data.
#[derive(Debug)]
pub(crate) struct Arena {
    /// The header of the top block, live or freed under nothing live.
    last: usize,
    /// The first free byte.
    top: usize,
    /// The end of the memory the stack owns, contiguous from `floor`.
    end: usize,
    /// The start of the memory the stack owns: blocks below it (in memory another user grew
    /// past) are never taken back.
    floor: usize,
}

impl Arena {
    pub(crate) const fn new() -> Self {
        Self {
            last: 0,
            top: 0,
            end: 0,
            floor: 0,
        }
    }

    /// A block of `size` bytes aligned to `align` (a power of two): its address, or `None` when
    /// the memory cannot grow.
    #[inline]
    pub(crate) fn alloc(&mut self, memory: &mut impl Memory, size: usize, align: usize) -> Option<usize> {
        let start = self.start_after(self.top, align)?;
        let end = start.checked_add(size)?;
        if end > self.end {
            return self.alloc_grown(memory, end, size, align);
        }
        memory.write(start - HEADER, u32::try_from(self.top).ok()?);
        memory.write(start - HEADER + LINK, u32::try_from(self.last).ok()?);
        self.last = start - HEADER;
        self.top = end;
        Some(start)
    }

    /// [`Arena::alloc`] when the block would end at `end`, past the memory's end: grown first.
    #[cold]
    #[inline(never)]
    fn alloc_grown(
        &mut self,
        memory: &mut impl Memory,
        end: usize,
        size: usize,
        align: usize,
    ) -> Option<usize> {
        self.grow(memory, end - self.end)?;
        self.alloc(memory, size, align)
    }

    /// Frees the block at `at`. The top block is popped without being marked first (marking
    /// every block and popping in one loop measured 6 k more on the typical pod).
    #[inline(never)]
    pub(crate) fn free(&mut self, memory: &mut impl Memory, at: usize) {
        let header = at - HEADER;
        if !self.is_top(header) {
            memory.write(header + LINK, memory.read(header + LINK) | FREED);
            return;
        }
        self.top = memory.read(header) as usize;
        self.last = memory.read(header + LINK) as usize;
        // the freed blocks this one held up go with it
        while self.is_top(self.last) && memory.read(self.last + LINK) & FREED != 0 {
            self.top = memory.read(self.last) as usize;
            self.last = (memory.read(self.last + LINK) & !FREED) as usize;
        }
    }

    /// The block at `at` (of `size` bytes, aligned to `align`) resized to `new_size`: in place
    /// when it is the top block or shrinks, else moved.
    #[inline(never)]
    pub(crate) fn realloc(
        &mut self,
        memory: &mut impl Memory,
        at: usize,
        size: usize,
        align: usize,
        new_size: usize,
    ) -> Option<usize> {
        if self.is_top(at - HEADER) {
            let end = at.checked_add(new_size)?;
            if end > self.end && self.grow(memory, end - self.end)? {
                // the memory grew elsewhere: the block moves there
                return self.moved(memory, at, size, align, new_size);
            }
            self.top = end;
            Some(at)
        } else if new_size <= size {
            Some(at)
        } else {
            self.moved(memory, at, size, align, new_size)
        }
    }

    fn moved(
        &mut self,
        memory: &mut impl Memory,
        at: usize,
        size: usize,
        align: usize,
        new_size: usize,
    ) -> Option<usize> {
        let moved = self.alloc(memory, new_size, align)?;
        memory.copy(at, moved, size.min(new_size));
        self.free(memory, at);
        Some(moved)
    }

    /// Whether the block whose header is at `header` is the top one, in the stretch of memory
    /// the stack can still take back.
    fn is_top(&self, header: usize) -> bool {
        header == self.last && header >= self.floor && header != 0
    }

    /// Where a block aligned to `align` starts when its header goes at `from` or after.
    fn start_after(&self, from: usize, align: usize) -> Option<usize> {
        let align = align.max(LINK);
        from.checked_add(HEADER + align - 1).map(|end| end & !(align - 1))
    }

    /// Grows the memory by at least `bytes`: `Some(true)` when the new pages are not after the
    /// stack's (the first pages, or someone else grew the memory since), and the stack starts
    /// over in them; what lies below stays where it is until the instance goes.
    fn grow(&mut self, memory: &mut impl Memory, bytes: usize) -> Option<bool> {
        let pages = bytes.div_ceil(PAGE);
        let grown = memory.grow(pages)?;
        let added = pages.checked_mul(PAGE)?;
        if grown == self.end && self.end != 0 {
            self.end = grown.checked_add(added)?;
            return Some(false);
        }
        self.floor = grown;
        self.top = grown;
        self.end = grown.checked_add(added)?;
        Some(true)
    }
}

#[cfg(test)]
mod tests;
