//! Anonymous test mappings whose pages the kernel will not merge into huge pages.
//!
//! A transparent huge page would put 512 small pages on one node at once and could be
//! split or collapsed while a check runs, so every mapping asks for small pages
//! (`MADV_NOHUGEPAGE`); the guest also boots with `transparent_hugepage=never` and
//! `numa_balancing=disable`, so no page moves unless a check moves it.

use std::io;

use locus_mem::placement::{self, page_size};

/// An anonymous private mapping of whole pages, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    addr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain anonymous memory owned by this value; its pages are
// only accessed through volatile reads and writes of single bytes, and the checks
// hand a mapping to one thread at a time (scoped threads, joined before the owner
// goes on), so moving or sharing it between threads cannot race.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `pages` pages, not yet touched (no page is allocated until written).
    pub fn new(pages: usize) -> io::Result<Mapping> {
        let len = pages * page_size();
        // SAFETY: an anonymous private mapping at an address of the kernel's choice
        // aliases nothing.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mapping = Mapping {
            addr: addr.cast(),
            len,
        };
        placement::madvise_nohugepage(mapping.addr, len).map_err(|e| e.io_error())?;
        Ok(mapping)
    }

    /// Start of the mapping.
    pub fn addr(&self) -> *mut u8 {
        self.addr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Start address of each page.
    pub fn pages(&self) -> Vec<*mut u8> {
        (0..self.len / page_size())
            .map(|i| self.addr.wrapping_add(i * page_size()))
            .collect()
    }

    /// Writes `seed + page index` into the first byte of every page, which allocates
    /// every page under the mapping's policy and the calling thread's.
    pub fn touch(&self, seed: u8) {
        for (i, page) in self.pages().into_iter().enumerate() {
            // SAFETY: `page` lies inside this live, writable mapping.
            unsafe { page.write_volatile(seed.wrapping_add(i as u8)) };
        }
    }

    /// Index of the first page whose first byte is not what `touch(seed)` wrote.
    pub fn first_mismatch(&self, seed: u8) -> Option<usize> {
        self.pages().into_iter().enumerate().position(|(i, page)| {
            // SAFETY: `page` lies inside this live, readable mapping.
            unsafe { page.read_volatile() != seed.wrapping_add(i as u8) }
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `addr`/`len` are exactly the mapping created in `new`; nothing
        // borrows it past the owner's lifetime.
        unsafe { libc::munmap(self.addr.cast(), self.len) };
    }
}
