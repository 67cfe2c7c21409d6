//! Status codes, the thread-local last error, and the guard every entry point runs in.
//!
//! Every function of the C API returns a `locus_status`; a failure also leaves a
//! message naming the bad value in a thread-local string that `locus_last_error`
//! returns. No panic crosses the boundary: every entry point runs its body under
//! [`guard`], which turns a panic into `locus_status::LOCUS_E_INTERNAL`.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a call of the C API did. `LOCUS_OK` is zero; every failure is non-zero and
/// leaves a message in `locus_last_error`.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum locus_status {
    /// Success.
    LOCUS_OK = 0,
    /// A pointer argument that must not be NULL was NULL.
    LOCUS_E_NULL = 1,
    /// A handle that is null, freed, or was never made by this library.
    LOCUS_E_HANDLE = 2,
    /// A handle of another runtime than the one the call is about.
    LOCUS_E_WRONG_RUNTIME = 3,
    /// An invalid argument: an unknown name, mode, policy or setting, a string that is
    /// not UTF-8.
    LOCUS_E_ARGUMENT = 4,
    /// A bad size: a zero element size, a count that does not match the datum, a
    /// range out of bounds or on an access other than a read, sizes that overflow.
    LOCUS_E_SIZE = 5,
    /// The runtime could not be built: configuration, topology, worker threads.
    LOCUS_E_CONFIG = 6,
    /// The runtime refused a task's declaration (a datum declared twice with a write,
    /// a wait for children that need the task's own output, ...).
    LOCUS_E_DECLARATION = 7,
    /// The run failed: a task body returned non-zero, a declaration was refused, or a
    /// buffer could not be allocated. The report of the failed run is still given.
    LOCUS_E_RUN_FAILED = 8,
    /// Memory could not be allocated.
    LOCUS_E_OUT_OF_MEMORY = 9,
    /// A task context used outside the body it was given to (after the body returned,
    /// or on another thread), or an operation the context cannot do.
    LOCUS_E_CONTEXT = 10,
    /// The call is not allowed now: a run inside a task, a fetch of data being
    /// written, a datum poisoned by a failed in-place writer.
    LOCUS_E_STATE = 11,
    /// A bug in Locus (a caught panic); the message says where.
    LOCUS_E_INTERNAL = 12,
}

/// A failure: its status and the message for `locus_last_error`.
#[derive(Debug)]
pub(crate) struct Fail {
    pub(crate) status: locus_status,
    pub(crate) message: String,
}

impl Fail {
    pub(crate) fn new(status: locus_status, message: impl Into<String>) -> Fail {
        Fail {
            status,
            message: message.into(),
        }
    }
}

/// The result of an entry point's body.
pub(crate) type CResult<T = ()> = Result<T, Fail>;

impl From<locus::Error> for Fail {
    fn from(e: locus::Error) -> Fail {
        Fail::of(e, None)
    }
}

/// Locus's names for the operations whose errors it words as a task's (`task `node_of`:
/// ...`, `task `wait` was not submitted`) or opens with (`migrate: ...`); a datum's
/// name may follow in parentheses (`fetch(x)`).
const OPERATIONS: &[&str] = &[
    "fetch",
    "node_of",
    "partition",
    "migrate",
    "migrate_on_next_touch",
    "move_team",
    "team",
    "attach",
    "detach",
    "wait",
    "register",
    "data_from",
    "free_memory",
    "read_cost",
    "write_cost",
];

/// Whether `name` is one of Locus's [`OPERATIONS`], not a task.
fn is_operation(name: &str) -> bool {
    let base = name.split_once('(').map_or(name, |(op, _)| op);
    OPERATIONS.contains(&base)
}

/// `message` with an opening `op: ` or `op(...): ` of Locus's operations naming
/// `call` instead.
fn opened_by(message: &str, call: Option<&str>) -> String {
    let (Some(call), Some((head, rest))) = (call, message.split_once(": ")) else {
        return message.to_string();
    };
    if is_operation(head) {
        format!("{call}: {rest}")
    } else {
        message.to_string()
    }
}

/// Phrases of Locus's messages that name Rust items, and their C equivalents.
const PHRASES: &[(&str, &str)] = &[
    ("Runtime::migrate", "locus_migrate"),
    ("(spawned with `spawn_control`)", "(it declares no access)"),
    (
        "spawn it with `spawn`, declaring what its children access (a weak access is enough)",
        "declare what its children access (LOCUS_WEAK_READ is enough)",
    ),
    (
        "move its current one with migrate",
        "move its current one with locus_migrate",
    ),
];

/// `message` in C's words ([`PHRASES`]).
fn in_c(message: &str) -> String {
    PHRASES
        .iter()
        .fold(message.to_string(), |m, (rust, c)| m.replace(rust, c))
}

impl Fail {
    /// A Locus error in the C API's words, met by C function `call` if given: the
    /// operations Locus reports as tasks are that function, the builder's settings are
    /// `locus_settings_set`'s, no message says a C body "panicked" (a C body fails; a
    /// panic is Locus's own).
    pub(crate) fn of(e: locus::Error, call: Option<&str>) -> Fail {
        use locus::Error as E;
        let status = match &e {
            E::Config(_) | E::Topology(_) | E::Startup { .. } => locus_status::LOCUS_E_CONFIG,
            E::Declaration { .. } => locus_status::LOCUS_E_DECLARATION,
            E::ForeignData { .. } => locus_status::LOCUS_E_WRONG_RUNTIME,
            E::TaskPanicked { .. }
            | E::TaskFailed { .. }
            | E::RunFailed { .. }
            | E::StackExhausted { .. }
            | E::ObserverPanicked { .. } => locus_status::LOCUS_E_RUN_FAILED,
            E::OutOfMemory { .. } => locus_status::LOCUS_E_OUT_OF_MEMORY,
            E::Size { .. } => locus_status::LOCUS_E_SIZE,
            E::Poisoned { .. } | E::NestedRun | E::RunInProgress { .. } | E::Replay { .. } => {
                locus_status::LOCUS_E_STATE
            }
            _ => locus_status::LOCUS_E_INTERNAL,
        };
        // Who met it: the task, or for Locus's operations the C function.
        let who = |task: &str| match call {
            Some(c) if is_operation(task) => c.to_string(),
            _ => format!("task `{task}`"),
        };
        let message = match &e {
            E::Config(m) => in_c(&opened_by(m, call)),
            E::Declaration { task, message } => format!("{}: {}", who(task), in_c(message)),
            E::ForeignData { task, data } => {
                format!("{}: datum `{data}` belongs to another runtime", who(task))
            }
            E::TaskPanicked { task, message } => {
                format!("task `{task}` failed inside Locus: {message}")
            }
            E::StackExhausted {
                task,
                worker,
                stack_bytes,
            } => format!(
                "task `{task}`: waits nest too deeply on worker {worker}, whose stack of \
                 {stack_bytes} bytes is nearly full (each task waiting in locus_wait or \
                 locus_ctx_fetch runs others on its stack); give the workers more with the \
                 setting `worker_stack` (locus_settings_set)"
            ),
            E::ObserverPanicked { call, message } => {
                format!("the trace recorder failed in `{call}`: {message}")
            }
            E::OutOfMemory {
                task,
                bytes,
                message,
            } => format!("{}: cannot allocate {bytes} bytes: {message}", who(task)),
            E::Poisoned { data, task } => format!(
                "`{data}` may be partly written: task `{task}` failed while writing it in \
                 place; write it whole (LOCUS_WRITE) before reading it"
            ),
            E::RunFailed { task } if call.is_some() && is_operation(task) => {
                format!("{}: the run has failed", who(task))
            }
            E::NestedRun => "locus_run cannot be called from inside a task (a body or the \
                             root); spawn into the task's context with locus_spawn"
                .to_string(),
            other => in_c(&other.to_string()),
        };
        Fail::new(status, message)
    }
}

/// The error of C function `call` from a Locus error ([`Fail::of`]).
pub(crate) fn in_call(call: &'static str) -> impl Fn(locus::Error) -> Fail {
    move |e| Fail::of(e, Some(call))
}

thread_local! {
    /// The message of this thread's last failed call.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error.
pub(crate) fn set_last_error(message: &str) {
    // A message holding NUL bytes is cut at the first one.
    let bytes = message.split('\0').next().unwrap_or_default();
    let c = CString::new(bytes).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Runs an entry point's body: a failure sets the last error and returns its status, a
/// panic becomes `locus_status::LOCUS_E_INTERNAL`, never an unwind into C.
pub(crate) fn guard(f: impl FnOnce() -> CResult) -> locus_status {
    guard_status(|| status_of(f()))
}

/// The status of an entry point's outcome `result`; a failure sets the last error.
#[inline]
pub(crate) fn status_of(result: CResult) -> locus_status {
    match result {
        Ok(()) => locus_status::LOCUS_OK,
        Err(fail) => failed(fail),
    }
}

/// Sets the last error to `fail`'s message and returns its status.
#[cold]
fn failed(fail: Fail) -> locus_status {
    set_last_error(&fail.message);
    fail.status
}

/// [`guard`] for a body that returns its status itself (and sets the last error when
/// it fails): a panic becomes `locus_status::LOCUS_E_INTERNAL`.
#[inline]
pub(crate) fn guard_status(f: impl FnOnce() -> locus_status) -> locus_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(status) => status,
        Err(payload) => panicked(payload),
    }
}

/// The status of an entry point whose body panicked with `payload`.
#[cold]
fn panicked(payload: Box<dyn std::any::Any + Send>) -> locus_status {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into());
    set_last_error(&format!("internal error in Locus: {what}"));
    locus_status::LOCUS_E_INTERNAL
}

/// The message of the last call that failed on the calling thread, naming the bad
/// value; an empty string if none has. The string stays valid until the next failing
/// call on this thread; do not free it.
#[no_mangle]
pub extern "C" fn locus_last_error() -> *const c_char {
    catch_unwind(|| LAST_ERROR.with(|e| e.borrow().as_ptr())).unwrap_or(c"".as_ptr())
}

/// The name of a status code (`"LOCUS_E_HANDLE"`), or `"LOCUS_E_UNKNOWN"` for a value
/// that is not one. A static string: do not free it.
#[no_mangle]
pub extern "C" fn locus_status_name(status: i32) -> *const c_char {
    let name: &'static std::ffi::CStr = match status {
        0 => c"LOCUS_OK",
        1 => c"LOCUS_E_NULL",
        2 => c"LOCUS_E_HANDLE",
        3 => c"LOCUS_E_WRONG_RUNTIME",
        4 => c"LOCUS_E_ARGUMENT",
        5 => c"LOCUS_E_SIZE",
        6 => c"LOCUS_E_CONFIG",
        7 => c"LOCUS_E_DECLARATION",
        8 => c"LOCUS_E_RUN_FAILED",
        9 => c"LOCUS_E_OUT_OF_MEMORY",
        10 => c"LOCUS_E_CONTEXT",
        11 => c"LOCUS_E_STATE",
        12 => c"LOCUS_E_INTERNAL",
        _ => c"LOCUS_E_UNKNOWN",
    };
    name.as_ptr()
}

/// Reads a C string argument: NULL and invalid UTF-8 are failures naming `what`.
///
/// # Safety
///
/// `s` is NULL or points to a NUL-terminated string that stays valid for `'a`.
pub(crate) unsafe fn c_str<'a>(s: *const c_char, what: &str) -> CResult<&'a str> {
    if s.is_null() {
        return Err(Fail::new(
            locus_status::LOCUS_E_NULL,
            format!("{what} is NULL"),
        ));
    }
    // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string.
    let c = unsafe { std::ffi::CStr::from_ptr(s) };
    c.to_str().map_err(|_| {
        Fail::new(
            locus_status::LOCUS_E_ARGUMENT,
            format!("{what} is not UTF-8: {:?}", c.to_string_lossy()),
        )
    })
}

/// A failure for a NULL pointer argument.
pub(crate) fn null(what: &str) -> Fail {
    Fail::new(locus_status::LOCUS_E_NULL, format!("{what} is NULL"))
}

/// Writes `value` to the out-pointer `out`, or fails naming it if it is NULL.
///
/// # Safety
///
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T, what: &str) -> CResult {
    if out.is_null() {
        return Err(null(what));
    }
    // SAFETY: non-NULL and, by the caller's contract, valid for a write.
    unsafe { out.write(value) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_error() -> String {
        // SAFETY: `locus_last_error` returns a NUL-terminated string owned by this
        // thread, valid until the next failing call.
        unsafe { std::ffi::CStr::from_ptr(locus_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let status = guard(|| panic!("broken invariant {}", 7));
        assert_eq!(status, locus_status::LOCUS_E_INTERNAL);
        assert!(
            last_error().contains("broken invariant 7"),
            "{}",
            last_error()
        );
    }

    #[test]
    fn locus_errors_speak_c() {
        use locus::Error as E;
        let task = |t: &str| t.to_string();
        let cases = [
            (
                E::TaskPanicked {
                    task: task("t"),
                    message: task("boom"),
                },
                None,
                "task `t` failed inside Locus: boom",
            ),
            (
                E::ObserverPanicked {
                    call: "on_task_end",
                    message: task("boom"),
                },
                None,
                "the trace recorder failed in `on_task_end`: boom",
            ),
            (
                E::OutOfMemory {
                    task: task("fetch(x)"),
                    bytes: 8,
                    message: task("no memory"),
                },
                Some("locus_fetch"),
                "locus_fetch: cannot allocate 8 bytes: no memory",
            ),
            (
                E::ForeignData {
                    task: task("detach"),
                    data: task("x"),
                },
                Some("locus_detach"),
                "locus_detach: datum `x` belongs to another runtime",
            ),
            (
                E::Config(task("move_team: the team belongs to another runtime")),
                Some("locus_team_move"),
                "locus_team_move: the team belongs to another runtime",
            ),
            // A task of the user's named as an operation, met by no C function.
            (
                E::RunFailed { task: task("wait") },
                None,
                "the run has failed; task `wait` was not submitted",
            ),
        ];
        for (e, call, want) in cases {
            assert_eq!(Fail::of(e, call).message, want);
        }
    }

    #[test]
    fn a_failure_sets_the_last_error_and_success_keeps_it() {
        let status = guard(|| Err(Fail::new(locus_status::LOCUS_E_SIZE, "count 3 \0 cut")));
        assert_eq!(status, locus_status::LOCUS_E_SIZE);
        assert_eq!(last_error(), "count 3 ");
        assert_eq!(guard(|| Ok(())), locus_status::LOCUS_OK);
        assert_eq!(last_error(), "count 3 ");
    }
}
