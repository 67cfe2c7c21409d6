//! The C API called from Rust, as a C program would call it: a run with views and a
//! read range, a failing body, handles checked after they are freed, and the memory
//! API (costs, migrating now, by range, on next touch and as a task, free memory per
//! node, the migration setting), and teams and attached data (strict teams and their
//! children, moving a team with its data, affinity to an attached datum), each with
//! its bad input. (The full suite is the C one, `tests/c/capi_tests.c`, run by
//! `scripts/capi-ci.sh`.)

use std::ffi::{c_void, CStr};
use std::ptr;

use locus_capi::*;

fn last_error() -> String {
    // SAFETY: a NUL-terminated string owned by this thread.
    unsafe { CStr::from_ptr(locus_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Sums the read view into the written one.
unsafe extern "C" fn sum(_: locus_ctx, v: *const locus_view, n: usize, _: *mut c_void) -> i32 {
    assert_eq!(n, 2);
    // SAFETY: two views, as declared: a read of f64 and a write of one f64.
    unsafe {
        let (input, out) = (&*v, &*v.add(1));
        let xs = std::slice::from_raw_parts(input.ptr as *const f64, input.count);
        *(out.ptr as *mut f64) = xs.iter().sum();
    }
    0
}

unsafe extern "C" fn fail(_: locus_ctx, _: *const locus_view, _: usize, _: *mut c_void) -> i32 {
    9
}

/// The root: spawns the task pointed to by `arg`.
unsafe extern "C" fn root(ctx: locus_ctx, _: *const locus_view, _: usize, arg: *mut c_void) -> i32 {
    // SAFETY: `arg` is the task the test passes.
    let status = unsafe { locus_spawn(ctx, arg as *const locus_task) };
    assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
    0
}

#[test]
fn a_run_through_the_c_api() {
    // SAFETY: every pointer passed is valid for what the function reads or writes.
    unsafe {
        let mut rt = locus_runtime::default();
        let status = locus_runtime_create(
            c"dsa-opt".as_ptr(),
            c"2x1".as_ptr(),
            2,
            locus_settings::default(),
            &mut rt,
        );
        assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
        let values: Vec<f64> = (0..8).map(f64::from).collect();
        let (mut x, mut out) = (locus_data::default(), locus_data::default());
        let name = c"x".as_ptr();
        assert_eq!(
            locus_data_from(rt, name, 8, 8, values.as_ptr().cast(), &mut x),
            locus_status::LOCUS_OK
        );
        assert_eq!(
            locus_data_create(rt, c"out".as_ptr(), 8, 1, &mut out),
            locus_status::LOCUS_OK
        );
        let accesses = [
            locus_access {
                data: x,
                mode: locus_mode::LOCUS_READ as u32,
                start: 2,
                end: 5,
            },
            locus_access {
                data: out,
                mode: locus_mode::LOCUS_WRITE as u32,
                start: 0,
                end: 0,
            },
        ];
        let mut task = locus_task {
            name: c"sum".as_ptr(),
            body: Some(sum),
            arg: ptr::null_mut(),
            arg_size: 0,
            arg_free: None,
            accesses: accesses.as_ptr(),
            naccesses: 2,
            cost_ns: 0,
            affinity: 0,
            affinity_strict: false,
            affinity_index: 0,
            affinity_data: locus_data::default(),
            team: locus_team::default(),
        };
        let mut report = locus_report::default();
        let arg = &mut task as *mut locus_task as *mut c_void;
        assert_eq!(
            locus_run(rt, Some(root), arg, &mut report),
            locus_status::LOCUS_OK
        );
        let mut got = 0.0f64;
        assert_eq!(
            locus_fetch(rt, out, (&mut got as *mut f64).cast(), 1),
            locus_status::LOCUS_OK
        );
        assert_eq!(got, 2.0 + 3.0 + 4.0);
        let mut figures = locus_figures::default();
        assert_eq!(
            locus_report_figures(report, &mut figures),
            locus_status::LOCUS_OK
        );
        assert_eq!(figures.tasks, 1);
        assert_eq!(locus_report_free(report), locus_status::LOCUS_OK);

        // A failing body fails the run, naming the task and its status.
        task.body = Some(fail);
        task.name = c"odd".as_ptr();
        let arg = &mut task as *mut locus_task as *mut c_void;
        assert_eq!(
            locus_run(rt, Some(root), arg, ptr::null_mut()),
            locus_status::LOCUS_E_RUN_FAILED
        );
        assert!(
            last_error().contains("`odd`") && last_error().contains("9"),
            "{}",
            last_error()
        );

        // Freed handles are refused, not dereferenced.
        assert_eq!(locus_data_free(x), locus_status::LOCUS_OK);
        assert_eq!(locus_data_free(x), locus_status::LOCUS_E_HANDLE);
        assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
        assert_eq!(locus_data_free(out), locus_status::LOCUS_E_HANDLE);
        assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_E_HANDLE);
    }
}

// ---- the memory API ----

const PAGE: u64 = 4096;

/// A runtime of `topology` with `workers` workers and the settings given as pairs.
fn runtime_with(
    topology: &std::ffi::CStr,
    workers: usize,
    settings: &[(&CStr, &CStr)],
) -> locus_runtime {
    // SAFETY: every pointer passed is valid for what the function reads or writes.
    unsafe {
        let mut s = locus_settings::default();
        if !settings.is_empty() {
            assert_eq!(locus_settings_create(&mut s), locus_status::LOCUS_OK);
            for (k, v) in settings {
                let status = locus_settings_set(s, k.as_ptr(), v.as_ptr());
                assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
            }
        }
        let mut rt = locus_runtime::default();
        let status =
            locus_runtime_create(c"dsa-opt".as_ptr(), topology.as_ptr(), workers, s, &mut rt);
        assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
        if !settings.is_empty() {
            assert_eq!(locus_settings_free(s), locus_status::LOCUS_OK);
        }
        rt
    }
}

/// A shared datum of `count` u64 under `policy` (`node` for a bind).
fn shared(rt: locus_runtime, count: usize, policy: locus_policy, node: usize) -> locus_data {
    let values: Vec<u64> = (0..count as u64).collect();
    let mut d = locus_data::default();
    // SAFETY: `values` holds `count` elements of 8 bytes.
    let status = unsafe {
        locus_data_shared(
            rt,
            c"v".as_ptr(),
            8,
            count,
            policy as u32,
            node,
            values.as_ptr().cast(),
            &mut d,
        )
    };
    assert_eq!(status, locus_status::LOCUS_OK, "{}", last_error());
    d
}

/// `call` returns `want`, and its error message contains `needle`.
#[track_caller]
fn expect(got: locus_status, want: locus_status, needle: &str) {
    assert_eq!(got, want, "{}", last_error());
    if want != locus_status::LOCUS_OK {
        assert!(
            last_error().contains(needle),
            "`{}` does not name `{needle}`",
            last_error()
        );
    }
}

fn node_of(rt: locus_runtime, d: locus_data) -> i64 {
    let mut node = -2;
    // SAFETY: a valid out-pointer.
    expect(
        unsafe { locus_node_of(rt, d, &mut node) },
        locus_status::LOCUS_OK,
        "",
    );
    node
}

#[test]
fn costs_follow_the_topology() {
    use locus_status::*;
    let rt = runtime_with(c"opteron-16", 4, &[]);
    // SAFETY: valid out-pointers, or NULL where the test says so.
    unsafe {
        let mut ns = 0.0;
        expect(locus_read_cost(rt, 64, 2, 0, &mut ns), LOCUS_OK, "");
        assert!((ns - 117.0).abs() < 0.1, "{ns}"); // paper 2, Table 3
        expect(locus_write_cost(rt, 64, 2, 0, &mut ns), LOCUS_OK, "");
        assert!((ns - 142.0 * 1.46).abs() < 1e-6, "{ns}");
        expect(locus_migration_cost(rt, 2 * PAGE, &mut ns), LOCUS_OK, "");
        assert_eq!(ns, 142_000.0); // MaMI: 120 us + 11 us per page
        expect(
            locus_read_cost(rt, 64, 4, 0, &mut ns),
            LOCUS_E_CONFIG,
            "node 4 does not exist",
        );
        expect(
            locus_write_cost(rt, 64, 0, 9, &mut ns),
            LOCUS_E_CONFIG,
            "node 9 does not exist",
        );
        expect(
            locus_read_cost(rt, 64, 0, 0, ptr::null_mut()),
            LOCUS_E_NULL,
            "ns",
        );
        expect(
            locus_migration_cost(rt, 1, ptr::null_mut()),
            LOCUS_E_NULL,
            "ns",
        );
        let null = locus_runtime::default();
        expect(
            locus_write_cost(null, 64, 0, 0, &mut ns),
            LOCUS_E_HANDLE,
            "null runtime",
        );
        expect(
            locus_migration_cost(null, 64, &mut ns),
            LOCUS_E_HANDLE,
            "null runtime",
        );
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
        expect(
            locus_read_cost(rt, 64, 0, 0, &mut ns),
            LOCUS_E_HANDLE,
            "freed",
        );
    }
}

#[test]
fn migrate_now_and_by_range() {
    use locus_status::*;
    let rt = runtime_with(c"4x1", 0, &[]);
    let other = runtime_with(c"2x1", 0, &[]);
    // 8 pages, 2 on each node.
    let v = shared(rt, 4096, locus_policy::LOCUS_POLICY_INTERLEAVE, 0);
    let w = shared(other, 512, locus_policy::LOCUS_POLICY_INTERLEAVE, 0);
    // SAFETY: valid out-pointers, or NULL where the test says so.
    unsafe {
        let mut pages = 0;
        expect(locus_migrate(rt, v, 3, &mut pages), LOCUS_OK, "");
        assert_eq!(pages, 6, "2 of the 8 pages were on node 3 already");
        assert_eq!(node_of(rt, v), 3);
        expect(locus_migrate(rt, v, 3, &mut pages), LOCUS_OK, "");
        assert_eq!(pages, 0);
        // Elements 0..600 (8 bytes each) are on pages 0 and 1.
        expect(
            locus_migrate_range(rt, v, 0, 600, 1, &mut pages),
            LOCUS_OK,
            "",
        );
        assert_eq!(pages, 2);
        // The pages out-pointer may be NULL.
        expect(
            locus_migrate_range(rt, v, 4095, 1, 2, ptr::null_mut()),
            LOCUS_OK,
            "",
        );
        let mut counts = locus_migration_counts::default();
        expect(locus_migrated(rt, &mut counts), LOCUS_OK, "");
        assert_eq!((counts.now_pages, counts.now_bytes), (9, 9 * PAGE));
        assert_eq!((counts.next_touch_pages, counts.auto_pages), (0, 0));
        let mut back = vec![0u64; 4096];
        expect(
            locus_fetch(rt, v, back.as_mut_ptr().cast(), 4096),
            LOCUS_OK,
            "",
        );
        assert!(
            back.iter().enumerate().all(|(i, &x)| x == i as u64),
            "contents kept"
        );

        // Bad input.
        expect(
            locus_migrate(rt, v, 4, &mut pages),
            LOCUS_E_CONFIG,
            "node 4 does not exist",
        );
        expect(
            locus_migrate_range(rt, v, 4000, 97, 0, &mut pages),
            LOCUS_E_SIZE,
            "4096 elements",
        );
        expect(
            locus_migrate_range(rt, v, 1, usize::MAX, 0, &mut pages),
            LOCUS_E_SIZE,
            "outside",
        );
        expect(
            locus_migrate(rt, w, 0, &mut pages),
            LOCUS_E_WRONG_RUNTIME,
            "another runtime",
        );
        expect(
            locus_migrate_range(other, v, 0, 1, 0, &mut pages),
            LOCUS_E_WRONG_RUNTIME,
            "another runtime",
        );
        expect(
            locus_migrate(rt, locus_data::default(), 0, &mut pages),
            LOCUS_E_HANDLE,
            "null data",
        );
        expect(
            locus_migrate(locus_runtime::default(), v, 0, &mut pages),
            LOCUS_E_HANDLE,
            "null runtime",
        );
        expect(locus_migrated(rt, ptr::null_mut()), LOCUS_E_NULL, "counts");

        // A versioned datum moves whole, by renaming.
        let mut x = locus_data::default();
        let values = [1.5f64; 1024];
        expect(
            locus_data_from(rt, c"x".as_ptr(), 8, 1024, values.as_ptr().cast(), &mut x),
            LOCUS_OK,
            "",
        );
        expect(locus_migrate(rt, x, 2, &mut pages), LOCUS_OK, "");
        assert_eq!(pages, 2);
        assert_eq!(node_of(rt, x), 2);
        expect(
            locus_migrate_range(rt, x, 0, 10, 1, &mut pages),
            LOCUS_E_CONFIG,
            "versioned",
        );
        expect(
            locus_migrate_on_next_touch(rt, x, &mut pages),
            LOCUS_E_CONFIG,
            "versioned",
        );

        expect(locus_data_free(v), LOCUS_OK, "");
        expect(locus_migrate(rt, v, 0, &mut pages), LOCUS_E_HANDLE, "freed");
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
        expect(locus_runtime_destroy(other), LOCUS_OK, "");
    }
}

/// Reads its view; `views` is checked by the runtime.
unsafe extern "C" fn touch(_: locus_ctx, _: *const locus_view, _: usize, _: *mut c_void) -> i32 {
    0
}

#[test]
fn migrate_on_next_touch_moves_pages_to_their_first_toucher() {
    use locus_status::*;
    let rt = runtime_with(c"4x1", 0, &[]);
    let v = shared(rt, 4096, locus_policy::LOCUS_POLICY_BIND, 0);
    // SAFETY: valid out-pointers; the task outlives the run.
    unsafe {
        let mut armed = 0;
        expect(locus_migrate_on_next_touch(rt, v, &mut armed), LOCUS_OK, "");
        assert_eq!(armed, 8);
        assert_eq!(node_of(rt, v), 0, "nothing moves before a task touches it");
        let access = locus_access {
            data: v,
            mode: locus_mode::LOCUS_READ as u32,
            start: 0,
            end: 0,
        };
        let mut task = locus_task {
            name: c"toucher".as_ptr(),
            body: Some(touch),
            arg: ptr::null_mut(),
            arg_size: 0,
            arg_free: None,
            accesses: &access,
            naccesses: 1,
            cost_ns: 0,
            affinity: locus_affinity::LOCUS_AFFINITY_NODE as u32,
            affinity_strict: true,
            affinity_index: 3,
            affinity_data: locus_data::default(),
            team: locus_team::default(),
        };
        let arg = &mut task as *mut locus_task as *mut c_void;
        expect(
            locus_run(rt, Some(root), arg, ptr::null_mut()),
            LOCUS_OK,
            "",
        );
        assert_eq!(node_of(rt, v), 3);
        let mut counts = locus_migration_counts::default();
        expect(locus_migrated(rt, &mut counts), LOCUS_OK, "");
        assert_eq!(
            (counts.next_touch_pages, counts.next_touch_bytes),
            (8, 8 * PAGE)
        );
        assert_eq!(counts.now_pages, 0);
        expect(
            locus_migrate_on_next_touch(rt, v, ptr::null_mut()),
            LOCUS_OK,
            "",
        );
        expect(
            locus_migrate_on_next_touch(rt, locus_data::default(), &mut armed),
            LOCUS_E_HANDLE,
            "null data",
        );
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
    }
}

#[test]
fn free_memory_per_node() {
    use locus_status::*;
    const LIMIT: u64 = 1 << 20;
    let rt = runtime_with(c"4x1", 0, &[(c"node_limit", c"1048576")]);
    // SAFETY: valid out-pointers, or NULL where the test says so.
    unsafe {
        let mut free = 0;
        expect(locus_free_memory(rt, 3, &mut free), LOCUS_OK, "");
        assert_eq!(free, LIMIT);
        let v = shared(rt, 4096, locus_policy::LOCUS_POLICY_INTERLEAVE, 0);
        expect(locus_free_memory(rt, 3, &mut free), LOCUS_OK, "");
        assert_eq!(free, LIMIT - 2 * PAGE);
        expect(locus_migrate(rt, v, 3, ptr::null_mut()), LOCUS_OK, "");
        expect(locus_free_memory(rt, 3, &mut free), LOCUS_OK, "");
        assert_eq!(free, LIMIT - 8 * PAGE);
        expect(locus_free_memory(rt, 0, &mut free), LOCUS_OK, "");
        assert_eq!(free, LIMIT);
        expect(locus_data_free(v), LOCUS_OK, "");
        expect(locus_free_memory(rt, 3, &mut free), LOCUS_OK, "");
        assert_eq!(free, LIMIT);
        expect(
            locus_free_memory(rt, 4, &mut free),
            LOCUS_E_CONFIG,
            "node 4 does not exist",
        );
        expect(
            locus_free_memory(rt, 0, ptr::null_mut()),
            LOCUS_E_NULL,
            "bytes",
        );
        expect(
            locus_free_memory(locus_runtime::default(), 0, &mut free),
            LOCUS_E_HANDLE,
            "null runtime",
        );
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
    }
    // Without a limit: a share of the host's free memory, at most the node's share of
    // the host's memory.
    let rt = runtime_with(c"2x1", 0, &[]);
    // SAFETY: a valid out-pointer.
    unsafe {
        let mut free = 0;
        expect(locus_free_memory(rt, 1, &mut free), LOCUS_OK, "");
        assert!(free > 0);
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
    }
}

/// What a body's calls of the memory API returned.
struct InBody {
    v: locus_data,
    versioned: locus_data,
    foreign: locus_data,
    node: usize,
    statuses: Vec<(locus_status, String)>,
}

/// A root: a migration task between a writer and a reader, then the calls a body may
/// not make or gets wrong.
unsafe extern "C" fn migrating_root(
    ctx: locus_ctx,
    _: *const locus_view,
    _: usize,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: `arg` is the test's `InBody`, used by this root only while the run lasts.
    let st = unsafe { &mut *(arg as *mut InBody) };
    let mut note = |s: locus_status| st.statuses.push((s, last_error()));
    note(locus_scope_migrate(ctx, st.v, st.node));
    note(locus_scope_migrate(ctx, st.versioned, 0));
    note(locus_scope_migrate(ctx, st.v, 7));
    note(locus_scope_migrate(ctx, st.foreign, 0));
    note(locus_scope_migrate(locus_ctx::default(), st.v, 0));
    // SAFETY: valid out-pointers.
    unsafe {
        let mut pages = 0;
        note(locus_migrate(
            locus_runtime { bits: 0 },
            st.v,
            0,
            &mut pages,
        ));
        let mut free = 0;
        note(locus_free_memory(locus_runtime::default(), 0, &mut free));
        let spec = locus_partition_spec {
            kind: 0,
            block_len: 4,
            ranges: ptr::null(),
            range_count: 0,
            rows: 0,
            cols: 0,
            tile_rows: 0,
            tile_cols: 0,
        };
        let mut count = 0;
        note(locus_partition(
            locus_runtime::default(),
            st.v,
            &spec,
            ptr::null_mut(),
            0,
            &mut count,
        ));
    }
    0
}

#[test]
fn migration_tasks_from_a_body() {
    use locus_status::*;
    let rt = runtime_with(c"2x1", 0, &[]);
    let other = runtime_with(c"2x1", 0, &[]);
    let mut st = InBody {
        v: shared(rt, 1024, locus_policy::LOCUS_POLICY_BIND, 0),
        versioned: locus_data::default(),
        foreign: shared(other, 8, locus_policy::LOCUS_POLICY_BIND, 0),
        node: 1,
        statuses: Vec::new(),
    };
    // SAFETY: valid pointers; `st` outlives the run.
    unsafe {
        expect(
            locus_data_create(rt, c"x".as_ptr(), 8, 8, &mut st.versioned),
            LOCUS_OK,
            "",
        );
        let mut report = locus_report::default();
        let arg = &mut st as *mut InBody as *mut c_void;
        expect(
            locus_run(rt, Some(migrating_root), arg, &mut report),
            LOCUS_OK,
            "",
        );
        let want = [
            (LOCUS_OK, ""),
            (LOCUS_E_DECLARATION, "versioned"),
            (LOCUS_E_DECLARATION, "node 7 does not exist"),
            (LOCUS_E_WRONG_RUNTIME, "another runtime"),
            (LOCUS_E_CONTEXT, "null task context"),
            (LOCUS_E_STATE, "inside a task body"),
            (LOCUS_E_HANDLE, "null runtime"),
            (LOCUS_E_STATE, "partition: not allowed inside a task body"),
        ];
        assert_eq!(st.statuses.len(), want.len());
        for ((got, message), (status, needle)) in st.statuses.iter().zip(want) {
            assert_eq!(*got, status, "{message}");
            assert!(
                message.contains(needle),
                "`{message}` does not name `{needle}`"
            );
        }
        assert_eq!(node_of(rt, st.v), 1);
        let mut json = ptr::null_mut();
        expect(locus_report_json(report, &mut json), LOCUS_OK, "");
        let text = CStr::from_ptr(json).to_string_lossy().into_owned();
        locus_string_free(json);
        assert!(text.contains("\"now_pages\":2"), "{text}");
        expect(locus_report_free(report), LOCUS_OK, "");
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
        expect(locus_runtime_destroy(other), LOCUS_OK, "");
    }
}

static STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static RELEASE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A root that holds its run until the test releases it.
unsafe extern "C" fn holding_root(
    _: locus_ctx,
    _: *const locus_view,
    _: usize,
    _: *mut c_void,
) -> i32 {
    use std::sync::atomic::Ordering::SeqCst;
    STARTED.store(true, SeqCst);
    while !RELEASE.load(SeqCst) {
        std::thread::yield_now();
    }
    0
}

#[test]
fn no_migration_while_another_thread_runs_a_program() {
    use locus_status::*;
    use std::sync::atomic::Ordering::SeqCst;
    let rt = runtime_with(c"2x1", 0, &[]);
    let v = shared(rt, 1024, locus_policy::LOCUS_POLICY_BIND, 0);
    let run = std::thread::spawn(move || {
        // SAFETY: a valid root; the report is not asked for.
        unsafe { locus_run(rt, Some(holding_root), ptr::null_mut(), ptr::null_mut()) }
    });
    while !STARTED.load(SeqCst) {
        std::thread::yield_now();
    }
    // SAFETY: valid out-pointers.
    unsafe {
        let mut pages = 0;
        let got = locus_migrate(rt, v, 1, &mut pages);
        let busy = last_error();
        let got_next = locus_migrate_on_next_touch(rt, v, &mut pages);
        let mut free = 0;
        let query = locus_free_memory(rt, 0, &mut free);
        // A team's move that would migrate its data waits for the run's end; one that
        // only re-places its later tasks does not.
        let mut team = locus_team::default();
        expect(
            locus_team_create(rt, [0].as_ptr(), 1, &mut team),
            LOCUS_OK,
            "",
        );
        expect(locus_attach_team(rt, v, team), LOCUS_OK, "");
        let got_team = locus_team_move(rt, team, [1].as_ptr(), 1, true, &mut pages);
        let team_busy = last_error();
        let got_alone = locus_team_move(rt, team, [1].as_ptr(), 1, false, &mut pages);
        // A fetch or a run waiting for the run would never return here, where the root
        // waits for this thread: both are refused.
        let mut buf = vec![0u64; 1024];
        let fetched = locus_fetch(rt, v, buf.as_mut_ptr().cast(), 1024);
        let fetch_busy = last_error();
        let ran = locus_run(rt, Some(holding_root), ptr::null_mut(), ptr::null_mut());
        let run_busy = last_error();
        RELEASE.store(true, SeqCst);
        assert_eq!(run.join().unwrap(), LOCUS_OK);
        assert_eq!(got, LOCUS_E_STATE, "{busy}");
        assert!(busy.contains("run is in progress"), "{busy}");
        assert_eq!(got_next, LOCUS_E_STATE);
        assert_eq!(query, LOCUS_OK, "queries work during a run");
        assert_eq!(got_team, LOCUS_E_STATE, "{team_busy}");
        assert!(team_busy.contains("run is in progress"), "{team_busy}");
        assert_eq!(got_alone, LOCUS_OK);
        for (status, message) in [(fetched, fetch_busy), (ran, run_busy)] {
            assert_eq!(status, LOCUS_E_STATE, "{message}");
            assert!(
                message.contains("run of this runtime is in progress"),
                "{message}"
            );
        }
        expect(
            locus_fetch(rt, v, buf.as_mut_ptr().cast(), 1024),
            LOCUS_OK,
            "",
        );
        assert_eq!(buf[1023], 1023);
        expect(locus_team_free(team), LOCUS_OK, "");
        expect(locus_migrate(rt, v, 1, &mut pages), LOCUS_OK, "");
        assert_eq!(pages, 2);
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
    }
}

#[test]
fn the_migration_setting_reaches_the_runtime() {
    use locus_status::*;
    // SAFETY: valid pointers.
    unsafe {
        let mut s = locus_settings::default();
        expect(locus_settings_create(&mut s), LOCUS_OK, "");
        expect(
            locus_settings_set(s, c"migration".as_ptr(), c"later".as_ptr()),
            LOCUS_E_ARGUMENT,
            "none, now, next-touch or auto",
        );
        expect(
            locus_settings_set(s, c"migration".as_ptr(), c"now".as_ptr()),
            LOCUS_OK,
            "",
        );
        let mut rt = locus_runtime::default();
        expect(
            locus_runtime_create(c"dsa-opt".as_ptr(), c"2x1".as_ptr(), 2, s, &mut rt),
            LOCUS_OK,
            "",
        );
        expect(locus_settings_free(s), LOCUS_OK, "");
        // A task strict on node 1 reads a datum of node 0: `now` moves it first.
        let v = shared(rt, 1024, locus_policy::LOCUS_POLICY_BIND, 0);
        let access = locus_access {
            data: v,
            mode: locus_mode::LOCUS_READ as u32,
            start: 0,
            end: 0,
        };
        let mut task = locus_task {
            name: c"reader".as_ptr(),
            body: Some(touch),
            arg: ptr::null_mut(),
            arg_size: 0,
            arg_free: None,
            accesses: &access,
            naccesses: 1,
            cost_ns: 0,
            affinity: locus_affinity::LOCUS_AFFINITY_NODE as u32,
            affinity_strict: true,
            affinity_index: 1,
            affinity_data: locus_data::default(),
            team: locus_team::default(),
        };
        let mut report = locus_report::default();
        let arg = &mut task as *mut locus_task as *mut c_void;
        expect(locus_run(rt, Some(root), arg, &mut report), LOCUS_OK, "");
        let mut json = ptr::null_mut();
        expect(locus_report_json(report, &mut json), LOCUS_OK, "");
        let text = CStr::from_ptr(json).to_string_lossy().into_owned();
        locus_string_free(json);
        assert!(text.contains("\"migration\":\"now\""), "{text}");
        assert_eq!(node_of(rt, v), 1);
        expect(locus_report_free(report), LOCUS_OK, "");
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
    }
}

// ---- teams and attached data ----

/// A task with no access, body `body` and argument `arg` (borrowed).
fn task_of(name: &'static CStr, body: locus_task_fn, arg: *mut c_void) -> locus_task {
    locus_task {
        name: name.as_ptr(),
        body: Some(body),
        arg,
        arg_size: 0,
        arg_free: None,
        accesses: ptr::null(),
        naccesses: 0,
        cost_ns: 0,
        affinity: 0,
        affinity_strict: false,
        affinity_index: 0,
        affinity_data: locus_data::default(),
        team: locus_team::default(),
    }
}

/// Writes the node it runs on to its one written view (a `u64`).
unsafe extern "C" fn write_node(
    ctx: locus_ctx,
    v: *const locus_view,
    n: usize,
    _: *mut c_void,
) -> i32 {
    let mut node = usize::MAX;
    // SAFETY: a valid out-pointer; one written view of one u64, as declared.
    unsafe {
        if locus_ctx_where(ctx, ptr::null_mut(), &mut node) != locus_status::LOCUS_OK || n != 1 {
            return 1;
        }
        *((*v).ptr as *mut u64) = node as u64;
    }
    0
}

/// A team's leader: hands its slots to its children (weak writes) and spawns one
/// `write_node` child per slot, without a team of its own.
struct Leader {
    slots: Vec<locus_data>,
    accesses: Vec<locus_access>,
    /// What each child's spawn returned.
    statuses: Vec<locus_status>,
}

impl Leader {
    fn new(slots: Vec<locus_data>) -> Leader {
        let accesses = slots
            .iter()
            .map(|&data| locus_access {
                data,
                mode: locus_mode::LOCUS_WEAK_WRITE as u32,
                start: 0,
                end: 0,
            })
            .collect();
        Leader {
            slots,
            accesses,
            statuses: Vec::new(),
        }
    }
}

unsafe extern "C" fn lead(ctx: locus_ctx, _: *const locus_view, _: usize, arg: *mut c_void) -> i32 {
    // SAFETY: `arg` is the test's `Leader`, used by this body only while the run lasts.
    let leader = unsafe { &mut *(arg as *mut Leader) };
    for i in 0..leader.slots.len() {
        let access = locus_access {
            data: leader.slots[i],
            mode: locus_mode::LOCUS_WRITE as u32,
            start: 0,
            end: 0,
        };
        let mut child = task_of(c"member", write_node, ptr::null_mut());
        child.accesses = &access;
        child.naccesses = 1;
        // SAFETY: a valid task, whose access outlives the call.
        leader.statuses.push(unsafe { locus_spawn(ctx, &child) });
    }
    0
}

/// The root: spawns every task of the `Vec<locus_task>` at `arg`, and fails if one
/// spawn does.
unsafe extern "C" fn spawn_all(
    ctx: locus_ctx,
    _: *const locus_view,
    _: usize,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: `arg` is the test's task list, alive while the run lasts.
    let tasks = unsafe { &*(arg as *const Vec<locus_task>) };
    for t in tasks {
        // SAFETY: valid tasks, as the test built them.
        if unsafe { locus_spawn(ctx, t) } != locus_status::LOCUS_OK {
            return 1;
        }
    }
    0
}

fn run_tasks(rt: locus_runtime, tasks: &mut Vec<locus_task>) -> locus_status {
    let arg = tasks as *mut Vec<locus_task> as *mut c_void;
    // SAFETY: a valid root and its argument; no report asked for.
    unsafe { locus_run(rt, Some(spawn_all), arg, ptr::null_mut()) }
}

/// `n` one-element u64 data.
fn slots(rt: locus_runtime, n: usize) -> Vec<locus_data> {
    (0..n)
        .map(|_| {
            let mut d = locus_data::default();
            // SAFETY: a valid name and out-pointer.
            let status = unsafe { locus_data_create(rt, c"slot".as_ptr(), 8, 1, &mut d) };
            expect(status, locus_status::LOCUS_OK, "");
            d
        })
        .collect()
}

fn fetch_u64(rt: locus_runtime, d: locus_data) -> u64 {
    let mut x = u64::MAX;
    // SAFETY: a buffer of one u64.
    let status = unsafe { locus_fetch(rt, d, (&mut x as *mut u64).cast(), 1) };
    expect(status, locus_status::LOCUS_OK, "");
    x
}

fn team_nodes(team: locus_team) -> Vec<usize> {
    let mut nodes = [0usize; 8];
    let mut n = 0;
    // SAFETY: `nodes` holds 8 values.
    let status = unsafe { locus_team_nodes(team, nodes.as_mut_ptr(), 8, &mut n) };
    expect(status, locus_status::LOCUS_OK, "");
    nodes[..n].to_vec()
}

fn attached(team: locus_team) -> usize {
    let mut n = usize::MAX;
    // SAFETY: a valid out-pointer.
    expect(
        unsafe { locus_team_attached(team, &mut n) },
        locus_status::LOCUS_OK,
        "",
    );
    n
}

/// On "4x1", one strict team per node (`locus_team_spread`): every child of a team's
/// leader runs on the team's node; a task naming a two-node team runs on its nodes in
/// turn.
#[test]
fn a_strict_team_and_its_children_run_on_its_nodes() {
    use locus_status::*;
    let rt = runtime_with(c"4x1", 0, &[]);
    // SAFETY: valid pointers, alive while the calls and runs last.
    unsafe {
        let mut n = usize::MAX;
        expect(
            locus_team_spread(rt, ptr::null_mut(), 0, &mut n),
            LOCUS_E_SIZE,
            "4 teams, room for 0",
        );
        assert_eq!(n, 4, "the count is written even when there is no room");
        let mut teams = [locus_team::default(); 4];
        expect(
            locus_team_spread(rt, teams.as_mut_ptr(), 4, &mut n),
            LOCUS_OK,
            "",
        );
        let mut leaders: Vec<Leader> = (0..4).map(|_| Leader::new(slots(rt, 6))).collect();
        let mut tasks = Vec::new();
        for (k, (team, leader)) in teams.iter().zip(&mut leaders).enumerate() {
            assert_eq!(team_nodes(*team), vec![k]);
            expect(locus_team_set_strict(*team, true), LOCUS_OK, "");
            let mut t = task_of(c"leader", lead, (leader as *mut Leader).cast());
            t.accesses = leader.accesses.as_ptr();
            t.naccesses = leader.accesses.len();
            t.team = *team;
            tasks.push(t);
        }
        expect(run_tasks(rt, &mut tasks), LOCUS_OK, "");
        for (k, leader) in leaders.iter().enumerate() {
            assert!(leader.statuses.iter().all(|&s| s == LOCUS_OK));
            let nodes: Vec<u64> = leader.slots.iter().map(|&d| fetch_u64(rt, d)).collect();
            assert_eq!(nodes, vec![k as u64; 6], "team {k}");
        }

        // A two-node team deals its members to its nodes in turn.
        let mut pair = locus_team::default();
        expect(
            locus_team_create(rt, [3, 1].as_ptr(), 2, &mut pair),
            LOCUS_OK,
            "",
        );
        expect(locus_team_set_strict(pair, true), LOCUS_OK, "");
        let out = slots(rt, 4);
        let accesses: Vec<locus_access> = out
            .iter()
            .map(|&data| locus_access {
                data,
                mode: locus_mode::LOCUS_WRITE as u32,
                start: 0,
                end: 0,
            })
            .collect();
        let mut tasks: Vec<locus_task> = accesses
            .iter()
            .map(|a| {
                let mut t = task_of(c"member", write_node, ptr::null_mut());
                t.accesses = a;
                t.naccesses = 1;
                t.team = pair;
                t
            })
            .collect();
        expect(run_tasks(rt, &mut tasks), LOCUS_OK, "");
        let got: Vec<u64> = out.iter().map(|&d| fetch_u64(rt, d)).collect();
        assert_eq!(got, vec![3, 1, 3, 1]);

        for team in teams {
            expect(locus_team_free(team), LOCUS_OK, "");
        }
        expect(locus_team_free(pair), LOCUS_OK, "");
        expect(locus_team_free(pair), LOCUS_E_HANDLE, "freed");
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
    }
}

/// Moving a team re-places its later tasks and, with `take_data`, migrates its
/// attached data, the k-th to the (k mod n)-th new node.
#[test]
fn moving_a_team_takes_its_data_along() {
    use locus_status::*;
    let rt = runtime_with(c"4x1", 0, &[]);
    // 8 pages each: all on node 0, and 2 on each node.
    let bound = shared(rt, 4096, locus_policy::LOCUS_POLICY_BIND, 0);
    let spread = shared(rt, 4096, locus_policy::LOCUS_POLICY_INTERLEAVE, 0);
    let other = shared(rt, 4096, locus_policy::LOCUS_POLICY_BIND, 0);
    // SAFETY: valid pointers, alive while the calls and runs last.
    unsafe {
        let mut team = locus_team::default();
        expect(
            locus_team_create(rt, [0].as_ptr(), 1, &mut team),
            LOCUS_OK,
            "",
        );
        expect(locus_team_set_strict(team, true), LOCUS_OK, "");
        expect(locus_attach_team(rt, bound, team), LOCUS_OK, "");
        expect(locus_attach_team(rt, spread, team), LOCUS_OK, "");
        assert_eq!(attached(team), 2);
        let mut pages = u64::MAX;
        expect(
            locus_team_move(rt, team, [2].as_ptr(), 1, false, &mut pages),
            LOCUS_OK,
            "",
        );
        assert_eq!(pages, 0, "without take_data nothing moves");
        assert_eq!((node_of(rt, bound), team_nodes(team)), (0, vec![2]));
        expect(
            locus_team_move(rt, team, [3, 1].as_ptr(), 2, true, &mut pages),
            LOCUS_OK,
            "",
        );
        // `bound`: 8 pages to node 3; `spread`: the 6 not on node 1 yet.
        assert_eq!(pages, 8 + 6);
        assert_eq!((node_of(rt, bound), node_of(rt, spread)), (3, 1));
        assert_eq!(node_of(rt, other), 0, "only attached data move");
        assert_eq!(team_nodes(team), vec![3, 1]);
        let mut counts = locus_migration_counts::default();
        expect(locus_migrated(rt, &mut counts), LOCUS_OK, "");
        assert_eq!(counts.now_pages, 14);
        let mut back = vec![0u64; 4096];
        expect(
            locus_fetch(rt, spread, back.as_mut_ptr().cast(), 4096),
            LOCUS_OK,
            "",
        );
        assert!(back.iter().enumerate().all(|(i, &x)| x == i as u64));

        // Its later tasks go to its new nodes, from the first.
        let out = slots(rt, 1);
        let access = locus_access {
            data: out[0],
            mode: locus_mode::LOCUS_WRITE as u32,
            start: 0,
            end: 0,
        };
        let mut t = task_of(c"after", write_node, ptr::null_mut());
        t.accesses = &access;
        t.naccesses = 1;
        t.team = team;
        expect(run_tasks(rt, &mut vec![t]), LOCUS_OK, "");
        assert_eq!(fetch_u64(rt, out[0]), 3);

        // Detached, or freed, a datum no longer moves with its team.
        expect(locus_detach(rt, bound), LOCUS_OK, "");
        assert_eq!(attached(team), 1);
        expect(
            locus_team_move(rt, team, [0].as_ptr(), 1, true, ptr::null_mut()),
            LOCUS_OK,
            "",
        );
        assert_eq!((node_of(rt, bound), node_of(rt, spread)), (3, 0));
        expect(locus_data_free(spread), LOCUS_OK, "");
        assert_eq!(attached(team), 0);
        expect(
            locus_team_move(rt, team, [1].as_ptr(), 1, true, &mut pages),
            LOCUS_OK,
            "",
        );
        assert_eq!(pages, 0);
        expect(locus_team_free(team), LOCUS_OK, "");
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
    }
}

/// An affinity to an attached datum is an affinity to its owner, wherever its pages
/// lie; detached, it goes by its pages again.
#[test]
fn an_attached_datum_draws_its_tasks_to_its_owner() {
    use locus_status::*;
    let rt = runtime_with(c"4x1", 0, &[]);
    let v = shared(rt, 4096, locus_policy::LOCUS_POLICY_BIND, 0);
    // SAFETY: valid pointers, alive while the calls and runs last.
    unsafe {
        let out = slots(rt, 1);
        let accesses = [
            locus_access {
                data: out[0],
                mode: locus_mode::LOCUS_WRITE as u32,
                start: 0,
                end: 0,
            },
            locus_access {
                data: v,
                mode: locus_mode::LOCUS_READ as u32,
                start: 0,
                end: 0,
            },
        ];
        let reader_on = |rt| {
            let mut t = task_of(c"reader", write_node_of_two, ptr::null_mut());
            t.accesses = accesses.as_ptr();
            t.naccesses = 2;
            t.affinity = locus_affinity::LOCUS_AFFINITY_DATA as u32;
            t.affinity_data = v;
            t.affinity_strict = true;
            expect(run_tasks(rt, &mut vec![t]), LOCUS_OK, "");
            fetch_u64(rt, out[0])
        };
        assert_eq!(reader_on(rt), 0, "its pages are on node 0");
        expect(locus_attach_node(rt, v, 2), LOCUS_OK, "");
        assert_eq!(reader_on(rt), 2);
        expect(locus_attach_worker(rt, v, 3), LOCUS_OK, "");
        assert_eq!(reader_on(rt), 3, "worker 3 is node 3's");
        let mut team = locus_team::default();
        expect(
            locus_team_create(rt, [1].as_ptr(), 1, &mut team),
            LOCUS_OK,
            "",
        );
        expect(locus_attach_team(rt, v, team), LOCUS_OK, "");
        assert_eq!(reader_on(rt), 1);
        expect(locus_detach(rt, v), LOCUS_OK, "");
        assert_eq!(reader_on(rt), 0);
        assert_eq!(node_of(rt, v), 0, "its pages never moved");
        expect(locus_team_free(team), LOCUS_OK, "");
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
    }
}

/// `write_node` for a task whose first view is the written one.
unsafe extern "C" fn write_node_of_two(
    ctx: locus_ctx,
    v: *const locus_view,
    _: usize,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: forwarded: the first view is the written u64.
    unsafe { write_node(ctx, v, 1, arg) }
}

/// What a body's calls of the team API returned.
struct TeamCalls {
    rt: locus_runtime,
    team: locus_team,
    v: locus_data,
    statuses: Vec<(locus_status, String)>,
}

unsafe extern "C" fn team_calls_in_a_body(
    _: locus_ctx,
    _: *const locus_view,
    _: usize,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: `arg` is the test's `TeamCalls`, used by this body only while the run
    // lasts.
    let st = unsafe { &mut *(arg as *mut TeamCalls) };
    let mut note = |s: locus_status| st.statuses.push((s, last_error()));
    // SAFETY: valid pointers.
    unsafe {
        let mut made = locus_team::default();
        note(locus_team_create(st.rt, [1].as_ptr(), 1, &mut made));
        note(locus_team_free(made));
        note(locus_attach_node(st.rt, st.v, 1));
        note(locus_detach(st.rt, st.v));
        note(locus_team_move(
            st.rt,
            st.team,
            [1].as_ptr(),
            1,
            false,
            ptr::null_mut(),
        ));
    }
    0
}

#[test]
fn bad_teams_and_attachments_are_errors() {
    use locus_status::*;
    // Two workers over four nodes: nodes 2 and 3 have none.
    let rt = runtime_with(c"4x1", 2, &[]);
    let other = runtime_with(c"2x1", 0, &[]);
    let v = shared(rt, 512, locus_policy::LOCUS_POLICY_BIND, 0);
    let foreign_data = shared(other, 512, locus_policy::LOCUS_POLICY_BIND, 0);
    let null_rt = locus_runtime::default();
    let null_team = locus_team::default();
    // SAFETY: valid pointers, or NULL where the test says so.
    unsafe {
        let mut team = locus_team::default();
        let mut foreign = locus_team::default();
        expect(
            locus_team_create(rt, [1, 0].as_ptr(), 2, &mut team),
            LOCUS_OK,
            "",
        );
        expect(
            locus_team_create(other, [0].as_ptr(), 1, &mut foreign),
            LOCUS_OK,
            "",
        );
        let mut t = locus_team::default();
        expect(
            locus_team_create(rt, ptr::null(), 0, &mut t),
            LOCUS_E_CONFIG,
            "at least one node",
        );
        expect(
            locus_team_create(rt, ptr::null(), 2, &mut t),
            LOCUS_E_NULL,
            "nodes",
        );
        expect(
            locus_team_create(rt, [0].as_ptr(), 1, ptr::null_mut()),
            LOCUS_E_NULL,
            "out",
        );
        expect(
            locus_team_create(rt, [0, 4].as_ptr(), 2, &mut t),
            LOCUS_E_CONFIG,
            "node 4 does not exist",
        );
        expect(
            locus_team_create(rt, [2].as_ptr(), 1, &mut t),
            LOCUS_E_CONFIG,
            "node 2 has no workers",
        );
        expect(
            locus_team_create(null_rt, [0].as_ptr(), 1, &mut t),
            LOCUS_E_HANDLE,
            "null runtime",
        );
        assert_eq!(t, locus_team::default(), "nothing made");
        let mut n = 0;
        expect(
            locus_team_spread(rt, ptr::null_mut(), 0, ptr::null_mut()),
            LOCUS_E_NULL,
            "count",
        );
        expect(
            locus_team_spread(rt, ptr::null_mut(), 2, &mut n),
            LOCUS_E_NULL,
            "teams",
        );
        let mut one = [locus_team::default(); 1];
        expect(
            locus_team_spread(rt, one.as_mut_ptr(), 1, &mut n),
            LOCUS_E_SIZE,
            "2 teams, room for 1",
        );
        assert_eq!((n, one[0]), (2, locus_team::default()));
        let mut nodes = [0usize; 1];
        expect(
            locus_team_nodes(team, nodes.as_mut_ptr(), 1, &mut n),
            LOCUS_E_SIZE,
            "2 nodes, room for 1",
        );
        assert_eq!(n, 2);
        expect(
            locus_team_nodes(team, ptr::null_mut(), 1, &mut n),
            LOCUS_E_NULL,
            "nodes",
        );
        expect(
            locus_team_nodes(null_team, ptr::null_mut(), 0, &mut n),
            LOCUS_E_HANDLE,
            "null team",
        );
        expect(
            locus_team_attached(team, ptr::null_mut()),
            LOCUS_E_NULL,
            "count",
        );
        expect(
            locus_team_set_strict(null_team, true),
            LOCUS_E_HANDLE,
            "null team",
        );

        // Moves.
        expect(
            locus_team_move(rt, foreign, [0].as_ptr(), 1, false, ptr::null_mut()),
            LOCUS_E_WRONG_RUNTIME,
            "another runtime",
        );
        expect(
            locus_team_move(rt, team, [3].as_ptr(), 1, true, ptr::null_mut()),
            LOCUS_E_CONFIG,
            "node 3 has no workers",
        );
        expect(
            locus_team_move(rt, team, ptr::null(), 0, true, ptr::null_mut()),
            LOCUS_E_CONFIG,
            "at least one node",
        );
        expect(
            locus_team_move(rt, team, ptr::null(), 1, true, ptr::null_mut()),
            LOCUS_E_NULL,
            "nodes",
        );
        expect(
            locus_team_move(rt, null_team, [0].as_ptr(), 1, true, ptr::null_mut()),
            LOCUS_E_HANDLE,
            "null team",
        );
        assert_eq!(team_nodes(team), vec![1, 0], "failed moves change nothing");

        // Attachments.
        expect(
            locus_attach_worker(rt, v, 2),
            LOCUS_E_CONFIG,
            "worker 2 does not exist",
        );
        expect(
            locus_attach_node(rt, v, 4),
            LOCUS_E_CONFIG,
            "node 4 does not exist",
        );
        expect(
            locus_attach_team(rt, v, foreign),
            LOCUS_E_WRONG_RUNTIME,
            "another runtime",
        );
        expect(
            locus_attach_team(rt, v, null_team),
            LOCUS_E_HANDLE,
            "null team",
        );
        expect(
            locus_attach_node(rt, foreign_data, 0),
            LOCUS_E_WRONG_RUNTIME,
            "another runtime",
        );
        expect(
            locus_attach_node(rt, locus_data::default(), 0),
            LOCUS_E_HANDLE,
            "null data",
        );
        expect(locus_detach(null_rt, v), LOCUS_E_HANDLE, "null runtime");
        expect(
            locus_detach(other, v),
            LOCUS_E_WRONG_RUNTIME,
            "another runtime",
        );
        assert_eq!(attached(team), 0);

        // Spawns naming a bad team are refused, and fail the run.
        let out = slots(rt, 1);
        let access = locus_access {
            data: out[0],
            mode: locus_mode::LOCUS_WRITE as u32,
            start: 0,
            end: 0,
        };
        let mut task = task_of(c"member", write_node, ptr::null_mut());
        task.accesses = &access;
        task.naccesses = 1;
        task.team = foreign;
        let mut report = locus_report::default();
        let arg = &mut task as *mut locus_task as *mut c_void;
        let mut spawned = Spawned {
            task: arg as *const locus_task,
            status: LOCUS_OK,
            message: String::new(),
        };
        let spawn_arg = &mut spawned as *mut Spawned as *mut c_void;
        expect(
            locus_run(rt, Some(note_spawn), spawn_arg, &mut report),
            LOCUS_E_RUN_FAILED,
            "locus_spawn of task `member` was refused (LOCUS_E_WRONG_RUNTIME)",
        );
        expect(locus_report_free(report), LOCUS_OK, "");
        assert_eq!(spawned.status, LOCUS_E_WRONG_RUNTIME, "{}", spawned.message);
        assert!(spawned.message.contains("team"), "{}", spawned.message);
        let mut dead = locus_team::default();
        expect(
            locus_team_create(rt, [0].as_ptr(), 1, &mut dead),
            LOCUS_OK,
            "",
        );
        expect(locus_team_free(dead), LOCUS_OK, "");
        // Through the pointer the root reads.
        (*arg.cast::<locus_task>()).team = dead;
        expect(
            locus_run(rt, Some(note_spawn), spawn_arg, ptr::null_mut()),
            LOCUS_E_RUN_FAILED,
            "locus_spawn of task `member` was refused (LOCUS_E_HANDLE)",
        );
        assert_eq!(spawned.status, LOCUS_E_HANDLE, "{}", spawned.message);
        assert!(spawned.message.contains("freed"), "{}", spawned.message);

        // From a body: all but the move.
        let mut st = TeamCalls {
            rt,
            team,
            v,
            statuses: Vec::new(),
        };
        let mut tasks = vec![task_of(
            c"caller",
            team_calls_in_a_body,
            (&mut st as *mut TeamCalls).cast(),
        )];
        expect(run_tasks(rt, &mut tasks), LOCUS_OK, "");
        let want = [LOCUS_OK, LOCUS_OK, LOCUS_OK, LOCUS_OK, LOCUS_E_STATE];
        let got: Vec<locus_status> = st.statuses.iter().map(|s| s.0).collect();
        assert_eq!(got, want, "{:?}", st.statuses);
        assert!(st.statuses[4].1.contains("locus_team_move"));

        // Destroying a runtime frees its teams.
        expect(locus_runtime_destroy(other), LOCUS_OK, "");
        expect(locus_team_free(foreign), LOCUS_E_HANDLE, "freed");
        expect(locus_runtime_destroy(rt), LOCUS_OK, "");
        expect(locus_team_set_strict(team, false), LOCUS_E_HANDLE, "freed");
    }
}

/// What the root's spawn of a task returned, with its message.
struct Spawned {
    task: *const locus_task,
    status: locus_status,
    message: String,
}

unsafe extern "C" fn note_spawn(
    ctx: locus_ctx,
    _: *const locus_view,
    _: usize,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: `arg` is the test's `Spawned`, used by this root only while the run lasts.
    let st = unsafe { &mut *(arg as *mut Spawned) };
    // SAFETY: a valid task.
    st.status = unsafe { locus_spawn(ctx, st.task) };
    st.message = last_error();
    0
}

// ---- the views of a task of one access, and of several ----

/// Per task (by its index), what its views showed: mode, count, element size, and the
/// elements (`u32`) of a view that reads (`None` for a write's, whose contents are
/// unspecified, and for a weak access's, which has no memory).
type Seen = std::sync::Mutex<Vec<(u64, Vec<SeenView>)>>;

/// What a `see` body saw of one view.
type SeenView = (u32, usize, usize, Option<Vec<u32>>);

/// The argument of a `see` task (copied into the task): its index and the record.
#[repr(C)]
struct SeeArg {
    index: u64,
    seen: *const Seen,
}

/// Records its views in the `Seen` of its argument; then writes `1, 2, ...` into a
/// written view and adds 10 to each element of a read-written one.
unsafe extern "C" fn see(_: locus_ctx, v: *const locus_view, n: usize, arg: *mut c_void) -> i32 {
    // SAFETY: the copied `SeeArg`, whose record outlives the run; `n` views as declared,
    // each of `count` u32 at `ptr` (NULL for a weak access).
    unsafe {
        let arg = &*(arg as *const SeeArg);
        let views = if n == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(v, n)
        };
        let mut saw = Vec::new();
        for view in views {
            let elems = (!view.ptr.is_null())
                .then(|| std::slice::from_raw_parts_mut(view.ptr as *mut u32, view.count));
            let reads = view.mode == locus_mode::LOCUS_READ as u32
                || view.mode == locus_mode::LOCUS_READ_WRITE as u32;
            saw.push((
                view.mode,
                view.count,
                view.elem_size,
                elems.as_ref().filter(|_| reads).map(|e| e.to_vec()),
            ));
            if let Some(e) = elems {
                match view.mode {
                    2 => e.iter_mut().zip(1..).for_each(|(x, k)| *x = k),
                    3 => e.iter_mut().for_each(|x| *x += 10),
                    _ => {}
                }
            }
        }
        (*arg.seen).lock().unwrap().push((arg.index, saw));
    }
    0
}

#[test]
fn tasks_of_one_access_and_of_several_see_the_views_they_declared() {
    use locus_mode::*;
    let rt = runtime_with(c"2x1", 2, &[]);
    let (mut x, mut y) = (locus_data::default(), locus_data::default());
    // SAFETY: valid names and out-pointers.
    unsafe {
        expect(
            locus_data_create(rt, c"x".as_ptr(), 4, 4, &mut x),
            locus_status::LOCUS_OK,
            "",
        );
        expect(
            locus_data_create(rt, c"y".as_ptr(), 4, 4, &mut y),
            locus_status::LOCUS_OK,
            "",
        );
    }
    let access = |data, mode: locus_mode, start, end| locus_access {
        data,
        mode: mode as u32,
        start,
        end,
    };
    let lists: Vec<Vec<locus_access>> = vec![
        vec![access(x, LOCUS_WRITE, 0, 0)],
        vec![access(x, LOCUS_READ_WRITE, 0, 0)],
        vec![access(x, LOCUS_READ, 1, 3)],
        vec![access(x, LOCUS_WEAK_READ, 0, 0)],
        vec![access(x, LOCUS_READ, 0, 0), access(y, LOCUS_WRITE, 0, 0)],
        vec![access(y, LOCUS_READ_WRITE, 0, 0)],
        vec![],
        // Two reads: grouped by kind, views back in declaration order.
        vec![
            access(x, LOCUS_READ, 0, 2),
            access(y, LOCUS_READ_WRITE, 0, 0),
            access(x, LOCUS_READ, 2, 4),
        ],
        // Distinct kinds, one of them weak.
        vec![
            access(y, LOCUS_READ, 0, 0),
            access(x, LOCUS_WEAK_READ_WRITE, 0, 0),
        ],
        // More accesses than a body's views on the stack hold.
        vec![
            access(x, LOCUS_READ, 0, 1),
            access(x, LOCUS_READ, 1, 2),
            access(x, LOCUS_READ, 2, 3),
            access(x, LOCUS_READ, 3, 4),
            access(y, LOCUS_READ, 0, 0),
        ],
    ];
    let seen = Seen::default();
    let args: Vec<SeeArg> = (0..lists.len() as u64)
        .map(|index| SeeArg { index, seen: &seen })
        .collect();
    let mut tasks: Vec<locus_task> = lists
        .iter()
        .zip(&args)
        .map(|(list, arg)| locus_task {
            accesses: list.as_ptr(),
            naccesses: list.len(),
            arg_size: std::mem::size_of::<SeeArg>(),
            ..task_of(c"see", see, arg as *const SeeArg as *mut c_void)
        })
        .collect();
    expect(run_tasks(rt, &mut tasks), locus_status::LOCUS_OK, "");
    let mut seen = seen.into_inner().unwrap();
    seen.sort_by_key(|s| s.0);
    let (r, w, rw, weak) = (
        LOCUS_READ as u32,
        LOCUS_WRITE as u32,
        LOCUS_READ_WRITE as u32,
        LOCUS_WEAK_READ as u32,
    );
    let want: Vec<(u64, Vec<SeenView>)> = vec![
        (0, vec![(w, 4, 4, None)]),
        (1, vec![(rw, 4, 4, Some(vec![1, 2, 3, 4]))]),
        (2, vec![(r, 2, 4, Some(vec![12, 13]))]),
        (3, vec![(weak, 0, 4, None)]),
        (
            4,
            vec![(r, 4, 4, Some(vec![11, 12, 13, 14])), (w, 4, 4, None)],
        ),
        (5, vec![(rw, 4, 4, Some(vec![1, 2, 3, 4]))]),
        (6, vec![]),
        (
            7,
            vec![
                (r, 2, 4, Some(vec![11, 12])),
                (rw, 4, 4, Some(vec![11, 12, 13, 14])),
                (r, 2, 4, Some(vec![13, 14])),
            ],
        ),
        (
            8,
            vec![
                (r, 4, 4, Some(vec![21, 22, 23, 24])),
                (LOCUS_WEAK_READ_WRITE as u32, 0, 4, None),
            ],
        ),
        (
            9,
            vec![
                (r, 1, 4, Some(vec![11])),
                (r, 1, 4, Some(vec![12])),
                (r, 1, 4, Some(vec![13])),
                (r, 1, 4, Some(vec![14])),
                (r, 4, 4, Some(vec![21, 22, 23, 24])),
            ],
        ),
    ];
    assert_eq!(seen, want);
    let mut back = [0u32; 4];
    for (d, want) in [(x, [11, 12, 13, 14]), (y, [21, 22, 23, 24])] {
        // SAFETY: a buffer of 4 u32.
        let status = unsafe { locus_fetch(rt, d, back.as_mut_ptr().cast(), 4) };
        expect(status, locus_status::LOCUS_OK, "");
        assert_eq!(back, want);
    }
    expect(locus_runtime_destroy(rt), locus_status::LOCUS_OK, "");
}

/// Counts the frees of the `AtomicUsize` at `arg`.
unsafe extern "C" fn count_free(arg: *mut c_void) {
    // SAFETY: the test's counter, alive while its runtime runs.
    unsafe { &*(arg as *const std::sync::atomic::AtomicUsize) }
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

unsafe extern "C" fn noop(_: locus_ctx, _: *const locus_view, _: usize, _: *mut c_void) -> i32 {
    0
}

/// The root: spawns the task at `arg` and returns 0 whatever the spawn returned (so
/// that a refused spawn is what fails the run).
unsafe extern "C" fn spawn_one_and_return_0(
    ctx: locus_ctx,
    _: *const locus_view,
    _: usize,
    arg: *mut c_void,
) -> i32 {
    // SAFETY: `arg` is the test's task, alive while the run lasts.
    let _ = unsafe { locus_spawn(ctx, arg as *const locus_task) };
    0
}

/// Runs `task` from a root that returns 0.
fn run_one(rt: locus_runtime, task: &locus_task) -> locus_status {
    let arg = task as *const locus_task as *mut c_void;
    // SAFETY: a valid root and its argument; no report asked for.
    unsafe { locus_run(rt, Some(spawn_one_and_return_0), arg, ptr::null_mut()) }
}

#[test]
fn tasks_of_one_access_free_their_argument_once_and_refuse_a_freed_datum() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let rt = runtime_with(c"2x1", 2, &[]);
    let d = slots(rt, 1)[0];
    let frees = AtomicUsize::new(0);
    let access = [locus_access {
        data: d,
        mode: locus_mode::LOCUS_READ_WRITE as u32,
        start: 0,
        end: 0,
    }];
    let task = locus_task {
        accesses: access.as_ptr(),
        naccesses: 1,
        arg_free: Some(count_free),
        ..task_of(c"plain", noop, &frees as *const AtomicUsize as *mut c_void)
    };
    // One name at one address: after the first spawn, the others find it cached.
    for runs in 1..=2 {
        let mut tasks = vec![task; 3];
        expect(run_tasks(rt, &mut tasks), locus_status::LOCUS_OK, "");
        assert_eq!(frees.load(Ordering::SeqCst), 3 * runs);
    }
    // A freed datum: refused, naming it, the argument freed once, and the run failed.
    expect(locus_data_free(d), locus_status::LOCUS_OK, "");
    frees.store(0, Ordering::SeqCst);
    expect(
        run_one(rt, &task),
        locus_status::LOCUS_E_RUN_FAILED,
        "locus_spawn of task `plain` was refused (LOCUS_E_HANDLE)",
    );
    assert!(last_error().contains("access 0"), "{}", last_error());
    assert_eq!(frees.load(Ordering::SeqCst), 1);
    // A datum of another runtime: refused as such.
    let other = runtime_with(c"2x1", 2, &[]);
    let foreign = slots(other, 1)[0];
    let access = [locus_access {
        data: foreign,
        ..access[0]
    }];
    let task = locus_task {
        accesses: access.as_ptr(),
        ..task
    };
    expect(
        run_one(rt, &task),
        locus_status::LOCUS_E_RUN_FAILED,
        "(LOCUS_E_WRONG_RUNTIME)",
    );
    assert_eq!(frees.load(Ordering::SeqCst), 2);
    expect(locus_runtime_destroy(other), locus_status::LOCUS_OK, "");
    expect(locus_runtime_destroy(rt), locus_status::LOCUS_OK, "");
}
