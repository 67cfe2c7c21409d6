//! Recording: a control program run once into a [`Graph`] of tasks, their accesses
//! resolved to versions and their dependences resolved to predecessors, so that each
//! replay (module `replay`) does no dependence analysis.
//!
//! The recorder applies the rule of the dynamic path (docs/guide.md, "Programming
//! model") once, in submission order: a read of versioned data waits for the writer of
//! the version it reads; a write makes a new version, which waits for nobody (its
//! buffer is another); a read-write does both. Shared data, updated in place, also
//! order a writer after the previous writer and the readers of the previous contents.
//! Within one replayed iteration every version of a datum has a buffer of its own; the
//! replay rotates the first and last versions' buffers between iterations.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use crate::data::version::VersionRef;
use crate::data::{AccessList, DataInner, Declared, Mode, RawView};
use crate::error::Error;

use super::replay::{Graph, Iteration};

/// A recorded body: the views are built from the raw memory of its accesses.
pub(crate) type ReplayBody = Box<dyn Fn(&Iteration, &[RawView]) + Send + Sync>;

/// One access of a recorded task, resolved to versions of its datum.
pub(crate) struct RecordedAccess {
    /// Index of the datum in the graph's table.
    pub(crate) datum: u32,
    pub(crate) mode: Mode,
    /// The version read (reads, read-writes) or written (writes, read-writes): for a
    /// read the version current when the task was recorded, for a write the new one.
    /// Version 0 is the datum's contents before the iteration.
    pub(crate) version: u32,
    /// First byte of the accessed part.
    pub(crate) offset: usize,
    /// Bytes accessed.
    pub(crate) bytes: usize,
}

/// One recorded task.
pub(crate) struct RecordedTask {
    pub(crate) name: Cow<'static, str>,
    pub(crate) body: ReplayBody,
    /// Its accesses, in declaration order: where they lie in the graph's access list.
    pub(crate) accesses: std::ops::Range<u32>,
    /// The tasks it waits for, recorded before it, each once.
    pub(crate) preds: Vec<u32>,
}

/// One datum a recorded graph accesses.
pub(crate) struct RecordedDatum {
    pub(crate) inner: Arc<DataInner>,
    /// Its version when the graph was recorded: a replay finding another fails
    /// (the datum was written outside the graph).
    pub(crate) snapshot: VersionRef,
    /// Versions the graph writes per iteration (`k`: versions `1..=k`), with the task
    /// producing each (`producers[j - 1]` writes version `j`).
    pub(crate) producers: Vec<u32>,
    /// References to the datum the graph holds: its table's, and one per recorded
    /// access. Any more are the program's (handles, captures): with none the datum is
    /// freed for the program.
    pub(crate) graph_refs: usize,
}

impl RecordedDatum {
    /// Whether the datum is shared data, updated in place (no rotation).
    pub(crate) fn is_shared(&self) -> bool {
        self.inner.shared.is_some()
    }
}

/// The dependence state of one datum while recording.
#[derive(Default)]
struct Tracking {
    /// Versioned: the producer of the current version (none: the iteration's input).
    /// Shared: the last writer.
    writer: Option<u32>,
    /// Shared data: readers of the current contents since the last writer.
    readers: Vec<u32>,
}

/// Where a control program's tasks are recorded ([`Runtime::record`](crate::Runtime::record)):
/// [`spawn`](Self::spawn) records a task instead of running it.
pub struct Recorder {
    runtime_id: u64,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    data: Vec<RecordedDatum>,
    tracking: Vec<Tracking>,
    tasks: Vec<RecordedTask>,
    accesses: Vec<RecordedAccess>,
    /// The first refusal: the recording fails with it even if the program goes on.
    refused: Option<Error>,
}

impl Recorder {
    pub(crate) fn new(runtime_id: u64) -> Self {
        Recorder {
            runtime_id,
            state: RefCell::new(State::default()),
        }
    }

    /// Records a task declaring `accesses`. Its body may run many times (once per
    /// replayed iteration), so it is an `Fn`; it receives the [`Iteration`] (its index
    /// counts every iteration the graph has replayed) and one view per access, as
    /// [`Scope::spawn`](crate::Scope::spawn)'s bodies do. What changes from one
    /// iteration to the next goes through data, not captures.
    ///
    /// Refused, with an error that fails the whole recording: data of another
    /// runtime, partitioned data or their parts, weak accesses and reductions (not
    /// recordable), out-of-bounds ranges, a datum declared twice with a write, data
    /// with no memory, poisoned shared data.
    pub fn spawn<L, F>(
        &self,
        name: impl Into<Cow<'static, str>>,
        mut accesses: L,
        body: F,
    ) -> Result<(), Error>
    where
        L: AccessList + Sync,
        F: for<'a> Fn(&Iteration, L::Views<'a>) + Send + Sync + 'static,
    {
        let name = name.into();
        let declared = crate::data::declarations(&mut accesses);
        // The declarations took the list's data: the body holds them as the list did,
        // for as long as the recorded graph lives.
        let held: Vec<_> = declared.iter().map(|d| d.data.clone()).collect();
        let body: ReplayBody = Box::new(move |it: &Iteration, raw: &[RawView]| {
            let _ = &held;
            // SAFETY: the replay builds `raw` from this very list's declarations, in
            // order (`record_task` below resolved one access per declaration), over
            // buffers it holds for the iteration, written by this task alone and read
            // by tasks ordered after it (the contract of `raw_views`).
            let views = unsafe { accesses.raw_views(&mut raw.iter()) };
            body(it, views)
        });
        let mut state = self.state.borrow_mut();
        if let Some(error) = &state.refused {
            return Err(error.clone());
        }
        match state.record_task(self.runtime_id, name, &declared, body) {
            Ok(()) => Ok(()),
            Err(error) => {
                state.refused = Some(error.clone());
                Err(error)
            }
        }
    }

    /// The graph, or the recording's first refusal.
    pub(crate) fn finish(self, name: String) -> Result<Graph, Error> {
        let State {
            data,
            tasks,
            accesses,
            refused,
            ..
        } = self.state.into_inner();
        match refused {
            Some(error) => Err(error),
            None => Ok(Graph::new(name, self.runtime_id, data, tasks, accesses)),
        }
    }
}

impl State {
    fn record_task(
        &mut self,
        runtime_id: u64,
        name: Cow<'static, str>,
        declared: &[Declared],
        body: ReplayBody,
    ) -> Result<(), Error> {
        check(runtime_id, &name, declared)?;
        let index = u32::try_from(self.tasks.len())
            .ok()
            .filter(|&i| i < u32::MAX)
            .ok_or_else(|| refuse(&name, "a recorded graph holds fewer than 2^32 tasks"))?;
        let first = self.accesses.len() as u32;
        let mut preds: Vec<u32> = Vec::new();
        let mut add_pred = |p: Option<u32>| {
            if let Some(p) = p {
                if !preds.contains(&p) {
                    preds.push(p);
                }
            }
        };
        for d in declared {
            let datum = self.datum(&d.data);
            let elem = d.data.elem_size;
            let recorded = &mut self.data[datum];
            let tracking = &mut self.tracking[datum];
            let shared = recorded.is_shared();
            recorded.graph_refs += 1;
            if d.mode.reads() || shared {
                add_pred(tracking.writer);
            }
            if shared && d.mode.writes() {
                for &r in &tracking.readers {
                    add_pred(Some(r));
                }
                tracking.readers.clear();
            }
            // Shared data have one buffer, which every version names: version 0.
            let version = if shared {
                0
            } else {
                if d.mode.writes() {
                    recorded.producers.push(index);
                }
                recorded.producers.len() as u32
            };
            if d.mode.writes() {
                tracking.writer = Some(index);
            } else if shared {
                tracking.readers.push(index);
            }
            self.accesses.push(RecordedAccess {
                datum: datum as u32,
                mode: d.mode,
                version,
                offset: d.range.start * elem,
                bytes: d.range.len() * elem,
            });
        }
        self.tasks.push(RecordedTask {
            name,
            body,
            accesses: first..self.accesses.len() as u32,
            preds,
        });
        Ok(())
    }

    /// The index of `data` in the table, added on first use.
    fn datum(&mut self, data: &Arc<DataInner>) -> usize {
        if let Some(i) = self.data.iter().position(|d| d.inner.id == data.id) {
            return i;
        }
        self.data.push(RecordedDatum {
            inner: data.clone(),
            snapshot: data.current(),
            producers: Vec::new(),
            graph_refs: 1,
        });
        self.tracking.push(Tracking::default());
        self.data.len() - 1
    }
}

fn refuse(task: &str, message: impl Into<String>) -> Error {
    Error::Declaration {
        task: task.to_string(),
        message: message.into(),
    }
}

/// Checks a recorded task's declarations: what the dynamic path accepts, less what a
/// recorded graph cannot replay (partitioned data, weak accesses, reductions).
fn check(runtime_id: u64, task: &str, declared: &[Declared]) -> Result<(), Error> {
    for (i, d) in declared.iter().enumerate() {
        let data = &d.data;
        if data.runtime != runtime_id {
            return Err(Error::ForeignData {
                task: task.to_string(),
                data: data.name.clone(),
            });
        }
        let unsupported = if d.weak {
            Some("a weak access")
        } else if d.mode == Mode::Reduce {
            Some("a reduction")
        } else if data.is_partitioned() {
            Some("partitioned data (or a part of it)")
        } else if data.local.load(std::sync::atomic::Ordering::Acquire) {
            Some("data created in a task's scope")
        } else {
            None
        };
        if let Some(what) = unsupported {
            return Err(refuse(
                task,
                format!(
                    "`{}`: {what} cannot be recorded; run it dynamically",
                    data.name
                ),
            ));
        }
        if let Some(reason) = &data.extras.unavailable {
            return Err(refuse(
                task,
                format!("`{}` has no memory: {reason}", data.name),
            ));
        }
        if let Some(by) = data.poisoned_by() {
            return Err(Error::Poisoned {
                data: data.name.clone(),
                task: by,
            });
        }
        if d.range.start > d.range.end || d.range.end > data.len {
            return Err(refuse(
                task,
                format!(
                    "range {}..{} is out of bounds of `{}` (length {})",
                    d.range.start, d.range.end, data.name, data.len
                ),
            ));
        }
        if declared[..i]
            .iter()
            .any(|o| o.data.id == data.id && (o.mode.exclusive() || d.mode.exclusive()))
        {
            return Err(refuse(
                task,
                format!(
                    "`{}` is declared twice and one access writes it; declare one \
                     read-write access instead",
                    data.name
                ),
            ));
        }
    }
    Ok(())
}
