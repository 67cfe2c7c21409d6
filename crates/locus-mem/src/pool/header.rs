//! The block header: 64 bytes just before every user pointer (README, "Block header").

use std::ptr::NonNull;

/// Bytes of the header; also the alignment of every user pointer.
pub(crate) const HEADER_BYTES: usize = 64;

/// Marks a header written by a pool; checked (in debug builds) on free.
pub(crate) const MAGIC: u32 = 0x4c6f_6375; // "Locu"

/// `class` of a big block (above the largest class), mapped on its own.
pub(crate) const BIG: u32 = u32::MAX;

/// What a pool keeps in front of each block. Written once, by the thread that first
/// takes the block (carved from a chunk, or mapped for a big block), and read when it
/// is freed.
#[repr(C, align(64))]
pub(crate) struct Header {
    /// [`MAGIC`].
    pub magic: u32,
    /// The node whose pool supplied the block.
    pub node: u32,
    /// The size class, or [`BIG`].
    pub class: u32,
    /// Unused; keeps the layout explicit.
    pub _reserved: u32,
    /// Start of the chunk (or, for a big block, of the mapping) holding the block.
    pub chunk: NonNull<u8>,
    /// For a big block, bytes of the mapping; 0 otherwise.
    pub map_len: usize,
}

const _: () = assert!(std::mem::size_of::<Header>() == HEADER_BYTES);
const _: () = assert!(std::mem::align_of::<Header>() == HEADER_BYTES);

impl Header {
    /// The header in front of the user pointer `user`.
    ///
    /// # Safety
    ///
    /// `user` must be a user pointer handed out by a pool, so that the
    /// [`HEADER_BYTES`] before it are that block's header.
    pub(crate) unsafe fn of(user: NonNull<u8>) -> NonNull<Header> {
        // SAFETY: by the caller's guarantee the header lies HEADER_BYTES before `user`
        // inside the same mapping, so the subtraction stays in bounds.
        unsafe { user.sub(HEADER_BYTES).cast() }
    }

    /// The user pointer of the block behind `header`.
    ///
    /// # Safety
    ///
    /// `header` must point to a header inside a pool slot or big mapping.
    pub(crate) unsafe fn user(header: NonNull<Header>) -> NonNull<u8> {
        // SAFETY: every slot holds its block right after the header, in the same
        // mapping.
        unsafe { header.cast::<u8>().add(HEADER_BYTES) }
    }
}
