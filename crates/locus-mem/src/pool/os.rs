//! Memory from the OS: anonymous private mappings, zero-filled and page-aligned.

use std::ptr::NonNull;

use crate::placement::PlacementError;

/// Maps `len` bytes of anonymous memory (`mmap`). Pages are not touched, so they are
/// placed on first touch, by the range's policy if one is set.
pub(crate) fn map(len: usize) -> Result<NonNull<u8>, PlacementError> {
    // SAFETY: an anonymous private mapping with no address hint creates a new range and
    // touches no existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(PlacementError {
            call: "mmap",
            errno: std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::ENOMEM),
        });
    }
    NonNull::new(p.cast()).ok_or(PlacementError {
        call: "mmap",
        errno: libc::ENOMEM,
    })
}

/// Unmaps a range returned by [`map`].
///
/// # Safety
///
/// `ptr`/`len` must be exactly a mapping returned by [`map`], not unmapped yet, and
/// nothing may use its memory afterwards.
pub(crate) unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
    // SAFETY: by the caller's guarantee the range is one live mapping that nothing uses
    // any more.
    let r = unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
    debug_assert_eq!(r, 0, "munmap of a pool mapping failed");
}
