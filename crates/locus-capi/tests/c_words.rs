//! The C API's errors speak C: they name its functions (`locus_node_of`, `locus_wait`,
//! `locus_run`) and settings (`worker_stack`), never the Rust items underneath
//! (`Runtime::run`, `RuntimeBuilder::worker_stack_size`) or Locus's operations as if
//! they were tasks (`task `node_of``); a C body fails, it does not panic. And values no
//! runtime accepts are refused by `locus_settings_set`, a range on a write is a bad
//! size (`LOCUS_E_SIZE`), as `locus.h` says.

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::Mutex;

use locus_capi::*;

fn last_error() -> String {
    // SAFETY: a NUL-terminated string owned by this thread.
    unsafe { CStr::from_ptr(locus_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// What a Rust item, or a Locus operation named as a task, looks like in a message.
const RUST_WORDS: &[&str] = &[
    "::",
    "panicked",
    "RuntimeBuilder",
    "worker_stack_size",
    "spawn_control",
    "task `wait`",
    "task `fetch",
    "task `node_of`",
    "task `migrate",
    "task `partition",
    "task `attach`",
    "task `detach`",
];

/// `message` names no Rust item.
#[track_caller]
fn speaks_c(message: &str) {
    for w in RUST_WORDS {
        assert!(!message.contains(w), "`{message}` says `{w}`");
    }
}

/// `got` is `want`, and the message starts with `start` and speaks C.
#[track_caller]
fn expect(got: &(locus_status, String), want: locus_status, start: &str) {
    assert_eq!(got.0, want, "{}", got.1);
    assert!(
        got.1.starts_with(start),
        "`{}` does not start with `{start}`",
        got.1
    );
    speaks_c(&got.1);
}

/// A call's status and, if it failed, its message.
fn outcome(status: locus_status) -> (locus_status, String) {
    let message = if status == locus_status::LOCUS_OK {
        String::new()
    } else {
        last_error()
    };
    (status, message)
}

type Probe<'a> = &'a (dyn Fn(locus_ctx) + Sync);

/// A body that calls the probe its argument points to.
unsafe extern "C" fn probe(
    ctx: locus_ctx,
    _: *const locus_view,
    _: usize,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: `arg` is the test's probe, alive while the run lasts.
    let f = unsafe { *(arg as *const Probe) };
    f(ctx);
    0
}

unsafe extern "C" fn fail(_: locus_ctx, _: *const locus_view, _: usize, _: *mut c_void) -> i32 {
    9
}

unsafe extern "C" fn noop(_: locus_ctx, _: *const locus_view, _: usize, _: *mut c_void) -> i32 {
    0
}

/// A task as C writes one: all zero (`locus_task t = {0}`), then its fields.
fn task(
    name: &'static CStr,
    body: locus_task_fn,
    arg: *mut c_void,
    acc: &[locus_access],
) -> locus_task {
    // SAFETY: all zero is a valid `locus_task`: null pointers, no body or destructor,
    // null handles, zero numbers, `false`.
    let mut t: locus_task = unsafe { std::mem::zeroed() };
    t.name = name.as_ptr();
    t.body = Some(body);
    t.arg = arg;
    t.accesses = acc.as_ptr();
    t.naccesses = acc.len();
    t
}

fn access(data: locus_data, mode: locus_mode) -> locus_access {
    locus_access {
        data,
        mode: mode as u32,
        start: 0,
        end: 0,
    }
}

/// The root: spawns the task its argument points to.
unsafe extern "C" fn spawn_root(
    ctx: locus_ctx,
    _: *const locus_view,
    _: usize,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: `arg` is the test's task, alive while the run lasts.
    let status = unsafe { locus_spawn(ctx, arg as *const locus_task) };
    assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
    0
}

/// Runs `f` in the body of a task declaring `acc`; the run's outcome.
fn in_task(rt: locus_runtime, acc: &[locus_access], f: Probe) -> (locus_status, String) {
    let mut t = task(c"probe", probe, &f as *const Probe as *mut c_void, acc);
    let arg = &mut t as *mut locus_task as *mut c_void;
    // SAFETY: a valid root and task; no report asked for.
    outcome(unsafe { locus_run(rt, Some(spawn_root), arg, ptr::null_mut()) })
}

fn runtime(topology: &CStr, settings: &[(&CStr, &CStr)]) -> locus_runtime {
    // SAFETY: every pointer passed is valid for what the function reads or writes.
    unsafe {
        let mut s = locus_settings::default();
        assert_eq!(locus_settings_create(&mut s), locus_status::LOCUS_OK);
        for (k, v) in settings {
            let status = locus_settings_set(s, k.as_ptr(), v.as_ptr());
            assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
        }
        let mut rt = locus_runtime::default();
        let status = locus_runtime_create(ptr::null(), topology.as_ptr(), 0, s, &mut rt);
        assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
        assert_eq!(locus_settings_free(s), locus_status::LOCUS_OK);
        rt
    }
}

fn datum(rt: locus_runtime, name: &CStr) -> locus_data {
    let mut d = locus_data::default();
    let values = [1u64, 2, 3, 4];
    // SAFETY: four elements of 8 bytes.
    let status =
        unsafe { locus_data_from(rt, name.as_ptr(), 8, 4, values.as_ptr().cast(), &mut d) };
    assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
    d
}

unsafe extern "C" fn nothing(_: locus_ctx, _: *const locus_view, _: usize, _: *mut c_void) -> i32 {
    0
}

/// Calls a body cannot make name the C function: `locus_node_of`, `locus_fetch`,
/// `locus_scope_migrate` (which points to `locus_migrate`, not `Runtime::migrate`) and
/// `locus_run` (not `Runtime::run`).
#[test]
fn calls_refused_in_a_body_name_their_c_function() {
    let rt = runtime(c"1x2", &[]);
    let x = datum(rt, c"x");
    let got = Mutex::new(Vec::new());
    let run = in_task(rt, &[access(x, locus_mode::LOCUS_READ)], &|ctx| {
        let mut node = 0i64;
        let mut buf = [0u64; 4];
        // SAFETY: valid out-pointers and buffers; a valid root for the nested run.
        let calls = unsafe {
            [
                outcome(locus_node_of(rt, x, &mut node)),
                outcome(locus_fetch(rt, x, buf.as_mut_ptr().cast(), 4)),
                outcome(locus_scope_migrate(ctx, x, 0)),
                outcome(locus_run(
                    rt,
                    Some(nothing),
                    ptr::null_mut(),
                    ptr::null_mut(),
                )),
            ]
        };
        got.lock().unwrap().extend(calls);
    });
    assert_eq!(run.0, locus_status::LOCUS_OK, "{}", run.1);
    let got = got.into_inner().unwrap();
    expect(
        &got[0],
        locus_status::LOCUS_E_DECLARATION,
        "locus_node_of: `x`: ",
    );
    expect(
        &got[1],
        locus_status::LOCUS_E_DECLARATION,
        "locus_fetch: `x` ",
    );
    expect(
        &got[2],
        locus_status::LOCUS_E_DECLARATION,
        "locus_scope_migrate: `x`",
    );
    assert!(got[2].1.contains("with locus_migrate"), "{}", got[2].1);
    expect(
        &got[3],
        locus_status::LOCUS_E_STATE,
        "locus_run cannot be called from inside a task",
    );
    assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
}

/// Calls refused between runs open with their C function (was: Locus's operation,
/// `read_cost: `, `migrate_on_next_touch: ... with migrate`).
#[test]
fn calls_refused_between_runs_name_their_c_function() {
    let rt = runtime(c"2x1", &[]);
    let x = datum(rt, c"x");
    let (mut ns, mut pages, mut team) = (0.0, 0u64, locus_team::default());
    let nine = [9usize];
    // SAFETY: valid out-pointers and node lists.
    let got = unsafe {
        [
            outcome(locus_read_cost(rt, 64, 9, 0, &mut ns)),
            outcome(locus_write_cost(rt, 64, 0, 9, &mut ns)),
            outcome(locus_migrate_on_next_touch(rt, x, &mut pages)),
            outcome(locus_team_create(rt, nine.as_ptr(), 1, &mut team)),
            outcome(locus_attach_node(rt, x, 9)),
        ]
    };
    let config = locus_status::LOCUS_E_CONFIG;
    expect(&got[0], config, "locus_read_cost: node 9 does not exist");
    expect(&got[1], config, "locus_write_cost: node 9 does not exist");
    expect(
        &got[2],
        config,
        "locus_migrate_on_next_touch: `x` is versioned",
    );
    assert!(got[2].1.ends_with("with locus_migrate"), "{}", got[2].1);
    expect(&got[3], config, "locus_team_create: node 9 does not exist");
    expect(&got[4], config, "locus_attach_node: node 9 does not exist");
    assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
}

/// After a child failed, `locus_wait` and `locus_ctx_fetch` say that the run has
/// failed, naming themselves (was: "task `wait` was not submitted").
#[test]
fn a_wait_in_a_failed_run_names_locus_wait() {
    let rt = runtime(c"1x2", &[]);
    let token = datum(rt, c"token");
    let got = Mutex::new(Vec::new());
    let run = in_task(rt, &[access(token, locus_mode::LOCUS_WEAK_READ)], &|ctx| {
        let child = task(c"child", fail, ptr::null_mut(), &[]);
        let mut buf = [0u64; 4];
        // SAFETY: a valid task and buffer.
        let calls = unsafe {
            assert_eq!(
                locus_spawn(ctx, &child),
                locus_status::LOCUS_OK,
                "{}",
                last_error()
            );
            [
                outcome(locus_wait(ctx)),
                outcome(locus_ctx_fetch(ctx, token, buf.as_mut_ptr().cast(), 4)),
            ]
        };
        got.lock().unwrap().extend(calls);
    });
    expect(
        &run,
        locus_status::LOCUS_E_RUN_FAILED,
        "task `child` failed: body returned 9",
    );
    let got = got.into_inner().unwrap();
    expect(
        &got[0],
        locus_status::LOCUS_E_RUN_FAILED,
        "locus_wait: the run has failed",
    );
    expect(
        &got[1],
        locus_status::LOCUS_E_RUN_FAILED,
        "locus_ctx_fetch: the run has failed",
    );
    assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
}

#[test]
fn a_task_of_no_access_that_waits_is_told_in_c_and_fails_the_run() {
    let rt = runtime(c"1x1", &[]);
    let got = Mutex::new(None);
    let run = in_task(rt, &[], &|ctx| {
        *got.lock().unwrap() = Some(outcome(locus_wait(ctx)));
    });
    // The refused wait fails the run, though the body returned 0 (its children's
    // results were never waited for).
    expect(
        &run,
        locus_status::LOCUS_E_RUN_FAILED,
        "task `probe` failed: locus_wait was refused (LOCUS_E_DECLARATION)",
    );
    let (status, message) = got.into_inner().unwrap().expect("the body ran");
    assert_eq!(status, locus_status::LOCUS_E_DECLARATION, "{message}");
    for words in [
        "(it declares no access)",
        "declare what its children access (LOCUS_WEAK_READ is enough)",
    ] {
        assert!(message.contains(words), "`{message}` lacks `{words}`");
    }
    speaks_c(&message);
    assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
}

struct Levels {
    token: locus_data,
    left: usize,
}

/// Spawns the next level (weakly reading the token, so that it may wait) and waits.
unsafe extern "C" fn level(
    ctx: locus_ctx,
    _: *const locus_view,
    _: usize,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: `arg` is this level's copy of `Levels`.
    let here = unsafe { &*(arg as *const Levels) };
    if here.left == 0 {
        return 0;
    }
    let mut next = Levels {
        token: here.token,
        left: here.left - 1,
    };
    let acc = [access(here.token, locus_mode::LOCUS_WEAK_READ)];
    let mut t = task(c"level", level, (&mut next as *mut Levels).cast(), &acc);
    t.arg_size = std::mem::size_of::<Levels>();
    // SAFETY: a valid task whose argument is copied.
    unsafe {
        if locus_spawn(ctx, &t) != locus_status::LOCUS_OK {
            return 1;
        }
        (locus_wait(ctx) != locus_status::LOCUS_OK) as i32
    }
}

/// Waits nested past the worker's stack name the C setting that gives more
/// (`worker_stack`, through `locus_settings_set`), not the Rust builder's method.
#[test]
fn a_stack_too_small_names_the_worker_stack_setting() {
    let rt = runtime(c"1x1", &[(c"worker_stack", c"262144")]);
    let token = datum(rt, c"token");
    let mut first = Levels {
        token,
        left: 1_000_000,
    };
    let acc = [access(token, locus_mode::LOCUS_WEAK_READ)];
    let mut t = task(c"level", level, (&mut first as *mut Levels).cast(), &acc);
    t.arg_size = std::mem::size_of::<Levels>();
    let arg = &mut t as *mut locus_task as *mut c_void;
    // SAFETY: a valid root and task.
    let run = outcome(unsafe { locus_run(rt, Some(spawn_root), arg, ptr::null_mut()) });
    expect(
        &run,
        locus_status::LOCUS_E_RUN_FAILED,
        "task `level`: waits nest too deeply",
    );
    assert!(
        run.1
            .contains("the setting `worker_stack` (locus_settings_set)"),
        "{}",
        run.1
    );
    assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
}

/// A shared datum written in place by a body that failed: its fetch says the task
/// failed, not that it panicked.
#[test]
fn a_datum_left_partly_written_names_the_failed_task() {
    let rt = runtime(c"1x2", &[]);
    let mut v = locus_data::default();
    // SAFETY: a valid name and out-pointer; no initial values.
    let status = unsafe {
        locus_data_shared(
            rt,
            c"v".as_ptr(),
            8,
            512,
            locus_policy::LOCUS_POLICY_INTERLEAVE as u32,
            0,
            ptr::null(),
            &mut v,
        )
    };
    assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
    let acc = [access(v, locus_mode::LOCUS_WRITE)];
    let mut t = task(c"writer", fail, ptr::null_mut(), &acc);
    let arg = &mut t as *mut locus_task as *mut c_void;
    // SAFETY: a valid root and task.
    let run = outcome(unsafe { locus_run(rt, Some(spawn_root), arg, ptr::null_mut()) });
    expect(
        &run,
        locus_status::LOCUS_E_RUN_FAILED,
        "task `writer` failed",
    );
    let mut buf = vec![0u64; 512];
    // SAFETY: a buffer of 512 elements.
    let fetched = outcome(unsafe { locus_fetch(rt, v, buf.as_mut_ptr().cast(), 512) });
    expect(
        &fetched,
        locus_status::LOCUS_E_STATE,
        "`v` may be partly written",
    );
    assert!(
        fetched
            .1
            .contains("task `writer` failed while writing it in place"),
        "{}",
        fetched.1
    );
    assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
}

/// Values no runtime accepts are refused by `locus_settings_set` (was: at
/// `locus_runtime_create`, as `RuntimeBuilder::worker_stack_size`'s error), and leave
/// the object as it was.
#[test]
fn settings_no_runtime_accepts_are_refused_when_set() {
    // SAFETY: every pointer passed is valid for what the function reads or writes.
    unsafe {
        let mut s = locus_settings::default();
        assert_eq!(locus_settings_create(&mut s), locus_status::LOCUS_OK);
        for (key, value, expected) in [
            (c"worker_stack", c"1000", "at least 262144"),
            (c"worker_stack", c"262143", "at least 262144"),
            (c"window", c"0", "at least 1 task"),
            (c"vicinity", c"0", "at least 1 worker"),
            (c"push_weights", c"-1,1", "not negative"),
            (c"push_weights", c"1,inf", "finite"),
            (c"push_weights", c"NaN,1", "finite"),
        ] {
            let got = outcome(locus_settings_set(s, key.as_ptr(), value.as_ptr()));
            let start = format!(
                "setting `{}`: bad value `{}`",
                key.to_str().unwrap(),
                value.to_str().unwrap()
            );
            expect(&got, locus_status::LOCUS_E_ARGUMENT, &start);
            assert!(got.1.contains(expected), "{}", got.1);
        }
        for (key, value) in [
            (c"worker_stack", c"262144"),
            (c"window", c"1"),
            (c"vicinity", c"1"),
            (c"push_weights", c"0,2.5"),
        ] {
            let status = locus_settings_set(s, key.as_ptr(), value.as_ptr());
            assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
        }
        let mut rt = locus_runtime::default();
        let status =
            locus_runtime_create(c"push-weighted".as_ptr(), c"1x1".as_ptr(), 0, s, &mut rt);
        assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
        assert_eq!(locus_settings_free(s), locus_status::LOCUS_OK);
        assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
    }
}

/// A range on an access other than `LOCUS_READ` is a bad range: `LOCUS_E_SIZE`, as
/// `locus.h` says of `locus_spawn` (was `LOCUS_E_ARGUMENT`).
#[test]
fn a_range_on_a_write_is_a_size_error() {
    let rt = runtime(c"1x1", &[]);
    let x = datum(rt, c"x");
    let got = Mutex::new(Vec::new());
    let run = in_task(rt, &[], &|ctx| {
        for mode in [locus_mode::LOCUS_WRITE, locus_mode::LOCUS_READ_WRITE] {
            let acc = [locus_access {
                data: x,
                mode: mode as u32,
                start: 0,
                end: 2,
            }];
            let t = task(c"ranged", noop, ptr::null_mut(), &acc);
            // SAFETY: a valid task.
            got.lock()
                .unwrap()
                .push(outcome(unsafe { locus_spawn(ctx, &t) }));
        }
    });
    // Whether a refused spawn fails the run is not this test's business.
    speaks_c(&run.1);
    for g in got.into_inner().unwrap() {
        expect(
            &g,
            locus_status::LOCUS_E_SIZE,
            "task `ranged`: access 0 to `x`: a range [0, 2)",
        );
    }
    assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
}
