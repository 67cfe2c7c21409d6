//! The seam between the cluster and the network: [`Transport`] moves byte messages
//! between ranks without ever blocking its caller, and [`Arrival`] is where a receiver
//! waits for one. Two transports implement it: MPI (feature `mpi`, a communication
//! thread that posts non-blocking sends and receives and tests them), and
//! [`Loopback`], ranks in one process, for tests without MPI.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// What a message is, beside its sender: the pair `(from, tag)` names one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// The `n`th message of the plan from the sender to the receiver.
    Data(u64),
    /// The end-of-run status of run `n` (see [`Cluster::run`](crate::Cluster::run)).
    Status(u64),
    /// The messages around a run (module `kernels`): 0 and 1, the length and text of
    /// a rank's report to rank 0 ([`kernels::gather`](crate::kernels::gather)); 2 and 3,
    /// those of a text exchanged before or after the run (the program each rank runs,
    /// rank 0's verdict).
    Report(u64),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

enum State {
    Pending,
    Arrived(Vec<u8>),
    Failed(String),
}

/// A message a rank expects: filled by the transport when it arrives, or failed when a
/// rank fails.
pub struct Arrival {
    state: Mutex<State>,
    ready: Condvar,
}

impl Default for Arrival {
    fn default() -> Self {
        Arrival {
            state: Mutex::new(State::Pending),
            ready: Condvar::new(),
        }
    }
}

impl Arrival {
    /// The message arrived.
    pub fn fill(&self, bytes: Vec<u8>) {
        let mut s = lock(&self.state);
        if matches!(*s, State::Pending) {
            *s = State::Arrived(bytes);
        }
        self.ready.notify_all();
    }

    /// It never will: a rank failed.
    pub fn fail(&self, message: &str) {
        let mut s = lock(&self.state);
        if matches!(*s, State::Pending) {
            *s = State::Failed(message.to_string());
        }
        self.ready.notify_all();
    }

    /// Whether it arrived or failed.
    pub fn is_settled(&self) -> bool {
        !matches!(*lock(&self.state), State::Pending)
    }

    /// Waits at most `timeout`: `None` if still pending, else the bytes (taken: a
    /// second call gets an empty message) or the failure.
    pub fn wait_for(&self, timeout: Duration) -> Option<Result<Vec<u8>, String>> {
        let s = lock(&self.state);
        let (mut s, _) = self
            .ready
            .wait_timeout_while(s, timeout, |s| matches!(s, State::Pending))
            .unwrap_or_else(PoisonError::into_inner);
        match &mut *s {
            State::Pending => None,
            State::Arrived(bytes) => Some(Ok(std::mem::take(bytes))),
            State::Failed(m) => Some(Err(m.clone())),
        }
    }
}

/// Moves messages between the ranks of one program. No method blocks: sends are
/// buffered or in flight, receives are announced and completed later.
pub trait Transport: Send + Sync {
    /// This rank.
    fn rank(&self) -> usize;
    /// Ranks in the program.
    fn ranks(&self) -> usize;
    /// Starts sending `bytes` to rank `to`.
    fn send(&self, to: usize, tag: Tag, bytes: Vec<u8>);
    /// Announces that a message of `len` bytes will come from `from` with `tag`; the
    /// returned arrival is filled when it has.
    fn expect(&self, from: usize, tag: Tag, len: usize) -> Arc<Arrival>;
    /// This rank failed: every rank's pending and later arrivals fail with `message`.
    fn fail(&self, message: &str);
}

#[derive(Default)]
struct Hub {
    /// Sent, not yet expected: by `(from, to, tag)`.
    sent: HashMap<(usize, usize, Tag), Vec<u8>>,
    /// Expected, not yet sent.
    expected: HashMap<(usize, usize, Tag), Arc<Arrival>>,
    failed: Option<String>,
}

/// Ranks as threads of one process, for tests and for trying a distributed program
/// without MPI: [`Loopback::ranks`] makes the transports of all ranks at once.
pub struct Loopback {
    rank: usize,
    ranks: usize,
    hub: Arc<Mutex<Hub>>,
}

impl Loopback {
    /// One transport per rank, all joined.
    pub fn ranks(ranks: usize) -> Vec<Arc<Loopback>> {
        let hub = Arc::new(Mutex::new(Hub::default()));
        (0..ranks)
            .map(|rank| {
                Arc::new(Loopback {
                    rank,
                    ranks,
                    hub: hub.clone(),
                })
            })
            .collect()
    }
}

impl Transport for Loopback {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn send(&self, to: usize, tag: Tag, bytes: Vec<u8>) {
        let mut hub = lock(&self.hub);
        let key = (self.rank, to, tag);
        match hub.expected.remove(&key) {
            Some(arrival) => arrival.fill(bytes),
            None => {
                hub.sent.insert(key, bytes);
            }
        }
    }

    fn expect(&self, from: usize, tag: Tag, _len: usize) -> Arc<Arrival> {
        let arrival = Arc::new(Arrival::default());
        let mut hub = lock(&self.hub);
        let key = (from, self.rank, tag);
        if let Some(bytes) = hub.sent.remove(&key) {
            arrival.fill(bytes);
        } else if let Some(message) = &hub.failed {
            arrival.fail(message);
        } else {
            hub.expected.insert(key, arrival.clone());
        }
        arrival
    }

    fn fail(&self, message: &str) {
        let mut hub = lock(&self.hub);
        let message = format!("rank {} failed: {message}", self.rank);
        for (_, arrival) in hub.expected.drain() {
            arrival.fail(&message);
        }
        hub.failed.get_or_insert(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_matches_in_either_order() {
        let t = Loopback::ranks(2);
        t[0].send(1, Tag::Data(0), vec![1, 2]);
        let early = t[1].expect(0, Tag::Data(0), 2);
        let late = t[1].expect(0, Tag::Data(1), 1);
        assert!(!late.is_settled());
        t[0].send(1, Tag::Data(1), vec![3]);
        assert_eq!(early.wait_for(Duration::ZERO), Some(Ok(vec![1, 2])));
        assert_eq!(late.wait_for(Duration::ZERO), Some(Ok(vec![3])));
    }

    #[test]
    fn a_failure_fails_pending_and_later_arrivals() {
        let t = Loopback::ranks(2);
        let pending = t[0].expect(1, Tag::Data(0), 8);
        t[1].fail("task `x` panicked");
        let later = t[0].expect(1, Tag::Status(0), 1);
        let want = Some(Err("rank 1 failed: task `x` panicked".to_string()));
        assert_eq!(pending.wait_for(Duration::ZERO), want);
        assert_eq!(later.wait_for(Duration::ZERO), want);
    }
}
