//! The message rules: which rank runs a task, and which versions travel where.
//!
//! Every rank submits the same program (StarPU-MPI's model), so every rank keeps the
//! same [`Plan`] and takes the same decisions without talking to the others:
//!
//! 1. **Owner computes.** A task runs on the rank that owns the first datum it writes
//!    (its [`Distribution`](crate::Distribution) says which); the other ranks skip it.
//! 2. **Versions.** Writing a datum makes a new version whose *holder* is the rank that
//!    wrote it (its owner, under rule 1, unless a task writes data of several owners).
//!    Before any write the holder is the owner, which has the initial contents.
//! 3. **One message per version and receiver.** A task reading a datum (or a range of
//!    it) on a rank that does not hold its current version needs it from the holder:
//!    the first such read makes a [`Transfer`]; later reads of the same version and
//!    extent on that rank use the copy received (a copy of the whole datum serves every
//!    range). A new version forgets the copies. Ranks that do not read a version never
//!    receive it.
//! 4. **Matching.** Messages from one rank to another carry consecutive sequence
//!    numbers in program order, the same on both sides: the tag that pairs a send with
//!    its receive.
//!
//! The plan is pure bookkeeping: the [`Cluster`](crate::Cluster) carries its decisions
//! out with tasks and a [`Transport`](crate::Transport), and the tests check its counts
//! against the minimum a distribution needs.

use std::collections::HashMap;
use std::ops::Range;

/// Which part of a datum a read or a message covers, in elements.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Extent {
    /// The whole datum.
    Whole,
    /// A range of its elements.
    Range(Range<usize>),
}

impl Extent {
    /// The number of elements of a datum of `len` elements it covers.
    pub fn len(&self, len: usize) -> usize {
        match self {
            Extent::Whole => len,
            Extent::Range(r) => r.len(),
        }
    }

    /// Whether it covers no element.
    pub fn is_empty(&self, len: usize) -> bool {
        self.len(len) == 0
    }
}

/// Why a message is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A task on the receiver reads the version.
    Compute,
    /// The program collects the version on a rank (results, verification).
    Collect,
}

/// One message: a version of a datum (or part of it) from its holder to a reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The datum's number in the plan.
    pub datum: usize,
    /// The version sent (0: the initial contents).
    pub version: u64,
    /// What part of it.
    pub extent: Extent,
    /// The sender: the holder of the version.
    pub from: usize,
    /// The receiver.
    pub to: usize,
    /// Sequence number of the message among those from `from` to `to` (rule 4).
    pub seq: u64,
    /// Bytes carried.
    pub bytes: u64,
    /// Why.
    pub purpose: Purpose,
}

/// How the rank running a task gets one datum it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// The rank holds the current version: its own datum.
    Held,
    /// The rank received this version already: the whole datum (`Extent::Whole`, held
    /// in its own datum) or the range (held in a copy of the range).
    Received(Extent),
    /// The version must come from its holder first.
    Transfer(Transfer),
}

#[derive(Clone, Debug)]
struct DatumState {
    owner: usize,
    len: usize,
    elem_bytes: usize,
    holder: usize,
    version: u64,
    /// `(rank, extent)` copies of the current version received so far.
    copies: Vec<(usize, Extent)>,
}

/// Messages and bytes one rank sends and receives, as planned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Messages sent for tasks.
    pub sent_messages: u64,
    /// Bytes sent for tasks.
    pub sent_bytes: u64,
    /// Messages received for tasks.
    pub received_messages: u64,
    /// Bytes received for tasks.
    pub received_bytes: u64,
    /// Bytes sent to collect results.
    pub collect_sent_bytes: u64,
    /// Bytes received to collect results.
    pub collect_received_bytes: u64,
}

/// The bookkeeping every rank keeps identically (see the module documentation).
#[derive(Clone, Debug)]
pub struct Plan {
    ranks: usize,
    data: Vec<DatumState>,
    seq: HashMap<(usize, usize), u64>,
    traffic: Vec<Traffic>,
}

/// Why the plan refused a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A distributed task writes nothing, so no owner can run it.
    NoWrite,
    /// A rank outside `0..ranks`.
    Rank(usize),
    /// A range past the end of the datum.
    Range {
        /// The datum's length.
        len: usize,
        /// The range.
        range: Range<usize>,
    },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NoWrite => write!(
                f,
                "a distributed task must write a datum (its owner runs it)"
            ),
            Refused::Rank(r) => write!(f, "rank {r} is not in the run"),
            Refused::Range { len, range } => {
                write!(f, "range {range:?} is out of bounds of {len} elements")
            }
        }
    }
}

impl Plan {
    /// An empty plan for `ranks` ranks.
    pub fn new(ranks: usize) -> Self {
        Plan {
            ranks,
            data: Vec::new(),
            seq: HashMap::new(),
            traffic: vec![Traffic::default(); ranks],
        }
    }

    /// Ranks in the plan.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Adds a datum of `len` elements of `elem_bytes` bytes owned by `owner`, which holds
    /// its initial contents; returns its number.
    pub fn add(&mut self, owner: usize, len: usize, elem_bytes: usize) -> Result<usize, Refused> {
        if owner >= self.ranks {
            return Err(Refused::Rank(owner));
        }
        self.data.push(DatumState {
            owner,
            len,
            elem_bytes,
            holder: owner,
            version: 0,
            copies: Vec::new(),
        });
        Ok(self.data.len() - 1)
    }

    /// Data in the plan.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the plan has no datum.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The owner of datum `d`.
    pub fn owner(&self, d: usize) -> usize {
        self.data[d].owner
    }

    /// The rank holding the current version of datum `d`.
    pub fn holder(&self, d: usize) -> usize {
        self.data[d].holder
    }

    /// The current version of datum `d`.
    pub fn version(&self, d: usize) -> u64 {
        self.data[d].version
    }

    /// Whether `rank` holds the current version of datum `d`, written or received whole.
    pub fn holds(&self, d: usize, rank: usize) -> bool {
        let s = &self.data[d];
        s.holder == rank || s.copies.contains(&(rank, Extent::Whole))
    }

    /// Rule 1: the rank that runs a task writing `writes` (in declaration order).
    pub fn executor(&self, writes: &[usize]) -> Result<usize, Refused> {
        writes
            .first()
            .map(|&d| self.data[d].owner)
            .ok_or(Refused::NoWrite)
    }

    /// Checks that `extent` lies within datum `d`.
    pub fn check(&self, d: usize, extent: &Extent) -> Result<(), Refused> {
        let len = self.data[d].len;
        match extent {
            Extent::Range(r) if r.start > r.end || r.end > len => Err(Refused::Range {
                len,
                range: r.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Rules 3 and 4: how rank `at` gets `extent` of datum `d`'s current version, and
    /// the message that brings it, if one is needed (counted in the traffic).
    pub fn read(&mut self, d: usize, extent: Extent, at: usize, purpose: Purpose) -> Route {
        let s = &self.data[d];
        if s.holder == at {
            return Route::Held;
        }
        if s.copies
            .iter()
            .any(|(r, e)| *r == at && *e == Extent::Whole)
        {
            return Route::Received(Extent::Whole);
        }
        if s.copies.iter().any(|(r, e)| *r == at && *e == extent) {
            return Route::Received(extent);
        }
        let (from, version) = (s.holder, s.version);
        let bytes = (extent.len(s.len) * s.elem_bytes) as u64;
        let seq = self.seq.entry((from, at)).or_insert(0);
        let transfer = Transfer {
            datum: d,
            version,
            extent: extent.clone(),
            from,
            to: at,
            seq: *seq,
            bytes,
            purpose,
        };
        *seq += 1;
        self.data[d].copies.push((at, extent));
        let (tx, rx) = (&mut self.traffic[from], from);
        match purpose {
            Purpose::Compute => {
                tx.sent_messages += 1;
                tx.sent_bytes += bytes;
            }
            Purpose::Collect => tx.collect_sent_bytes += bytes,
        }
        debug_assert_ne!(rx, at);
        let rx = &mut self.traffic[at];
        match purpose {
            Purpose::Compute => {
                rx.received_messages += 1;
                rx.received_bytes += bytes;
            }
            Purpose::Collect => rx.collect_received_bytes += bytes,
        }
        Route::Transfer(transfer)
    }

    /// Rule 2: rank `at` writes a new version of datum `d`.
    pub fn write(&mut self, d: usize, at: usize) {
        let s = &mut self.data[d];
        s.holder = at;
        s.version += 1;
        s.copies.clear();
    }

    /// What each rank sends and receives, as planned so far.
    pub fn traffic(&self) -> &[Traffic] {
        &self.traffic
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_runs_the_writer() {
        let mut p = Plan::new(2);
        let a = p.add(0, 4, 8).unwrap();
        let b = p.add(1, 4, 8).unwrap();
        assert_eq!(p.executor(&[b, a]), Ok(1));
        assert_eq!(p.executor(&[]), Err(Refused::NoWrite));
        assert_eq!(p.add(2, 1, 8), Err(Refused::Rank(2)));
    }

    #[test]
    fn one_message_per_version_and_receiver() {
        let mut p = Plan::new(3);
        let a = p.add(0, 10, 8).unwrap();
        assert_eq!(p.read(a, Extent::Whole, 0, Purpose::Compute), Route::Held);
        let Route::Transfer(t) = p.read(a, Extent::Range(0..2), 1, Purpose::Compute) else {
            panic!("rank 1 needs the range")
        };
        assert_eq!((t.from, t.to, t.seq, t.bytes, t.version), (0, 1, 0, 16, 0));
        // The same range again: the copy received.
        assert_eq!(
            p.read(a, Extent::Range(0..2), 1, Purpose::Compute),
            Route::Received(Extent::Range(0..2))
        );
        // The whole datum: a second message, which then serves every range.
        let Route::Transfer(t) = p.read(a, Extent::Whole, 1, Purpose::Compute) else {
            panic!("rank 1 needs the whole datum")
        };
        assert_eq!((t.seq, t.bytes), (1, 80));
        assert_eq!(
            p.read(a, Extent::Range(5..7), 1, Purpose::Compute),
            Route::Received(Extent::Whole)
        );
        // Rank 2 never reads it: nothing sent there.
        assert_eq!(p.traffic()[2], Traffic::default());
        assert_eq!(p.traffic()[0].sent_bytes, 96);
        assert_eq!(p.traffic()[1].received_messages, 2);
    }

    #[test]
    fn a_new_version_forgets_copies_and_moves_the_holder() {
        let mut p = Plan::new(2);
        let a = p.add(0, 4, 8).unwrap();
        assert!(matches!(
            p.read(a, Extent::Whole, 1, Purpose::Compute),
            Route::Transfer(_)
        ));
        p.write(a, 1);
        assert_eq!((p.holder(a), p.version(a)), (1, 1));
        assert_eq!(p.read(a, Extent::Whole, 1, Purpose::Compute), Route::Held);
        let Route::Transfer(t) = p.read(a, Extent::Whole, 0, Purpose::Collect) else {
            panic!("rank 0 no longer holds it")
        };
        assert_eq!((t.from, t.to, t.seq, t.version), (1, 0, 0, 1));
        assert_eq!(p.traffic()[1].collect_sent_bytes, 32);
        assert_eq!(p.traffic()[1].sent_bytes, 0);
    }

    #[test]
    fn ranges_are_checked() {
        let mut p = Plan::new(1);
        let a = p.add(0, 4, 8).unwrap();
        assert!(p.check(a, &Extent::Range(2..4)).is_ok());
        assert_eq!(
            p.check(a, &Extent::Range(3..5)),
            Err(Refused::Range {
                len: 4,
                range: 3..5
            })
        );
    }
}
