//! Dead and silent peers: the bookkeeping behind the MPI transport's heartbeats.
//!
//! A rank killed outright (`SIGKILL`, the OOM killer, a lost node) sends no failure
//! message, and a launcher told not to end the job (OpenMPI's
//! `orte_abort_on_non_zero_status=0`) leaves the other ranks waiting for it forever.
//! So every rank's communication thread sends each peer a one-byte heartbeat every
//! [`Silence::interval`] (at most a second), whatever its workers are doing, and a
//! last one when it stops normally (its *end*). A peer from which nothing has come for
//! longer than the bound has died or hangs: the rank fails the run on every rank with
//! an error naming it. A peer that ended is watched only while this rank still awaits
//! a message from it. The bound is on silence, not on the length of a run or of a
//! task: heartbeats come from the communication thread, never from a worker.
//!
//! The bound is `LOCUS_MPI_PEER_TIMEOUT` (seconds, default [`DEFAULT_BOUND`]; `none`
//! waits forever), read by `mpi::init`; `docs/guide.md`, "Distributed runs", states it.

use std::time::{Duration, Instant};

/// The environment variable that sets the bound, in seconds, or `none`.
pub const ENV: &str = "LOCUS_MPI_PEER_TIMEOUT";

/// The bound when [`ENV`] is unset.
pub const DEFAULT_BOUND: Duration = Duration::from_secs(30);

/// The longest time between two heartbeats of a rank to a peer.
const MAX_INTERVAL: Duration = Duration::from_secs(1);

/// The bound that `value` (the text of [`ENV`], `None` when unset) gives: `None` for
/// `none` (wait forever), else a positive number of seconds.
pub fn bound_from(value: Option<&str>) -> Result<Option<Duration>, String> {
    let Some(text) = value else {
        return Ok(Some(DEFAULT_BOUND));
    };
    if text.trim() == "none" {
        return Ok(None);
    }
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .map(Some)
        .ok_or_else(|| format!("{ENV}: `{text}` is not a positive number of seconds, nor `none`"))
}

/// A peer silent for longer than the bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Silent {
    /// The peer.
    pub rank: usize,
    /// Time since anything came from it.
    pub silent_for: Duration,
    /// Whether it had ended (its communication thread stopped normally).
    pub ended: bool,
}

impl Silent {
    /// The error every rank's run ends with, as rank `me` saw it.
    pub fn message(&self, me: usize, bound: Duration) -> String {
        let (rank, secs) = (self.rank, self.silent_for.as_secs_f64());
        if self.ended {
            format!(
                "rank {me} awaits a message from rank {rank}, which ended {secs:.1} s ago \
                 without sending it: the ranks run different programs"
            )
        } else {
            format!(
                "rank {me} has heard nothing from rank {rank} for {secs:.1} s (the bound, \
                 {ENV}, is {} s): rank {rank} died or hangs",
                bound.as_secs_f64()
            )
        }
    }
}

/// When each peer was last heard from, and which have ended.
pub struct Silence {
    me: usize,
    bound: Option<Duration>,
    last: Vec<Instant>,
    ended: Vec<bool>,
}

impl Silence {
    /// Rank `me` of `ranks`, at `now`, with `bound` (`None`: no peer is ever silent).
    pub fn new(me: usize, ranks: usize, bound: Option<Duration>, now: Instant) -> Silence {
        Silence {
            me,
            bound,
            last: vec![now; ranks],
            ended: vec![false; ranks],
        }
    }

    /// The bound.
    pub fn bound(&self) -> Option<Duration> {
        self.bound
    }

    /// Time between two heartbeats to each peer: a quarter of the bound, at most a
    /// second (also without a bound, for peers that have one).
    pub fn interval(&self) -> Duration {
        self.bound
            .map_or(MAX_INTERVAL, |b| (b / 4).min(MAX_INTERVAL))
    }

    /// The peers still running, which heartbeats go to.
    pub fn running(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.last.len()).filter(move |&r| r != self.me && !self.ended[r])
    }

    /// A heartbeat came from `rank` at `now`; `ended`: its last one.
    pub fn heard(&mut self, rank: usize, ended: bool, now: Instant) {
        if let Some(last) = self.last.get_mut(rank) {
            *last = now;
            self.ended[rank] |= ended;
        }
    }

    /// The first peer silent for longer than the bound at `now`: one still running,
    /// or one that ended while this rank `awaits` a message from it.
    pub fn silent(&self, now: Instant, awaits: impl Fn(usize) -> bool) -> Option<Silent> {
        let bound = self.bound?;
        (0..self.last.len())
            .filter(|&r| r != self.me && (!self.ended[r] || awaits(r)))
            .map(|r| Silent {
                rank: r,
                silent_for: now.saturating_duration_since(self.last[r]),
                ended: self.ended[r],
            })
            .find(|s| s.silent_for > bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_seconds_or_none_and_defaults_to_30() {
        assert_eq!(bound_from(None), Ok(Some(DEFAULT_BOUND)));
        assert_eq!(
            bound_from(Some("2.5")),
            Ok(Some(Duration::from_millis(2500)))
        );
        assert_eq!(bound_from(Some(" 10 ")), Ok(Some(Duration::from_secs(10))));
        assert_eq!(bound_from(Some("none")), Ok(None));
        for bad in ["0", "-1", "", "ten", "inf", "NaN", "1e300"] {
            let e = bound_from(Some(bad)).unwrap_err();
            assert!(e.starts_with("LOCUS_MPI_PEER_TIMEOUT: "), "{e}");
        }
    }

    #[test]
    fn a_quarter_of_the_bound_between_heartbeats_at_most_a_second() {
        let t = Instant::now();
        let interval = |b| Silence::new(0, 2, b, t).interval();
        assert_eq!(
            interval(Some(Duration::from_secs(2))),
            Duration::from_millis(500)
        );
        assert_eq!(
            interval(Some(Duration::from_secs(30))),
            Duration::from_secs(1)
        );
        assert_eq!(interval(None), Duration::from_secs(1));
    }

    #[test]
    fn a_running_peer_is_silent_after_the_bound_whatever_this_rank_awaits() {
        let t = Instant::now();
        let bound = Duration::from_secs(5);
        let mut s = Silence::new(0, 3, Some(bound), t);
        assert_eq!(s.running().collect::<Vec<_>>(), vec![1, 2]);
        s.heard(2, false, t + Duration::from_secs(4));
        assert_eq!(s.silent(t + bound, |_| false), None);
        let later = t + Duration::from_secs(6);
        let silent = s.silent(later, |_| false).expect("rank 1 is silent");
        assert_eq!((silent.rank, silent.ended), (1, false));
        assert_eq!(silent.silent_for, Duration::from_secs(6));
        assert_eq!(
            silent.message(0, bound),
            "rank 0 has heard nothing from rank 1 for 6.0 s (the bound, \
             LOCUS_MPI_PEER_TIMEOUT, is 5 s): rank 1 died or hangs"
        );
        // Without a bound nobody is ever silent.
        let none = Silence::new(0, 3, None, t);
        assert_eq!(
            none.silent(t + Duration::from_secs(1 << 20), |_| true),
            None
        );
    }

    #[test]
    fn an_ended_peer_is_watched_only_while_awaited() {
        let t = Instant::now();
        let bound = Duration::from_secs(5);
        let mut s = Silence::new(1, 2, Some(bound), t);
        s.heard(0, true, t);
        assert_eq!(s.running().count(), 0);
        let later = t + Duration::from_secs(60);
        assert_eq!(s.silent(later, |_| false), None);
        let silent = s
            .silent(later, |r| r == 0)
            .expect("awaited from an ended peer");
        assert!(silent.ended);
        assert!(silent.message(1, bound).contains("which ended 60.0 s ago"));
        // A heartbeat from outside the program's ranks is ignored.
        s.heard(7, false, later);
    }
}
