//! Placement primitives: where the pages of a range of memory live, and where the
//! calling thread runs.
//!
//! Thin wrappers over the Linux system calls `mbind`, `get_mempolicy`, `move_pages`,
//! `madvise` and `sched_setaffinity`, called through `libc::syscall` (libnuma is not
//! needed). Nodes are plain `usize` indices of the kernel's NUMA nodes; CPUs are OS CPU
//! numbers.
//!
//! # Ranges and pages
//!
//! The kernel places memory by page. Every function that takes a range `(addr, len)`
//! acts on the pages that contain any byte of it: the start is rounded down and the end
//! rounded up to the page size. A range of `len == 0` is a no-op.
//!
//! # Machines without NUMA
//!
//! When [`numa_available`] is false (the kernel was built without NUMA, so the system
//! calls return `ENOSYS`; a seccomp filter forbids them; or `/sys/devices/system/node` is
//! missing), every placement call
//! is a documented no-op: [`bind`], [`interleave`], [`migrate`] succeed without doing
//! anything, and the queries ([`node_of`], [`query_nodes`], [`current_node`]) report
//! node 0 for every page. A system call that returns `ENOSYS` later is treated the same way. Thread
//! pinning does not depend on NUMA and always goes to the kernel.
//!
//! # Errors
//!
//! Any other failure of the kernel comes back as a [`PlacementError`] that names the call
//! and carries its `errno` (for example `EINVAL` for a node the machine does not have).
//!
//! # Why these functions are safe
//!
//! A memory policy decides on which node pages are allocated; migration copies pages to
//! another node and remaps them in place. Neither changes the contents of memory a Rust
//! reference can observe, and the kernel validates every address it is given (an unmapped
//! range gives `EFAULT` or `ENOMEM`, never undefined behaviour). So the functions take
//! raw addresses and are safe to call.

use std::ffi::{c_int, c_ulong, c_void};
use std::sync::OnceLock;

/// Memory policy modes (`linux/mempolicy.h`); libc does not define them.
pub mod mpol {
    /// Default policy: allocate on the node of the CPU that touches the page.
    pub const MPOL_DEFAULT: i32 = 0;
    /// Prefer one node, fall back to others when it is full.
    pub const MPOL_PREFERRED: i32 = 1;
    /// Allocate only on the given nodes.
    pub const MPOL_BIND: i32 = 2;
    /// Spread pages round-robin over the given nodes.
    pub const MPOL_INTERLEAVE: i32 = 3;
    /// Allocate on the node of the CPU that touches the page (explicitly).
    pub const MPOL_LOCAL: i32 = 4;
    /// Prefer a set of nodes.
    pub const MPOL_PREFERRED_MANY: i32 = 5;

    /// Mode flag: the node mask is not remapped when the cpuset changes.
    pub const MPOL_F_STATIC_NODES: i32 = 1 << 15;
    /// Mode flag: the node mask is relative to the cpuset's nodes.
    pub const MPOL_F_RELATIVE_NODES: i32 = 1 << 14;

    /// `get_mempolicy` flag: return a node id instead of a policy.
    pub const MPOL_F_NODE: u64 = 1 << 0;
    /// `get_mempolicy` flag: look up the policy of an address.
    pub const MPOL_F_ADDR: u64 = 1 << 1;
    /// `get_mempolicy` flag: return the nodes the task may use.
    pub const MPOL_F_MEMS_ALLOWED: u64 = 1 << 2;

    /// `mbind` flag: fail if existing pages do not follow the policy.
    pub const MPOL_MF_STRICT: u32 = 1 << 0;
    /// `mbind`/`move_pages` flag: move pages used only by this process.
    pub const MPOL_MF_MOVE: u32 = 1 << 1;
    /// `mbind`/`move_pages` flag: move all pages (needs `CAP_SYS_NICE`).
    pub const MPOL_MF_MOVE_ALL: u32 = 1 << 2;
}

use mpol::*;

/// Nodes above this index are rejected with `EINVAL` before any system call, so that a
/// corrupt index never makes a huge node mask.
pub const MAX_NODES: usize = 4096;

/// A placement or pinning call that the kernel refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {}", std::io::Error::from_raw_os_error(*.errno))]
pub struct PlacementError {
    /// The system call, e.g. `"mbind"`.
    pub call: &'static str,
    /// The `errno` it returned, e.g. `libc::EINVAL`.
    pub errno: i32,
}

impl PlacementError {
    fn last(call: &'static str) -> Self {
        PlacementError {
            call,
            errno: std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        }
    }

    /// The error as an [`std::io::Error`].
    pub fn io_error(&self) -> std::io::Error {
        std::io::Error::from_raw_os_error(self.errno)
    }
}

/// Whether the kernel supports NUMA memory policies: `/sys/devices/system/node` exists
/// and `get_mempolicy` succeeds (it fails with `ENOSYS` without NUMA, or `EPERM` under a
/// seccomp filter that forbids memory-policy calls). Probed once and cached.
pub fn numa_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        if !std::path::Path::new("/sys/devices/system/node").is_dir() {
            return false;
        }
        // SAFETY: get_mempolicy with null mode and mask pointers and no flags only
        // queries the calling thread's policy and writes nothing.
        let r = unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                std::ptr::null_mut::<c_int>(),
                std::ptr::null_mut::<c_ulong>(),
                0 as c_ulong,
                std::ptr::null_mut::<c_void>(),
                0 as c_ulong,
            )
        };
        // Any failure counts as unavailable: ENOSYS (no NUMA in the kernel), but also
        // EPERM from a seccomp filter, under which mbind would fail too.
        r == 0
    })
}

/// The number of NUMA nodes the machine has online (highest online index + 1), read
/// from `/sys/devices/system/node/online`; 1 without NUMA.
pub fn online_nodes() -> usize {
    if !numa_available() {
        return 1;
    }
    std::fs::read_to_string("/sys/devices/system/node/online")
        .ok()
        .and_then(|s| parse_node_list(&s).into_iter().max())
        .map_or(1, |max| max + 1)
}

/// Parses a kernel list such as `0-3,5` into indices.
fn parse_node_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.trim().parse::<usize>().ok()),
        }
    }
    out
}

/// The size of a page in bytes.
pub fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no memory-safety preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            p as usize
        } else {
            4096
        }
    })
}

/// Bytes of memory this machine has, RAM and swap together (`sysinfo(2)`): no mapping
/// larger than this can ever be backed. `None` if the kernel does not say.
pub fn machine_memory() -> Option<u64> {
    // SAFETY: an all-zero `sysinfo` is a valid value of the plain C struct, and
    // `sysinfo` only writes into the struct it is given.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is valid for writes.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return None;
    }
    let unit = u64::from(info.mem_unit.max(1));
    let total = (info.totalram as u64).saturating_add(info.totalswap as u64);
    Some(total.saturating_mul(unit)).filter(|&m| m > 0)
}

/// The page-aligned range `(start, len)` covering `(addr, len)`.
fn page_span(addr: *const u8, len: usize) -> (usize, usize) {
    let page = page_size();
    let start = addr as usize & !(page - 1);
    let end = (addr as usize).saturating_add(len).div_ceil(page) * page;
    (start, end - start)
}

/// A kernel node mask with the given nodes set, and the `maxnode` argument to pass with
/// it (the kernel reads `maxnode - 1` bits, hence the `+ 1`).
fn node_mask(
    nodes: &[usize],
    call: &'static str,
) -> Result<(Vec<c_ulong>, c_ulong), PlacementError> {
    const BITS: usize = c_ulong::BITS as usize;
    let max = nodes.iter().copied().max().unwrap_or(0);
    if max >= MAX_NODES || nodes.is_empty() {
        return Err(PlacementError {
            call,
            errno: libc::EINVAL,
        });
    }
    let words = max / BITS + 1;
    let mut mask = vec![0 as c_ulong; words];
    for &n in nodes {
        mask[n / BITS] |= 1 << (n % BITS);
    }
    Ok((mask, (words * BITS + 1) as c_ulong))
}

/// Whether to move pages that already exist when binding a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BindMode {
    /// Only set the policy: pages touched from now on go to the node; pages already
    /// present stay where they are.
    #[default]
    PolicyOnly,
    /// Also migrate the pages already present (`MPOL_MF_MOVE`).
    MoveExisting,
}

/// The outcome of a call the kernel may not support.
fn enosys_is_noop(r: Result<(), PlacementError>) -> Result<(), PlacementError> {
    match r {
        Err(e) if e.errno == libc::ENOSYS => Ok(()),
        r => r,
    }
}

/// `mbind(start, len, mode, mask, maxnode, flags)` over the pages of the range.
fn mbind(
    addr: *const u8,
    len: usize,
    mode: i32,
    nodes: &[usize],
    flags: u32,
) -> Result<(), PlacementError> {
    if len == 0 || !numa_available() {
        return Ok(());
    }
    let (mask, maxnode) = node_mask(nodes, "mbind")?;
    let (start, span) = page_span(addr, len);
    // SAFETY: (1) `mask` is a live buffer of `maxnode - 1` bits that the kernel only
    // reads; (2) mbind changes the policy (and with MPOL_MF_MOVE the physical location)
    // of pages, never their contents, and the kernel checks that the range is mapped.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            start as *mut c_void,
            span as c_ulong,
            mode as c_ulong,
            mask.as_ptr(),
            maxnode,
            flags as c_ulong,
        )
    };
    enosys_is_noop(if r == 0 {
        Ok(())
    } else {
        Err(PlacementError::last("mbind"))
    })
}

/// Binds the pages of `(addr, len)` to `node` (`mbind` with `MPOL_BIND`): pages are
/// allocated on that node only. With [`BindMode::MoveExisting`], pages already present
/// elsewhere are migrated too.
///
/// A node the machine does not have gives `Err` with `EINVAL`. No-op without NUMA.
///
/// ```
/// use locus_mem::placement::{bind, BindMode};
/// let buf = vec![0u8; 1 << 16];
/// bind(buf.as_ptr(), buf.len(), 0, BindMode::PolicyOnly).unwrap();
/// ```
pub fn bind(
    addr: *const u8,
    len: usize,
    node: usize,
    mode: BindMode,
) -> Result<(), PlacementError> {
    let flags = match mode {
        BindMode::PolicyOnly => 0,
        BindMode::MoveExisting => MPOL_MF_MOVE,
    };
    mbind(addr, len, MPOL_BIND, &[node], flags)
}

/// Interleaves the pages of `(addr, len)` round-robin over `nodes` (`MPOL_INTERLEAVE`).
/// Pages already present stay where they are. No-op without NUMA; an empty `nodes`
/// gives `EINVAL`.
pub fn interleave(addr: *const u8, len: usize, nodes: &[usize]) -> Result<(), PlacementError> {
    mbind(addr, len, MPOL_INTERLEAVE, nodes, 0)
}

/// Resets the policy of the pages of `(addr, len)` to the default (first touch).
pub fn reset_policy(addr: *const u8, len: usize) -> Result<(), PlacementError> {
    if len == 0 || !numa_available() {
        return Ok(());
    }
    let (start, span) = page_span(addr, len);
    // SAFETY: MPOL_DEFAULT with a null mask only resets the policy of the range; the
    // kernel checks that the range is mapped.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            start as *mut c_void,
            span as c_ulong,
            MPOL_DEFAULT as c_ulong,
            std::ptr::null::<c_ulong>(),
            0 as c_ulong,
            0 as c_ulong,
        )
    };
    enosys_is_noop(if r == 0 {
        Ok(())
    } else {
        Err(PlacementError::last("mbind"))
    })
}

/// Where one page is, as `move_pages` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageStatus {
    /// The page is present on this node.
    Node(usize),
    /// The page was never touched (no physical page yet).
    NotPresent,
    /// The kernel reported this `errno` for the page (e.g. `EFAULT` for an unmapped
    /// address, `EBUSY` or `ENOMEM` after a failed migration).
    Error(i32),
}

impl PageStatus {
    fn from_status(s: c_int) -> Self {
        match s {
            s if s >= 0 => PageStatus::Node(s as usize),
            s if -s == libc::ENOENT => PageStatus::NotPresent,
            s => PageStatus::Error(-s),
        }
    }

    /// The node of the page, if it is present.
    pub fn node(self) -> Option<usize> {
        match self {
            PageStatus::Node(n) => Some(n),
            _ => None,
        }
    }
}

/// The page addresses covering `(addr, len)`.
fn pages_of(addr: *const u8, len: usize) -> Vec<*mut c_void> {
    let page = page_size();
    let (start, span) = page_span(addr, len);
    (0..span / page)
        .map(|i| (start + i * page) as *mut c_void)
        .collect()
}

/// `move_pages(0, count, pages, nodes, status, flags)`; `nodes` null queries.
fn move_pages(
    pages: &[*mut c_void],
    targets: Option<&[c_int]>,
    call: &'static str,
) -> Result<Vec<PageStatus>, PlacementError> {
    let mut status: Vec<c_int> = vec![0; pages.len()];
    // SAFETY: (1) `pages`, `targets` (when given) and `status` are live arrays of
    // `pages.len()` entries; the kernel reads the first two and writes `status`;
    // (2) migration preserves page contents, and the kernel checks every address.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as c_int,
            pages.len() as c_ulong,
            pages.as_ptr(),
            targets.map_or(std::ptr::null(), |t| t.as_ptr()),
            status.as_mut_ptr(),
            MPOL_MF_MOVE as c_int,
        )
    };
    if r < 0 {
        return Err(PlacementError::last(call));
    }
    Ok(status.into_iter().map(PageStatus::from_status).collect())
}

/// The node of every page of `(addr, len)` (`move_pages` with a null node array), one
/// entry per page, in address order. Does not touch the pages. Without NUMA every page
/// reports node 0.
pub fn query_nodes(addr: *const u8, len: usize) -> Result<Vec<PageStatus>, PlacementError> {
    let pages = pages_of(addr, len);
    if !numa_available() {
        return Ok(vec![PageStatus::Node(0); pages.len()]);
    }
    match move_pages(&pages, None, "move_pages") {
        Err(e) if e.errno == libc::ENOSYS => Ok(vec![PageStatus::Node(0); pages.len()]),
        r => r,
    }
}

/// The node of the page that holds `addr` (`get_mempolicy` with
/// `MPOL_F_NODE | MPOL_F_ADDR`). The kernel faults the page in if it was never touched
/// (placing it by the range's policy). Node 0 without NUMA.
pub fn node_of(addr: *const u8) -> Result<usize, PlacementError> {
    if !numa_available() {
        return Ok(0);
    }
    let mut node: c_int = 0;
    // SAFETY: `node` is a live int the kernel writes; no mask is passed; the kernel
    // checks that `addr` is mapped (EFAULT otherwise).
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut c_int,
            std::ptr::null_mut::<c_ulong>(),
            0 as c_ulong,
            addr as *mut c_void,
            (MPOL_F_NODE | MPOL_F_ADDR) as c_ulong,
        )
    };
    if r == 0 {
        Ok(node as usize)
    } else {
        let e = PlacementError::last("get_mempolicy");
        if e.errno == libc::ENOSYS {
            Ok(0)
        } else {
            Err(e)
        }
    }
}

/// Migrates the present pages of `(addr, len)` to `node` (`move_pages` with a target
/// per page) and returns the status of each page afterwards: `Node(node)` for pages now
/// there, `NotPresent` for pages never touched (nothing to move), `Error` for pages the
/// kernel could not move. A node the machine does not have gives `Err` (`ENODEV` or
/// `EINVAL`). No-op reporting node 0 without NUMA.
///
/// To also set the policy for pages touched later, use [`bind`] with
/// [`BindMode::MoveExisting`].
pub fn migrate(
    addr: *const u8,
    len: usize,
    node: usize,
) -> Result<Vec<PageStatus>, PlacementError> {
    let pages = pages_of(addr, len);
    if !numa_available() {
        return Ok(vec![PageStatus::Node(0); pages.len()]);
    }
    if node >= MAX_NODES {
        return Err(PlacementError {
            call: "move_pages",
            errno: libc::EINVAL,
        });
    }
    let targets = vec![node as c_int; pages.len()];
    match move_pages(&pages, Some(&targets), "move_pages") {
        Err(e) if e.errno == libc::ENOSYS => Ok(vec![PageStatus::Node(0); pages.len()]),
        r => r,
    }
}

/// Asks the kernel not to back `(addr, len)` with transparent huge pages
/// (`MADV_NOHUGEPAGE`), so that placement stays at page granularity.
pub fn madvise_nohugepage(addr: *const u8, len: usize) -> Result<(), PlacementError> {
    advise_pages(addr, len, libc::MADV_NOHUGEPAGE)
}

/// Asks the kernel to back `(addr, len)` with transparent huge pages where it can
/// (`MADV_HUGEPAGE`): the 2 MiB-aligned parts of the range then fault in whole huge
/// pages, when the kernel's setting is `madvise` or `always`. Fails with `EINVAL` on a
/// kernel without transparent huge pages.
pub fn madvise_hugepage(addr: *const u8, len: usize) -> Result<(), PlacementError> {
    advise_pages(addr, len, libc::MADV_HUGEPAGE)
}

/// `madvise(advice)` over the pages spanning `(addr, len)`, for an advice that only
/// changes how the range may be backed.
fn advise_pages(addr: *const u8, len: usize, advice: c_int) -> Result<(), PlacementError> {
    if len == 0 {
        return Ok(());
    }
    let (start, span) = page_span(addr, len);
    // SAFETY: the advice given here (huge pages or not) only changes how the range may
    // be backed, never its contents; the kernel checks that the range is mapped
    // (ENOMEM otherwise).
    let r = unsafe { libc::madvise(start as *mut c_void, span, advice) };
    if r == 0 {
        Ok(())
    } else {
        Err(PlacementError::last("madvise"))
    }
}

/// Pins the calling thread to one OS CPU (`sched_setaffinity`).
pub fn pin_thread_to_cpu(cpu: usize) -> Result<(), PlacementError> {
    set_thread_affinity(&[cpu])
}

/// Restricts the calling thread to the given OS CPUs (`sched_setaffinity`). A CPU
/// beyond the `cpu_set_t` size, or a set the kernel cannot honour, gives `EINVAL`.
pub fn set_thread_affinity(cpus: &[usize]) -> Result<(), PlacementError> {
    const SETSIZE: usize = libc::CPU_SETSIZE as usize;
    if cpus.is_empty() || cpus.iter().any(|&c| c >= SETSIZE) {
        return Err(PlacementError {
            call: "sched_setaffinity",
            errno: libc::EINVAL,
        });
    }
    // SAFETY: cpu_set_t is a plain bit array, valid when zeroed.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: `c < CPU_SETSIZE`, checked above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(PlacementError::last("sched_setaffinity"))
    }
}

/// The OS CPUs the calling thread may run on (`sched_getaffinity`).
pub fn thread_affinity() -> Result<Vec<usize>, PlacementError> {
    // SAFETY: cpu_set_t is a plain bit array, valid when zeroed.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed; the kernel writes it.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(PlacementError::last("sched_getaffinity"));
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c < CPU_SETSIZE` and `set` is initialised.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// The NUMA node of the CPU the calling thread is running on right now (`getcpu`);
/// 0 without NUMA.
pub fn current_node() -> Result<usize, PlacementError> {
    if !numa_available() {
        return Ok(0);
    }
    let (mut cpu, mut node): (libc::c_uint, libc::c_uint) = (0, 0);
    // SAFETY: `cpu` and `node` are live integers the kernel writes; the third argument
    // (an unused cache) may be null.
    let r = unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut libc::c_uint,
            &mut node as *mut libc::c_uint,
            std::ptr::null_mut::<c_void>(),
        )
    };
    if r == 0 {
        Ok(node as usize)
    } else {
        Err(PlacementError::last("getcpu"))
    }
}

/// The OS CPU the calling thread is running on right now (`sched_getcpu`).
pub fn current_cpu() -> Result<usize, PlacementError> {
    // SAFETY: sched_getcpu has no preconditions.
    let r = unsafe { libc::sched_getcpu() };
    if r >= 0 {
        Ok(r as usize)
    } else {
        Err(PlacementError::last("sched_getcpu"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An anonymous private mapping for the tests, unmapped on drop.
    struct Mapping {
        ptr: *mut u8,
        len: usize,
    }

    impl Mapping {
        fn new(pages: usize) -> Mapping {
            let len = pages * page_size();
            // SAFETY: an anonymous private mapping with no address hint has no
            // preconditions.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(ptr, libc::MAP_FAILED);
            Mapping {
                ptr: ptr.cast(),
                len,
            }
        }

        fn touch(&self) {
            // SAFETY: the mapping is `len` writable bytes owned by this struct.
            unsafe { std::ptr::write_bytes(self.ptr, 0xA5, self.len) };
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: `ptr`/`len` is the mapping created in `new`, unmapped once.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }

    #[test]
    fn node_list_parses_ranges() {
        assert_eq!(parse_node_list("0\n"), vec![0]);
        assert_eq!(parse_node_list("0-3,5"), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_node_list(""), Vec::<usize>::new());
    }

    #[test]
    fn page_span_rounds_outward() {
        let p = page_size();
        assert_eq!(page_span((p + 1) as *const u8, 1), (p, p));
        assert_eq!(page_span((p + 1) as *const u8, p), (p, 2 * p));
        assert_eq!(page_span(p as *const u8, p), (p, p));
    }

    #[test]
    fn bind_to_node_zero_places_touched_pages_there() {
        let m = Mapping::new(8);
        bind(m.ptr, m.len, 0, BindMode::PolicyOnly).unwrap();
        let before = query_nodes(m.ptr, m.len).unwrap();
        assert_eq!(before.len(), 8);
        if numa_available() {
            assert!(
                before.iter().all(|s| *s == PageStatus::NotPresent),
                "{before:?}"
            );
        }
        m.touch();
        let after = query_nodes(m.ptr, m.len).unwrap();
        assert!(after.iter().all(|s| *s == PageStatus::Node(0)), "{after:?}");
        assert_eq!(node_of(m.ptr).unwrap(), 0);
        // SAFETY: the address is inside the mapping.
        assert_eq!(node_of(unsafe { m.ptr.add(m.len - 1) }).unwrap(), 0);
    }

    #[test]
    fn bind_with_move_on_touched_pages() {
        let m = Mapping::new(4);
        m.touch();
        bind(m.ptr, m.len, 0, BindMode::MoveExisting).unwrap();
        let after = query_nodes(m.ptr, m.len).unwrap();
        assert!(after.iter().all(|s| *s == PageStatus::Node(0)), "{after:?}");
    }

    #[test]
    fn bind_to_missing_node_is_a_typed_error() {
        if !numa_available() {
            return;
        }
        let m = Mapping::new(2);
        let missing = online_nodes() + 7;
        let e = bind(m.ptr, m.len, missing, BindMode::PolicyOnly).unwrap_err();
        assert_eq!(e.call, "mbind");
        assert_eq!(e.errno, libc::EINVAL, "{e}");
        assert!(e.to_string().starts_with("mbind failed"), "{e}");
        let e = bind(m.ptr, m.len, MAX_NODES, BindMode::PolicyOnly).unwrap_err();
        assert_eq!(e.errno, libc::EINVAL);
    }

    #[test]
    fn interleave_over_node_zero() {
        let m = Mapping::new(8);
        interleave(m.ptr, m.len, &[0]).unwrap();
        m.touch();
        let nodes = query_nodes(m.ptr, m.len).unwrap();
        assert!(nodes.iter().all(|s| *s == PageStatus::Node(0)), "{nodes:?}");
        assert_eq!(
            interleave(m.ptr, m.len, &[]).unwrap_err().errno,
            libc::EINVAL
        );
        reset_policy(m.ptr, m.len).unwrap();
    }

    #[test]
    fn migrate_to_node_zero() {
        let m = Mapping::new(6);
        // Touch only the first half: the rest has nothing to move.
        // SAFETY: the first three pages are inside the mapping.
        unsafe { std::ptr::write_bytes(m.ptr, 1, 3 * page_size()) };
        let status = migrate(m.ptr, m.len, 0).unwrap();
        assert_eq!(status.len(), 6);
        assert!(
            status[..3].iter().all(|s| *s == PageStatus::Node(0)),
            "{status:?}"
        );
        if numa_available() {
            assert!(
                status[3..].iter().all(|s| *s == PageStatus::NotPresent),
                "{status:?}"
            );
            let e = migrate(m.ptr, m.len, online_nodes() + 3).unwrap_err();
            assert_eq!(e.call, "move_pages");
            assert!(e.errno == libc::ENODEV || e.errno == libc::EINVAL, "{e}");
        }
    }

    #[test]
    fn query_of_unmapped_page_reports_an_error_per_page() {
        if !numa_available() {
            return;
        }
        // Below `vm.mmap_min_addr` (64 KiB by default): never mapped, so no other test
        // thread can map it meanwhile.
        let addr = (2 * page_size()) as *const u8;
        let status = query_nodes(addr, 1).unwrap();
        assert_eq!(status, vec![PageStatus::Error(libc::EFAULT)]);
        assert_eq!(node_of(addr).unwrap_err().errno, libc::EFAULT);
    }

    #[test]
    fn hugepage_on_a_mapping() {
        let m = Mapping::new(4 << 20);
        // A kernel without transparent huge pages refuses the advice; nothing else may.
        if let Err(e) = madvise_hugepage(m.ptr, m.len) {
            assert_eq!(e.errno, libc::EINVAL, "{e}");
        }
        madvise_hugepage(m.ptr, 0).unwrap();
    }

    #[test]
    fn nohugepage_on_a_mapping() {
        let m = Mapping::new(4);
        madvise_nohugepage(m.ptr, m.len).unwrap();
        madvise_nohugepage(m.ptr, 0).unwrap();
    }

    #[test]
    fn zero_length_ranges_are_noops() {
        let p = std::ptr::null::<u8>();
        bind(p, 0, 0, BindMode::PolicyOnly).unwrap();
        interleave(p, 0, &[0]).unwrap();
        assert!(query_nodes(p, 0).unwrap().is_empty());
    }

    #[test]
    fn pin_to_cpu_zero() {
        // On a thread of its own, so the test harness's threads keep their affinity.
        std::thread::spawn(|| {
            let all = thread_affinity().unwrap();
            assert!(all.contains(&0));
            // The node of CPU 0 as sysfs has it (a `nodeN` link in the CPU's directory).
            let node_of_cpu0 = std::fs::read_dir("/sys/devices/system/cpu/cpu0")
                .into_iter()
                .flatten()
                .flatten()
                .find_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
                .filter(|_| numa_available())
                .unwrap_or(0usize);
            pin_thread_to_cpu(0).unwrap();
            assert_eq!(thread_affinity().unwrap(), vec![0]);
            for _ in 0..100 {
                assert_eq!(current_cpu().unwrap(), 0);
                assert_eq!(current_node().unwrap(), node_of_cpu0);
                std::thread::yield_now();
            }
            set_thread_affinity(&all).unwrap();
            let e = pin_thread_to_cpu(libc::CPU_SETSIZE as usize).unwrap_err();
            assert_eq!((e.call, e.errno), ("sched_setaffinity", libc::EINVAL));
        })
        .join()
        .unwrap();
    }
}
