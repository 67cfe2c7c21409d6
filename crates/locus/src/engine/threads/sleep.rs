//! Sleeping and waking workers without lost wake-ups, with a count of the workers that
//! search for work so that new work wakes nobody while one searches; the protocol and
//! its proof are in `README.md` beside this file, and the loom models of `tests/loom.rs`
//! check it.

use crossbeam_utils::CachePadded;

use crate::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use crate::sync::{lock, Condvar, Mutex};

#[derive(Default)]
struct Slot {
    /// Set by the worker as it registers as a sleeper, cleared by whoever ends its
    /// sleep (the waker, or the worker itself); a waker reads it without the lock
    /// first, as a hint, and again under it.
    asleep: AtomicBool,
    /// Set under the lock by the waker that chose this worker: the worker then counts
    /// as a searcher (the waker moved it), and must not wait.
    woken: Mutex<bool>,
    cv: Condvar,
}

/// The searching workers and the sleeping ones, packed in one word so that a worker
/// moves from one to the other in one read-modify-write and an announcement reads both
/// in one load (README, "State").
#[derive(Clone, Copy, Debug)]
struct Counters(u64);

impl Counters {
    /// One more worker registered as a sleeper: the low 32 bits count them.
    const ONE_SLEEPER: u64 = 1;
    /// One more worker searching: the high 32 bits count them.
    const ONE_SEARCHER: u64 = 1 << 32;

    fn sleepers(self) -> u32 {
        self.0 as u32
    }

    fn searching(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Whether a sleeper should be woken for new work: one is registered, and, when
    /// `anyone` may take the work, no worker searches (a searcher will find it).
    fn wake_wanted(self, anyone: bool) -> bool {
        self.sleepers() > 0 && (!anyone || self.searching() == 0)
    }
}

/// The sleep state of all workers of a runtime.
pub struct Sleep {
    counters: CachePadded<AtomicU64>,
    slots: Box<[CachePadded<Slot>]>,
    /// The most workers that search at once (README, "Going to sleep"): half the
    /// workers, at least one.
    most_searching: u32,
}

impl Sleep {
    /// The sleep state of `workers` workers, all awake and none searching.
    pub fn new(workers: usize) -> Self {
        Sleep {
            counters: CachePadded::new(AtomicU64::new(0)),
            slots: (0..workers).map(|_| CachePadded::default()).collect(),
            most_searching: (workers / 2).max(1) as u32,
        }
    }

    fn counters(&self) -> Counters {
        Counters(self.counters.load(Ordering::Acquire))
    }

    /// Whether a sleeper should be woken for work already announced (a hint, one load:
    /// a stale answer costs a wake-up or delays one, the protocol never relies on it):
    /// some worker is registered as a sleeper and, when `anyone` may take the work,
    /// none searches.
    pub fn should_wake(&self, anyone: bool) -> bool {
        self.counters().wake_wanted(anyone)
    }

    /// Announcing work (README, "Announcing work"), once it is visible in a queue:
    /// returns whether the caller should wake a sleeper (with [`wake`](Self::wake); the
    /// engine's `Mechanism` chooses the one nearest to the work). `anyone`: whether any
    /// worker may take the work, so that a searching worker will find it.
    ///
    /// A fence and a load: no read-modify-write, so announcing leaves the shared word
    /// in every cache that reads it.
    #[inline]
    pub fn announce(&self, anyone: bool) -> bool {
        // SeqCst, with the fence each worker makes after it registers (`start_searching`,
        // `prepare`, `wait`): either this load sees the registration, or the worker's
        // look that follows its fence sees the work pushed before this fence (README,
        // "Why no wake-up is lost").
        fence(Ordering::SeqCst);
        self.should_wake(anyone)
    }

    /// Makes the caller, an idle worker, a searcher, unless [`most_searching`] search
    /// already; returns whether it searches. A searcher looks for work after this
    /// (README, "Going to sleep", step 1).
    ///
    /// [`most_searching`]: Sleep::new
    pub fn start_searching(&self) -> bool {
        let mut now = self.counters.load(Ordering::Relaxed);
        loop {
            if Counters(now).searching() >= self.most_searching {
                return false;
            }
            match self.counters.compare_exchange_weak(
                now,
                now + Counters::ONE_SEARCHER,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    fence(Ordering::SeqCst);
                    return true;
                }
                Err(seen) => now = seen,
            }
        }
    }

    /// A searcher found work and stops searching; returns whether it was the last
    /// searcher while a worker sleeps, in which case it wakes one (README, "Finding
    /// work": announcements skipped because it searched may have left more work).
    pub fn stop_searching(&self) -> bool {
        let before = Counters(
            self.counters
                .fetch_sub(Counters::ONE_SEARCHER, Ordering::SeqCst),
        );
        before.searching() == 1 && before.sleepers() > 0
    }

    /// Whether worker `w` is registered as a sleeper and not woken yet (a hint; [`wake`]
    /// checks again under the slot's lock).
    ///
    /// [`wake`]: Sleep::wake
    pub(crate) fn is_asleep(&self, w: usize) -> bool {
        self.slots[w].asleep.load(Ordering::Acquire)
    }

    /// Step 2 of going to sleep (README): registers worker `w` as a sleeper, no longer
    /// a searcher if it was `searching`. The worker then looks for work once more and
    /// either [`cancel`](Self::cancel)s or [`wait`](Self::wait)s.
    pub fn prepare(&self, w: usize, searching: bool) {
        // Before the registration, which releases it: a waker that sees the worker
        // counted sees the flag.
        self.slots[w].asleep.store(true, Ordering::Relaxed);
        let delta = if searching {
            Counters::ONE_SLEEPER.wrapping_sub(Counters::ONE_SEARCHER)
        } else {
            Counters::ONE_SLEEPER
        };
        self.counters.fetch_add(delta, Ordering::SeqCst);
        // The last look for work that follows sees every push announced before the
        // announcement's fence that did not see this registration.
        fence(Ordering::SeqCst);
    }

    /// Worker `w`, registered by [`prepare`](Self::prepare), found work in its last
    /// look and stays awake. Returns whether it should wake another worker: a waker
    /// chose it meanwhile (so it counted as a searcher), it was the last searcher, and
    /// a worker sleeps.
    pub fn cancel(&self, w: usize) -> bool {
        let slot = &self.slots[w];
        let mut woken = lock(&slot.woken);
        let was_woken = std::mem::replace(&mut *woken, false);
        // Under the lock: a waker that comes after it sees the flag clear.
        slot.asleep.store(false, Ordering::Relaxed);
        drop(woken);
        if was_woken {
            self.stop_searching()
        } else {
            self.counters
                .fetch_sub(Counters::ONE_SLEEPER, Ordering::SeqCst);
            false
        }
    }

    /// Worker `w`, registered by [`prepare`](Self::prepare), found no work in its last
    /// look: waits until a waker chooses it or `done` is set. Returns whether it was
    /// woken; if so, it is a searcher now when `search`, and nothing otherwise.
    pub fn wait(&self, w: usize, done: &AtomicBool, search: bool) -> bool {
        let slot = &self.slots[w];
        let mut woken = lock(&slot.woken);
        // Acquire, pairs with the shutdown's store. A stale `false` only costs a wait:
        // the shutdown sets `done` before it wakes every slot under its lock.
        while !*woken && !done.load(Ordering::Acquire) {
            woken = slot
                .cv
                .wait(woken)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        let was_woken = std::mem::replace(&mut *woken, false);
        // Under the lock: a waker that comes after it sees the flag clear.
        slot.asleep.store(false, Ordering::Relaxed);
        drop(woken);
        if !was_woken {
            self.counters
                .fetch_sub(Counters::ONE_SLEEPER, Ordering::SeqCst);
        } else if !search {
            self.counters
                .fetch_sub(Counters::ONE_SEARCHER, Ordering::SeqCst);
        }
        // The woken worker's looks see every push whose announcement saw it counted
        // (README, "Why no wake-up is lost").
        fence(Ordering::SeqCst);
        was_woken
    }

    /// Wakes worker `w` if it is registered as a sleeper and no other waker chose it;
    /// returns whether this call woke it. The woken worker counts as a searcher from
    /// here on, so that later announcements leave the work to it.
    pub fn wake(&self, w: usize) -> bool {
        let slot = &self.slots[w];
        let mut woken = lock(&slot.woken);
        if *woken || !slot.asleep.load(Ordering::Relaxed) {
            return false;
        }
        *woken = true;
        slot.asleep.store(false, Ordering::Relaxed);
        self.counters.fetch_add(
            Counters::ONE_SEARCHER.wrapping_sub(Counters::ONE_SLEEPER),
            Ordering::SeqCst,
        );
        slot.cv.notify_one();
        true
    }

    /// Wakes every sleeping worker; the caller set the `done` flag the sleepers check
    /// (termination) before.
    pub fn wake_all(&self) {
        for w in 0..self.slots.len() {
            self.wake(w);
        }
    }

    // The engine announces work with `announce` and wakes the sleeper its `Mechanism`
    // chooses; the loom models drive the same protocol through these two.

    /// Announces work made visible by the caller; `owner` names the only worker that may
    /// take it (a mailbox push), if any.
    #[cfg(loom)]
    pub fn new_work(&self, owner: Option<usize>) {
        if !self.announce(owner.is_none()) {
            return;
        }
        match owner {
            Some(w) => {
                self.wake(w);
            }
            None => self.wake_any(),
        }
    }

    /// Announces work that only `candidates` may take (a strict queue): wakes one of
    /// them if it sleeps.
    #[cfg(loom)]
    pub fn new_work_for(&self, candidates: &[usize]) {
        if !self.announce(false) {
            return;
        }
        for &w in candidates {
            if self.is_asleep(w) && self.wake(w) {
                return;
            }
        }
    }

    /// Wakes one sleeping worker, if any.
    #[cfg(loom)]
    pub fn wake_any(&self) {
        for w in 0..self.slots.len() {
            if self.is_asleep(w) && self.wake(w) {
                return;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    /// Joins `handle`, failing the test if the thread has not finished within 10 s: a
    /// lost wake-up must fail the test, not hang the suite.
    fn join_within<T>(handle: JoinHandle<T>, what: &str) -> T {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !handle.is_finished() {
            assert!(Instant::now() < deadline, "{what}: still asleep after 10 s");
            std::thread::sleep(Duration::from_millis(1));
        }
        handle.join().unwrap()
    }

    /// A producer that announces work while a worker goes to sleep always gets the
    /// worker out of `wait`, or the worker's last look finds the work, whatever the
    /// interleaving.
    #[test]
    fn no_lost_wake_up_under_races() {
        for round in 0..2000 {
            let sleep = Arc::new(Sleep::new(1));
            let done = Arc::new(AtomicBool::new(false));
            let work = Arc::new(AtomicBool::new(false));
            let (s, d, wk) = (sleep.clone(), done.clone(), work.clone());
            let sleeper = std::thread::spawn(move || {
                s.prepare(0, false);
                // The last look for work happens after the registration, as in the worker.
                if wk.load(Ordering::SeqCst) {
                    s.cancel(0);
                } else {
                    s.wait(0, &d, true);
                }
            });
            if round % 2 == 0 {
                std::thread::yield_now();
            }
            work.store(true, Ordering::SeqCst);
            if sleep.announce(true) {
                sleep.wake(0);
            }
            join_within(sleeper, &format!("round {round}: a lost wake-up"));
        }
    }

    #[test]
    fn wake_all_releases_sleepers_on_termination() {
        let sleep = Arc::new(Sleep::new(3));
        let done = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..3)
            .map(|w| {
                let (s, d) = (sleep.clone(), done.clone());
                std::thread::spawn(move || {
                    s.prepare(w, false);
                    s.wait(w, &d, true)
                })
            })
            .collect();
        done.store(true, Ordering::SeqCst);
        sleep.wake_all();
        for (w, h) in handles.into_iter().enumerate() {
            join_within(h, &format!("worker {w} after wake_all"));
        }
    }

    #[test]
    fn at_most_half_the_workers_search_and_at_least_one() {
        let four = Sleep::new(4);
        assert!(four.start_searching());
        assert!(four.start_searching());
        assert!(!four.start_searching(), "a third of four workers");
        assert!(!four.stop_searching(), "another searches, none sleeps");
        assert!(four.start_searching(), "a searcher stopped");
        let alone = Sleep::new(1);
        assert!(alone.start_searching(), "the only worker searches");
        assert!(!alone.start_searching());
    }

    /// Work any worker may take wakes nobody while a worker searches, and work only a
    /// sleeper may take wakes it; the last searcher to find work passes the wake-up on;
    /// a woken worker counts as a searcher.
    #[test]
    fn no_wake_up_while_a_worker_searches() {
        let sleep = Sleep::new(4);
        assert!(!sleep.announce(true), "nobody sleeps");
        sleep.prepare(3, false);
        assert!(sleep.announce(true), "a sleeper and no searcher");
        assert!(sleep.start_searching());
        assert!(!sleep.announce(true), "the searcher will find it");
        assert!(sleep.announce(false), "only the sleeper may take it");
        assert!(sleep.stop_searching(), "the last searcher, a worker sleeps");
        assert!(sleep.is_asleep(3));
        assert!(sleep.wake(3));
        assert!(!sleep.is_asleep(3) && !sleep.wake(3), "woken once");
        assert!(!sleep.announce(true), "the woken worker searches");
        assert!(!sleep.announce(false), "nobody sleeps");
        let done = AtomicBool::new(false);
        assert!(sleep.wait(3, &done, true), "woken before it waited");
        assert!(!sleep.stop_searching(), "no sleeper left");
        assert_eq!(sleep.counters().0, 0);
        // A worker that finds work in its last look leaves the sleepers.
        sleep.prepare(2, false);
        assert!(!sleep.cancel(2));
        assert_eq!(sleep.counters().0, 0);
    }
}
