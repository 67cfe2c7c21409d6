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
//! Tags: 0 is the failure message (any source), `1..=1024` the end-of-run status,
//! `1025..=1028` the messages around a run (the program check, the reports gathered on
//! rank 0, the verdict), and data messages use the rest of the 32767 tags every MPI
//! guarantees, cycling through their sequence numbers (messages of one pair and tag do
//! not overtake each other).

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;

use crate::transport::{Arrival, Tag, Transport};

const FAIL_TAG: i32 = 0;
const STATUS_TAGS: u64 = 1024;
const MAX_TAG: u64 = 32767;
/// Tags of the messages around a run (`Tag::Report`).
const REPORT_TAGS: u64 = 4;
/// Longest failure message carried.
const FAIL_LEN: usize = 4096;

fn mpi_tag(tag: Tag) -> i32 {
    match tag {
        Tag::Status(n) => (1 + n % STATUS_TAGS) as i32,
        Tag::Report(n) => (1 + STATUS_TAGS + n % REPORT_TAGS) as i32,
        Tag::Data(n) => {
            (1 + REPORT_TAGS + STATUS_TAGS + n % (MAX_TAG - REPORT_TAGS - STATUS_TAGS)) as i32
        }
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

/// Initialises MPI (asking for `MPI_THREAD_MULTIPLE`, needing at least
/// `MPI_THREAD_SERIALIZED`) and starts the communication thread. Drop the universe
/// only after [`Mpi::shutdown`].
pub fn init() -> Result<(mpi::environment::Universe, Arc<Mpi>), String> {
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
        .spawn(move || progress(rx))
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

/// The communication thread: posts what the workers hand over, tests what is in
/// flight, and sleeps briefly on its command channel when nothing moved.
fn progress(commands: Receiver<Command>) {
    let world = SimpleCommunicator::world();
    let me = world.rank();
    let mut sends: Vec<(Pending, Lent)> = Vec::new();
    // Announced messages not matched yet, in the order announced: messages of one
    // sender and tag arrive in the order sent, and are matched in this order.
    let mut waiting: Vec<Waiting> = Vec::new();
    // The sender and tag pairs a probe found nothing for, this turn of the loop.
    let mut absent: Vec<(usize, i32)> = Vec::new();
    // With what each receive expects, to tell a message of another length.
    let mut recvs: Vec<(Pending, Lent, Arc<Arrival>, Expected)> = Vec::new();
    let (fail_buf, fail_slice) = Lent::new(vec![0; FAIL_LEN]);
    let mut fail_recv = Some((
        world
            .any_process()
            .immediate_receive_into_with_tag(StaticScope, fail_slice, FAIL_TAG),
        fail_buf,
    ));
    let mut failed: Option<String> = None;
    let mut stopping = false;
    let mut idle = Duration::from_micros(20);
    loop {
        let mut moved = false;
        // 1. Post what the workers handed over.
        let mut next = commands.try_recv();
        if next.is_err() {
            next = match commands.recv_timeout(idle) {
                Ok(c) => Ok(c),
                Err(RecvTimeoutError::Timeout) => Err(std::sync::mpsc::TryRecvError::Empty),
                Err(RecvTimeoutError::Disconnected) => {
                    Err(std::sync::mpsc::TryRecvError::Disconnected)
                }
            };
        }
        while let Ok(c) = next {
            moved = true;
            match c {
                Command::Send { to, tag, bytes } => {
                    let (lent, buf) = Lent::new(bytes);
                    let r = world.process_at_rank(to as i32).immediate_send_with_tag(
                        StaticScope,
                        &*buf,
                        tag,
                    );
                    sends.push((r, lent));
                }
                Command::Expect {
                    from,
                    tag,
                    len,
                    arrival,
                } => {
                    if let Some(m) = &failed {
                        arrival.fail(m);
                    } else {
                        waiting.push(Waiting {
                            expected: Expected { from, len },
                            tag,
                            arrival,
                        });
                    }
                }
                Command::Fail(message) => {
                    if failed.is_none() {
                        let mut bytes = message.clone().into_bytes();
                        bytes.truncate(FAIL_LEN);
                        for r in (0..world.size()).filter(|&r| r != me) {
                            let (lent, buf) = Lent::new(bytes.clone());
                            let req = world.process_at_rank(r).immediate_send_with_tag(
                                StaticScope,
                                &*buf,
                                FAIL_TAG,
                            );
                            sends.push((req, lent));
                        }
                        for (_, _, a, _) in &recvs {
                            a.fail(&message);
                        }
                        for w in waiting.drain(..) {
                            w.arrival.fail(&message);
                        }
                        failed = Some(message);
                    }
                }
                Command::Stop => stopping = true,
            }
            next = commands.try_recv();
        }
        // 2. Match announced messages that have come, each received whole at its own
        //    length (compared with the announced one when it completes). Once a probe
        //    finds nothing for a sender and tag, later announcements of the same pair
        //    wait for the next turn: a message arriving meanwhile is the earlier one's.
        let mut i = 0;
        absent.clear();
        while i < waiting.len() {
            let w = &waiting[i];
            let pair = (w.expected.from, w.tag);
            if absent.contains(&pair) {
                i += 1;
                continue;
            }
            let found = world
                .process_at_rank(w.expected.from as i32)
                .immediate_matched_probe_with_tag(w.tag);
            if found.is_none() {
                absent.push(pair);
            }
            match found {
                Some((message, status)) => {
                    moved = true;
                    let w = waiting.remove(i);
                    let n = status.count(u8::equivalent_datatype()).max(0) as usize;
                    let (lent, buf) = Lent::new(vec![0; n]);
                    let r = message.immediate_matched_receive_into(StaticScope, buf);
                    recvs.push((r, lent, w.arrival, w.expected));
                }
                None => i += 1,
            }
        }
        // 3. Test what is in flight.
        let mut still = Vec::with_capacity(sends.len());
        for (r, lent) in sends.drain(..) {
            match r.test() {
                Ok(_) => {
                    moved = true;
                    // SAFETY: the send completed: MPI no longer reads the buffer.
                    drop(unsafe { lent.take_back() });
                }
                Err(r) => still.push((r, lent)),
            }
        }
        sends = still;
        let mut still = Vec::with_capacity(recvs.len());
        for (r, lent, arrival, expected) in recvs.drain(..) {
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
        recvs = still;
        if let Some((r, lent)) = fail_recv.take() {
            match r.test() {
                Ok(status) => {
                    moved = true;
                    let n = status.count(u8::equivalent_datatype()).max(0) as usize;
                    // SAFETY: the receive completed: MPI no longer writes the buffer.
                    let mut bytes = unsafe { lent.take_back() };
                    bytes.truncate(n);
                    let message = String::from_utf8_lossy(&bytes).into_owned();
                    for (_, _, a, _) in &recvs {
                        a.fail(&message);
                    }
                    for w in waiting.drain(..) {
                        w.arrival.fail(&message);
                    }
                    failed.get_or_insert(message);
                }
                Err(r) => fail_recv = Some((r, lent)),
            }
        }
        // 4. Stop once everything has moved, or at once after a failure (the peers may
        //    be gone: what is still in flight is abandoned, with its buffers).
        if stopping
            && (failed.is_some() || (sends.is_empty() && recvs.is_empty() && waiting.is_empty()))
        {
            if let Some((r, lent)) = fail_recv.take() {
                if failed.is_none() {
                    r.cancel();
                    let _ = r.wait();
                    // SAFETY: the cancelled receive completed: MPI no longer uses it.
                    drop(unsafe { lent.take_back() });
                } else {
                    std::mem::forget(r);
                }
            }
            for (r, _) in sends {
                std::mem::forget(r);
            }
            for (r, _, _, _) in recvs {
                std::mem::forget(r);
            }
            return;
        }
        idle = if moved {
            Duration::from_micros(20)
        } else {
            (idle * 2).min(Duration::from_micros(500))
        };
    }
}
