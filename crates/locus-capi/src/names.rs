//! Task names: kept once per distinct string for the life of the process, and found
//! again by the caller's pointer without hashing.
//!
//! Names repeat (one per kind of task, usually a string literal of the C program), so
//! the first [`MAX_NAMES`] distinct ones are interned: a task holds a `&'static str`,
//! which saves an allocation on the submitting thread and a free on the running one.
//! A small per-thread cache ([`Cache`], kept with the thread's frames in module
//! `frames`) maps the pointer C passed to the interned string, so that
//! a spawn whose name sits where the last ones' did costs a byte comparison, not a
//! `strlen`, a UTF-8 check and a hash under a lock. The cache is keyed by the pointer
//! but checked by content: a hit requires the bytes at the pointer to equal the kept
//! name up to its terminating NUL, so a different string at a reused address (a stack
//! buffer, a freed and reallocated one) is never mistaken for the old name.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::ffi::c_char;
use std::sync::{OnceLock, RwLock};

use crate::frames::with_thread;
use crate::status::{c_str, CResult};

/// At most this many distinct task names are kept for the life of the process; further
/// names are copied for each task.
const MAX_NAMES: usize = 1024;

/// Entries of the per-thread cache (a program spawns few kinds of task in a loop).
const CACHED: usize = 8;

/// One cached name: the caller's pointer and the interned string it held.
#[derive(Clone, Copy)]
struct Cached {
    at: *const c_char,
    name: &'static str,
}

const EMPTY: Cached = Cached {
    at: std::ptr::null(),
    name: "",
};

/// The names a thread spawned with lately, and the next entry to replace.
pub(crate) struct Cache {
    entries: [Cell<Cached>; CACHED],
    next: Cell<usize>,
}

impl Cache {
    /// An empty cache.
    pub(crate) const fn new() -> Cache {
        Cache {
            entries: [const { Cell::new(EMPTY) }; CACHED],
            next: Cell::new(0),
        }
    }

    /// The interned name the NUL-terminated string at `at` holds, if cached.
    ///
    /// # Safety
    ///
    /// `at` is non-NULL and points to a NUL-terminated string.
    #[inline]
    pub(crate) unsafe fn find(&self, at: *const c_char) -> Option<&'static str> {
        let i = self.entries.iter().position(|c| c.get().at == at)?;
        let hit = self.entries[i].get().name;
        // SAFETY: the caller's contract.
        unsafe { holds(at, hit) }.then_some(hit)
    }

    /// Caches `name`, the interned string at `at`. A pointer cached with another name
    /// is replaced where it is, so that a pointer appears at most once.
    fn keep(&self, at: *const c_char, name: &'static str) {
        let i = self
            .entries
            .iter()
            .position(|c| c.get().at == at)
            .unwrap_or_else(|| {
                let next = self.next.get();
                self.next.set((next + 1) % CACHED);
                next
            });
        self.entries[i].set(Cached { at, name });
    }
}

/// Whether the NUL-terminated string at `at` is `name`.
///
/// # Safety
///
/// `at` points to a NUL-terminated string.
unsafe fn holds(at: *const c_char, name: &str) -> bool {
    for (i, &b) in name.as_bytes().iter().enumerate() {
        // SAFETY: every byte before `i` matched a byte of `name`, none of which is NUL
        // (an interned name came from a C string), so the string at `at` is at least
        // `i + 1` bytes long with its NUL: byte `i` is in it.
        if unsafe { *at.add(i) } as u8 != b {
            return false;
        }
    }
    // SAFETY: as above, for the byte after the `name.len()` matching ones.
    unsafe { *at.add(name.len()) == 0 }
}

/// The task name at `at` (non-NULL, NUL-terminated): the interned string if it is one,
/// else a copy; an error if it is not UTF-8.
///
/// # Safety
///
/// `at` is non-NULL and points to a NUL-terminated string.
#[inline]
pub(crate) unsafe fn task_name_at(at: *const c_char) -> CResult<Cow<'static, str>> {
    // SAFETY: the caller's contract.
    match with_thread(|t| unsafe { t.names().find(at) }) {
        Some(name) => Ok(Cow::Borrowed(name)),
        // SAFETY: the caller's contract.
        None => unsafe { read_name(at) },
    }
}

/// [`task_name_at`] for a name not in the cache: reads it, interns it and caches it.
///
/// # Safety
///
/// As for [`task_name_at`].
#[inline(never)]
unsafe fn read_name(at: *const c_char) -> CResult<Cow<'static, str>> {
    // SAFETY: the caller's contract.
    let name = task_name(unsafe { c_str(at, "name") }?);
    if let Cow::Borrowed(kept) = name {
        with_thread(|t| t.names().keep(at, kept));
    }
    Ok(name)
}

/// A task's name for the runtime: the interned string if it is one of the first
/// [`MAX_NAMES`] distinct names, else a copy.
pub(crate) fn task_name(name: &str) -> Cow<'static, str> {
    static NAMES: OnceLock<RwLock<HashSet<&'static str>>> = OnceLock::new();
    let names = NAMES.get_or_init(|| RwLock::new(HashSet::new()));
    if let Some(&kept) = names.read().unwrap_or_else(|e| e.into_inner()).get(name) {
        return Cow::Borrowed(kept);
    }
    let mut names = names.write().unwrap_or_else(|e| e.into_inner());
    if let Some(&kept) = names.get(name) {
        return Cow::Borrowed(kept);
    }
    if names.len() >= MAX_NAMES {
        return Cow::Owned(name.to_string());
    }
    // Kept for the life of the process, and reachable from `NAMES` all along.
    let kept: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(kept);
    Cow::Borrowed(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(buf: &[u8]) -> *const c_char {
        buf.as_ptr().cast()
    }

    #[test]
    fn a_cached_name_is_found_by_pointer_and_shared() {
        let buf = *b"cached-name\0";
        // SAFETY: NUL-terminated.
        let first = unsafe { task_name_at(at(&buf)) }.unwrap();
        // SAFETY: as above.
        let again = unsafe { task_name_at(at(&buf)) }.unwrap();
        assert_eq!(first, "cached-name");
        // SAFETY: NUL-terminated.
        let cached = with_thread(|t| unsafe { t.names().find(at(&buf)) });
        assert_eq!(cached, Some("cached-name"), "kept in the thread's cache");
        match (first, again) {
            (Cow::Borrowed(a), Cow::Borrowed(b)) => assert!(std::ptr::eq(a, b)),
            _ => panic!("an interned name is borrowed"),
        }
    }

    #[test]
    fn another_string_at_a_cached_address_is_read_anew() {
        // One buffer, rewritten between spawns: the address hits the cache, the content
        // does not match, and the new name is returned (a prefix, a longer string and
        // one differing in its last byte, each in turn).
        let mut buf = [0u8; 32];
        for name in ["reused", "reuse", "reused-longer", "reusex", "reused"] {
            buf.fill(0);
            buf[..name.len()].copy_from_slice(name.as_bytes());
            // SAFETY: NUL-terminated (the buffer ends with zeros).
            let got = unsafe { task_name_at(at(&buf)) }.unwrap();
            assert_eq!(got, name);
        }
    }

    #[test]
    fn a_bad_name_is_refused_though_its_address_was_cached() {
        let mut buf = *b"good\0";
        // SAFETY: NUL-terminated.
        assert_eq!(unsafe { task_name_at(at(&buf)) }.unwrap(), "good");
        buf[1] = 0xff;
        // SAFETY: as above.
        let err = unsafe { task_name_at(at(&buf)) }.unwrap_err();
        assert_eq!(err.status, crate::status::locus_status::LOCUS_E_ARGUMENT);
        assert!(err.message.contains("not UTF-8"), "{}", err.message);
    }

    #[test]
    fn more_names_than_the_cache_holds_stay_right() {
        let bufs: Vec<Vec<u8>> = (0..3 * CACHED)
            .map(|i| format!("many-{i}\0").into_bytes())
            .collect();
        for _ in 0..3 {
            for (i, b) in bufs.iter().enumerate() {
                // SAFETY: NUL-terminated.
                let got = unsafe { task_name_at(at(b)) }.unwrap();
                assert_eq!(got, format!("many-{i}"));
            }
        }
    }
}
