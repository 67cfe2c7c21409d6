//! Work-sharing constructs: loops (static, dynamic, guided, runtime), sections, single.
//!
//! The members of a team meet the team's work-sharing constructs in the same order,
//! possibly at different times (`nowait`): each member counts the constructs it has
//! entered, and the first to enter the `k`-th one creates its shared state, which the
//! last to leave removes. A loop's iterations are numbered `0..niters` and handed out
//! in chunks of numbers; a chunk `[a, b)` becomes `start + a*incr .. start + b*incr`
//! (the end of the last chunk is the loop's own end), computed in 64-bit two's
//! complement, so one code serves the `long` and `unsigned long long` entry points.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::settings::{die, SCHED_DYNAMIC, SCHED_GUIDED};
use crate::team::{barrier, with_frame, Frame};

/// How a loop's iterations are handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sched {
    Static,
    Dynamic,
    Guided,
}

/// A loop's iteration space.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Loop {
    start: u64,
    end: u64,
    incr: u64,
    niters: u64,
    sched: Sched,
    /// Iterations per chunk; 0 for a static loop: one block per member.
    chunk: u64,
}

impl Loop {
    /// A loop over `long` values.
    pub fn long(start: i64, end: i64, incr: i64, sched: Sched, chunk: i64) -> Loop {
        let (s, e, i) = (i128::from(start), i128::from(end), i128::from(incr));
        let niters = if i > 0 && e > s {
            (e - s + i - 1) / i
        } else if i < 0 && s > e {
            (s - e - i - 1) / -i
        } else {
            0
        };
        Loop::new(
            start as u64,
            end as u64,
            incr as u64,
            niters as u64,
            sched,
            chunk.max(0) as u64,
        )
    }

    /// A loop over `unsigned long long` values, counting up or down (`incr` negative
    /// in two's complement).
    pub fn ull(up: bool, start: u64, end: u64, incr: u64, sched: Sched, chunk: u64) -> Loop {
        let niters = if up && end > start && incr > 0 {
            u128::from(end - start).div_ceil(u128::from(incr))
        } else if !up && start > end && incr.wrapping_neg() > 0 {
            let step = u128::from(incr.wrapping_neg());
            u128::from(start - end).div_ceil(step)
        } else {
            0
        };
        Loop::new(
            start,
            end,
            incr,
            niters.min(u128::from(u64::MAX)) as u64,
            sched,
            chunk,
        )
    }

    /// A loop from `lb` to `ub` inclusive by `st` (clang's dispatch loops; the values of
    /// any of its integer types, widened).
    pub fn inclusive(lb: i128, ub: i128, st: i128, sched: Sched, chunk: u64) -> Loop {
        let niters = if st > 0 && ub >= lb {
            (ub - lb) / st + 1
        } else if st < 0 && lb >= ub {
            (lb - ub) / -st + 1
        } else {
            0
        };
        let niters = niters.min(i128::from(u64::MAX)) as u64;
        let end = (lb as u64).wrapping_add(niters.wrapping_mul(st as u64));
        Loop::new(lb as u64, end, st as u64, niters, sched, chunk)
    }

    /// The first and last loop values of iterations `[a, b)` (b > a), and whether the
    /// chunk holds the loop's last iteration.
    pub fn inclusive_bounds(&self, a: u64, b: u64) -> (u64, u64, bool) {
        let from = self.start.wrapping_add(a.wrapping_mul(self.incr));
        let to = self.start.wrapping_add((b - 1).wrapping_mul(self.incr));
        (from, to, b >= self.niters)
    }

    /// The loop's increment (two's complement).
    pub fn incr(&self) -> u64 {
        self.incr
    }

    fn new(start: u64, end: u64, incr: u64, niters: u64, sched: Sched, chunk: u64) -> Loop {
        let chunk = if sched == Sched::Static {
            chunk
        } else {
            chunk.max(1)
        };
        Loop {
            start,
            end,
            incr,
            niters,
            sched,
            chunk,
        }
    }

    /// The loop values of iterations `[a, b)`.
    fn bounds(&self, a: u64, b: u64) -> (u64, u64) {
        let from = self.start.wrapping_add(a.wrapping_mul(self.incr));
        let to = if b >= self.niters {
            self.end
        } else {
            self.start.wrapping_add(b.wrapping_mul(self.incr))
        };
        (from, to)
    }
}

/// The schedule of `schedule(runtime)`: the run-sched-var ICV of the calling task.
pub(crate) fn runtime_schedule() -> (Sched, u64) {
    let packed = crate::team::with_frame(|f| f.task.run_sched());
    (sched_of(packed >> 32), packed & 0xffff_ffff)
}

/// A schedule kind as `omp_sched_t` or gcc's `GFS_*` numbers it (monotonic bit off).
pub(crate) fn sched_of(kind: u64) -> Sched {
    match kind & 0x7fff_ffff {
        SCHED_DYNAMIC => Sched::Dynamic,
        SCHED_GUIDED => Sched::Guided,
        _ => Sched::Static,
    }
}

/// The shared state of one work-sharing construct.
pub(crate) struct WorkShare {
    lp: Loop,
    /// Next iteration to hand out (dynamic, guided).
    next: AtomicU64,
    /// `single copyprivate`: the winner's data.
    copy: AtomicPtr<c_void>,
    /// Members that have left the construct.
    left: AtomicUsize,
}

impl WorkShare {
    pub fn new(lp: Loop) -> Arc<WorkShare> {
        Arc::new(WorkShare {
            lp,
            next: AtomicU64::new(0),
            copy: AtomicPtr::new(std::ptr::null_mut()),
            left: AtomicUsize::new(0),
        })
    }
}

/// A member's work-sharing state.
pub(crate) struct WsState {
    /// Constructs entered so far.
    count: u64,
    /// The construct in progress and its ordinal.
    current: Option<(u64, Arc<WorkShare>)>,
    /// Chunks of a static loop this member has taken.
    static_taken: u64,
}

impl WsState {
    /// The state of a new member; `ws0` is the construct its region starts with (a
    /// combined parallel loop or sections).
    pub fn new(ws0: Option<Arc<WorkShare>>) -> WsState {
        WsState {
            count: u64::from(ws0.is_some()),
            current: ws0.map(|w| (0, w)),
            static_taken: 0,
        }
    }
}

fn implicit_only(frame: &Frame) {
    if !frame.implicit {
        die("a work-sharing construct (loop, sections, single) inside an explicit task (OpenMP forbids it)");
    }
}

/// Enters the next work-sharing construct; returns whether this member created it.
pub(crate) fn enter_ws(frame: &Frame, lp: impl FnOnce() -> Loop) -> bool {
    implicit_only(frame);
    let mut st = frame.ws.borrow_mut();
    let k = st.count;
    st.count += 1;
    st.static_taken = 0;
    let mut map = frame.team.ws.lock().unwrap_or_else(|p| p.into_inner());
    let mut created = false;
    let ws = map
        .entry(k)
        .or_insert_with(|| {
            created = true;
            WorkShare::new(lp())
        })
        .clone();
    st.current = Some((k, ws));
    created
}

/// Leaves the current construct (the last member to leave drops its state).
pub(crate) fn leave_ws(frame: &Frame) {
    let Some((k, ws)) = frame.ws.borrow_mut().current.take() else {
        die("the end of a work-sharing construct that was not started");
    };
    if ws.left.fetch_add(1, Ordering::AcqRel) + 1 == frame.team.n {
        frame
            .team
            .ws
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&k);
    }
}

/// The next chunk of the current loop for this member, as loop values.
pub(crate) fn next_chunk(frame: &Frame) -> Option<(u64, u64)> {
    next_iterations(frame).map(|(lp, a, b)| lp.bounds(a, b))
}

/// The next chunk of the current loop for this member: the loop and the chunk's
/// iteration numbers `[a, b)`.
pub(crate) fn next_iterations(frame: &Frame) -> Option<(Loop, u64, u64)> {
    let mut st = frame.ws.borrow_mut();
    let taken = st.static_taken;
    let Some((_, ws)) = &st.current else {
        die("a loop chunk asked for outside a loop");
    };
    let lp = ws.lp;
    let (n, t) = (frame.team.n as u64, frame.thread_num as u64);
    let (a, b) = match lp.sched {
        Sched::Static if lp.chunk == 0 => {
            if taken > 0 {
                return None;
            }
            let (q, r) = (lp.niters / n, lp.niters % n);
            let a = t * q + t.min(r);
            (a, a + q + u64::from(t < r))
        }
        Sched::Static => {
            let c = t + taken * n;
            let a = c.checked_mul(lp.chunk)?;
            (a, a.saturating_add(lp.chunk).min(lp.niters))
        }
        Sched::Dynamic => {
            let a = ws.next.fetch_add(lp.chunk, Ordering::Relaxed);
            (a, a.saturating_add(lp.chunk).min(lp.niters))
        }
        Sched::Guided => {
            let mut cur = ws.next.load(Ordering::Relaxed);
            loop {
                if cur >= lp.niters {
                    return None;
                }
                let left = lp.niters - cur;
                let q = left.div_ceil(n).max(lp.chunk).min(left);
                match ws.next.compare_exchange_weak(
                    cur,
                    cur + q,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break (cur, cur + q),
                    Err(now) => cur = now,
                }
            }
        }
    };
    if a >= b || a >= lp.niters {
        return None;
    }
    st.static_taken = taken + 1;
    Some((lp, a, b.min(lp.niters)))
}

/// Writes a chunk to gcc's `istart`/`iend` (`long` or `unsigned long long`: 64 bits
/// either way); returns whether there was one.
///
/// # Safety
///
/// `istart` and `iend` are NULL or writable 64-bit integers.
pub(crate) unsafe fn give(chunk: Option<(u64, u64)>, istart: *mut u64, iend: *mut u64) -> bool {
    match chunk {
        Some((a, b)) => {
            if !istart.is_null() && !iend.is_null() {
                // SAFETY: writable, by the caller's contract.
                unsafe {
                    *istart = a;
                    *iend = b;
                }
            }
            true
        }
        None => false,
    }
}

/// `GOMP_loop_*_start`: enters the loop and returns its first chunk.
pub(crate) fn loop_start(lp: impl FnOnce() -> Loop) -> Option<(u64, u64)> {
    with_frame(|frame| {
        enter_ws(frame, lp);
        next_chunk(frame)
    })
}

/// `GOMP_loop_*_next`.
pub(crate) fn loop_next() -> Option<(u64, u64)> {
    with_frame(next_chunk)
}

/// `GOMP_loop_end` (`wait`: with its barrier) and `GOMP_loop_end_nowait`; the ends of
/// sections too.
pub(crate) fn loop_end(wait: bool) {
    with_frame(|frame| {
        leave_ws(frame);
        if wait {
            barrier(frame);
        }
    });
}

/// A section number (1-based) from a chunk of a sections construct, 0 when done.
pub(crate) fn section(chunk: Option<(u64, u64)>) -> u32 {
    chunk.map_or(0, |(a, _)| a as u32)
}

/// The loop of `sections` with `count` sections: numbers `1..=count`, one at a time.
pub(crate) fn sections_loop(count: u32) -> Loop {
    Loop::long(1, i64::from(count) + 1, 1, Sched::Dynamic, 1)
}

/// `GOMP_single_start`: whether this member runs the single region.
pub(crate) fn single_start() -> bool {
    with_frame(|frame| {
        let first = enter_ws(frame, || Loop::long(0, 0, 1, Sched::Static, 0));
        leave_ws(frame);
        first
    })
}

/// `GOMP_single_copy_start`: NULL for the member that runs the region; the others wait
/// for it and get its data.
pub(crate) fn single_copy_start() -> *mut c_void {
    with_frame(|frame| {
        if enter_ws(frame, || Loop::long(0, 0, 1, Sched::Static, 0)) {
            return std::ptr::null_mut();
        }
        barrier(frame);
        let data = frame
            .ws
            .borrow()
            .current
            .as_ref()
            .map_or(std::ptr::null_mut(), |(_, ws)| {
                ws.copy.load(Ordering::Acquire)
            });
        leave_ws(frame);
        data
    })
}

/// `GOMP_single_copy_end`: publishes the winner's data to the others.
pub(crate) fn single_copy_end(data: *mut c_void) {
    with_frame(|frame| {
        if let Some((_, ws)) = frame.ws.borrow().current.as_ref() {
            ws.copy.store(data, Ordering::Release);
        }
        barrier(frame);
        leave_ws(frame);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_counts_and_bounds() {
        let lp = Loop::long(0, 10, 3, Sched::Dynamic, 1);
        assert_eq!(lp.niters, 4);
        assert_eq!(lp.bounds(1, 2), (3, 6));
        assert_eq!(lp.bounds(3, 4), (9, 10));
        let down = Loop::long(10, 0, -2, Sched::Dynamic, 1);
        assert_eq!(down.niters, 5);
        assert_eq!(down.bounds(1, 3), (8u64, 4u64));
        assert_eq!(Loop::long(5, 5, 1, Sched::Static, 0).niters, 0);
        let ull = Loop::ull(false, 10, 0, (-3i64) as u64, Sched::Static, 0);
        assert_eq!(ull.niters, 4);
        assert_eq!(ull.bounds(1, 2), (7, 4));
    }
}
