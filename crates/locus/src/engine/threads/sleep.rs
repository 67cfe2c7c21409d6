//! Sleeping and waking workers without lost wake-ups; the protocol and its proof are in
//! `README.md` beside this file, and the loom models of `tests/loom.rs` check it.

use crossbeam_utils::CachePadded;

use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::sync::{lock, Condvar, Mutex};

#[derive(Default)]
struct Slot {
    asleep: AtomicBool,
    woken: Mutex<bool>,
    cv: Condvar,
}

/// The epoch and the count of sleepers, packed in one word so that announcing work and
/// going to sleep are each one read-modify-write of it (README, "State").
#[derive(Clone, Copy)]
struct Counters(u64);

impl Counters {
    /// One more worker asleep or about to be: the low 32 bits count them.
    const ONE_SLEEPER: u64 = 1;
    /// One more announcement of work: the high 32 bits count them, wrapping.
    const ONE_EPOCH: u64 = 1 << 32;

    fn epoch(self) -> u32 {
        (self.0 >> 32) as u32
    }

    fn sleepers(self) -> u32 {
        self.0 as u32
    }
}

/// The epoch a worker read before its last look for work (step 2 of going to sleep).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket(u32);

/// The sleep state of all workers of a runtime.
pub struct Sleep {
    counters: CachePadded<AtomicU64>,
    slots: Box<[CachePadded<Slot>]>,
}

impl Sleep {
    /// The sleep state of `workers` workers, all awake.
    pub fn new(workers: usize) -> Self {
        Sleep {
            counters: CachePadded::new(AtomicU64::new(0)),
            slots: (0..workers).map(|_| CachePadded::default()).collect(),
        }
    }

    fn counters(&self) -> Counters {
        Counters(self.counters.load(Ordering::Acquire))
    }

    /// Step 2 of going to sleep (README): the epoch before the last look for work.
    pub fn ticket(&self) -> Ticket {
        Ticket(self.counters().epoch())
    }

    /// Whether any worker is asleep or about to be (a hint: a stale answer costs a
    /// wake-up or delays one, the announcements of work never rely on it).
    pub fn has_sleepers(&self) -> bool {
        self.counters().sleepers() > 0
    }

    /// Steps 2 and 3 of announcing work (README): bumps the epoch and returns whether
    /// any worker is asleep or about to be; if so, the caller wakes the one it chooses
    /// with [`wake`](Self::wake) (the engine's `Mechanism` chooses the sleeper nearest
    /// to the work).
    pub(crate) fn announce(&self) -> bool {
        // One AcqRel read-modify-write: it reads the latest word, so it sees every
        // sleeper whose increment came before it, and a sleeper whose increment comes
        // after it reads the new epoch (README, "Why no wake-up is lost"). Release: the
        // work pushed before is visible to that sleeper's next look.
        let before = Counters(
            self.counters
                .fetch_add(Counters::ONE_EPOCH, Ordering::AcqRel),
        );
        before.sleepers() > 0
    }

    /// Whether worker `w` is asleep or about to be. (The loom models, which build no
    /// workers, do not ask.)
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn is_asleep(&self, w: usize) -> bool {
        self.slots[w].asleep.load(Ordering::Acquire)
    }

    // The engine announces work with `announce` and wakes the sleeper its `Mechanism`
    // chooses; the loom models drive the same protocol through these three.

    /// Announces work made visible by the caller; `owner` names the only worker that may
    /// take it (a mailbox push), if any.
    #[cfg(loom)]
    pub fn new_work(&self, owner: Option<usize>) {
        if !self.announce() {
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
    /// them if it is asleep.
    #[cfg(loom)]
    pub fn new_work_for(&self, candidates: &[usize]) {
        if !self.announce() {
            return;
        }
        for &w in candidates {
            if self.slots[w].asleep.load(Ordering::Acquire) && self.wake(w) {
                return;
            }
        }
    }

    /// Wakes one sleeping worker, if any.
    #[cfg(loom)]
    pub fn wake_any(&self) {
        for w in 0..self.slots.len() {
            if self.slots[w].asleep.load(Ordering::Acquire) && self.wake(w) {
                return;
            }
        }
    }

    /// Wakes worker `w` if it is asleep; returns whether this call woke it.
    pub(crate) fn wake(&self, w: usize) -> bool {
        let slot = &self.slots[w];
        let mut woken = lock(&slot.woken);
        if slot.asleep.load(Ordering::Acquire) && !*woken {
            *woken = true;
            slot.cv.notify_one();
            true
        } else {
            false
        }
    }

    /// Wakes every worker (termination).
    pub fn wake_all(&self) {
        self.counters
            .fetch_add(Counters::ONE_EPOCH, Ordering::AcqRel);
        for slot in self.slots.iter() {
            let mut woken = lock(&slot.woken);
            *woken = true;
            slot.cv.notify_one();
        }
    }

    /// Steps 4 to 7 of going to sleep (README): sleeps unless the epoch moved past
    /// `ticket` or `terminate` is set.
    pub fn sleep(&self, w: usize, ticket: Ticket, terminate: &AtomicBool) {
        let slot = &self.slots[w];
        let mut woken = lock(&slot.woken);
        // Release, with the increment below: a producer that sees this sleeper counted
        // also sees `asleep` set.
        slot.asleep.store(true, Ordering::Release);
        // The sleeper's half of the one read-modify-write order (see `announce`): counts
        // this sleeper and reads the epoch at once.
        let before = Counters(
            self.counters
                .fetch_add(Counters::ONE_SLEEPER, Ordering::AcqRel),
        );
        // Acquire, pairs with the shutdown's store. A stale `false` only costs a wait:
        // `wake_all`, called after that store, sets `woken` under this slot's lock.
        if before.epoch() == ticket.0 && !terminate.load(Ordering::Acquire) {
            while !*woken {
                woken = slot
                    .cv
                    .wait(woken)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        }
        *woken = false;
        slot.asleep.store(false, Ordering::Release);
        self.counters
            .fetch_sub(Counters::ONE_SLEEPER, Ordering::AcqRel);
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

    /// A producer that announces work after a sleeper took its ticket always gets the
    /// sleeper out of `sleep`, whatever the interleaving.
    #[test]
    fn no_lost_wake_up_under_races() {
        for round in 0..2000 {
            let sleep = Arc::new(Sleep::new(1));
            let terminate = Arc::new(AtomicBool::new(false));
            let work = Arc::new(AtomicBool::new(false));
            let ticket = sleep.ticket();
            let (s, t, wk) = (sleep.clone(), terminate.clone(), work.clone());
            let sleeper = std::thread::spawn(move || {
                // The last look for work happens after the ticket, as in the worker.
                if !wk.load(Ordering::SeqCst) {
                    s.sleep(0, ticket, &t);
                }
            });
            if round % 2 == 0 {
                std::thread::yield_now();
            }
            work.store(true, Ordering::SeqCst);
            if sleep.announce() {
                sleep.wake(0);
            }
            join_within(sleeper, &format!("round {round}: a lost wake-up"));
        }
    }

    #[test]
    fn wake_all_releases_sleepers_on_termination() {
        let sleep = Arc::new(Sleep::new(3));
        let terminate = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..3)
            .map(|w| {
                let (s, t) = (sleep.clone(), terminate.clone());
                std::thread::spawn(move || {
                    let ticket = s.ticket();
                    s.sleep(w, ticket, &t)
                })
            })
            .collect();
        terminate.store(true, Ordering::SeqCst);
        sleep.wake_all();
        for (w, h) in handles.into_iter().enumerate() {
            join_within(h, &format!("worker {w} after wake_all"));
        }
    }
}
