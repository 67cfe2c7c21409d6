//! The memory API (Broquedis et al., MaMI's Table 2, as `Runtime`'s memory calls):
//! `locus_read_cost`, `locus_write_cost`, `locus_migration_cost`, `locus_free_memory`,
//! `locus_migrated`, `locus_migrate`, `locus_migrate_range`,
//! `locus_migrate_on_next_touch`, and inside a task `locus_scope_migrate`.
//!
//! The queries (costs, free memory, pages migrated) may be called at any time, also
//! from a body. The calls that move memory work between runs: from a body they are
//! `LOCUS_E_STATE` (a body submits a migration task with `locus_scope_migrate`
//! instead), and so while another thread runs a program on the runtime.

use locus::{Migrated, Runtime};

use crate::data::{data_of, locus_data};
use crate::runtime::{locus_runtime, runtime_of};
use crate::status::{guard, in_call, locus_status, put, CResult, Fail};
use crate::task::{in_body, locus_ctx, with_scope};

/// Pages (4 KiB) and bytes a runtime has migrated since it was made, by reason
/// (`locus_migrated`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_migration_counts {
    /// Moved by `locus_migrate`, `locus_migrate_range`, migration tasks
    /// (`locus_scope_migrate`) and the `now` migration setting.
    pub now_pages: u64,
    /// `now_pages` in bytes.
    pub now_bytes: u64,
    /// Moved on next touch (`locus_migrate_on_next_touch`, the `next-touch` setting).
    pub next_touch_pages: u64,
    /// `next_touch_pages` in bytes.
    pub next_touch_bytes: u64,
    /// Moved by the `auto` migration setting.
    pub auto_pages: u64,
    /// `auto_pages` in bytes.
    pub auto_bytes: u64,
}

/// Refuses a call that moves memory from inside a body.
pub(crate) fn between_runs(op: &str) -> CResult {
    if in_body() {
        return Err(Fail::new(
            locus_status::LOCUS_E_STATE,
            format!(
                "{op}: not allowed inside a task body (the run's tasks may be using the \
                 datum); submit a migration task with locus_scope_migrate"
            ),
        ));
    }
    Ok(())
}

/// The status of a failed move: as every call's (`locus_status`), except that a run in
/// progress on another thread is `LOCUS_E_STATE`, not a configuration error.
pub(crate) fn move_failed(call: &'static str) -> impl Fn(locus::Error) -> Fail {
    move |e| {
        let busy =
            matches!(&e, locus::Error::Config(m) if m.contains("while a run is in progress"));
        let mut fail = Fail::of(e, Some(call));
        if busy {
            fail.status = locus_status::LOCUS_E_STATE;
        }
        fail
    }
}

/// Writes `moved.pages` to `pages` if it is not NULL.
///
/// # Safety
///
/// `pages` is NULL or valid for a write.
pub(crate) unsafe fn put_pages(pages: *mut u64, moved: u64) {
    if !pages.is_null() {
        // SAFETY: non-NULL, valid for a write by the caller's contract.
        unsafe { pages.write(moved) };
    }
}

/// A cost query's common part: the runtime, then the cost, written to `ns`.
///
/// # Safety
///
/// `ns` is NULL (an error) or valid for a write.
unsafe fn cost(
    call: &'static str,
    runtime: locus_runtime,
    ns: *mut f64,
    f: impl FnOnce(&Runtime) -> Result<f64, locus::Error>,
) -> locus_status {
    guard(|| {
        if ns.is_null() {
            return Err(crate::status::null("ns"));
        }
        let rt = runtime_of(runtime)?;
        let value = f(&rt).map_err(in_call(call))?;
        // SAFETY: checked non-NULL above; valid for a write by the caller's contract.
        unsafe { put(ns, value, "ns") }
    })
}

/// Writes to `*ns` the cost in nanoseconds for a CPU of `from_node` to read `bytes`
/// bytes of `data_node`'s memory: one miss per 64-byte line at the topology's local
/// read latency times its read factor (MaMI's `mami_cost_for_read_access`). A node
/// outside the topology is `LOCUS_E_CONFIG`.
///
/// # Safety
///
/// `ns` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_read_cost(
    runtime: locus_runtime,
    bytes: u64,
    data_node: usize,
    from_node: usize,
    ns: *mut f64,
) -> locus_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        cost("locus_read_cost", runtime, ns, |rt| {
            rt.read_cost(bytes, data_node, from_node)
        })
    }
}

/// As `locus_read_cost`, for writes (the write latency and factors).
///
/// # Safety
///
/// `ns` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_write_cost(
    runtime: locus_runtime,
    bytes: u64,
    data_node: usize,
    from_node: usize,
    ns: *mut f64,
) -> locus_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        cost("locus_write_cost", runtime, ns, |rt| {
            rt.write_cost(bytes, data_node, from_node)
        })
    }
}

/// Writes to `*ns` the cost in nanoseconds of migrating `bytes` bytes in one call:
/// `a + b x pages`, the topology's migration model.
///
/// # Safety
///
/// `ns` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_migration_cost(
    runtime: locus_runtime,
    bytes: u64,
    ns: *mut f64,
) -> locus_status {
    // SAFETY: forwarded from the caller.
    unsafe {
        cost("locus_migration_cost", runtime, ns, |rt| {
            Ok(rt.migration_cost(bytes))
        })
    }
}

/// Writes to `*bytes` the free memory of `node`: on the host's real nodes the kernel's
/// `MemFree` for the node; on virtual nodes (`2x1`, presets) the `node_limit` setting
/// minus what Locus holds there (task buffers and shared pages), or without a limit
/// the node's share of the host's free memory (the Rust guide's "Memory" says how).
/// A node outside the topology is `LOCUS_E_CONFIG`.
///
/// # Safety
///
/// `bytes` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_free_memory(
    runtime: locus_runtime,
    node: usize,
    bytes: *mut u64,
) -> locus_status {
    guard(|| {
        if bytes.is_null() {
            return Err(crate::status::null("bytes"));
        }
        let rt = runtime_of(runtime)?;
        let free = rt.free_memory(node).map_err(in_call("locus_free_memory"))?;
        // SAFETY: checked non-NULL above; valid for a write by the caller's contract.
        unsafe { put(bytes, free, "bytes") }
    })
}

/// Writes to `*counts` the pages (and bytes) the runtime has migrated since it was
/// made, by reason.
///
/// # Safety
///
/// `counts` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_migrated(
    runtime: locus_runtime,
    counts: *mut locus_migration_counts,
) -> locus_status {
    guard(|| {
        if counts.is_null() {
            return Err(crate::status::null("counts"));
        }
        let rt = runtime_of(runtime)?;
        let m = rt.migrated();
        let c = locus_migration_counts {
            now_pages: m.now.pages,
            now_bytes: m.now.bytes,
            next_touch_pages: m.next_touch.pages,
            next_touch_bytes: m.next_touch.bytes,
            auto_pages: m.auto.pages,
            auto_bytes: m.auto.bytes,
        };
        // SAFETY: checked non-NULL above; valid for a write by the caller's contract.
        unsafe { put(counts, c, "counts") }
    })
}

/// Moves every page of the datum to `node` now (MaMI's `mami_migrate_on_node`) and
/// writes the pages moved to `*pages` (4 KiB each; `pages` may be NULL). A shared
/// datum's pages move in place; a versioned one is copied into a block of `node`'s
/// pool, which becomes its current version. Between runs only: from a body, or while
/// another thread runs a program on the runtime, `LOCUS_E_STATE`. A node outside the
/// topology is `LOCUS_E_CONFIG`; a datum of another runtime `LOCUS_E_WRONG_RUNTIME`; a
/// node limit the pages do not fit under `LOCUS_E_OUT_OF_MEMORY`.
///
/// # Safety
///
/// `pages` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_migrate(
    runtime: locus_runtime,
    data: locus_data,
    node: usize,
    pages: *mut u64,
) -> locus_status {
    guard(|| {
        between_runs("locus_migrate")?;
        let rt = runtime_of(runtime)?;
        let (d, _, _) = data_of(data, runtime.bits)?;
        let moved: Migrated = rt.migrate(&d, node).map_err(move_failed("locus_migrate"))?;
        // SAFETY: forwarded from the caller.
        unsafe { put_pages(pages, moved.pages) };
        Ok(())
    })
}

/// Moves the pages holding elements `[first, first + count)` of the datum to `node`,
/// as `locus_migrate` does for the whole datum (pages partly in the range move whole),
/// and writes the pages moved to `*pages` (which may be NULL). A range outside the
/// datum is `LOCUS_E_SIZE`; a versioned datum moves whole only (another range of it is
/// `LOCUS_E_CONFIG`). Other errors as for `locus_migrate`.
///
/// # Safety
///
/// `pages` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_migrate_range(
    runtime: locus_runtime,
    data: locus_data,
    first: usize,
    count: usize,
    node: usize,
    pages: *mut u64,
) -> locus_status {
    guard(|| {
        between_runs("locus_migrate_range")?;
        let rt = runtime_of(runtime)?;
        let (d, elem, len) = data_of(data, runtime.bits)?;
        let end = first.checked_add(count).filter(|&end| end <= len);
        let Some(end) = end else {
            return Err(Fail::new(
                locus_status::LOCUS_E_SIZE,
                format!(
                    "locus_migrate_range: elements [{first}, {first} + {count}) are outside \
                     `{}` ({len} elements)",
                    d.name()
                ),
            ));
        };
        // In bytes: within the datum, whose size in bytes was checked when it was made.
        let moved = rt
            .migrate_range(&d, first * elem..end * elem, node)
            .map_err(move_failed("locus_migrate_range"))?;
        // SAFETY: forwarded from the caller.
        unsafe { put_pages(pages, moved.pages) };
        Ok(())
    })
}

/// Arms every page of a shared datum for migration on next touch (MaMI's
/// `mami_migrate_on_next_touch`): each page moves to the node of the first task that
/// declares an access to it, when that task starts. Writes the pages armed to `*pages`
/// (which may be NULL). A versioned datum is `LOCUS_E_CONFIG` (its next version is
/// placed where its producer runs). Other errors as for `locus_migrate`.
///
/// # Safety
///
/// `pages` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_migrate_on_next_touch(
    runtime: locus_runtime,
    data: locus_data,
    pages: *mut u64,
) -> locus_status {
    guard(|| {
        between_runs("locus_migrate_on_next_touch")?;
        let rt = runtime_of(runtime)?;
        let (d, _, _) = data_of(data, runtime.bits)?;
        let armed = rt
            .migrate_on_next_touch(&d)
            .map_err(move_failed("locus_migrate_on_next_touch"))?;
        // SAFETY: forwarded from the caller.
        unsafe { put_pages(pages, armed as u64) };
        Ok(())
    })
}

/// From a body (or the run's root): submits a *migration task* into its scope. In
/// submission order, after the tasks that use the shared datum before it and before
/// those that use it after, the datum's pages move to `node`; the task runs preferably
/// on `node` and the run's report counts the pages (`migration.now_pages`). A
/// versioned datum, or a node outside the topology, is `LOCUS_E_DECLARATION`; a
/// context not the running body's `LOCUS_E_CONTEXT`; a datum of another runtime
/// `LOCUS_E_WRONG_RUNTIME`.
#[no_mangle]
pub extern "C" fn locus_scope_migrate(
    ctx: locus_ctx,
    data: locus_data,
    node: usize,
) -> locus_status {
    guard(|| {
        with_scope(ctx, |scope, runtime| {
            let (d, _, _) = data_of(data, runtime)?;
            scope
                .migrate(&d, node)
                .map_err(in_call("locus_scope_migrate"))?;
            Ok(())
        })
    })
}
