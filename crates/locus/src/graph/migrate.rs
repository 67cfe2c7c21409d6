//! The runtime's migration setting (`sched::migrate`) applied as a task starts: the
//! pages of its shared data on other nodes moved to the executing node, and the
//! expected reuse the `auto` setting weighs.

use super::run::RunState;
use crate::data::Binding;
use smallvec::SmallVec;

/// The runtime's migration setting ([`crate::sched::migrate`]) applied to a shared
/// access `b` of a task starting on `node`: its pages on other nodes move to `node`
/// (`now`, `next-touch`), or do when the cost model finds it cheaper than accessing
/// them remotely over this task and the tasks already submitted that declare the datum
/// (`auto`). Returns the pages moved; a move the node limit refuses leaves the pages.
pub(super) fn migrate_remote(
    run: &RunState,
    shared: &crate::data::shared::SharedBuffer,
    b: &Binding,
    node: usize,
) -> u64 {
    use crate::config::Migration;
    use crate::data::shared::{MIGRATED_AUTO, MIGRATED_NEXT_TOUCH, MIGRATED_NOW};
    let (setting, costs) = &run.migration;
    if *setting == Migration::None || b.bytes == 0 {
        return 0;
    }
    // The access's bytes on other nodes, and the node holding most of them.
    let mut remote: SmallVec<[(usize, u64); 4]> = SmallVec::new();
    shared.region.bytes_by_node(b.offset, b.bytes, |n, bytes| {
        if let Some(n) = n.filter(|&n| n != node) {
            match remote.iter_mut().find(|(m, _)| *m == n) {
                Some((_, total)) => *total += bytes as u64,
                None => remote.push((n, bytes as u64)),
            }
        }
    });
    let Some(&(main, _)) = remote
        .iter()
        .max_by_key(|(n, bytes)| (*bytes, std::cmp::Reverse(*n)))
    else {
        return 0;
    };
    let bytes: u64 = remote.iter().map(|(_, b)| b).sum();
    let reason = match (setting, costs) {
        (Migration::Now, _) => MIGRATED_NOW,
        (Migration::NextTouch, _) => MIGRATED_NEXT_TOUCH,
        (Migration::Auto, Some(costs)) => {
            let reuse = shared.pending.load(std::sync::atomic::Ordering::Relaxed);
            let pages = bytes.div_ceil(locus_mem::region::PAGE as u64);
            let mode = (b.mode.reads(), b.mode.writes());
            match costs.choose(bytes, pages, main, node, mode, reuse) {
                crate::sched::migrate::Choice::Remote => return 0,
                crate::sched::migrate::Choice::Migrate => {
                    // On real nodes, only where the kernel says the pages fit (on
                    // virtual ones the node limit refuses a move that does not).
                    let free = costs
                        .os_node(node)
                        .and_then(|os| locus_topo::SysfsReader::new("/").free_memory(os).ok());
                    if free.is_some_and(|free| free < pages * locus_mem::region::PAGE as u64) {
                        return 0;
                    }
                    MIGRATED_AUTO
                }
            }
        }
        _ => return 0,
    };
    shared
        .migrate_for(b.offset, b.bytes, node, reason)
        .unwrap_or(0)
}

/// Under the `auto` migration setting, a task starting: it no longer counts in the
/// expected reuse of its shared data.
pub(super) fn forget_reuse(bindings: &[Binding]) {
    for b in bindings.iter().flat_map(Binding::leaves) {
        if let Some(shared) = b.shared() {
            let _ = shared.pending.fetch_update(
                std::sync::atomic::Ordering::Relaxed,
                std::sync::atomic::Ordering::Relaxed,
                |p| p.checked_sub(1),
            );
        }
    }
}
