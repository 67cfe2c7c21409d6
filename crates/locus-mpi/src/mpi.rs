//! The MPI transport (feature `mpi`): one communication thread per rank owns every MPI
//! call between initialisation and finalisation. It posts a non-blocking send
//! (`MPI_Isend`) for each message a send task hands over, and for each message a
//! receive task announces, probes for it (`MPI_Improbe`) and receives it at its own
//! length (`MPI_Imrecv`); it tests them all in a loop, filling each [`Arrival`] as its
//! message lands. A message of another length than announced (ranks that run different
//! programs) fails its arrival, instead of being cut (`MPI_ERR_TRUNCATE`, which aborts
//! the job) or handed on short. No worker ever calls MPI or
//! waits on it; only one thread calls MPI at a time (`MPI_THREAD_SERIALIZED` suffices).
//!
//! The thread also sends every peer a heartbeat and fails the run on every rank when a
//! peer has been silent for longer than a bound (module [`silence`]):
//! a rank killed outright sends no failure message, and the launcher may leave the
//! others running.
//!
//! Tags: 0 is the failure message (any source), `1..=1024` the end-of-run status,
//! `1025..=1028` the messages around a run (the program check, the reports gathered on
//! rank 0, the verdict), 1029 the heartbeats (any source), and data messages use the
//! rest of the 32767 tags every MPI guarantees, cycling through their sequence numbers
//! (messages of one pair and tag do not overtake each other).

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;

use crate::silence::{self, Silence};
use crate::transport::{Arrival, Tag, Transport};

const FAIL_TAG: i32 = 0;
const STATUS_TAGS: u64 = 1024;
const MAX_TAG: u64 = 32767;
/// Tags of the messages around a run (`Tag::Report`).
const REPORT_TAGS: u64 = 4;
/// The heartbeats' tag.
const BEAT_TAG: i32 = (1 + STATUS_TAGS + REPORT_TAGS) as i32;
/// The first data tag.
const DATA_TAGS_FROM: u64 = BEAT_TAG as u64 + 1;
/// Longest failure message carried.
const FAIL_LEN: usize = 4096;
/// A heartbeat's byte: the sender runs.
static ALIVE: [u8; 1] = [0];
/// A heartbeat's byte: the sender's communication thread stopped normally (its last).
static ENDED: [u8; 1] = [1];

fn mpi_tag(tag: Tag) -> i32 {
    match tag {
        Tag::Status(n) => (1 + n % STATUS_TAGS) as i32,
        Tag::Report(n) => (1 + STATUS_TAGS + n % REPORT_TAGS) as i32,
        Tag::Data(n) => (DATA_TAGS_FROM + n % (MAX_TAG + 1 - DATA_TAGS_FROM)) as i32,
    }
}

enum Command {
    Send {
        to: usize,
        tag: i32,
        bytes: Vec<u8>,
    },
    Expect {
        from: usize,
        tag: i32,
        len: usize,
        arrival: Arc<Arrival>,
    },
    Fail(String),
    Stop,
}

/// What a posted receive expects: its sender and its length.
#[derive(Clone, Copy)]
struct Expected {
    from: usize,
    len: usize,
}

/// A message announced and not yet matched: probed for at every turn of the loop.
struct Waiting {
    expected: Expected,
    tag: i32,
    arrival: Arc<Arrival>,
}

/// A buffer lent to MPI for the life of a request: leaked into a `'static` slice when
/// the request is posted, taken back when it completes.
struct Lent(*mut [u8]);

// SAFETY: the pointer is an owned, leaked box only the communication thread touches.
unsafe impl Send for Lent {}

impl Lent {
    fn new(bytes: Vec<u8>) -> (Lent, &'static mut [u8]) {
        let raw = Box::into_raw(bytes.into_boxed_slice());
        // SAFETY: `raw` comes from a live box that nothing else references; MPI borrows it
        // until the request completes, then `take_back` rebuilds the box exactly once.
        (Lent(raw), unsafe { &mut *raw })
    }

    /// # Safety
    ///
    /// The request that borrowed the buffer has completed (or is forgotten for good).
    unsafe fn take_back(self) -> Vec<u8> {
        // SAFETY: per the contract nothing borrows the buffer any more, and it came from
        // `Box::into_raw` in `Lent::new`.
        unsafe { Box::from_raw(self.0) }.into_vec()
    }
}

/// This rank's side of an MPI program.
pub struct Mpi {
    rank: usize,
    ranks: usize,
    commands: Mutex<Sender<Command>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// The bound on a peer's silence that `LOCUS_MPI_PEER_TIMEOUT` gives
/// ([`silence::bound_from`]): 30 s when unset, `None` for `none`.
pub fn peer_timeout_from_env() -> Result<Option<Duration>, String> {
    let value = std::env::var_os(silence::ENV);
    let text = value.as_ref().map(|v| v.to_string_lossy());
    silence::bound_from(text.as_deref())
}

/// Initialises MPI (asking for `MPI_THREAD_MULTIPLE`, needing at least
/// `MPI_THREAD_SERIALIZED`) and starts the communication thread, with the bound on a
/// peer's silence that `LOCUS_MPI_PEER_TIMEOUT` gives ([`peer_timeout_from_env`]).
/// Drop the universe only after [`Mpi::shutdown`].
pub fn init() -> Result<(mpi::environment::Universe, Arc<Mpi>), String> {
    init_with(peer_timeout_from_env()?)
}

/// [`init`] with the bound on a peer's silence given (`None`: wait for peers forever).
/// Every rank should be given the same bound.
pub fn init_with(
    peer_timeout: Option<Duration>,
) -> Result<(mpi::environment::Universe, Arc<Mpi>), String> {
    let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple)
        .ok_or_else(|| "MPI is initialised already".to_string())?;
    if threading < Threading::Serialized {
        return Err(format!(
            "this MPI gives threading level {threading:?}; Locus needs Serialized or Multiple"
        ));
    }
    let world = universe.world();
    let (rank, ranks) = (world.rank() as usize, world.size() as usize);
    let (tx, rx) = channel();
    let thread = std::thread::Builder::new()
        .name(format!("locus-mpi-{rank}"))
        .spawn(move || progress(rx, peer_timeout))
        .map_err(|e| format!("cannot start the communication thread: {e}"))?;
    Ok((
        universe,
        Arc::new(Mpi {
            rank,
            ranks,
            commands: Mutex::new(tx),
            thread: Mutex::new(Some(thread)),
        }),
    ))
}

impl Mpi {
    fn command(&self, c: Command) {
        let tx = self.commands.lock().unwrap_or_else(PoisonError::into_inner);
        // The thread ends only on `Stop`: a send cannot fail before.
        let _ = tx.send(c);
    }

    /// Waits until every message sent has left and every expected one has arrived,
    /// then stops the communication thread. After a failure it returns at once.
    pub fn shutdown(&self) {
        self.command(Command::Stop);
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}

impl Transport for Mpi {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn send(&self, to: usize, tag: Tag, bytes: Vec<u8>) {
        self.command(Command::Send {
            to,
            tag: mpi_tag(tag),
            bytes,
        });
    }

    fn expect(&self, from: usize, tag: Tag, len: usize) -> Arc<Arrival> {
        let arrival = Arc::new(Arrival::default());
        self.command(Command::Expect {
            from,
            tag: mpi_tag(tag),
            len,
            arrival: arrival.clone(),
        });
        arrival
    }

    fn fail(&self, message: &str) {
        self.command(Command::Fail(format!(
            "rank {} failed: {message}",
            self.rank
        )));
    }
}

type Pending = Request<'static, [u8], StaticScope>;

/// A receive posted for any sender with one tag, into a buffer of its own.
type AnyReceive = Option<(Pending, Lent)>;

fn receive_any(world: &SimpleCommunicator, len: usize, tag: i32) -> AnyReceive {
    let (lent, buf) = Lent::new(vec![0; len]);
    Some((
        world
            .any_process()
            .immediate_receive_into_with_tag(StaticScope, buf, tag),
        lent,
    ))
}

/// Tests a receive of [`receive_any`]: the sender and the bytes once it completed
/// (the receive is then gone), `None` while it is in flight (it stays).
fn test_any(receive: &mut AnyReceive) -> Option<(usize, Vec<u8>)> {
    let (r, lent) = receive.take()?;
    match r.test() {
        Ok(status) => {
            let n = status.count(u8::equivalent_datatype()).max(0) as usize;
            // SAFETY: the receive completed: MPI no longer writes the buffer.
            let mut bytes = unsafe { lent.take_back() };
            bytes.truncate(n);
            Some((status.source_rank() as usize, bytes))
        }
        Err(r) => {
            *receive = Some((r, lent));
            None
        }
    }
}

/// Ends a receive of [`receive_any`] when the thread stops: cancelled while the peers
/// run, forgotten with its buffer after a failure (they may be gone).
fn end_any(receive: AnyReceive, failed: bool) {
    if let Some((r, lent)) = receive {
        if failed {
            std::mem::forget(r);
        } else {
            r.cancel();
            let _ = r.wait();
            // SAFETY: the cancelled receive completed: MPI no longer uses it.
            drop(unsafe { lent.take_back() });
        }
    }
}

/// Keeps the heartbeats sent that have not completed (their bytes are static).
fn test_beats(beats: &mut Vec<Pending>) {
    *beats = beats.drain(..).filter_map(|r| r.test().err()).collect();
}

/// The communication thread's state: what is in flight, and the peers' heartbeats.
struct Comm {
    world: SimpleCommunicator,
    me: usize,
    sends: Vec<(Pending, Lent)>,
    /// Announced messages not matched yet, in the order announced: messages of one
    /// sender and tag arrive in the order sent, and are matched in this order.
    waiting: Vec<Waiting>,
    /// The sender and tag pairs a probe found nothing for, this turn of the loop.
    absent: Vec<(usize, i32)>,
    /// With what each receive expects, to tell a message of another length.
    recvs: Vec<(Pending, Lent, Arc<Arrival>, Expected)>,
    fail_recv: AnyReceive,
    failed: Option<String>,
    /// Heartbeats sent (static bytes) and not yet completed.
    beats: Vec<Pending>,
    beat_recv: AnyReceive,
    next_beat: Instant,
    silence: Silence,
}

impl Comm {
    fn new(peer_timeout: Option<Duration>) -> Comm {
        let world = SimpleCommunicator::world();
        let me = world.rank() as usize;
        let silence = Silence::new(me, world.size() as usize, peer_timeout, Instant::now());
        Comm {
            fail_recv: receive_any(&world, FAIL_LEN, FAIL_TAG),
            beat_recv: receive_any(&world, 1, BEAT_TAG),
            world,
            me,
            sends: Vec::new(),
            waiting: Vec::new(),
            absent: Vec::new(),
            recvs: Vec::new(),
            failed: None,
            beats: Vec::new(),
            next_beat: Instant::now(),
            silence,
        }
    }

    /// Carries a command out; `true` for `Stop`.
    fn post(&mut self, c: Command) -> bool {
        match c {
            Command::Send { to, tag, bytes } => {
                let (lent, buf) = Lent::new(bytes);
                let r = self
                    .world
                    .process_at_rank(to as i32)
                    .immediate_send_with_tag(StaticScope, &*buf, tag);
                self.sends.push((r, lent));
            }
            Command::Expect {
                from,
                tag,
                len,
                arrival,
            } => match &self.failed {
                Some(m) => arrival.fail(m),
                None => self.waiting.push(Waiting {
                    expected: Expected { from, len },
                    tag,
                    arrival,
                }),
            },
            Command::Fail(message) => self.fail(message, true),
            Command::Stop => return true,
        }
        false
    }

    /// Fails every pending and later arrival of this rank with `message`, and with
    /// `tell`, every other rank's too (the first failure only).
    fn fail(&mut self, message: String, tell: bool) {
        if self.failed.is_some() {
            return;
        }
        if tell {
            let mut bytes = message.clone().into_bytes();
            bytes.truncate(FAIL_LEN);
            for r in (0..self.world.size()).filter(|&r| r as usize != self.me) {
                let (lent, buf) = Lent::new(bytes.clone());
                let req = self.world.process_at_rank(r).immediate_send_with_tag(
                    StaticScope,
                    &*buf,
                    FAIL_TAG,
                );
                self.sends.push((req, lent));
            }
        }
        for (_, _, a, _) in &self.recvs {
            a.fail(&message);
        }
        for w in self.waiting.drain(..) {
            w.arrival.fail(&message);
        }
        self.failed = Some(message);
    }

    /// Matches announced messages that have come, each received whole at its own
    /// length (compared with the announced one when it completes). Once a probe finds
    /// nothing for a sender and tag, later announcements of the same pair wait for the
    /// next turn: a message arriving meanwhile is the earlier one's.
    fn match_announced(&mut self) -> bool {
        let mut moved = false;
        let mut i = 0;
        self.absent.clear();
        while i < self.waiting.len() {
            let w = &self.waiting[i];
            let pair = (w.expected.from, w.tag);
            if self.absent.contains(&pair) {
                i += 1;
                continue;
            }
            let found = self
                .world
                .process_at_rank(w.expected.from as i32)
                .immediate_matched_probe_with_tag(w.tag);
            match found {
                Some((message, status)) => {
                    moved = true;
                    let w = self.waiting.remove(i);
                    let n = status.count(u8::equivalent_datatype()).max(0) as usize;
                    let (lent, buf) = Lent::new(vec![0; n]);
                    let r = message.immediate_matched_receive_into(StaticScope, buf);
                    self.recvs.push((r, lent, w.arrival, w.expected));
                }
                None => {
                    self.absent.push(pair);
                    i += 1;
                }
            }
        }
        moved
    }

    /// Tests what is in flight: sends, receives, a failure from another rank.
    fn test_in_flight(&mut self) -> bool {
        let mut moved = false;
        let mut still = Vec::with_capacity(self.sends.len());
        for (r, lent) in self.sends.drain(..) {
            match r.test() {
                Ok(_) => {
                    moved = true;
                    // SAFETY: the send completed: MPI no longer reads the buffer.
                    drop(unsafe { lent.take_back() });
                }
                Err(r) => still.push((r, lent)),
            }
        }
        self.sends = still;
        let mut still = Vec::with_capacity(self.recvs.len());
        for (r, lent, arrival, expected) in self.recvs.drain(..) {
            match r.test() {
                Ok(status) => {
                    moved = true;
                    // SAFETY: the receive completed: MPI no longer writes the buffer.
                    let bytes = unsafe { lent.take_back() };
                    let n = status.count(u8::equivalent_datatype()).max(0) as usize;
                    if n == expected.len {
                        arrival.fill(bytes);
                    } else {
                        // Never handed on as if it were the data.
                        arrival.fail(&format!(
                            "rank {} sent {n} bytes where {} were expected: the ranks run \
                             different programs",
                            expected.from, expected.len
                        ));
                    }
                }
                Err(r) => still.push((r, lent, arrival, expected)),
            }
        }
        self.recvs = still;
        if let Some((_, bytes)) = test_any(&mut self.fail_recv) {
            moved = true;
            self.fail(String::from_utf8_lossy(&bytes).into_owned(), false);
        }
        moved
    }

    /// Sends the heartbeats that are due, takes in those that came, and fails the run
    /// on every rank if a peer has been silent for longer than the bound.
    fn heartbeats(&mut self, now: Instant) {
        test_beats(&mut self.beats);
        while let Some((from, bytes)) = test_any(&mut self.beat_recv) {
            self.silence
                .heard(from, bytes.first() == Some(&ENDED[0]), now);
            self.beat_recv = receive_any(&self.world, 1, BEAT_TAG);
        }
        if self.failed.is_some() {
            return;
        }
        if now >= self.next_beat {
            self.beat(&ALIVE);
            self.next_beat = now + self.silence.interval();
        }
        let awaits = |r: usize| {
            self.waiting.iter().any(|w| w.expected.from == r)
                || self.recvs.iter().any(|(_, _, _, e)| e.from == r)
        };
        if let Some(silent) = self.silence.silent(now, awaits) {
            let bound = self.silence.bound().unwrap_or_default();
            self.fail(silent.message(self.me, bound), true);
        }
    }

    /// Sends `byte` to every peer still running.
    fn beat(&mut self, byte: &'static [u8; 1]) {
        let peers: Vec<usize> = self.silence.running().collect();
        for r in peers {
            let req = self
                .world
                .process_at_rank(r as i32)
                .immediate_send_with_tag(StaticScope, &byte[..], BEAT_TAG);
            self.beats.push(req);
        }
    }

    /// Whether everything has moved.
    fn quiet(&self) -> bool {
        self.sends.is_empty() && self.recvs.is_empty() && self.waiting.is_empty()
    }

    /// The end of the thread: the peers still running get this rank's last heartbeat,
    /// and every request still posted is ended. After a failure what is still in
    /// flight is abandoned, with its buffers: the peers may be gone.
    fn finish(mut self) {
        let failed = self.failed.is_some();
        end_any(self.fail_recv.take(), failed);
        end_any(self.beat_recv.take(), failed);
        if !failed {
            self.beat(&ENDED);
            // Small messages leave at once; a peer gone meanwhile is not waited for.
            let until = Instant::now() + self.silence.interval();
            while !self.beats.is_empty() && Instant::now() < until {
                test_beats(&mut self.beats);
            }
        }
        for r in self.beats {
            std::mem::forget(r);
        }
        for (r, _) in self.sends {
            std::mem::forget(r);
        }
        for (r, _, _, _) in self.recvs {
            std::mem::forget(r);
        }
    }
}

/// The communication thread: posts what the workers hand over, tests what is in
/// flight, keeps the heartbeats, and sleeps briefly on its command channel when nothing
/// moved.
fn progress(commands: Receiver<Command>, peer_timeout: Option<Duration>) {
    let mut comm = Comm::new(peer_timeout);
    let mut stopping = false;
    let mut idle = Duration::from_micros(20);
    loop {
        let mut moved = false;
        // 1. Post what the workers handed over.
        let mut next = match commands.recv_timeout(idle) {
            Ok(c) => Some(c),
            Err(RecvTimeoutError::Timeout) => None,
            // The transport was dropped without `shutdown`: nothing more will come.
            Err(RecvTimeoutError::Disconnected) => {
                stopping = true;
                None
            }
        };
        while let Some(c) = next {
            moved = true;
            stopping |= comm.post(c);
            next = commands.try_recv().ok();
        }
        // 2. Match announced messages that have come.
        moved |= comm.match_announced();
        // 3. Test what is in flight.
        moved |= comm.test_in_flight();
        // 4. Heartbeats, and peers silent for too long.
        comm.heartbeats(Instant::now());
        // 5. Stop once everything has moved, or at once after a failure.
        if stopping && (comm.failed.is_some() || comm.quiet()) {
            comm.finish();
            return;
        }
        idle = if moved {
            Duration::from_micros(20)
        } else {
            (idle * 2).min(Duration::from_micros(500))
        };
    }
}
