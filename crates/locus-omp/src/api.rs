//! The entry points: one `lomp_<symbol>` function per symbol of `symbols.txt` that
//! Locus runs (`lomp_<symbol>_1` for the `OMP_1.0` version of a lock function), the
//! target of the trampolines of `libgomp.so.1`. Signatures follow gcc's `libgomp_g.h`
//! and `omp.h`; the work is done in the modules they call.
//!
//! Every function is `unsafe extern "C"`: the program calls it as gcc's ABI says, with
//! the pointers gcc or the programmer passes, and the safety contract of each is that
//! ABI.

use std::ffi::{c_int, c_long, c_uint, c_void};
use std::sync::atomic::Ordering;

use crate::lock::{self, Nest, Nest1};
use crate::settings::{
    die, display_env, omp, MONOTONIC, SCHED_AUTO, SCHED_DYNAMIC, SCHED_GUIDED, SCHED_STATIC,
};
use crate::task;
use crate::team::{barrier, parallel, parallel_end, parallel_start, with_frame, Body};
use crate::work::{
    give, loop_end, loop_next, loop_start, runtime_schedule, sched_of, section, sections_loop,
    single_copy_end, single_copy_start, single_start, Loop, Sched, WorkShare,
};

type Outlined = unsafe extern "C" fn(*mut c_void);

// ---- parallel regions -------------------------------------------------------------

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_parallel(f: Outlined, data: *mut c_void, n: c_uint, _flags: c_uint) {
    parallel(Body { f, data }, n, None);
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_parallel_start(_f: Outlined, _data: *mut c_void, _n: c_uint) {
    parallel_start(None);
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_parallel_end() {
    parallel_end();
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_barrier() {
    with_frame(barrier);
}

// ---- loops --------------------------------------------------------------------------

/// The `long` loop start entry points with a chunk argument.
macro_rules! loop_start_long {
    ($($name:ident => $sched:expr;)*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(
            start: c_long, end: c_long, incr: c_long, chunk: c_long,
            istart: *mut c_long, iend: *mut c_long,
        ) -> bool {
            let chunk = loop_start(|| Loop::long(start, end, incr, $sched, chunk));
            // SAFETY: gcc's pointers to the loop's bounds.
            unsafe { give(chunk, istart.cast(), iend.cast()) }
        }
    )*};
}

loop_start_long! {
    lomp_GOMP_loop_static_start => Sched::Static;
    lomp_GOMP_loop_dynamic_start => Sched::Dynamic;
    lomp_GOMP_loop_guided_start => Sched::Guided;
    lomp_GOMP_loop_nonmonotonic_dynamic_start => Sched::Dynamic;
    lomp_GOMP_loop_nonmonotonic_guided_start => Sched::Guided;
}

/// The `long` runtime-schedule start entry points.
macro_rules! loop_start_runtime {
    ($($name:ident),*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(
            start: c_long, end: c_long, incr: c_long, istart: *mut c_long, iend: *mut c_long,
        ) -> bool {
            let (sched, chunk) = runtime_schedule();
            let chunk = loop_start(|| Loop::long(start, end, incr, sched, chunk as i64));
            // SAFETY: gcc's pointers to the loop's bounds.
            unsafe { give(chunk, istart.cast(), iend.cast()) }
        }
    )*};
}

loop_start_runtime!(
    lomp_GOMP_loop_runtime_start,
    lomp_GOMP_loop_nonmonotonic_runtime_start,
    lomp_GOMP_loop_maybe_nonmonotonic_runtime_start
);

/// The `next` entry points (`long` and `unsigned long long`: 64 bits either way).
macro_rules! loop_next {
    ($($name:ident: $t:ty),*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(istart: *mut $t, iend: *mut $t) -> bool {
            // SAFETY: gcc's pointers to the loop's bounds.
            unsafe { give(loop_next(), istart.cast(), iend.cast()) }
        }
    )*};
}

loop_next!(
    lomp_GOMP_loop_static_next: c_long,
    lomp_GOMP_loop_dynamic_next: c_long,
    lomp_GOMP_loop_guided_next: c_long,
    lomp_GOMP_loop_runtime_next: c_long,
    lomp_GOMP_loop_nonmonotonic_dynamic_next: c_long,
    lomp_GOMP_loop_nonmonotonic_guided_next: c_long,
    lomp_GOMP_loop_nonmonotonic_runtime_next: c_long,
    lomp_GOMP_loop_maybe_nonmonotonic_runtime_next: c_long,
    lomp_GOMP_loop_ull_static_next: u64,
    lomp_GOMP_loop_ull_dynamic_next: u64,
    lomp_GOMP_loop_ull_guided_next: u64,
    lomp_GOMP_loop_ull_runtime_next: u64,
    lomp_GOMP_loop_ull_nonmonotonic_dynamic_next: u64,
    lomp_GOMP_loop_ull_nonmonotonic_guided_next: u64,
    lomp_GOMP_loop_ull_nonmonotonic_runtime_next: u64,
    lomp_GOMP_loop_ull_maybe_nonmonotonic_runtime_next: u64
);

/// The `unsigned long long` start entry points with a chunk argument.
macro_rules! loop_start_ull {
    ($($name:ident => $sched:expr;)*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(
            up: bool, start: u64, end: u64, incr: u64, chunk: u64,
            istart: *mut u64, iend: *mut u64,
        ) -> bool {
            let chunk = loop_start(|| Loop::ull(up, start, end, incr, $sched, chunk));
            // SAFETY: gcc's pointers to the loop's bounds.
            unsafe { give(chunk, istart, iend) }
        }
    )*};
}

loop_start_ull! {
    lomp_GOMP_loop_ull_static_start => Sched::Static;
    lomp_GOMP_loop_ull_dynamic_start => Sched::Dynamic;
    lomp_GOMP_loop_ull_guided_start => Sched::Guided;
    lomp_GOMP_loop_ull_nonmonotonic_dynamic_start => Sched::Dynamic;
    lomp_GOMP_loop_ull_nonmonotonic_guided_start => Sched::Guided;
}

/// The `unsigned long long` runtime-schedule start entry points.
macro_rules! loop_start_ull_runtime {
    ($($name:ident),*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(
            up: bool, start: u64, end: u64, incr: u64, istart: *mut u64, iend: *mut u64,
        ) -> bool {
            let (sched, chunk) = runtime_schedule();
            let chunk = loop_start(|| Loop::ull(up, start, end, incr, sched, chunk));
            // SAFETY: gcc's pointers to the loop's bounds.
            unsafe { give(chunk, istart, iend) }
        }
    )*};
}

loop_start_ull_runtime!(
    lomp_GOMP_loop_ull_runtime_start,
    lomp_GOMP_loop_ull_nonmonotonic_runtime_start,
    lomp_GOMP_loop_ull_maybe_nonmonotonic_runtime_start
);

/// The schedule of `GOMP_loop_start`'s `sched` argument (gcc's `GFS_*`; 0 runtime).
fn gfs(sched: c_long, chunk: u64) -> (Sched, u64) {
    match sched & 0x7fff_ffff {
        0 => runtime_schedule(),
        s => (sched_of(s as u64), chunk),
    }
}

/// Task reductions and `lastprivate(conditional)` / `scan` memory are not run.
fn no_extras(reductions: *mut usize, mem: *mut *mut c_void, construct: &str) {
    if !reductions.is_null() {
        die(&format!(
            "task reductions on {construct} are not supported by Locus's OpenMP runtime"
        ));
    }
    if !mem.is_null() {
        die(&format!(
            "lastprivate(conditional) or scan on {construct} is not supported by Locus's OpenMP runtime"
        ));
    }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn lomp_GOMP_loop_start(
    start: c_long,
    end: c_long,
    incr: c_long,
    sched: c_long,
    chunk: c_long,
    istart: *mut c_long,
    iend: *mut c_long,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    no_extras(reductions, mem, "a loop");
    let (sched, chunk) = gfs(sched, chunk.max(0) as u64);
    let first = loop_start(|| Loop::long(start, end, incr, sched, chunk as i64));
    if istart.is_null() {
        return true;
    }
    // SAFETY: gcc's pointers to the loop's bounds.
    unsafe { give(first, istart.cast(), iend.cast()) }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn lomp_GOMP_loop_ull_start(
    up: bool,
    start: u64,
    end: u64,
    incr: u64,
    sched: c_long,
    chunk: u64,
    istart: *mut u64,
    iend: *mut u64,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> bool {
    no_extras(reductions, mem, "a loop");
    let (sched, chunk) = gfs(sched, chunk);
    let first = loop_start(|| Loop::ull(up, start, end, incr, sched, chunk));
    if istart.is_null() {
        return true;
    }
    // SAFETY: gcc's pointers to the loop's bounds.
    unsafe { give(first, istart, iend) }
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_loop_end() {
    loop_end(true);
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_loop_end_nowait() {
    loop_end(false);
}

/// The combined `parallel for` entry points with a chunk argument.
macro_rules! parallel_loop {
    ($($name:ident => $sched:expr;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(
            f: Outlined, data: *mut c_void, n: c_uint,
            start: c_long, end: c_long, incr: c_long, chunk: c_long, _flags: c_uint,
        ) {
            let ws = WorkShare::new(Loop::long(start, end, incr, $sched, chunk));
            parallel(Body { f, data }, n, Some(ws));
        }
    )*};
}

parallel_loop! {
    lomp_GOMP_parallel_loop_static => Sched::Static;
    lomp_GOMP_parallel_loop_dynamic => Sched::Dynamic;
    lomp_GOMP_parallel_loop_guided => Sched::Guided;
    lomp_GOMP_parallel_loop_nonmonotonic_dynamic => Sched::Dynamic;
    lomp_GOMP_parallel_loop_nonmonotonic_guided => Sched::Guided;
}

/// The combined `parallel for schedule(runtime)` entry points.
macro_rules! parallel_loop_runtime {
    ($($name:ident),*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(
            f: Outlined, data: *mut c_void, n: c_uint,
            start: c_long, end: c_long, incr: c_long, _flags: c_uint,
        ) {
            let (sched, chunk) = runtime_schedule();
            let ws = WorkShare::new(Loop::long(start, end, incr, sched, chunk as i64));
            parallel(Body { f, data }, n, Some(ws));
        }
    )*};
}

parallel_loop_runtime!(
    lomp_GOMP_parallel_loop_runtime,
    lomp_GOMP_parallel_loop_nonmonotonic_runtime,
    lomp_GOMP_parallel_loop_maybe_nonmonotonic_runtime
);

/// The old combined loop entry points (the caller runs the body, then
/// `GOMP_parallel_end`): a serialised region starting with the loop.
macro_rules! parallel_loop_start {
    ($($name:ident => $sched:expr;)*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(
            _f: Outlined, _data: *mut c_void, _n: c_uint,
            start: c_long, end: c_long, incr: c_long, chunk: c_long,
        ) {
            parallel_start(Some(WorkShare::new(Loop::long(start, end, incr, $sched, chunk))));
        }
    )*};
}

parallel_loop_start! {
    lomp_GOMP_parallel_loop_static_start => Sched::Static;
    lomp_GOMP_parallel_loop_dynamic_start => Sched::Dynamic;
    lomp_GOMP_parallel_loop_guided_start => Sched::Guided;
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_parallel_loop_runtime_start(
    _f: Outlined,
    _data: *mut c_void,
    _n: c_uint,
    start: c_long,
    end: c_long,
    incr: c_long,
) {
    let (sched, chunk) = runtime_schedule();
    parallel_start(Some(WorkShare::new(Loop::long(
        start,
        end,
        incr,
        sched,
        chunk as i64,
    ))));
}

// ---- sections and single --------------------------------------------------------------

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_sections_start(count: c_uint) -> c_uint {
    section(loop_start(|| sections_loop(count)))
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_sections2_start(
    count: c_uint,
    reductions: *mut usize,
    mem: *mut *mut c_void,
) -> c_uint {
    no_extras(reductions, mem, "sections");
    section(loop_start(|| sections_loop(count)))
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_sections_next() -> c_uint {
    section(loop_next())
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_sections_end() {
    loop_end(true);
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_sections_end_nowait() {
    loop_end(false);
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_parallel_sections(
    f: Outlined,
    data: *mut c_void,
    n: c_uint,
    count: c_uint,
    _flags: c_uint,
) {
    parallel(
        Body { f, data },
        n,
        Some(WorkShare::new(sections_loop(count))),
    );
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_parallel_sections_start(
    _f: Outlined,
    _data: *mut c_void,
    _n: c_uint,
    count: c_uint,
) {
    parallel_start(Some(WorkShare::new(sections_loop(count))));
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_single_start() -> bool {
    single_start()
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_single_copy_start() -> *mut c_void {
    single_copy_start()
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_single_copy_end(data: *mut c_void) {
    single_copy_end(data);
}

// ---- tasks --------------------------------------------------------------------------------

#[no_mangle]
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn lomp_GOMP_task(
    f: Outlined,
    data: *mut c_void,
    cpyfn: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    arg_size: c_long,
    arg_align: c_long,
    if_clause: bool,
    flags: c_uint,
    depend: *mut *mut c_void,
    priority: c_int,
    _detach: *mut c_void,
) {
    // SAFETY: gcc's arguments, passed on.
    unsafe {
        task::task(
            f, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority,
        )
    }
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_taskwait() {
    task::taskwait();
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_taskwait_depend(depend: *mut *mut c_void) {
    // SAFETY: gcc's depend array.
    unsafe { task::taskwait_depend(depend) }
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_taskyield() {}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_taskgroup_start() {
    task::taskgroup_start();
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_taskgroup_end() {
    task::taskgroup_end();
}

// ---- mutual exclusion -------------------------------------------------------------------

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_critical_start() {
    lock::lock(lock::critical());
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_critical_end() {
    lock::unlock(lock::critical());
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_critical_name_start(pptr: *mut *mut c_void) {
    // SAFETY: gcc's pointer-sized, zero-initialised word of the critical's name.
    lock::lock(unsafe { lock::word(pptr.cast()) });
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_critical_name_end(pptr: *mut *mut c_void) {
    // SAFETY: as in `lomp_GOMP_critical_name_start`.
    lock::unlock(unsafe { lock::word(pptr.cast()) });
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_atomic_start() {
    lock::lock(lock::atomic());
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_atomic_end() {
    lock::unlock(lock::atomic());
}

/// The simple-lock functions; the `OMP_1.0` versions share the 4-byte layout.
macro_rules! simple_lock {
    ($($name:ident, $old:ident => $body:expr;)*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(l: *mut c_void) -> c_int {
            // SAFETY: the program's `omp_lock_t`.
            let w = unsafe { lock::word(l) };
            #[allow(clippy::redundant_closure_call)]
            ($body)(w)
        }
        #[no_mangle]
        unsafe extern "C" fn $old(l: *mut c_void) -> c_int {
            // SAFETY: the program's lock.
            unsafe { $name(l) }
        }
    )*};
}

simple_lock! {
    lomp_omp_init_lock, lomp_omp_init_lock_1 => |w| { lock::init(w); 0 };
    lomp_omp_destroy_lock, lomp_omp_destroy_lock_1 => |w| { lock::destroy(w, "omp_destroy_lock"); 0 };
    lomp_omp_set_lock, lomp_omp_set_lock_1 => |w| { lock::set(w); 0 };
    lomp_omp_unset_lock, lomp_omp_unset_lock_1 => |w| { lock::unset(w); 0 };
    lomp_omp_test_lock, lomp_omp_test_lock_1 => lock::test;
}

/// The nest-lock functions in both layouts.
macro_rules! nest_lock {
    ($($name:ident, $old:ident => $method:ident;)*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(l: *mut c_void) -> c_int {
            // SAFETY: the program's 16-byte `omp_nest_lock_t`.
            #[allow(clippy::unit_arg)]
            nest_result(unsafe { Nest::at(l) }.$method())
        }
        #[no_mangle]
        unsafe extern "C" fn $old(l: *mut c_void) -> c_int {
            // SAFETY: the program's 8-byte `OMP_1.0` nest lock.
            #[allow(clippy::unit_arg)]
            nest_result(unsafe { Nest1::at(l) }.$method())
        }
    )*};
}

/// What a nest-lock function returns: its count for the test, 0 otherwise.
trait NestResult {
    fn value(self) -> c_int;
}
impl NestResult for () {
    fn value(self) -> c_int {
        0
    }
}
impl NestResult for i32 {
    fn value(self) -> c_int {
        self
    }
}
fn nest_result(r: impl NestResult) -> c_int {
    r.value()
}

nest_lock! {
    lomp_omp_init_nest_lock, lomp_omp_init_nest_lock_1 => init;
    lomp_omp_set_nest_lock, lomp_omp_set_nest_lock_1 => set;
    lomp_omp_unset_nest_lock, lomp_omp_unset_nest_lock_1 => unset;
    lomp_omp_test_nest_lock, lomp_omp_test_nest_lock_1 => test;
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_destroy_nest_lock(l: *mut c_void) {
    // SAFETY: the program's 16-byte `omp_nest_lock_t`.
    unsafe { Nest::at(l) }.destroy();
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_destroy_nest_lock_1(l: *mut c_void) {
    // SAFETY: the program's 8-byte nest lock.
    unsafe { Nest1::at(l) }.init();
}

// ---- the user API -------------------------------------------------------------------------

#[no_mangle]
unsafe extern "C" fn lomp_omp_set_num_threads(n: c_int) {
    if n > 0 {
        omp().nthreads.store(n as usize, Ordering::Relaxed);
    }
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_num_threads() -> c_int {
    with_frame(|f| f.team.n as c_int)
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_max_threads() -> c_int {
    omp().nthreads.load(Ordering::Relaxed).min(omp().workers) as c_int
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_thread_num() -> c_int {
    with_frame(|f| f.thread_num as c_int)
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_num_procs() -> c_int {
    std::thread::available_parallelism().map_or(1, |n| n.get() as c_int)
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_in_parallel() -> c_int {
    with_frame(|f| c_int::from(f.team.active_level > 0))
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_in_final() -> c_int {
    with_frame(|f| c_int::from(f.task.final_))
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_set_dynamic(on: c_int) {
    omp().dynamic.store(on != 0, Ordering::Relaxed);
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_dynamic() -> c_int {
    c_int::from(omp().dynamic.load(Ordering::Relaxed))
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_set_nested(_on: c_int) {}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_nested() -> c_int {
    0
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_set_max_active_levels(_levels: c_int) {}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_max_active_levels() -> c_int {
    omp().max_active_levels.load(Ordering::Relaxed) as c_int
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_supported_active_levels() -> c_int {
    1
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_level() -> c_int {
    with_frame(|f| f.team.level as c_int)
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_active_level() -> c_int {
    with_frame(|f| f.team.active_level as c_int)
}

/// The team at nesting `level` of the current thread, with the thread's index in it.
fn ancestor(level: c_int) -> Option<(usize, usize)> {
    with_frame(|f| {
        let mut team = f.team.counted();
        let mut num = f.thread_num;
        if level < 0 || level as usize > team.level {
            return None;
        }
        while team.level > level as usize {
            let (parent, n) = team.parent.clone()?;
            team = parent;
            num = n;
        }
        Some((team.n, num))
    })
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_ancestor_thread_num(level: c_int) -> c_int {
    ancestor(level).map_or(-1, |(_, num)| num as c_int)
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_team_size(level: c_int) -> c_int {
    ancestor(level).map_or(-1, |(n, _)| n as c_int)
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_thread_limit() -> c_int {
    omp().workers as c_int
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_wtime() -> f64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_wtick() -> f64 {
    1e-9
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_set_schedule(kind: c_int, chunk: c_int) {
    let monotonic = kind as u32 as u64 & MONOTONIC;
    let kind = kind as u32 as u64 & !MONOTONIC;
    let kind = match kind {
        SCHED_STATIC | SCHED_DYNAMIC | SCHED_GUIDED | SCHED_AUTO => kind,
        _ => return,
    };
    let chunk = if chunk < 1 {
        u64::from(kind != SCHED_STATIC)
    } else {
        chunk as u64
    };
    let packed = ((kind | monotonic) << 32) | chunk;
    crate::team::with_frame(|f| f.task.set_run_sched(packed));
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_schedule(kind: *mut c_int, chunk: *mut c_int) {
    let packed = crate::team::with_frame(|f| f.task.run_sched());
    if !kind.is_null() && !chunk.is_null() {
        // SAFETY: the program's out-parameters.
        unsafe {
            *kind = (packed >> 32) as c_int;
            *chunk = (packed & 0xffff_ffff) as c_int;
        }
    }
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_cancellation() -> c_int {
    0
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_proc_bind() -> c_int {
    // omp_proc_bind_true: Locus pins its workers.
    1
}

/// Entry points answering for a host without devices, teams or places.
macro_rules! constant {
    ($($name:ident => $v:expr;)*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name() -> c_int {
            $v
        }
    )*};
}

constant! {
    lomp_omp_get_num_places => 0;
    lomp_omp_get_place_num => -1;
    lomp_omp_get_partition_num_places => 0;
    lomp_omp_get_num_devices => 0;
    lomp_omp_get_default_device => 0;
    lomp_omp_is_initial_device => 1;
    lomp_omp_get_initial_device => 0;
    lomp_omp_get_device_num => 0;
    lomp_omp_get_num_teams => 1;
    lomp_omp_get_team_num => 0;
    lomp_omp_get_max_teams => 1;
    lomp_omp_get_teams_thread_limit => 0;
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_max_task_priority() -> c_int {
    omp().max_task_priority
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_set_default_device(_device: c_int) {}

#[no_mangle]
unsafe extern "C" fn lomp_omp_pause_resource(_kind: c_int, _device: c_int) -> c_int {
    -1
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_pause_resource_all(_kind: c_int) -> c_int {
    -1
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_display_env(verbose: c_int) {
    display_env(omp(), verbose != 0);
}

// ---- memory ------------------------------------------------------------------------------

/// `size` bytes aligned to `align` (at least 16), from the C allocator.
fn aligned(align: usize, size: usize) -> *mut c_void {
    let align = align.max(16).next_power_of_two();
    let mut p = std::ptr::null_mut();
    // SAFETY: a fresh out-pointer; an alignment that is a power of two and a multiple
    // of the pointer size.
    if unsafe { libc::posix_memalign(&mut p, align, size.max(1)) } != 0 {
        return std::ptr::null_mut();
    }
    p
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_alloc(size: usize, _allocator: usize) -> *mut c_void {
    aligned(16, size)
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_aligned_alloc(
    align: usize,
    size: usize,
    _allocator: usize,
) -> *mut c_void {
    aligned(align, size)
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_alloc(align: usize, size: usize, _allocator: usize) -> *mut c_void {
    aligned(align, size)
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_calloc(n: usize, size: usize, allocator: usize) -> *mut c_void {
    // SAFETY: passes on the same arguments.
    unsafe { lomp_omp_aligned_calloc(16, n, size, allocator) }
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_aligned_calloc(
    align: usize,
    n: usize,
    size: usize,
    _allocator: usize,
) -> *mut c_void {
    let Some(bytes) = n.checked_mul(size) else {
        return std::ptr::null_mut();
    };
    let p = aligned(align, bytes);
    if !p.is_null() {
        // SAFETY: a fresh block of `bytes` bytes.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
    }
    p
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_realloc(
    ptr: *mut c_void,
    size: usize,
    _allocator: usize,
    _free_allocator: usize,
) -> *mut c_void {
    // SAFETY: `ptr` came from these functions (the C allocator) or is NULL.
    unsafe { libc::realloc(ptr, size) }
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_free(ptr: *mut c_void, _allocator: usize) {
    // SAFETY: `ptr` came from these functions (the C allocator) or is NULL.
    unsafe { libc::free(ptr) }
}

#[no_mangle]
unsafe extern "C" fn lomp_GOMP_free(ptr: *mut c_void, _allocator: usize) {
    // SAFETY: as in `lomp_omp_free`.
    unsafe { libc::free(ptr) }
}

#[no_mangle]
unsafe extern "C" fn lomp_omp_set_default_allocator(_allocator: usize) {}

#[no_mangle]
unsafe extern "C" fn lomp_omp_get_default_allocator() -> usize {
    // omp_default_mem_alloc
    1
}

// ---- clang's runtime allocation (`__kmpc_alloc` and friends: depobj storage, the
// allocate directive) --------------------------------------------------------------------

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_alloc(
    _gtid: c_int,
    size: usize,
    _allocator: usize,
) -> *mut c_void {
    aligned(16, size)
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_aligned_alloc(
    _gtid: c_int,
    align: usize,
    size: usize,
    _allocator: usize,
) -> *mut c_void {
    aligned(align, size)
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_calloc(
    _gtid: c_int,
    n: usize,
    size: usize,
    allocator: usize,
) -> *mut c_void {
    // SAFETY: passes on the same arguments.
    unsafe { lomp_omp_aligned_calloc(16, n, size, allocator) }
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_realloc(
    _gtid: c_int,
    ptr: *mut c_void,
    size: usize,
    allocator: usize,
    free_allocator: usize,
) -> *mut c_void {
    // SAFETY: passes on the same arguments.
    unsafe { lomp_omp_realloc(ptr, size, allocator, free_allocator) }
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_free(_gtid: c_int, ptr: *mut c_void, allocator: usize) {
    // SAFETY: passes on the same arguments.
    unsafe { lomp_omp_free(ptr, allocator) }
}
