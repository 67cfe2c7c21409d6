//! Recorded graphs (`locus_graph_*`): a control program recorded once, replayed many
//! times with no dependence analysis per task (docs/guide.md, "Recorded graphs").
//!
//! `locus_graph_record` calls the program with a recorder, into which
//! `locus_graph_spawn` records tasks described as for `locus_spawn`; nothing runs. A
//! recorded body is called once per replayed iteration, with a context that
//! `locus_ctx_where` and `locus_ctx_iteration` accept (a replayed body cannot spawn,
//! wait or fetch). `locus_graph_replay` runs the graph's iterations as one run.

use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

use crate::handles::Table;
use crate::report::{locus_report, REPORTS};
use crate::runtime::{locus_runtime, runtime_of};
use crate::status::{c_str, guard, locus_status, put, Fail};
use crate::task::{in_body, locus_ctx, locus_task, record_task, replay_iteration};

/// A recorded graph (`locus_graph_record`), freed by `locus_graph_free`. The all-zero
/// value is the null handle.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_graph {
    /// Opaque: a slot and its generation in Locus's table of graphs.
    pub bits: u64,
}

/// The recording a program of `locus_graph_record` records into, valid until the
/// program returns, on its thread.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_recorder {
    /// Opaque: names the recording in progress.
    pub bits: u64,
}

/// A graph and the runtime (handle bits) it was recorded with.
pub(crate) struct GraphEntry {
    runtime: u64,
    /// Locked while a replay runs it; the table's lock is not held meanwhile.
    graph: Arc<Mutex<locus::Graph>>,
}

pub(crate) static GRAPHS: Table<GraphEntry> = Table::new("graph");

/// The recording in progress on this thread: its token, the recorder, the runtime.
struct Recording {
    token: u64,
    recorder: *const locus::Recorder,
    runtime: u64,
    /// The first task refused before it reached the recorder (a bad handle, an
    /// affinity): it fails the recording as the recorder's own refusals do.
    refused: Option<Fail>,
}

thread_local! {
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// Tokens of recordings: never 0.
static NEXT_RECORDING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Records the graph `name` (copied; NULL: "graph") of runtime `runtime`: calls
/// `program(recorder, arg)`, which records tasks with `locus_graph_spawn`, and writes
/// the graph to `*out`; the program returns 0 (anything else fails the recording).
/// Nothing runs. Fails with the first refused task
/// (`LOCUS_E_DECLARATION`, `LOCUS_E_ARGUMENT`, ... as `locus_graph_spawn` says) or
/// when the program returns non-zero (`LOCUS_E_RUN_FAILED`); no graph is made then,
/// and the arguments of the tasks recorded so far are freed. Called from inside a body:
/// `LOCUS_E_STATE`.
///
/// # Safety
///
/// `name` is NULL or NUL-terminated; `program` is a valid function; `out` is valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn locus_graph_record(
    runtime: locus_runtime,
    name: *const c_char,
    program: Option<unsafe extern "C" fn(recorder: locus_recorder, arg: *mut c_void) -> i32>,
    arg: *mut c_void,
    out: *mut locus_graph,
) -> locus_status {
    guard(|| {
        let rt = runtime_of(runtime)?;
        let program = program.ok_or_else(|| crate::status::null("program"))?;
        if out.is_null() {
            return Err(crate::status::null("out"));
        }
        let name = match name.is_null() {
            true => "graph",
            // SAFETY: non-NULL and NUL-terminated by the caller's contract.
            false => unsafe { c_str(name, "name") }?,
        };
        if in_body() || RECORDING.with(|r| r.borrow().is_some()) {
            return Err(Fail::new(
                locus_status::LOCUS_E_STATE,
                "locus_graph_record: not from inside a body or a recording",
            ));
        }
        let mut status = 0;
        let mut refused = None;
        let recorded = rt.record(name, |recorder| {
            let token = NEXT_RECORDING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            RECORDING.with(|r| {
                *r.borrow_mut() = Some(Recording {
                    token,
                    recorder,
                    runtime: runtime.bits,
                    refused: None,
                })
            });
            let _clear = ClearRecording;
            // SAFETY: the user's program, called as its contract says.
            status = unsafe { program(locus_recorder { bits: token }, arg) };
            refused = RECORDING.with(|r| r.borrow_mut().as_mut().and_then(|r| r.refused.take()));
            Ok(())
        });
        if let Some(fail) = refused {
            return Err(fail);
        }
        let graph = recorded.map_err(|e| Fail::of(e, Some("locus_graph_record")))?;
        if status != 0 {
            return Err(Fail::new(
                locus_status::LOCUS_E_RUN_FAILED,
                format!("locus_graph_record: the program returned {status}"),
            ));
        }
        let bits = GRAPHS.insert(GraphEntry {
            runtime: runtime.bits,
            graph: Arc::new(Mutex::new(graph)),
        });
        // SAFETY: checked non-NULL above, valid for a write by the caller's contract.
        unsafe { put(out, locus_graph { bits }, "out") }
    })
}

/// Clears this thread's recording when dropped, also when unwinding.
struct ClearRecording;

impl Drop for ClearRecording {
    fn drop(&mut self) {
        RECORDING.with(|r| *r.borrow_mut() = None);
    }
}

/// Records a task into the graph `recorder` records, described as for `locus_spawn`:
/// its accesses (no weak ones), its body, its argument (kept with the graph, and given
/// to `arg_free` when the graph is freed, or at once when the task is refused). Its
/// `affinity` and `team` must be unset: a recorded graph places its tasks itself.
/// Errors: a recorder not the running program's (`LOCUS_E_CONTEXT`); what
/// `locus_spawn` refuses; weak accesses, partitioned data (`LOCUS_E_DECLARATION`).
/// Any refusal also fails the recording.
///
/// # Safety
///
/// As for `locus_spawn`.
#[no_mangle]
pub unsafe extern "C" fn locus_graph_spawn(
    recorder: locus_recorder,
    task: *const locus_task,
) -> locus_status {
    guard(|| {
        let (rec, runtime) = RECORDING.with(|r| match &*r.borrow() {
            Some(r) if r.token == recorder.bits && recorder.bits != 0 => {
                Ok((r.recorder, r.runtime))
            }
            _ => Err(Fail::new(
                locus_status::LOCUS_E_CONTEXT,
                "locus_graph_spawn: not the recorder of the program running on this thread",
            )),
        })?;
        // SAFETY: (1) the recorder lives until `locus_graph_record`'s program returns,
        // which clears `RECORDING` first, and this is its thread; (2) `task` as the
        // caller's contract says.
        let recorded = unsafe { record_task(&*rec, runtime, task) };
        if let Err(fail) = &recorded {
            RECORDING.with(|r| {
                if let Some(r) = r.borrow_mut().as_mut() {
                    r.refused
                        .get_or_insert_with(|| Fail::new(fail.status, fail.message.clone()));
                }
            });
        }
        recorded
    })
}

/// Replays `graph` `iterations` times on `runtime` (the one it was recorded with), as
/// one run. If `report` is not NULL the run's report is written there, also for a
/// failed replay (free it with `locus_report_free`). Errors: a graph of another runtime
/// (`LOCUS_E_WRONG_RUNTIME`); a graph whose data changed since it was recorded or last
/// replayed (a datum freed, partitioned, written outside the graph) or whose earlier
/// replay failed (`LOCUS_E_STATE`, for good: record it again); a body returning
/// non-zero (`LOCUS_E_RUN_FAILED`, naming the task; each datum keeps the contents of
/// the last complete iteration); from inside a body (`LOCUS_E_STATE`).
///
/// # Safety
///
/// `report` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_graph_replay(
    runtime: locus_runtime,
    graph: locus_graph,
    iterations: u64,
    report: *mut locus_report,
) -> locus_status {
    guard(|| {
        let rt = runtime_of(runtime)?;
        let (owner, graph) = GRAPHS.with(graph.bits, |e| (e.runtime, e.graph.clone()))?;
        if owner != runtime.bits {
            return Err(Fail::new(
                locus_status::LOCUS_E_WRONG_RUNTIME,
                "locus_graph_replay: the graph was recorded with another runtime",
            ));
        }
        if in_body() {
            return Err(Fail::new(
                locus_status::LOCUS_E_STATE,
                "locus_graph_replay: not from inside a body",
            ));
        }
        let mut graph = graph.lock().map_err(|_| {
            Fail::new(
                locus_status::LOCUS_E_STATE,
                "locus_graph_replay: the graph is unusable",
            )
        })?;
        let (outcome, rep) = match rt.replay(&mut graph, iterations) {
            Ok(rep) => (Ok(()), rep),
            Err(e) => (
                Err(Fail::of(e.error, Some("locus_graph_replay"))),
                *e.report,
            ),
        };
        if !report.is_null() {
            let bits = REPORTS.insert(rep);
            // SAFETY: non-NULL, valid for a write by the caller's contract.
            unsafe { report.write(locus_report { bits }) };
        }
        outcome
    })
}

/// Writes to `*iteration` the index of the iteration a replayed body runs for (counting
/// every iteration the graph has replayed, from 0). `LOCUS_E_CONTEXT` for the context
/// of anything but a replayed body.
///
/// # Safety
///
/// `iteration` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_ctx_iteration(ctx: locus_ctx, iteration: *mut u64) -> locus_status {
    guard(|| {
        let i = replay_iteration(ctx)?;
        // SAFETY: forwarded from the caller.
        unsafe { put(iteration, i, "iteration") }
    })
}

/// Frees a graph, its buffers and the arguments of its tasks (each task's `arg_free`).
/// A freed, null or made-up handle: `LOCUS_E_HANDLE`.
#[no_mangle]
pub extern "C" fn locus_graph_free(graph: locus_graph) -> locus_status {
    guard(|| {
        GRAPHS.remove(graph.bits)?;
        Ok(())
    })
}
