//! An owned block of pool memory.

use std::ptr::NonNull;
use std::sync::OnceLock;

use super::header::HEADER_BYTES;
use super::pools::NodeRef;

/// Alignment of every block, and of the dangling pointer of a zero-byte block.
#[repr(C, align(64))]
struct BlockAlign([u8; HEADER_BYTES]);

/// A block of memory from a node's pool. Dropping it returns it to the pool of the
/// node that supplied it, from whatever thread drops it.
///
/// The block is at least 64-byte aligned (big blocks: page-aligned). Access to its
/// bytes goes through raw pointers; the runtime makes accesses exclusive through its
/// dependence tracking.
pub struct Block {
    ptr: NonNull<u8>,
    len: usize,
    capacity: usize,
    node: usize,
    fell_back: bool,
    /// The slot of the node the block returns to, which it keeps alive; `None` for a
    /// zero-byte block, which holds no memory.
    home: Option<NodeRef>,
    /// The block of an accounting-only pool: it holds no memory.
    accounted_only: bool,
    /// From a first-touch pool: freed, it stays in its node's pool for reuse.
    first_touch: bool,
    /// Never used before, and to be placed by its first writer (first-touch pools).
    fresh: bool,
    /// The node its first writer placed it on ([`super::Pools::first_touch`]), whose
    /// pool it returns to.
    placed: OnceLock<NodeRef>,
}

// SAFETY: a block is a uniquely owned allocation; its node's slot is Sync and freeing
// goes through the node's mutex, so a block may be moved to and dropped on any thread.
unsafe impl Send for Block {}
// SAFETY: `&Block` only exposes the pointer and metadata; reads and writes through
// the pointer are unsafe and synchronised by the caller.
unsafe impl Sync for Block {}

impl Block {
    pub(crate) fn new(
        home: NodeRef,
        ptr: NonNull<u8>,
        len: usize,
        capacity: usize,
        node: usize,
        fell_back: bool,
    ) -> Block {
        Block {
            ptr,
            len,
            capacity,
            node,
            fell_back,
            home: Some(home),
            accounted_only: false,
            first_touch: false,
            fresh: false,
            placed: OnceLock::new(),
        }
    }

    /// A block of an accounting-only pool: sizes and node, a dangling pointer. In a
    /// first-touch pool (`first_touch`), `fresh` says whether it was never used.
    pub(crate) fn accounted(
        home: NodeRef,
        len: usize,
        capacity: usize,
        node: usize,
        fell_back: bool,
        first_touch: bool,
        fresh: bool,
    ) -> Block {
        Block {
            ptr: NonNull::<BlockAlign>::dangling().cast(),
            len,
            capacity,
            node,
            fell_back,
            home: Some(home),
            accounted_only: true,
            first_touch,
            fresh,
            placed: OnceLock::new(),
        }
    }

    /// A zero-byte block of `node`: a dangling, 64-byte aligned pointer.
    pub(crate) fn empty(node: usize) -> Block {
        Block {
            ptr: NonNull::<BlockAlign>::dangling().cast(),
            len: 0,
            capacity: 0,
            node,
            fell_back: false,
            home: None,
            accounted_only: false,
            first_touch: false,
            fresh: false,
            placed: OnceLock::new(),
        }
    }

    /// The node whose pool supplied the block (after a fallback, the fallback node),
    /// or, once its first writer placed it, that node
    /// ([`super::Pools::first_touch`]).
    pub fn node(&self) -> usize {
        self.placed.get().map_or(self.node, |slot| slot.node)
    }

    /// Whether the block waits for its first writer to place it: it comes fresh from
    /// a first-touch pool and nothing has placed it yet.
    pub fn is_unplaced(&self) -> bool {
        self.fresh && self.placed.get().is_none()
    }

    /// The node that supplied the block, before any first touch.
    pub(crate) fn supplier(&self) -> usize {
        self.node
    }

    /// Records that the first writer placed the block on `slot`'s node; false if it
    /// was placed already.
    pub(crate) fn place(&self, slot: NodeRef) -> bool {
        self.placed.set(slot).is_ok()
    }

    /// Bytes asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the block holds zero bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the block: its size class, or for a big block the request rounded up
    /// to pages; 0 for a zero-byte block.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The first byte, writable. Takes `&self`: exclusive access is the caller's to
    /// ensure.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Whether the block comes from an accounting-only pool and holds no memory.
    pub fn is_accounted_only(&self) -> bool {
        self.accounted_only
    }

    /// Whether another node supplied the block because the node asked for could not.
    pub fn fell_back(&self) -> bool {
        self.fell_back
    }
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("capacity", &self.capacity)
            .field("node", &self.node())
            .field("fell_back", &self.fell_back)
            .finish()
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            if self.accounted_only {
                // A placed block returns to the pool of the node it was placed on.
                let home = self.placed.take().unwrap_or(home);
                home.release_accounted(self.capacity, self.first_touch);
            } else {
                // SAFETY: `ptr` is the user pointer of a live block of `home`, and
                // this is the one place it is given back (the block is being dropped).
                unsafe { home.free(self.ptr) };
            }
        }
    }
}
