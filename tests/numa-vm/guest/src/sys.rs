//! Minimal raw NUMA system calls used by the placement checks.

use std::io;

const MPOL_BIND: i32 = 2;
const MPOL_INTERLEAVE: i32 = 3;
const MPOL_F_NODE: u64 = 1;
const MPOL_F_ADDR: u64 = 2;
const MPOL_MF_MOVE: u64 = 1 << 1;
/// Bits in the node masks passed to the kernel (one `u64`).
const MASK_BITS: u64 = 64;

fn mask(nodes: &[usize]) -> u64 {
    nodes.iter().fold(0u64, |m, &n| m | (1u64 << n))
}

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn mbind(addr: *mut u8, len: usize, mode: i32, nodes: &[usize], flags: u64) -> io::Result<()> {
    let m = mask(nodes);
    // SAFETY: mbind reads `MASK_BITS` bits from `m`, which lives for the call; the
    // kernel validates the range and only changes the policy of this mapping.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            mode,
            &m as *const u64,
            MASK_BITS + 1,
            flags,
        )
    };
    check(ret).map(|_| ())
}

/// Binds `len` bytes at `addr` to `node`.
pub fn bind(addr: *mut u8, len: usize, node: usize) -> io::Result<()> {
    mbind(addr, len, MPOL_BIND, &[node], 0)
}

/// Interleaves `len` bytes at `addr` page by page over `nodes`.
pub fn interleave(addr: *mut u8, len: usize, nodes: &[usize]) -> io::Result<()> {
    mbind(addr, len, MPOL_INTERLEAVE, nodes, 0)
}

/// Binds `len` bytes at `addr` to `node` and moves the pages already there.
pub fn migrate(addr: *mut u8, len: usize, node: usize) -> io::Result<()> {
    mbind(addr, len, MPOL_BIND, &[node], MPOL_MF_MOVE)
}

/// The node of each page in `pages`, as `move_pages` reports it (negative: an errno).
pub fn nodes_of(pages: &[*mut u8]) -> io::Result<Vec<i32>> {
    let mut status = vec![0i32; pages.len()];
    // SAFETY: with a null node array move_pages only writes `pages.len()` statuses
    // into `status`, which has that length.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0,
            pages.len(),
            pages.as_ptr(),
            std::ptr::null::<i32>(),
            status.as_mut_ptr(),
            0,
        )
    };
    check(ret).map(|_| status)
}

/// The node of the page holding `addr`, as `get_mempolicy` reports it.
pub fn node_of(addr: *mut u8) -> io::Result<usize> {
    let mut node: i32 = -1;
    // SAFETY: with MPOL_F_NODE | MPOL_F_ADDR and no mask, the kernel writes one int
    // into `node`.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut i32,
            std::ptr::null_mut::<u64>(),
            0u64,
            addr,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    check(ret).map(|_| node as usize)
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`; `cpu` is below CPU_SETSIZE here.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let ret = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    check(ret as libc::c_long).map(|_| ())
}
