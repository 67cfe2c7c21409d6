//! Running a piece of a check on a thread pinned to a CPU of a chosen node.
//!
//! Checks touch memory from a node other than the one they expect the pages on, so
//! that a placement call that silently did nothing leaves the pages on the toucher's
//! node (first touch) and the check fails, instead of passing by luck of where the
//! thread happened to run.

use locus_mem::placement;

use crate::sysfs;

/// The node that checks expecting pages on `node` touch from: the next node.
pub fn foreign_node(node: usize, nodes: usize) -> usize {
    (node + 1) % nodes
}

/// Runs `f` on a new thread pinned to the first CPU of `node` and returns its result
/// with that CPU.
pub fn on_node<T, F>(node: usize, f: F) -> Result<(usize, T), String>
where
    T: Send,
    F: FnOnce() -> Result<T, String> + Send,
{
    let cpu = *sysfs::cpus_of(node)?
        .first()
        .ok_or_else(|| format!("node {node} has no CPU"))?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                placement::pin_thread_to_cpu(cpu).map_err(|e| e.to_string())?;
                let running = placement::current_cpu().map_err(|e| e.to_string())?;
                if running != cpu {
                    return Err(format!("pinned to CPU {cpu} but running on {running}"));
                }
                f().map(|t| (cpu, t))
            })
            .join()
            .map_err(|_| format!("the thread pinned to CPU {cpu} panicked"))?
    })
}
