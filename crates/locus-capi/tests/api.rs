//! The C API called from Rust, as a C program would call it: a run with views and a
//! read range, a failing body, and handles checked after they are freed. (The full
//! suite is the C one, `tests/c/capi_tests.c`, run by `scripts/capi-ci.sh`.)

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
