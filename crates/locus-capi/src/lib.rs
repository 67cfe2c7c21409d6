//! Locus's C API: `include/locus.h` (generated from this crate by cbindgen, and
//! checked against it by `tests/header.rs`) and the header-only C++ wrapper
//! `include/locus.hpp`.
//!
//! The C API covers the runtime (configuration, topology, threads and settings), data
//! (typed by element size and count; versioned, or shared with a placement policy;
//! fetched into a user buffer; `locus_node_of`), tasks (a C function, an argument
//! copied or borrowed with a destructor, accesses with modes and read ranges, a name, a
//! cost, an affinity; inside a body its views, its worker and node, children and
//! `locus_wait`), runs and their reports (JSON and main figures), and the memory API
//! (access and migration costs, free memory per node, migrating data now, by range,
//! on next touch or as a task of the graph), teams (tasks placed as a unit on a set of
//! nodes, moved between phases) and data attached to a worker, node or team.
//!
//! # Conventions
//!
//! - Every function returns a `locus_status`; on failure `locus_last_error()` holds a
//!   thread-local message naming the bad value.
//! - Every object is a 64-bit handle into a table with generation counters
//!   (module `handles`), never a pointer: a null, freed or made-up handle, or a
//!   handle of another runtime, is an error code, never a crash.
//! - No panic crosses the boundary (module `status`); a task body cannot unwind
//!   into Rust (module `task` says what C code must not do).
//!
//! Building and installing: `scripts/install-capi.sh PREFIX` installs `liblocus.so`,
//! `liblocus.a`, the headers and `locus.pc`; see this crate's `README.md`.

/// The library is the final Rust artifact of a C program, so it chooses the allocator of
/// its own allocations (see the `mimalloc` feature in `Cargo.toml`).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod data;
mod frames;
mod handles;
mod memory;
mod names;
mod partition;
mod report;
mod runtime;
mod status;
mod task;
mod team;
// Last: its items come last in the generated header.
mod graph;

pub use data::{
    locus_data, locus_data_create, locus_data_free, locus_data_from, locus_data_register,
    locus_data_shared, locus_data_size, locus_fetch, locus_node_of, locus_policy,
};
pub use graph::{
    locus_ctx_iteration, locus_graph, locus_graph_free, locus_graph_record, locus_graph_replay,
    locus_graph_spawn, locus_recorder,
};
pub use memory::{
    locus_free_memory, locus_migrate, locus_migrate_on_next_touch, locus_migrate_range,
    locus_migrated, locus_migration_cost, locus_migration_counts, locus_read_cost,
    locus_scope_migrate, locus_write_cost,
};
pub use partition::{locus_partition, locus_partition_kind, locus_partition_spec, locus_range};
pub use report::{
    locus_figures, locus_report, locus_report_figures, locus_report_free, locus_report_json,
    locus_string_free,
};
pub use runtime::{
    locus_run, locus_runtime, locus_runtime_bytes_in_use, locus_runtime_create,
    locus_runtime_destroy, locus_runtime_size, locus_settings, locus_settings_create,
    locus_settings_free, locus_settings_set,
};
pub use status::{locus_last_error, locus_status, locus_status_name};
pub use task::{
    locus_access, locus_affinity, locus_ctx, locus_ctx_data, locus_ctx_fail, locus_ctx_fetch,
    locus_ctx_where, locus_free_fn, locus_mode, locus_spawn, locus_task, locus_task_fn, locus_view,
    locus_wait,
};
pub use team::{
    locus_attach_node, locus_attach_team, locus_attach_worker, locus_detach, locus_team,
    locus_team_attached, locus_team_create, locus_team_free, locus_team_move, locus_team_nodes,
    locus_team_set_strict, locus_team_spread,
};

/// Writes to `*count` the number of live handles of every kind (runtimes, data,
/// teams, reports, settings, graphs): a program that freed everything it made sees 0, which makes
/// handle leaks easy to test for.
///
/// # Safety
///
/// `count` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_live_handles(count: *mut usize) -> locus_status {
    status::guard(|| {
        let n = runtime::RUNTIMES.live()
            + data::DATA.live()
            + team::TEAMS.live()
            + report::REPORTS.live()
            + runtime::SETTINGS.live()
            + graph::GRAPHS.live();
        // SAFETY: forwarded from the caller.
        unsafe { status::put(count, n, "count") }
    })
}

/// The version of the library, e.g. `"0.1.0"`: a static string, do not free it.
#[no_mangle]
pub extern "C" fn locus_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
