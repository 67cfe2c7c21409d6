//! Mutual exclusion: `critical`, `atomic`, and the lock API in GNU libgomp's layouts.
//!
//! A lock is the 32-bit word of the program's `omp_lock_t` (or the first word of a
//! named critical section's pointer): 0 free, 1 held, 2 held with waiters, waited on
//! with the Linux futex (Drepper, "Futexes Are Tricky", mutex 2). A destroyed lock
//! holds [`DESTROYED`], and using it stops the program with one line. A nest lock
//! (`omp_nest_lock_t`, 16 bytes: lock word, count, owner) is owned by an OpenMP task.
//! The `OMP_1.0` versions, for programs built against the oldest libgomp, have a
//! 4-byte simple lock too, and an 8-byte nest lock (owner, count) spun on.

use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use crate::settings::die;
use crate::team::with_frame;

/// The word of a destroyed lock.
pub(crate) const DESTROYED: u32 = 0x0dea_d10c;

fn futex(word: &AtomicU32, op: i32, val: u32) {
    // SAFETY: a futex call on a live, aligned 32-bit word; the kernel checks the rest.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

fn check(word: &AtomicU32, what: &str) {
    if word.load(Ordering::Relaxed) == DESTROYED {
        die(&format!(
            "{what} on a destroyed lock (omp_destroy_lock was called on it)"
        ));
    }
}

/// Takes the lock of `word`.
pub(crate) fn lock(word: &AtomicU32) {
    if word
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return;
    }
    for _ in 0..100 {
        std::hint::spin_loop();
        if word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
    loop {
        match word.swap(2, Ordering::Acquire) {
            0 => return,
            DESTROYED => {
                word.store(DESTROYED, Ordering::Relaxed);
                die("omp_set_lock on a destroyed lock");
            }
            _ => futex(word, libc::FUTEX_WAIT, 2),
        }
    }
}

/// Tries the lock of `word`.
pub(crate) fn try_lock(word: &AtomicU32) -> bool {
    word.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
}

/// Releases the lock of `word`.
pub(crate) fn unlock(word: &AtomicU32) {
    if word.fetch_sub(1, Ordering::Release) != 1 {
        word.store(0, Ordering::Release);
        futex(word, libc::FUTEX_WAKE, 1);
    }
}

static CRITICAL: AtomicU32 = AtomicU32::new(0);
static ATOMIC: AtomicU32 = AtomicU32::new(0);

pub(crate) fn critical() -> &'static AtomicU32 {
    &CRITICAL
}

pub(crate) fn atomic() -> &'static AtomicU32 {
    &ATOMIC
}

/// The lock word of a program's lock object.
///
/// # Safety
///
/// `ptr` points to a live, 4-byte aligned lock object of the program.
pub(crate) unsafe fn word<'a>(ptr: *mut c_void) -> &'a AtomicU32 {
    if ptr.is_null() {
        die("a NULL lock");
    }
    // SAFETY: the caller's contract; the program shares the word only through these
    // functions, all atomic.
    unsafe { AtomicU32::from_ptr(ptr.cast()) }
}

pub(crate) fn init(word: &AtomicU32) {
    word.store(0, Ordering::Release);
}

pub(crate) fn destroy(word: &AtomicU32, what: &str) {
    check(word, what);
    if word.load(Ordering::Acquire) != 0 {
        die(&format!("{what} on a lock that is held"));
    }
    word.store(DESTROYED, Ordering::Release);
}

pub(crate) fn set(word: &AtomicU32) {
    check(word, "omp_set_lock");
    lock(word);
}

pub(crate) fn unset(word: &AtomicU32) {
    check(word, "omp_unset_lock");
    if word.load(Ordering::Relaxed) == 0 {
        die("omp_unset_lock on a lock that is not held");
    }
    unlock(word);
}

pub(crate) fn test(word: &AtomicU32) -> i32 {
    check(word, "omp_test_lock");
    i32::from(try_lock(word))
}

/// The owner of a nest lock: the current OpenMP task.
fn me() -> u64 {
    with_frame(|f| std::sync::Arc::as_ptr(&f.task) as u64)
}

/// A nest lock of the current layout: `{ int lock; int count; void *owner; }`.
pub(crate) struct Nest<'a> {
    word: &'a AtomicU32,
    count: &'a AtomicI32,
    owner: &'a AtomicU64,
}

impl Nest<'_> {
    /// # Safety
    ///
    /// `ptr` points to a live, 8-byte aligned `omp_nest_lock_t` of 16 bytes.
    pub(crate) unsafe fn at<'a>(ptr: *mut c_void) -> Nest<'a> {
        // SAFETY: the caller's contract: three words at offsets 0, 4 and 8.
        unsafe {
            let base = word(ptr);
            Nest {
                word: base,
                count: AtomicI32::from_ptr(ptr.cast::<i32>().add(1)),
                owner: AtomicU64::from_ptr(ptr.cast::<u64>().add(1)),
            }
        }
    }

    pub fn init(&self) {
        self.word.store(0, Ordering::Relaxed);
        self.count.store(0, Ordering::Relaxed);
        self.owner.store(0, Ordering::Release);
    }

    pub fn destroy(&self) {
        destroy(self.word, "omp_destroy_nest_lock");
    }

    pub fn set(&self) {
        check(self.word, "omp_set_nest_lock");
        let me = me();
        if self.owner.load(Ordering::Relaxed) != me {
            lock(self.word);
            self.owner.store(me, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn unset(&self) {
        check(self.word, "omp_unset_nest_lock");
        if self.owner.load(Ordering::Relaxed) != me() {
            die("omp_unset_nest_lock on a nest lock the task does not own");
        }
        if self.count.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.owner.store(0, Ordering::Relaxed);
            unlock(self.word);
        }
    }

    pub fn test(&self) -> i32 {
        check(self.word, "omp_test_nest_lock");
        let me = me();
        if self.owner.load(Ordering::Relaxed) != me {
            if !try_lock(self.word) {
                return 0;
            }
            self.owner.store(me, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// The `OMP_1.0` nest lock: `{ int owner; int count; }`, the owner a thread's id.
pub(crate) struct Nest1<'a> {
    owner: &'a AtomicI32,
    count: &'a AtomicI32,
}

impl Nest1<'_> {
    /// # Safety
    ///
    /// `ptr` points to a live, 4-byte aligned lock of 8 bytes.
    pub(crate) unsafe fn at<'a>(ptr: *mut c_void) -> Nest1<'a> {
        if ptr.is_null() {
            die("a NULL lock");
        }
        // SAFETY: the caller's contract: two ints.
        unsafe {
            Nest1 {
                owner: AtomicI32::from_ptr(ptr.cast()),
                count: AtomicI32::from_ptr(ptr.cast::<i32>().add(1)),
            }
        }
    }

    fn me() -> i32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    }

    pub fn init(&self) {
        self.owner.store(0, Ordering::Relaxed);
        self.count.store(0, Ordering::Release);
    }

    pub fn set(&self) {
        while self.test() == 0 {
            std::thread::yield_now();
        }
    }

    pub fn unset(&self) {
        if self.owner.load(Ordering::Relaxed) != Self::me() {
            die("omp_unset_nest_lock on a nest lock the thread does not own");
        }
        if self.count.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.owner.store(0, Ordering::Release);
        }
    }

    pub fn test(&self) -> i32 {
        let me = Self::me();
        if self.owner.load(Ordering::Relaxed) != me
            && self
                .owner
                .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return 0;
        }
        self.count.fetch_add(1, Ordering::Relaxed) + 1
    }
}
