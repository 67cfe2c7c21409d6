//! Sleeping and waking workers without lost wake-ups; the protocol and its proof are in
//! `README.md` beside this file.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use crossbeam_utils::CachePadded;

use crate::data::lock_mutex;

#[derive(Default)]
struct Slot {
    asleep: AtomicBool,
    woken: Mutex<bool>,
    cv: Condvar,
}

/// The sleep state of all workers of a runtime.
pub(crate) struct Sleep {
    epoch: CachePadded<AtomicU64>,
    sleepers: CachePadded<AtomicUsize>,
    slots: Box<[CachePadded<Slot>]>,
}

impl Sleep {
    pub(crate) fn new(workers: usize) -> Self {
        Sleep {
            epoch: CachePadded::new(AtomicU64::new(0)),
            sleepers: CachePadded::new(AtomicUsize::new(0)),
            slots: (0..workers).map(|_| CachePadded::default()).collect(),
        }
    }

    /// Step 2 of going to sleep (README): the epoch before the last look for work.
    pub(crate) fn ticket(&self) -> u64 {
        // SeqCst: pairs with the producers' increment (README, "Why no wake-up is lost").
        self.epoch.load(Ordering::SeqCst)
    }

    /// Whether any worker is asleep or about to be.
    pub(crate) fn has_sleepers(&self) -> bool {
        self.sleepers.load(Ordering::SeqCst) > 0
    }

    /// Announces work made visible by the caller and says whether a worker may be
    /// asleep; if so, the caller wakes the one it chooses with [`wake`](Self::wake)
    /// (the engine's `Mechanism` chooses the sleeper nearest to the work).
    pub(crate) fn announce(&self) -> bool {
        // SeqCst increment, then SeqCst read of `sleepers`: the producer's half of the
        // total order that prevents the lost wake-up (README).
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.sleepers.load(Ordering::SeqCst) > 0
    }

    /// Whether worker `w` is asleep or about to be.
    pub(crate) fn is_asleep(&self, w: usize) -> bool {
        self.slots[w].asleep.load(Ordering::SeqCst)
    }

    /// Wakes worker `w` if it is asleep; returns whether this call woke it.
    pub(crate) fn wake(&self, w: usize) -> bool {
        let slot = &self.slots[w];
        let mut woken = lock_mutex(&slot.woken);
        if slot.asleep.load(Ordering::SeqCst) && !*woken {
            *woken = true;
            slot.cv.notify_one();
            true
        } else {
            false
        }
    }

    /// Wakes every worker (termination).
    pub(crate) fn wake_all(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        for slot in self.slots.iter() {
            let mut woken = lock_mutex(&slot.woken);
            *woken = true;
            slot.cv.notify_one();
        }
    }

    /// Steps 4 to 7 of going to sleep (README): sleeps unless the epoch moved past
    /// `ticket` or `terminate` is set.
    pub(crate) fn sleep(&self, w: usize, ticket: u64, terminate: &AtomicBool) {
        let slot = &self.slots[w];
        let mut woken = lock_mutex(&slot.woken);
        slot.asleep.store(true, Ordering::SeqCst);
        // SeqCst increment, then SeqCst read of `epoch`: the sleeper's half (README).
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if self.epoch.load(Ordering::SeqCst) == ticket && !terminate.load(Ordering::SeqCst) {
            while !*woken {
                woken = slot
                    .cv
                    .wait(woken)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        }
        *woken = false;
        slot.asleep.store(false, Ordering::SeqCst);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
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
