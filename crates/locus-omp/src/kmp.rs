//! clang's ABI: the `__kmpc_*` entry points of LLVM's `libomp.so.5` over the same engine
//! as gcc's (README.md, "clang-compiled programs"). `libomp.so.5`, assembled by
//! `build.rs` from `symbols-kmp.txt`, jumps to the `lomp___kmpc_*` functions here;
//! `__kmpc_fork_call`, variadic, is C in the shim (`kmp_shim.c`), which gathers the
//! shared variables into an array and calls [`lomp_kmp_fork_call`].
//!
//! Layouts follow LLVM's `kmp.h`: `kmp_task_t` (shareds, routine, part id, two
//! compiler words), `kmp_depend_info_t` and `kmp_task_affinity_info_t` (base address,
//! length in bytes, flags), `kmp_critical_name` (32 bytes, zero-initialised by the
//! compiler; its first word is the lock here). The `gtid` arguments are ignored: the
//! calling thread's frame says which task calls.
//!
//! Every function is `unsafe extern "C"`: the program calls it as clang's ABI says, and
//! the safety contract of each is that ABI.

use std::alloc::Layout;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::lock::{self, Nest};
use crate::settings::{die, omp};
use crate::task::{self, Call, Dep, NewTask};
use crate::team::{barrier, parallel, parallel_end, parallel_start, with_frame, Body};
use crate::work::{
    enter_ws, leave_ws, next_iterations, runtime_schedule, single_start, Loop, Sched,
};

/// `ident_t`: the source location clang passes first; unused.
type Ident = c_void;
/// `kmp_routine_entry_t`: a task's entry (and its destructors' thunk).
type Routine = unsafe extern "C" fn(i32, *mut KmpTaskT) -> i32;

// `__kmp_invoke_microtask`: calls an outlined region `f(gtid, tid, argv[0], ...,
// argv[argc-1])` for any `argc`, the arguments past the sixth on the stack (System V
// x86-64 calling convention), the stack 16-byte aligned at the call.
std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl lomp_invoke_microtask",
    ".hidden lomp_invoke_microtask",
    ".type lomp_invoke_microtask, @function",
    "lomp_invoke_microtask:",
    // rdi = f, rsi = gtid, rdx = tid, ecx = argc, r8 = argv
    "push rbp",
    "mov rbp, rsp",
    "push rbx",
    "push r12",
    "mov r12, rdi",
    "movsxd rbx, ecx",
    "mov r11, r8",
    "mov rax, rbx",
    "sub rax, 4",
    "jle 2f",
    "test rax, 1",
    "jz 3f",
    "sub rsp, 8",
    "3:",
    "lea r9, [r11 + rbx*8 - 8]",
    "1:",
    "push qword ptr [r9]",
    "sub r9, 8",
    "dec rax",
    "jnz 1b",
    "2:",
    "mov rdi, rsi",
    "mov rsi, rdx",
    "cmp rbx, 1",
    "jl 4f",
    "mov rdx, [r11]",
    "cmp rbx, 2",
    "jl 4f",
    "mov rcx, [r11 + 8]",
    "cmp rbx, 3",
    "jl 4f",
    "mov r8, [r11 + 16]",
    "cmp rbx, 4",
    "jl 4f",
    "mov r9, [r11 + 24]",
    "4:",
    "xor eax, eax",
    "call r12",
    "lea rsp, [rbp - 16]",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "ret",
    ".size lomp_invoke_microtask, .-lomp_invoke_microtask",
);

extern "C" {
    fn lomp_invoke_microtask(
        f: *const c_void,
        gtid: *mut i32,
        tid: *mut i32,
        argc: i32,
        argv: *mut *mut c_void,
    );
}

/// The global thread number clang passes around: 0 off Locus's workers, worker + 1 on
/// them.
fn gtid() -> i32 {
    with_frame(|f| f.worker().map_or(0, |w| w as i32 + 1))
}

thread_local! {
    /// `__kmpc_push_num_threads`: the size of this thread's next team (0: default).
    static NEXT_TEAM: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

// ---- parallel regions ---------------------------------------------------------------

/// A region's outlined function and its shared variables.
struct Fork {
    microtask: *const c_void,
    argc: i32,
    argv: *mut *mut c_void,
}

/// The body of each member: the outlined function with the member's numbers.
unsafe extern "C" fn member(data: *mut c_void) {
    // SAFETY: `data` is the `Fork` of `lomp_kmp_fork_call`, alive until the region ends.
    let fork = unsafe { &*(data as *const Fork) };
    let mut gtid = gtid();
    let mut tid = with_frame(|f| f.thread_num) as i32;
    // SAFETY: the outlined function clang gave with its `argc` shared variables.
    unsafe { lomp_invoke_microtask(fork.microtask, &mut gtid, &mut tid, fork.argc, fork.argv) };
}

/// `__kmpc_fork_call`, its variadic arguments gathered by the shim into `argv`.
///
/// # Safety
///
/// `microtask` is clang's outlined function of `argc` shared variables, `argv` holds
/// them.
#[no_mangle]
pub unsafe extern "C" fn lomp_kmp_fork_call(
    _loc: *mut Ident,
    argc: i32,
    microtask: *const c_void,
    argv: *mut *mut c_void,
) {
    if microtask.is_null() {
        die("__kmpc_fork_call without an outlined function");
    }
    let n = NEXT_TEAM.with(|c| c.replace(0));
    let fork = Fork {
        microtask,
        argc,
        argv,
    };
    let body = Body {
        f: member,
        data: &fork as *const Fork as *mut c_void,
    };
    parallel(body, n, None);
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_global_thread_num(_loc: *mut Ident) -> i32 {
    gtid()
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_global_num_threads(_loc: *mut Ident) -> i32 {
    omp().workers as i32 + 1
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_bound_thread_num(_loc: *mut Ident) -> i32 {
    with_frame(|f| f.thread_num as i32)
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_bound_num_threads(_loc: *mut Ident) -> i32 {
    with_frame(|f| f.team.n as i32)
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_in_parallel(_loc: *mut Ident) -> i32 {
    with_frame(|f| i32::from(f.team.active_level > 0))
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_ok_to_fork(_loc: *mut Ident) -> i32 {
    1
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_begin(_loc: *mut Ident, _flags: i32) {}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_end(_loc: *mut Ident) {}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_push_num_threads(_loc: *mut Ident, _gtid: i32, n: i32) {
    NEXT_TEAM.with(|c| c.set(n.max(0) as u32));
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_push_proc_bind(_loc: *mut Ident, _gtid: i32, _bind: c_int) {}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_serialized_parallel(_loc: *mut Ident, _gtid: i32) {
    NEXT_TEAM.with(|c| c.set(0));
    parallel_start(None);
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_end_serialized_parallel(_loc: *mut Ident, _gtid: i32) {
    parallel_end();
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_barrier(_loc: *mut Ident, _gtid: i32) {
    with_frame(barrier);
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_flush(_loc: *mut Ident) {
    std::sync::atomic::fence(Ordering::SeqCst);
}

// ---- single, master, critical ---------------------------------------------------------

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_single(_loc: *mut Ident, _gtid: i32) -> i32 {
    i32::from(single_start())
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_end_single(_loc: *mut Ident, _gtid: i32) {}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_master(_loc: *mut Ident, _gtid: i32) -> i32 {
    with_frame(|f| i32::from(f.thread_num == 0))
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_end_master(_loc: *mut Ident, _gtid: i32) {}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_masked(_loc: *mut Ident, _gtid: i32, filter: i32) -> i32 {
    with_frame(|f| i32::from(f.thread_num as i64 == i64::from(filter)))
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_end_masked(_loc: *mut Ident, _gtid: i32) {}

/// The lock word of a `kmp_critical_name` (the unnamed critical section's when NULL).
///
/// # Safety
///
/// `crit` is NULL or clang's 32-byte, zero-initialised critical name.
unsafe fn crit_word<'a>(crit: *mut c_void) -> &'a AtomicU32 {
    if crit.is_null() {
        lock::critical()
    } else {
        // SAFETY: the caller's contract: 4-byte aligned and alive for the program.
        unsafe { lock::word(crit) }
    }
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_critical(_loc: *mut Ident, _gtid: i32, crit: *mut c_void) {
    // SAFETY: clang's critical name.
    lock::lock(unsafe { crit_word(crit) });
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_critical_with_hint(
    _loc: *mut Ident,
    _gtid: i32,
    crit: *mut c_void,
    _hint: u32,
) {
    // SAFETY: clang's critical name.
    lock::lock(unsafe { crit_word(crit) });
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_end_critical(_loc: *mut Ident, _gtid: i32, crit: *mut c_void) {
    // SAFETY: clang's critical name.
    lock::unlock(unsafe { crit_word(crit) });
}

// ---- reductions, copyprivate ----------------------------------------------------------

/// `__kmpc_reduce_nowait` and `__kmpc_reduce`: the critical-section method. Every member
/// gets 1 with the reduction's lock held: it combines its values into the shared ones
/// itself (the code clang emits for that answer), then calls `__kmpc_end_reduce*`, which
/// releases the lock.
#[no_mangle]
unsafe extern "C" fn lomp___kmpc_reduce_nowait(
    _loc: *mut Ident,
    _gtid: i32,
    _num_vars: i32,
    _size: usize,
    _data: *mut c_void,
    _func: *mut c_void,
    lck: *mut c_void,
) -> i32 {
    // SAFETY: clang's critical name of the reduction.
    lock::lock(unsafe { crit_word(lck) });
    1
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_end_reduce_nowait(_loc: *mut Ident, _gtid: i32, lck: *mut c_void) {
    // SAFETY: as above.
    lock::unlock(unsafe { crit_word(lck) });
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_reduce(
    loc: *mut Ident,
    gtid: i32,
    num_vars: i32,
    size: usize,
    data: *mut c_void,
    func: *mut c_void,
    lck: *mut c_void,
) -> i32 {
    // SAFETY: the same arguments.
    unsafe { lomp___kmpc_reduce_nowait(loc, gtid, num_vars, size, data, func, lck) }
}

/// The end of a blocking reduction: the lock released, then the construct's barrier.
#[no_mangle]
unsafe extern "C" fn lomp___kmpc_end_reduce(_loc: *mut Ident, _gtid: i32, lck: *mut c_void) {
    // SAFETY: as above.
    lock::unlock(unsafe { crit_word(lck) });
    with_frame(barrier);
}

/// `single copyprivate`: the member that ran the region (`didit`) publishes its data;
/// after a barrier, the others copy it with clang's `cpy_func(dst, src)`; a second
/// barrier keeps the data alive until all have copied.
#[no_mangle]
unsafe extern "C" fn lomp___kmpc_copyprivate(
    _loc: *mut Ident,
    _gtid: i32,
    _size: usize,
    data: *mut c_void,
    cpy_func: Option<unsafe extern "C" fn(*mut c_void, *mut c_void)>,
    didit: i32,
) {
    with_frame(|frame| {
        if didit != 0 {
            frame.team.copy.store(data, Ordering::Release);
        }
        barrier(frame);
        if didit == 0 {
            let src = frame.team.copy.load(Ordering::Acquire);
            if let (Some(copy), false) = (cpy_func, src.is_null()) {
                // SAFETY: clang's copy function, between this member's data and the
                // winner's, alive until the barrier below.
                unsafe { copy(data, src) };
            }
        }
        barrier(frame);
    });
}

// ---- loops ------------------------------------------------------------------------------

/// libomp's `sched_type` numbers, without the monotonic/nonmonotonic modifier bits.
const SCH_STATIC_CHUNKED: i32 = 33;
const SCH_STATIC: i32 = 34;
const SCH_DYNAMIC_CHUNKED: i32 = 35;
const SCH_GUIDED_CHUNKED: i32 = 36;
const SCH_RUNTIME: i32 = 37;
const SCH_AUTO: i32 = 38;
const SCH_TRAPEZOIDAL: i32 = 39;
const SCH_STATIC_GREEDY: i32 = 40;
const SCH_STATIC_BALANCED: i32 = 41;
const SCH_GUIDED_ITERATIVE: i32 = 42;
const SCH_GUIDED_ANALYTICAL: i32 = 43;
const SCH_STATIC_STEAL: i32 = 44;
const SCH_STATIC_BALANCED_CHUNKED: i32 = 45;
const SCH_GUIDED_SIMD: i32 = 46;
const SCH_RUNTIME_SIMD: i32 = 47;
const SCH_ORDERED_FIRST: i32 = 65;
const SCH_ORDERED_LAST: i32 = 72;
const SCH_MODIFIERS: i32 = (1 << 29) | (1 << 30);

/// A schedule of clang's, as this runtime hands it out (`None`: not one it runs).
fn schedule(sched: i32, chunk: i128) -> Option<(Sched, u64)> {
    let chunk = chunk.clamp(0, i128::from(u32::MAX)) as u64;
    Some(match sched & !SCH_MODIFIERS {
        SCH_STATIC | SCH_STATIC_GREEDY | SCH_STATIC_BALANCED | SCH_AUTO => (Sched::Static, 0),
        SCH_STATIC_CHUNKED | SCH_STATIC_BALANCED_CHUNKED => (Sched::Static, chunk.max(1)),
        SCH_DYNAMIC_CHUNKED | SCH_STATIC_STEAL => (Sched::Dynamic, chunk.max(1)),
        SCH_GUIDED_CHUNKED | SCH_GUIDED_ITERATIVE | SCH_GUIDED_ANALYTICAL | SCH_TRAPEZOIDAL => {
            (Sched::Guided, chunk.max(1))
        }
        SCH_RUNTIME => runtime_schedule(),
        _ => return None,
    })
}

fn refuse_schedule(sched: i32, entry: &str) -> ! {
    let base = sched & !SCH_MODIFIERS;
    let entry = entry.strip_prefix("lomp_").unwrap_or(entry);
    if base == SCH_GUIDED_SIMD || base == SCH_RUNTIME_SIMD {
        die(&format!(
            "simd loop schedules (schedule(simd: ...), {entry}) are not supported by Locus's OpenMP runtime"
        ));
    }
    if (SCH_ORDERED_FIRST..=SCH_ORDERED_LAST).contains(&base) {
        die(&format!(
            "ordered loops ({entry}) are not supported by Locus's OpenMP runtime"
        ));
    }
    die(&format!(
        "{entry} with loop schedule {sched}, which Locus's OpenMP runtime does not know"
    ))
}

/// One member's share of a statically scheduled loop from `lower` to `upper` inclusive
/// by `incr`, as libomp's `__kmpc_for_static_init` computes it: `(last, lower, upper,
/// stride)`, where `last` says the share holds the loop's last iteration and, for a
/// chunked schedule, the member's next chunk starts `stride` values later.
pub(crate) fn static_share(
    tid: i128,
    nth: i128,
    chunk: Option<i128>,
    lower: i128,
    upper: i128,
    incr: i128,
) -> (bool, i128, i128, i128) {
    if (incr > 0 && upper < lower) || (incr < 0 && lower < upper) || incr == 0 {
        return (false, lower, upper, incr);
    }
    let trip = if incr > 0 {
        (upper - lower) / incr + 1
    } else {
        (lower - upper) / -incr + 1
    };
    let empty = upper + incr.signum();
    if nth <= 1 {
        return (true, lower, upper, trip * incr);
    }
    match chunk {
        None => {
            if trip < nth {
                if tid < trip {
                    let at = lower + tid * incr;
                    (tid == trip - 1, at, at, trip * incr)
                } else {
                    (false, empty, upper, trip * incr)
                }
            } else {
                let (small, extras) = (trip / nth, trip % nth);
                let lo = lower + incr * (tid * small + tid.min(extras));
                let hi = lo + small * incr - if tid < extras { 0 } else { incr };
                (tid == nth - 1, lo, hi, trip * incr)
            }
        }
        Some(chunk) => {
            let chunk = chunk.clamp(1, trip);
            let nchunks = (trip + chunk - 1) / chunk;
            let span = chunk * incr;
            let last = tid == (nchunks - 1) % nth;
            if nchunks < nth && tid >= nchunks {
                (last, empty, upper, span * nchunks)
            } else {
                let lo = lower + span * tid;
                let stride = span * nchunks.min(nth);
                (last, lo, lo + span - incr, stride)
            }
        }
    }
}

/// `__kmpc_for_static_init_{4,4u,8,8u}`.
macro_rules! static_init {
    ($($name:ident: $t:ty, $st:ty;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(
            _loc: *mut Ident, _gtid: i32, sched: i32, plast: *mut i32,
            plower: *mut $t, pupper: *mut $t, pstride: *mut $st, incr: $st, chunk: $st,
        ) {
            let chunked = match sched & !SCH_MODIFIERS {
                SCH_STATIC | SCH_STATIC_GREEDY | SCH_STATIC_BALANCED | SCH_AUTO => None,
                SCH_STATIC_CHUNKED | SCH_STATIC_BALANCED_CHUNKED => Some(i128::from(chunk)),
                _ => refuse_schedule(sched, stringify!($name)),
            };
            if plower.is_null() || pupper.is_null() || pstride.is_null() {
                die(concat!(stringify!($name), " without its loop bounds"));
            }
            let (tid, nth) = with_frame(|f| (f.thread_num as i128, f.team.n as i128));
            // SAFETY: clang's pointers to the loop's bounds, checked not NULL.
            unsafe {
                let (last, lo, hi, stride) = static_share(
                    tid, nth, chunked, i128::from(*plower), i128::from(*pupper), i128::from(incr),
                );
                *plower = lo as $t;
                *pupper = hi as $t;
                *pstride = stride as $st;
                if !plast.is_null() {
                    *plast = i32::from(last);
                }
            }
        }
    )*};
}

static_init! {
    lomp___kmpc_for_static_init_4: i32, i32;
    lomp___kmpc_for_static_init_4u: u32, i32;
    lomp___kmpc_for_static_init_8: i64, i64;
    lomp___kmpc_for_static_init_8u: u64, i64;
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_for_static_fini(_loc: *mut Ident, _gtid: i32) {}

/// `__kmpc_dispatch_init_*` and `__kmpc_dispatch_next_*` (dynamic, guided, runtime and
/// static loops handed out chunk by chunk).
macro_rules! dispatch {
    ($($init:ident, $next:ident, $fini:ident: $t:ty, $st:ty;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $init(
            _loc: *mut Ident, _gtid: i32, sched: i32, lb: $t, ub: $t, st: $st, chunk: $st,
        ) {
            let Some((sched_kind, chunk)) = schedule(sched, i128::from(chunk)) else {
                refuse_schedule(sched, stringify!($init));
            };
            if st == 0 {
                die(concat!(stringify!($init), " with a zero increment"));
            }
            with_frame(|frame| {
                enter_ws(frame, || {
                    Loop::inclusive(i128::from(lb), i128::from(ub), i128::from(st), sched_kind, chunk)
                });
            });
        }

        #[no_mangle]
        unsafe extern "C" fn $next(
            _loc: *mut Ident, _gtid: i32, plast: *mut i32, plb: *mut $t, pub_: *mut $t,
            pst: *mut $st,
        ) -> i32 {
            with_frame(|frame| match next_iterations(frame) {
                Some((lp, a, b)) => {
                    let (lo, hi, last) = lp.inclusive_bounds(a, b);
                    // SAFETY: clang's pointers to the chunk's bounds (NULL ones skipped).
                    unsafe {
                        if !plb.is_null() {
                            *plb = lo as $t;
                        }
                        if !pub_.is_null() {
                            *pub_ = hi as $t;
                        }
                        if !pst.is_null() {
                            *pst = lp.incr() as $st;
                        }
                        if !plast.is_null() {
                            *plast = i32::from(last);
                        }
                    }
                    1
                }
                None => {
                    leave_ws(frame);
                    0
                }
            })
        }

        #[no_mangle]
        unsafe extern "C" fn $fini(_loc: *mut Ident, _gtid: i32) {}
    )*};
}

dispatch! {
    lomp___kmpc_dispatch_init_4, lomp___kmpc_dispatch_next_4, lomp___kmpc_dispatch_fini_4: i32, i32;
    lomp___kmpc_dispatch_init_4u, lomp___kmpc_dispatch_next_4u, lomp___kmpc_dispatch_fini_4u: u32, i32;
    lomp___kmpc_dispatch_init_8, lomp___kmpc_dispatch_next_8, lomp___kmpc_dispatch_fini_8: i64, i64;
    lomp___kmpc_dispatch_init_8u, lomp___kmpc_dispatch_next_8u, lomp___kmpc_dispatch_fini_8u: u64, i64;
}

// ---- tasks ------------------------------------------------------------------------------

/// `kmp_task_t`, the start of the record clang allocates with `__kmpc_omp_task_alloc`
/// (its private variables follow).
#[repr(C)]
pub(crate) struct KmpTaskT {
    shareds: *mut c_void,
    routine: Option<Routine>,
    part_id: i32,
    /// `data1`: the destructors' thunk when the destructors flag is set.
    data1: usize,
    data2: usize,
}

/// Locus's record before each `kmp_task_t`.
#[repr(C)]
struct Header {
    layout: Layout,
    flags: i32,
    /// [`RUNNING`] while its routine runs; [`AGAIN`] once the routine asked to be run
    /// again (an untied task's next part).
    state: AtomicU32,
    /// The affinity clause's `(address, bytes)` ranges.
    affinity: Vec<(usize, usize)>,
}

const RUNNING: u32 = 1;
const AGAIN: u32 = 2;
/// Bytes before the `kmp_task_t` (the header, rounded to the record's alignment).
const HEADER: usize = 64;
/// Alignment of the whole record, enough for any private variable.
const ALIGN: usize = 64;
const _: () = assert!(std::mem::size_of::<Header>() <= HEADER);

/// `kmp_tasking_flags_t` bits the compiler sets.
const TASK_FINAL: i32 = 1 << 1;
const TASK_DESTRUCTORS: i32 = 1 << 3;
const TASK_PROXY: i32 = 1 << 4;
const TASK_DETACHABLE: i32 = 1 << 6;

/// A clang task record, handed to the worker that runs it.
pub(crate) struct KmpTask(*mut KmpTaskT);

/// # Safety
///
/// `task` was returned by `__kmpc_omp_task_alloc` and not freed.
unsafe fn header<'a>(task: *mut KmpTaskT) -> &'a mut Header {
    // SAFETY: the header lies `HEADER` bytes before every task record this runtime
    // allocates; the caller's contract says `task` is one.
    unsafe { &mut *task.cast::<u8>().sub(HEADER).cast::<Header>() }
}

fn check_task(task: *mut KmpTaskT, entry: &str) {
    if task.is_null() {
        die(&format!("{entry} without a task"));
    }
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_omp_task_alloc(
    _loc: *mut Ident,
    _gtid: i32,
    flags: i32,
    sizeof_task: usize,
    sizeof_shareds: usize,
    entry: Option<Routine>,
) -> *mut KmpTaskT {
    if flags & TASK_DETACHABLE != 0 {
        die("task detach events (__kmpc_omp_task_alloc with detach) are not supported by Locus's OpenMP runtime");
    }
    if flags & TASK_PROXY != 0 {
        die("proxy tasks (target tasks) are not supported by Locus's OpenMP runtime");
    }
    let task_size = sizeof_task.max(std::mem::size_of::<KmpTaskT>());
    let layout = task_size
        .checked_next_multiple_of(8)
        .and_then(|t| t.checked_add(HEADER)?.checked_add(sizeof_shareds))
        .and_then(|total| Layout::from_size_align(total, ALIGN).ok())
        .unwrap_or_else(|| {
            die(&format!(
                "a task of {sizeof_task} bytes with {sizeof_shareds} bytes of shared variables"
            ))
        });
    // SAFETY: a layout of at least HEADER + size_of::<KmpTaskT>() bytes.
    let base = unsafe { std::alloc::alloc(layout) };
    if base.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `base` holds the header, the task record (`task_size` bytes, rounded up)
    // and the shared variables, aligned to 64.
    unsafe {
        base.cast::<Header>().write(Header {
            layout,
            flags,
            state: AtomicU32::new(0),
            affinity: Vec::new(),
        });
        let task = base.add(HEADER).cast::<KmpTaskT>();
        let shareds = if sizeof_shareds > 0 {
            base.add(HEADER + task_size.next_multiple_of(8)).cast()
        } else {
            std::ptr::null_mut()
        };
        task.write(KmpTaskT {
            shareds,
            routine: entry,
            part_id: 0,
            data1: 0,
            data2: 0,
        });
        task
    }
}

/// Runs a clang task's routine (again, for each part an untied task asks for), its
/// destructors, and frees it.
pub(crate) fn run_task(task: KmpTask) {
    let task = task.0;
    let gtid = gtid();
    // SAFETY: a record of `__kmpc_omp_task_alloc`, run once, here.
    let h = unsafe { header(task) };
    // SAFETY: as above; the routine clang put in the record.
    unsafe { run_parts(task, h, gtid) };
    // SAFETY: as above: the task has run; nobody uses the record after this.
    unsafe { finish_task(task, gtid) };
}

/// Calls the routine while it asks to be run again.
///
/// # Safety
///
/// `task` is a live record of `__kmpc_omp_task_alloc`, `h` its header.
unsafe fn run_parts(task: *mut KmpTaskT, h: &Header, gtid: i32) {
    loop {
        h.state.store(RUNNING, Ordering::Relaxed);
        // SAFETY: the caller's contract.
        let Some(routine) = (unsafe { (*task).routine }) else {
            die("a task without a routine (__kmpc_omp_task_alloc with a NULL entry)");
        };
        // SAFETY: clang's task entry with its record.
        unsafe { routine(gtid, task) };
        if h.state.swap(0, Ordering::Relaxed) & AGAIN == 0 {
            break;
        }
    }
}

/// Runs a finished task's destructors and frees its record.
///
/// # Safety
///
/// `task` is a live record of `__kmpc_omp_task_alloc`, used by nobody after this.
unsafe fn finish_task(task: *mut KmpTaskT, gtid: i32) {
    // SAFETY: the caller's contract.
    unsafe {
        let h = header(task);
        if h.flags & TASK_DESTRUCTORS != 0 && (*task).data1 != 0 {
            let thunk: Routine = std::mem::transmute::<usize, Routine>((*task).data1);
            thunk(gtid, task);
        }
        let layout = h.layout;
        let base = task.cast::<u8>().sub(HEADER);
        std::ptr::drop_in_place(base.cast::<Header>());
        std::alloc::dealloc(base, layout);
    }
}

/// Submits a task (`__kmpc_omp_task*`); a task that is running asks to be run again
/// (an untied task's next part: it runs on once its current part returns).
///
/// # Safety
///
/// `task` is a record of `__kmpc_omp_task_alloc`, not yet submitted or running.
unsafe fn submit(task: *mut KmpTaskT, deps: Vec<Dep>) {
    // SAFETY: the caller's contract.
    let h = unsafe { header(task) };
    if h.state.load(Ordering::Relaxed) & RUNNING != 0 {
        if !deps.is_empty() {
            die("an untied task's part submitted with dependences");
        }
        h.state.fetch_or(AGAIN, Ordering::Relaxed);
        return;
    }
    task::submit(NewTask {
        call: Call::Kmp(KmpTask(task)),
        deps,
        affinity: std::mem::take(&mut h.affinity),
        if_clause: true,
        throttled: false,
        final_: h.flags & TASK_FINAL != 0,
    });
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_omp_task(
    _loc: *mut Ident,
    _gtid: i32,
    task: *mut KmpTaskT,
) -> i32 {
    check_task(task, "__kmpc_omp_task");
    // SAFETY: clang's task record.
    unsafe { submit(task, Vec::new()) };
    0
}

/// `kmp_depend_info_t`.
#[repr(C)]
struct DependInfo {
    base_addr: usize,
    len: usize,
    flags: u8,
}

const DEP_IN: u8 = 1;
const DEP_OUT: u8 = 2;
const DEP_MTX: u8 = 4;
const DEP_SET: u8 = 8;
const DEP_ALL: u8 = 0x80;

/// Reads clang's dependence lists.
///
/// # Safety
///
/// Each list holds its count of `kmp_depend_info_t` (or is NULL with a count of 0).
unsafe fn read_deps(lists: [(i32, *const DependInfo); 2]) -> Vec<Dep> {
    let mut deps = Vec::new();
    for (n, list) in lists {
        if n <= 0 || list.is_null() {
            continue;
        }
        // SAFETY: the caller's contract.
        let items = unsafe { std::slice::from_raw_parts(list, n as usize) };
        for d in items {
            if d.flags & DEP_ALL != 0 {
                die("depend on omp_all_memory is not supported by Locus's OpenMP runtime");
            }
            if d.flags & (DEP_IN | DEP_OUT | DEP_MTX | DEP_SET) == 0 {
                die(&format!("a dependence of unknown kind {:#x}", d.flags));
            }
            deps.push(Dep {
                addr: d.base_addr,
                len: d.len,
                writes: d.flags & (DEP_OUT | DEP_MTX | DEP_SET) != 0,
            });
        }
    }
    deps
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_omp_task_with_deps(
    _loc: *mut Ident,
    _gtid: i32,
    task: *mut KmpTaskT,
    ndeps: i32,
    deps: *const DependInfo,
    ndeps_noalias: i32,
    noalias: *const DependInfo,
) -> i32 {
    check_task(task, "__kmpc_omp_task_with_deps");
    // SAFETY: clang's lists and task record.
    unsafe {
        let deps = read_deps([(ndeps, deps), (ndeps_noalias, noalias)]);
        submit(task, deps);
    }
    0
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_omp_wait_deps(
    _loc: *mut Ident,
    _gtid: i32,
    ndeps: i32,
    deps: *const DependInfo,
    ndeps_noalias: i32,
    noalias: *const DependInfo,
) {
    // SAFETY: clang's lists.
    let deps = unsafe { read_deps([(ndeps, deps), (ndeps_noalias, noalias)]) };
    task::wait_deps(&deps);
}

/// An undeferred task the program runs itself: its frame is entered here, clang calls
/// the routine, then `__kmpc_omp_task_complete_if0`.
#[no_mangle]
unsafe extern "C" fn lomp___kmpc_omp_task_begin_if0(
    _loc: *mut Ident,
    _gtid: i32,
    task: *mut KmpTaskT,
) {
    check_task(task, "__kmpc_omp_task_begin_if0");
    // SAFETY: clang's task record.
    let h = unsafe { header(task) };
    h.state.store(RUNNING, Ordering::Relaxed);
    task::begin_undeferred(h.flags & TASK_FINAL != 0);
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_omp_task_complete_if0(
    _loc: *mut Ident,
    gtid: i32,
    task: *mut KmpTaskT,
) {
    check_task(task, "__kmpc_omp_task_complete_if0");
    // SAFETY: clang's task record, whose routine clang has just called.
    unsafe {
        let h = header(task);
        if h.state.swap(0, Ordering::Relaxed) & AGAIN != 0 {
            run_parts(task, h, gtid);
        }
        task::end_undeferred();
        finish_task(task, gtid);
    }
}

/// `kmp_task_affinity_info_t`.
#[repr(C)]
struct AffinityInfo {
    base_addr: usize,
    len: usize,
    flags: u32,
}

/// The affinity clause: the task's ranges, recorded for its submission. The flags,
/// which clang 14 leaves uninitialised, are not read.
#[no_mangle]
unsafe extern "C" fn lomp___kmpc_omp_reg_task_with_affinity(
    _loc: *mut Ident,
    _gtid: i32,
    task: *mut KmpTaskT,
    naffins: i32,
    list: *const AffinityInfo,
) -> i32 {
    check_task(task, "__kmpc_omp_reg_task_with_affinity");
    if naffins <= 0 || list.is_null() {
        return 0;
    }
    // SAFETY: clang's list of `naffins` items and its task record.
    unsafe {
        let items = std::slice::from_raw_parts(list, naffins as usize);
        header(task)
            .affinity
            .extend(items.iter().map(|a| (a.base_addr, a.len)));
    }
    0
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_omp_taskwait(_loc: *mut Ident, _gtid: i32) -> i32 {
    task::taskwait();
    0
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_omp_taskyield(
    _loc: *mut Ident,
    _gtid: i32,
    _end_part: i32,
) -> i32 {
    0
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_taskgroup(_loc: *mut Ident, _gtid: i32) {
    task::taskgroup_start();
}

#[no_mangle]
unsafe extern "C" fn lomp___kmpc_end_taskgroup(_loc: *mut Ident, _gtid: i32) {
    task::taskgroup_end();
}

// ---- nest locks in clang's layout ---------------------------------------------------------

/// clang's `omp_nest_lock_t` is one pointer: to a nest lock of gcc's 16-byte layout,
/// allocated by its init.
///
/// # Safety
///
/// `l` is NULL or the program's `omp_nest_lock_t`.
unsafe fn nest<'a>(l: *mut *mut c_void, what: &str) -> Nest<'a> {
    // SAFETY: the caller's contract.
    let inner = if l.is_null() {
        std::ptr::null_mut()
    } else {
        // SAFETY: the caller's contract: a readable pointer-sized lock.
        unsafe { *l }
    };
    if inner.is_null() {
        die(&format!("{what} on a nest lock that is not initialised"));
    }
    // SAFETY: allocated by `lomp_kmp_omp_init_nest_lock`: 16 bytes, 8-aligned.
    unsafe { Nest::at(inner) }
}

#[no_mangle]
unsafe extern "C" fn lomp_kmp_omp_init_nest_lock(l: *mut *mut c_void) {
    if l.is_null() {
        die("omp_init_nest_lock on a NULL lock");
    }
    let inner = Box::into_raw(Box::new([0u64; 2])).cast::<c_void>();
    // SAFETY: the program's lock, given its own 16-byte nest lock.
    unsafe {
        *l = inner;
        Nest::at(inner).init();
    }
}

#[no_mangle]
unsafe extern "C" fn lomp_kmp_omp_init_nest_lock_with_hint(l: *mut *mut c_void, _hint: u32) {
    // SAFETY: as above.
    unsafe { lomp_kmp_omp_init_nest_lock(l) }
}

#[no_mangle]
unsafe extern "C" fn lomp_kmp_omp_init_lock_with_hint(l: *mut c_void, _hint: u32) {
    // SAFETY: the program's `omp_lock_t` (8 bytes; its first word is the lock).
    lock::init(unsafe { lock::word(l) });
}

#[no_mangle]
unsafe extern "C" fn lomp_kmp_omp_destroy_nest_lock(l: *mut *mut c_void) {
    // SAFETY: the program's lock.
    unsafe {
        nest(l, "omp_destroy_nest_lock").destroy();
        drop(Box::from_raw((*l).cast::<[u64; 2]>()));
        *l = std::ptr::null_mut();
    }
}

#[no_mangle]
unsafe extern "C" fn lomp_kmp_omp_set_nest_lock(l: *mut *mut c_void) {
    // SAFETY: the program's lock.
    unsafe { nest(l, "omp_set_nest_lock") }.set();
}

#[no_mangle]
unsafe extern "C" fn lomp_kmp_omp_unset_nest_lock(l: *mut *mut c_void) {
    // SAFETY: the program's lock.
    unsafe { nest(l, "omp_unset_nest_lock") }.unset();
}

#[no_mangle]
unsafe extern "C" fn lomp_kmp_omp_test_nest_lock(l: *mut *mut c_void) -> c_int {
    // SAFETY: the program's lock.
    unsafe { nest(l, "omp_test_nest_lock") }.test()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every iteration of `0..=upper` is given to exactly one member.
    fn covers(nth: i128, chunk: Option<i128>, upper: i128) {
        let mut seen = vec![0; (upper + 1) as usize];
        let mut lasts = 0;
        for tid in 0..nth {
            let (last, mut lo, mut hi, stride) = static_share(tid, nth, chunk, 0, upper, 1);
            lasts += i32::from(last);
            while lo <= upper {
                for i in lo..=hi.min(upper) {
                    seen[i as usize] += 1;
                }
                if chunk.is_none() {
                    break;
                }
                lo += stride;
                hi += stride;
            }
        }
        assert!(
            seen.iter().all(|&s| s == 1),
            "{nth} {chunk:?} {upper}: {seen:?}"
        );
        assert_eq!(lasts, 1);
    }

    #[test]
    fn static_shares_cover_the_loop_once() {
        for nth in 1..6 {
            for upper in 0..20 {
                covers(nth, None, upper);
                for c in 1..5 {
                    covers(nth, Some(c), upper);
                }
            }
        }
    }

    #[test]
    fn an_empty_loop_has_no_share() {
        let (last, lo, hi, _) = static_share(0, 4, None, 5, 4, 1);
        assert!(!last && lo > hi);
    }

    #[test]
    fn schedules_map_to_locus_loops() {
        assert_eq!(schedule(SCH_STATIC, 7), Some((Sched::Static, 0)));
        assert_eq!(schedule(SCH_STATIC_CHUNKED, 7), Some((Sched::Static, 7)));
        assert_eq!(
            schedule(SCH_DYNAMIC_CHUNKED | (1 << 30), 0),
            Some((Sched::Dynamic, 1))
        );
        assert_eq!(schedule(SCH_GUIDED_CHUNKED, 3), Some((Sched::Guided, 3)));
        assert_eq!(schedule(66, 1), None);
        assert_eq!(schedule(SCH_RUNTIME_SIMD, 4), None);
    }
}
