//! Data: `locus_data_*`, `locus_fetch`, `locus_node_of`.
//!
//! A C datum is a Locus datum of bytes (`Data<u8>`) that records its element size and
//! count. Every buffer Locus places is at least 64-byte aligned (pool blocks) or
//! page-aligned (shared data), and a view of a range starts at a multiple of the
//! element size, so a view is aligned for any C type of that size (`double`,
//! `int64_t`, a struct of them) as long as its alignment divides its size, which C
//! guarantees.

use std::ffi::{c_char, c_void};

use locus::{Data, RegionPolicy, Runtime};

use crate::handles::Table;
use crate::runtime::{locus_runtime, runtime_of};
use crate::status::{c_str, guard, in_call, locus_status, put, CResult, Fail};

/// A datum: a logical array of `count` elements of `elem_size` bytes, versioned or
/// shared. Made by `locus_data_create`, `locus_data_from`, `locus_data_shared` or, in a
/// task, `locus_ctx_data`; freed by `locus_data_free` or with its runtime. The
/// all-zero value is the null handle.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_data {
    /// Opaque: a slot and its generation in Locus's table of data.
    pub bits: u64,
}

/// Placement policies of shared data (`locus_data_shared`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum locus_policy {
    /// Round-robin over all nodes, page by page.
    LOCUS_POLICY_INTERLEAVE = 0,
    /// Every page on one node (the `node` argument).
    LOCUS_POLICY_BIND = 1,
    /// One contiguous block of pages per node, in node order.
    LOCUS_POLICY_BLOCKED = 2,
    /// Each page on the node of the first task that touches it.
    LOCUS_POLICY_FIRST_TOUCH = 3,
}

/// A datum in the table.
pub(crate) struct DataEntry {
    pub(crate) data: Data<u8>,
    pub(crate) elem_size: usize,
    pub(crate) count: usize,
    /// The handle bits of the runtime that made it.
    pub(crate) runtime: u64,
}

pub(crate) static DATA: Table<DataEntry> = Table::new("data");

/// The memory of the registered data alive now, as byte ranges `start -> end`: memory
/// registered again while it is would be two data, each updated in place, over the
/// same bytes.
static REGISTERED: std::sync::Mutex<std::collections::BTreeMap<usize, usize>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Records `start..end` as registered, unless it overlaps memory registered already.
fn claim(start: usize, end: usize) -> CResult {
    let mut registered = REGISTERED.lock().unwrap_or_else(|p| p.into_inner());
    // The last range starting before `end` is the only one that may overlap: ranges do
    // not overlap each other.
    if let Some((&s, &e)) = registered.range(..end).next_back() {
        if e > start && start < end {
            return Err(Fail::new(
                locus_status::LOCUS_E_ARGUMENT,
                format!(
                    "ptr: the {} bytes at {start:#x} overlap memory registered already \
                     ({} bytes at {s:#x}); its `release` is not called",
                    end - start,
                    e - s
                ),
            ));
        }
    }
    if start < end {
        registered.insert(start, end);
    }
    Ok(())
}

/// Forgets the registered range starting at `start`.
fn unclaim(start: usize) {
    REGISTERED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&start);
}

/// Checks an element size and count; returns the size in bytes.
pub(crate) fn checked_size(name: &str, elem_size: usize, count: usize) -> CResult<usize> {
    if elem_size == 0 {
        return Err(Fail::new(
            locus_status::LOCUS_E_SIZE,
            format!("datum `{name}`: elem_size is 0"),
        ));
    }
    count
        .checked_mul(elem_size)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Fail::new(
                locus_status::LOCUS_E_SIZE,
                format!(
                    "datum `{name}`: {count} elements of {elem_size} bytes overflow the \
                     address space"
                ),
            )
        })
}

/// Stores a new datum and writes its handle.
///
/// # Safety
///
/// `out` is valid for a write (checked non-NULL by the caller).
pub(crate) unsafe fn store(
    data: Data<u8>,
    elem_size: usize,
    count: usize,
    runtime: u64,
    out: *mut locus_data,
) -> CResult {
    let bits = DATA.insert(DataEntry {
        data,
        elem_size,
        count,
        runtime,
    });
    // SAFETY: forwarded from the caller.
    unsafe { put(out, locus_data { bits }, "out") }
}

/// Reads `bytes` bytes at `values` (NULL allowed only when `bytes` is 0).
///
/// # Safety
///
/// `values` is NULL or valid for reads of `bytes` bytes.
unsafe fn input<'a>(values: *const c_void, bytes: usize) -> CResult<&'a [u8]> {
    if bytes == 0 {
        return Ok(&[]);
    }
    if values.is_null() {
        return Err(crate::status::null("values"));
    }
    // SAFETY: non-NULL and valid for `bytes` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(values.cast::<u8>(), bytes) })
}

/// The common start of the constructors: the runtime, the name and the size.
///
/// # Safety
///
/// `name` is NULL or NUL-terminated.
unsafe fn prepare(
    runtime: locus_runtime,
    name: *const c_char,
    elem_size: usize,
    count: usize,
    out: *mut locus_data,
) -> CResult<(std::sync::Arc<Runtime>, String, usize)> {
    if out.is_null() {
        return Err(crate::status::null("out"));
    }
    // SAFETY: forwarded from the caller.
    let name = unsafe { c_str(name, "name") }?.to_string();
    let rt = runtime_of(runtime)?;
    let bytes = checked_size(&name, elem_size, count)?;
    Ok((rt, name, bytes))
}

/// Makes a datum of `count` elements of `elem_size` bytes, zero until a task writes
/// it (versioned; shared under `shm-base`).
///
/// # Safety
///
/// `name` is NULL (an error) or NUL-terminated; `out` is NULL (an error) or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn locus_data_create(
    runtime: locus_runtime,
    name: *const c_char,
    elem_size: usize,
    count: usize,
    out: *mut locus_data,
) -> locus_status {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (rt, name, bytes) = unsafe { prepare(runtime, name, elem_size, count, out) }?;
        let data = rt.data::<u8>(name, bytes);
        // SAFETY: `out` checked non-NULL by `prepare`.
        unsafe { store(data, elem_size, count, runtime.bits, out) }
    })
}

/// Makes a datum holding a copy of `count` elements of `elem_size` bytes at `values`.
///
/// # Safety
///
/// `name` is NULL (an error) or NUL-terminated; `values` is valid for reads of
/// `elem_size * count` bytes (NULL is an error unless that is 0); `out` is NULL (an
/// error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_data_from(
    runtime: locus_runtime,
    name: *const c_char,
    elem_size: usize,
    count: usize,
    values: *const c_void,
    out: *mut locus_data,
) -> locus_status {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (rt, name, bytes) = unsafe { prepare(runtime, name, elem_size, count, out) }?;
        // SAFETY: forwarded from the caller.
        let values = unsafe { input(values, bytes) }?;
        let data = rt
            .data_from::<u8>(name, values)
            .map_err(in_call("locus_data_from"))?;
        // SAFETY: `out` checked non-NULL by `prepare`.
        unsafe { store(data, elem_size, count, runtime.bits, out) }
    })
}

/// Makes a *shared* datum: one buffer placed now by `policy` (a `locus_policy`; `node`
/// is the node for `LOCUS_POLICY_BIND` and ignored otherwise) and updated in place by
/// the tasks that write it. It holds a copy of `values`, or zeros if `values` is NULL.
/// A bad policy is `LOCUS_E_ARGUMENT`; a node outside the topology `LOCUS_E_CONFIG`; a
/// size larger than the machine's memory (RAM and swap) `LOCUS_E_OUT_OF_MEMORY` at
/// once, before anything is mapped or touched.
///
/// # Safety
///
/// As `locus_data_from`, with `values` allowed to be NULL.
#[no_mangle]
pub unsafe extern "C" fn locus_data_shared(
    runtime: locus_runtime,
    name: *const c_char,
    elem_size: usize,
    count: usize,
    policy: u32,
    node: usize,
    values: *const c_void,
    out: *mut locus_data,
) -> locus_status {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (rt, name, bytes) = unsafe { prepare(runtime, name, elem_size, count, out) }?;
        let policy = match policy {
            0 => RegionPolicy::Interleave,
            1 => RegionPolicy::Bind(node),
            2 => RegionPolicy::Blocked,
            3 => RegionPolicy::FirstTouch,
            p => {
                return Err(Fail::new(
                    locus_status::LOCUS_E_ARGUMENT,
                    format!("datum `{name}`: unknown placement policy {p}"),
                ))
            }
        };
        let data = if values.is_null() {
            rt.shared::<u8>(name, bytes, policy)
                .map_err(in_call("locus_data_shared"))?
        } else {
            // SAFETY: forwarded from the caller.
            let values = unsafe { input(values, bytes) }?;
            rt.shared_from::<u8>(name, values, policy)
                .map_err(in_call("locus_data_shared"))?
        };
        // SAFETY: `out` checked non-NULL by `prepare`.
        unsafe { store(data, elem_size, count, runtime.bits, out) }
    })
}

/// Makes a *registered* datum: the caller's `count` elements of `elem_size` bytes at
/// `ptr` become a shared datum without a copy (its pages stay where they are; on real
/// NUMA nodes Locus reads their nodes from the kernel), updated in place by the tasks
/// that write it. `release(ptr)` is called exactly once, when the last handle and task
/// let go of the datum, or before this function returns if it fails; with `release`
/// NULL the caller frees the memory itself, after freeing every handle of the datum
/// and destroying the runtime. `ptr` must be aligned for the C type of the elements.
/// Memory that overlaps a datum registered and alive is refused (`LOCUS_E_ARGUMENT`),
/// and then `release` is not called: the memory is the other datum's.
///
/// # Safety
///
/// `name` is NULL (an error) or NUL-terminated; `ptr` is valid for reads and writes of
/// `elem_size * count` bytes, which nothing but Locus touches until `release` is called
/// (or, without `release`, until the runtime is destroyed); `out` is NULL (an error)
/// or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_data_register(
    runtime: locus_runtime,
    name: *const c_char,
    elem_size: usize,
    count: usize,
    ptr: *mut c_void,
    release: Option<unsafe extern "C" fn(ptr: *mut c_void)>,
    out: *mut locus_data,
) -> locus_status {
    // Called on every path that does not hand the memory to Locus.
    let give_back = || {
        if let (Some(release), false) = (release, ptr.is_null()) {
            // SAFETY: the caller's function for its own memory, called once.
            unsafe { release(ptr) };
        }
    };
    let mut handed = false;
    let status = guard(|| {
        // SAFETY: forwarded from the caller.
        let (rt, name, bytes) = unsafe { prepare(runtime, name, elem_size, count, out) }?;
        let Some(start) = std::ptr::NonNull::new(ptr.cast::<u8>()) else {
            return Err(crate::status::null("ptr"));
        };
        let address = ptr as usize;
        // Memory registered already stays with the datum that has it: refused, and
        // not released (that would free the other datum's memory).
        if let Err(e) = claim(address, address.saturating_add(bytes)) {
            handed = true;
            return Err(e);
        }
        let free: Box<dyn FnOnce() + Send> = Box::new(move || {
            unclaim(address);
            if let Some(release) = release {
                // SAFETY: the caller's function for its own memory, called once, when
                // Locus lets go of it.
                unsafe { release(address as *mut c_void) };
            }
        });
        handed = true;
        // SAFETY: the caller's contract: `bytes` bytes at `ptr`, valid and Locus's
        // alone until `free` runs; bytes need no alignment.
        let data = unsafe { rt.register_raw::<u8>(name, start, bytes, free) }
            .map_err(in_call("locus_data_register"))?;
        // SAFETY: `out` checked non-NULL by `prepare`.
        unsafe { store(data, elem_size, count, runtime.bits, out) }
    });
    if !handed {
        give_back();
    }
    status
}

/// Frees a datum's handle. Tasks already submitted that declare it still run; its
/// memory goes back once the last of them is done. A datum attached to an owner
/// (`locus_attach_*`) is detached.
#[no_mangle]
pub extern "C" fn locus_data_free(data: locus_data) -> locus_status {
    guard(|| {
        let entry = DATA.remove(data.bits)?;
        // A live datum's runtime is live: destroying a runtime frees its data handles.
        if let Ok(rt) = runtime_of(locus_runtime {
            bits: entry.runtime,
        }) {
            detach_freed(&rt, &entry);
        }
        Ok(())
    })
}

/// Detaches a datum whose handle is being freed: attached to a team, the datum holds
/// the team and the team the datum, and with the handle gone nothing could detach it
/// any more, so neither would ever be freed.
pub(crate) fn detach_freed(rt: &Runtime, entry: &DataEntry) {
    // The entry's runtime is `rt`: nothing to refuse.
    let _ = rt.detach(&entry.data);
}

/// The datum's element size and count (either pointer may be NULL).
///
/// # Safety
///
/// `elem_size` and `count` are NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_data_size(
    data: locus_data,
    elem_size: *mut usize,
    count: *mut usize,
) -> locus_status {
    guard(|| {
        let (e, c) = DATA.with(data.bits, |d| (d.elem_size, d.count))?;
        if !elem_size.is_null() {
            // SAFETY: non-NULL, valid for a write by the caller's contract.
            unsafe { elem_size.write(e) };
        }
        if !count.is_null() {
            // SAFETY: as above.
            unsafe { count.write(c) };
        }
        Ok(())
    })
}

/// The datum of `handle` if it belongs to runtime `runtime`.
pub(crate) fn data_of(handle: locus_data, runtime: u64) -> CResult<(Data<u8>, usize, usize)> {
    let (data, elem, count, owner) = DATA.with(handle.bits, |d| {
        (d.data.clone(), d.elem_size, d.count, d.runtime)
    })?;
    if owner != runtime {
        return Err(wrong_runtime(data.name()));
    }
    Ok((data, elem, count))
}

pub(crate) fn wrong_runtime(name: &str) -> Fail {
    Fail::new(
        locus_status::LOCUS_E_WRONG_RUNTIME,
        format!("datum `{name}` belongs to another runtime"),
    )
}

/// Checks that a user buffer of `count` elements matches the datum.
pub(crate) fn check_count(name: &str, want: usize, count: usize) -> CResult {
    if want != count {
        return Err(Fail::new(
            locus_status::LOCUS_E_SIZE,
            format!("datum `{name}` has {want} elements, the buffer {count}"),
        ));
    }
    Ok(())
}

/// Copies `bytes` out to `buf` (NULL allowed only when empty).
///
/// # Safety
///
/// `buf` is NULL or valid for writes of `bytes.len()` bytes.
pub(crate) unsafe fn output(bytes: &[u8], buf: *mut c_void) -> CResult {
    if bytes.is_empty() {
        return Ok(());
    }
    if buf.is_null() {
        return Err(crate::status::null("buf"));
    }
    // SAFETY: non-NULL and valid for `bytes.len()` bytes by the caller's contract;
    // a fresh Vec cannot overlap the user's buffer.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len()) };
    Ok(())
}

/// Copies the datum's current contents, `count` elements (which must be the datum's
/// count), to `buf`. `LOCUS_E_STATE` while a run is in progress on another thread
/// (rather than waiting for it: one of its bodies may be waiting for this thread);
/// from inside a task it is `LOCUS_E_DECLARATION` (use `locus_ctx_fetch` for
/// children's results).
///
/// # Safety
///
/// `buf` is valid for writes of `elem_size * count` bytes (NULL is an error unless
/// that is 0).
#[no_mangle]
pub unsafe extern "C" fn locus_fetch(
    runtime: locus_runtime,
    data: locus_data,
    buf: *mut c_void,
    count: usize,
) -> locus_status {
    guard(|| {
        let rt = runtime_of(runtime)?;
        let (d, _, want) = data_of(data, runtime.bits)?;
        check_count(d.name(), want, count)?;
        let bytes = rt.fetch(&d).map_err(in_call("locus_fetch"))?;
        // SAFETY: forwarded from the caller.
        unsafe { output(&bytes, buf) }
    })
}

/// Writes to `*node` the node holding the datum's current contents (for shared data,
/// the node holding most of its pages), or -1 while it has no memory (a versioned
/// datum never written). `LOCUS_E_STATE` while a run is in progress on another
/// thread (rather than waiting for it: one of its bodies may be waiting for this
/// thread); from inside a task it is `LOCUS_E_DECLARATION`.
///
/// # Safety
///
/// `node` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_node_of(
    runtime: locus_runtime,
    data: locus_data,
    node: *mut i64,
) -> locus_status {
    guard(|| {
        if node.is_null() {
            return Err(crate::status::null("node"));
        }
        let rt = runtime_of(runtime)?;
        let (d, _, _) = data_of(data, runtime.bits)?;
        let n = rt
            .node_of(&d)
            .map_err(in_call("locus_node_of"))?
            .map_or(-1, |n| n as i64);
        // SAFETY: non-NULL, valid for a write by the caller's contract.
        unsafe { put(node, n, "node") }
    })
}
