//! Size classes: block sizes are powers of two from [`MIN_CLASS_BYTES`] (64 B) to
//! [`MAX_CLASS_BYTES`] (64 MiB). Class `i` holds blocks of `2^(MIN_CLASS_SHIFT + i)`
//! bytes; a request of `s` bytes goes to the smallest class with `s <= 2^(..)`, which
//! is list `L_j` with `2^(Smin+j-1) < s <= 2^(Smin+j)` in the words of paper 1,
//! section 3.1. Requests above the largest class bypass the free lists (see the
//! pool's `README.md`, "Big blocks").

use super::header::HEADER_BYTES;

/// log2 of the smallest class.
pub const MIN_CLASS_SHIFT: u32 = 6;
/// log2 of the largest class.
pub const MAX_CLASS_SHIFT: u32 = 26;
/// Number of size classes (free lists per node).
pub const NUM_CLASSES: usize = (MAX_CLASS_SHIFT - MIN_CLASS_SHIFT + 1) as usize;
/// Bytes of the smallest class (64 B).
pub const MIN_CLASS_BYTES: usize = 1 << MIN_CLASS_SHIFT;
/// Bytes of the largest class (64 MiB).
pub const MAX_CLASS_BYTES: usize = 1 << MAX_CLASS_SHIFT;
/// A chunk mapped from the OS holds as many slots of its class as fit in this many
/// bytes, and at least one.
pub const CHUNK_TARGET_BYTES: usize = 2 << 20;

/// The size class of a request of `bytes`, or `None` above [`MAX_CLASS_BYTES`].
/// Zero bytes map to class 0 (the pool never stores zero-byte blocks, though).
///
/// ```
/// use locus_mem::pool::class::{class_of, class_bytes};
/// assert_eq!(class_of(1), Some(0));
/// assert_eq!(class_bytes(class_of(65).unwrap()), 128);
/// assert_eq!(class_of(64 << 20), Some(20));
/// assert_eq!(class_of((64 << 20) + 1), None);
/// ```
pub const fn class_of(bytes: usize) -> Option<usize> {
    if bytes <= MIN_CLASS_BYTES {
        Some(0)
    } else if bytes > MAX_CLASS_BYTES {
        None
    } else {
        // ceil(log2(bytes)) for bytes >= 2.
        let shift = usize::BITS - (bytes - 1).leading_zeros();
        Some((shift - MIN_CLASS_SHIFT) as usize)
    }
}

/// Bytes of the blocks of `class` (what [`super::Block::capacity`] reports).
pub const fn class_bytes(class: usize) -> usize {
    MIN_CLASS_BYTES << class
}

/// Distance in bytes between consecutive slots of `class` in a chunk: the block and
/// the header in front of it.
pub const fn slot_stride(class: usize) -> usize {
    class_bytes(class) + HEADER_BYTES
}

/// Slots of `class` in one chunk.
pub const fn slots_per_chunk(class: usize) -> usize {
    let n = CHUNK_TARGET_BYTES / slot_stride(class);
    if n == 0 {
        1
    } else {
        n
    }
}

/// Bytes mapped for one chunk of `class`, rounded up to `page`.
pub const fn chunk_bytes(class: usize, page: usize) -> usize {
    (slots_per_chunk(class) * slot_stride(class)).div_ceil(page) * page
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn boundaries() {
        assert_eq!(NUM_CLASSES, 21);
        assert_eq!(class_of(0), Some(0));
        assert_eq!(class_of(64), Some(0));
        assert_eq!(class_of(65), Some(1));
        assert_eq!(class_of(128), Some(1));
        assert_eq!(class_of(MAX_CLASS_BYTES), Some(NUM_CLASSES - 1));
        assert_eq!(class_of(MAX_CLASS_BYTES + 1), None);
        assert_eq!(class_of(usize::MAX), None);
        assert_eq!(class_bytes(NUM_CLASSES - 1), MAX_CLASS_BYTES);
        assert_eq!(slots_per_chunk(0), CHUNK_TARGET_BYTES / 128);
        assert_eq!(slots_per_chunk(NUM_CLASSES - 1), 1);
        assert_eq!(chunk_bytes(NUM_CLASSES - 1, 4096), MAX_CLASS_BYTES + 4096);
    }

    proptest! {
        /// The class is the smallest power of two (at least 64) that holds the request.
        #[test]
        fn class_is_smallest_fit(bytes in 1usize..=MAX_CLASS_BYTES) {
            let c = class_of(bytes).unwrap();
            prop_assert!(c < NUM_CLASSES);
            prop_assert!(class_bytes(c) >= bytes);
            prop_assert!(class_bytes(c).is_power_of_two());
            if c > 0 {
                prop_assert!(class_bytes(c - 1) < bytes);
            }
            // Less than 2x waste above the minimum class.
            prop_assert!(class_bytes(c) < 2 * bytes.max(MIN_CLASS_BYTES / 2 + 1));
        }

        /// Requests above the largest class have no class.
        #[test]
        fn big_has_no_class(bytes in (MAX_CLASS_BYTES + 1)..=usize::MAX) {
            prop_assert_eq!(class_of(bytes), None);
        }

        /// Every slot of a chunk fits in it, and user pointers stay 64-byte aligned.
        #[test]
        fn chunk_holds_its_slots(c in 0usize..NUM_CLASSES, page_shift in 12u32..22) {
            let page = 1usize << page_shift;
            let len = chunk_bytes(c, page);
            prop_assert_eq!(len % page, 0);
            prop_assert!(slots_per_chunk(c) >= 1);
            prop_assert!(slots_per_chunk(c) * slot_stride(c) <= len);
            prop_assert_eq!(slot_stride(c) % 64, 0);
            prop_assert!(len < slots_per_chunk(c) * slot_stride(c) + page);
        }
    }
}
