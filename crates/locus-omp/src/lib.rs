//! Locus's OpenMP runtime: the GNU libgomp ABI (`GOMP_*`, `omp_*`) over Locus's engine,
//! so that gcc-compiled OpenMP programs run on Locus unmodified (README.md).
//!
//! A parallel region is one Locus run whose tasks are the team's implicit tasks, one
//! per worker, strictly placed (so the members run at once and barriers work). An
//! explicit task (`GOMP_task`) is a Locus task spawned from the worker that creates
//! it, or from the one that completes its last predecessor, with the node of its
//! out/inout memory as a hint; the workers, queues, stealing, pushing, affinity,
//! metrics and traces are Locus's own. Waits (barriers, taskwait, taskgroup end) run
//! other tasks meanwhile. Dependences are storage locations among sibling tasks,
//! updated in place.
//!
//! Modules: `settings` (the runtime built once per process from the environment, the
//! report at exit), `team` (teams, the per-thread stack of OpenMP tasks, parallel
//! regions, barriers), `task` (explicit tasks, dependences, taskwait, taskgroup),
//! `work` (loops, sections, single), `lock` (critical, atomic, the lock API),
//! `api` (the rest of the user API).
//!
//! The shared library a program loads is `libgomp.so.1` (assembled by `build.rs`),
//! whose versioned symbols jump to the `lomp_*` functions of this crate's cdylib.

#![allow(non_snake_case)]

/// The runtime's allocator (the `mimalloc` feature in `Cargo.toml`).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod api;
pub mod env;
mod kmp;
mod lock;
mod place;
mod settings;
mod task;
mod team;
mod work;

/// Stops the program on a construct Locus's OpenMP runtime does not run: one line on
/// stderr naming it, exit status 2. The trampolines of `libgomp.so.1` for every such
/// entry point jump here with the construct's name.
///
/// # Safety
///
/// `what` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn lomp_refuse(what: *const std::ffi::c_char) -> ! {
    let name = if what.is_null() {
        "an OpenMP construct".into()
    } else {
        // SAFETY: NUL-terminated by the caller's contract (the shim's string table).
        unsafe { std::ffi::CStr::from_ptr(what) }.to_string_lossy()
    };
    settings::die(&format!(
        "{name} is not supported by Locus's OpenMP runtime"
    ))
}
