//! The bodies running on each thread, and the contexts that name them.
//!
//! A worker runs other tasks while one waits, so bodies nest on its thread. Each body
//! runs in a frame, which lives on the native stack of the call that runs the body
//! ([`in_frame`]) and is linked to the frame it interrupted: the thread's innermost
//! frame is one thread-local pointer, and pushing or popping a frame writes it, with
//! no allocation and no lock. A frame is found again by its token, the context the
//! body was given (`locus_ctx`): tokens are unique in the process, so a context kept
//! after its body returned, or passed to another thread, names no innermost frame
//! ([`current`]) even when a new frame sits at the same address.
//!
//! The thread's cache of task names (module `names`) is kept beside its frames, so that
//! a spawn finds its context and its name with one access to the thread's state.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use locus::{Scope, TaskCtx};

use crate::names;
use crate::status::{locus_status, CResult, Fail};
use crate::task::locus_ctx;

/// What a frame lets its context do.
#[derive(Clone, Copy)]
pub(crate) enum Frame {
    /// The run's root: it spawns into the run's scope.
    Root(*const Scope),
    /// A task body: its context.
    Task(*const TaskCtx),
    /// A replayed body of a recorded graph (module `graph`): the iteration's index.
    /// It can say where it runs and which iteration it is, not spawn or wait.
    Replay(u64),
}

/// What a valid context names.
#[derive(Clone, Copy)]
pub(crate) struct Current {
    /// The handle bits of the runtime.
    pub(crate) runtime: u64,
    pub(crate) worker: usize,
    pub(crate) node: usize,
    pub(crate) frame: Frame,
}

/// A body running on this thread, on the stack of [`in_frame`].
struct Entry {
    token: u64,
    current: Current,
    /// What the body said of its failure, if anything (most bodies say nothing: one
    /// word to write and read back).
    notes: Cell<Option<Box<Notes>>>,
    /// The frame this one interrupted (null if none).
    outer: *const Entry,
}

/// The frames of a thread, and its cache of task names.
pub(crate) struct Frames {
    /// The innermost frame (null if no body runs on the thread): it points into the
    /// stack of the [`in_frame`] call running it, which resets it before returning.
    top: Cell<*const Entry>,
    /// The next token of this thread: its index in the high 24 bits, a counter below,
    /// so that tokens are unique in the process without a shared counter.
    next_token: Cell<u64>,
    names: names::Cache,
}

thread_local! {
    static FRAMES: Frames = const {
        Frames {
            top: Cell::new(std::ptr::null()),
            next_token: Cell::new(0),
            names: names::Cache::new(),
        }
    };
}

/// Runs `f` on the calling thread's frames and names.
///
/// `f` runs outside [`LocalKey::with`](std::thread::LocalKey::with), on the address it
/// gave: every spawn comes here, and a large closure keeps `with` out of line, where
/// reaching the thread's storage costs an indirect call.
#[inline(always)]
pub(crate) fn with_thread<R>(f: impl FnOnce(&Frames) -> R) -> R {
    let frames: *const Frames = FRAMES.with(|t| t as *const Frames);
    // SAFETY: `FRAMES` is initialised in place (`const`) and has no destructor, so its
    // storage is the calling thread's for as long as the thread runs, and `f` runs on
    // this thread, during this call.
    f(unsafe { &*frames })
}

/// Threads that have run a body so far: each gets its own range of tokens.
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

impl Frames {
    /// The innermost body's frame, if `ctx` is its context.
    #[inline]
    pub(crate) fn current(&self, ctx: locus_ctx) -> Option<Current> {
        self.with_top(|e| (e.token == ctx.bits).then_some(e.current))
            .flatten()
    }

    /// The thread's cache of task names.
    pub(crate) fn names(&self) -> &names::Cache {
        &self.names
    }

    /// A new token, unique in the process (and never 0).
    fn next_token(&self) -> u64 {
        let mut token = self.next_token.get();
        if token & 0xff_ffff_ffff == 0 {
            // First use on this thread, or its counter wrapped: a new range.
            token = NEXT_THREAD.fetch_add(1, Ordering::Relaxed) << 40 | 1;
        }
        self.next_token.set(token + 1);
        token
    }

    /// Runs `f` on the innermost frame, if any.
    #[inline]
    fn with_top<R>(&self, f: impl FnOnce(&Entry) -> R) -> Option<R> {
        let top = self.top.get();
        // SAFETY: a non-null `top` is the entry of an `in_frame` call still running on
        // this thread (it resets `top` before its entry goes, also when unwinding), and
        // the reference does not leave this call.
        (!top.is_null()).then(|| f(unsafe { &*top }))
    }
}

/// Restores the thread's innermost frame when dropped, also when unwinding.
struct Pop<'t>(&'t Frames, *const Entry);

impl Drop for Pop<'_> {
    fn drop(&mut self) {
        self.0.top.set(self.1);
    }
}

/// What a body's frame recorded of its failure.
#[derive(Default)]
pub(crate) struct Notes {
    /// The message given to `locus_ctx_fail`.
    pub(crate) failure: Option<String>,
    /// The first call this body made that was refused (a spawn, a wait): the body's
    /// task fails when it returns, so that a run is never missing a task and reported
    /// as complete.
    pub(crate) refused: Option<String>,
}

/// What a body's frame recorded: its status and its notes.
pub(crate) struct Returned {
    pub(crate) status: i32,
    pub(crate) notes: Option<Box<Notes>>,
}

impl Returned {
    /// Whether the body succeeded: it returned 0, and no call it made was refused.
    #[inline]
    pub(crate) fn succeeded(&self) -> bool {
        self.status == 0 && !matches!(&self.notes, Some(n) if n.refused.is_some())
    }
}

/// Runs `body` with the context of a new innermost frame of this thread, `current`.
pub(crate) fn in_frame(current: Current, body: impl FnOnce(locus_ctx) -> i32) -> Returned {
    FRAMES.with(|frames| {
        let entry = Entry {
            token: frames.next_token(),
            current,
            notes: Cell::new(None),
            outer: frames.top.get(),
        };
        frames.top.set(&entry);
        // Declared after `entry`, so dropped before it.
        let pop = Pop(frames, entry.outer);
        let status = body(locus_ctx { bits: entry.token });
        drop(pop);
        Returned {
            status,
            notes: entry.notes.into_inner(),
        }
    })
}

/// The innermost body's frame, if `ctx` is its context.
pub(crate) fn current(ctx: locus_ctx) -> CResult<Current> {
    FRAMES
        .with(|f| f.current(ctx))
        .ok_or_else(|| not_current(ctx))
}

#[cold]
fn not_current(ctx: locus_ctx) -> Fail {
    Fail::new(
        locus_status::LOCUS_E_CONTEXT,
        if ctx.bits == 0 {
            "null task context".to_string()
        } else {
            format!(
                "task context {:#x} is not the running body's on this thread (its body has \
                 returned, or it was passed to another thread)",
                ctx.bits
            )
        },
    )
}

/// Whether a body (or a run's root) is running on this thread.
pub(crate) fn in_body() -> bool {
    FRAMES.with(|f| !f.top.get().is_null())
}

/// Records a refused call in the innermost body running on this thread (the one that
/// made it), the first one only: `what` says it.
pub(crate) fn record_refusal(what: impl FnOnce() -> String) {
    FRAMES.with(|f| {
        f.with_top(|e| {
            let mut notes = e.notes.take().unwrap_or_default();
            notes.refused.get_or_insert_with(what);
            e.notes.set(Some(notes));
        })
    });
}

/// Records the message given to `locus_ctx_fail` in the innermost body running on this
/// thread (`None` clears it).
pub(crate) fn record_failure(message: Option<String>) {
    FRAMES.with(|f| {
        f.with_top(|e| {
            let mut notes = e.notes.take().unwrap_or_default();
            notes.failure = message;
            e.notes.set(Some(notes));
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(worker: usize) -> Current {
        Current {
            runtime: 1,
            worker,
            node: 0,
            frame: Frame::Replay(0),
        }
    }

    #[test]
    fn only_the_innermost_context_is_current_and_tokens_are_not_reused() {
        assert!(!in_body());
        let mut seen = Vec::new();
        for _ in 0..2 {
            let outer = in_frame(at(1), |outer| {
                assert_eq!(current(outer).map(|c| c.worker).ok(), Some(1));
                let inner = in_frame(at(2), |inner| {
                    assert_eq!(current(inner).map(|c| c.worker).ok(), Some(2));
                    assert!(current(outer).is_err(), "not the innermost");
                    record_refusal(|| "first".into());
                    record_refusal(|| "second".into());
                    seen.push(inner);
                    7
                });
                assert_eq!(inner.status, 7);
                let notes = inner.notes.unwrap();
                assert_eq!(notes.refused.as_deref(), Some("first"));
                assert!(current(seen[seen.len() - 1]).is_err(), "returned");
                assert_eq!(current(outer).map(|c| c.worker).ok(), Some(1));
                record_failure(Some("why".into()));
                seen.push(outer);
                0
            });
            let notes = outer.notes.unwrap();
            assert_eq!(notes.failure.as_deref(), Some("why"));
            assert_eq!(notes.refused, None);
        }
        assert!(!in_body());
        // Frames at the same stack addresses got new tokens; none of them is current.
        let unique: std::collections::HashSet<_> = seen.iter().map(|c| c.bits).collect();
        assert_eq!(unique.len(), seen.len());
        assert!(seen.iter().all(|&c| current(c).is_err()));
        assert!(current(locus_ctx { bits: 0 }).is_err());
    }

    #[test]
    fn a_panic_in_a_body_pops_its_frame() {
        let caught = std::panic::catch_unwind(|| {
            in_frame(at(1), |_| panic!("body panicked"));
        });
        assert!(caught.is_err());
        assert!(!in_body());
    }
}
