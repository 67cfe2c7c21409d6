//! What a task accesses, by the one rule of [`for_each_leaf_access`]: bytes and nodes
//! for the placement policies, the cost model and the counters, and the [`MemoryKey`]
//! of each access for engines that model caches.

use std::sync::Arc;

use crate::data::version::{Buffer, VersionRef};
use crate::data::{Binding, Kind};
use crate::sched::{AccessInfo, AccessInfos};

/// What the placement policies and the cost model know of a task's accesses: bytes, and
/// the node of each buffer once it is allocated. An access to shared data spanning
/// several nodes is one entry per run of pages on one node.
pub(crate) fn access_infos(bindings: &[Binding]) -> Vec<AccessInfo> {
    let mut out = Vec::with_capacity(bindings.len() + 1);
    for_each_access(bindings, |a| out.push(a));
    out
}

/// [`access_infos`] as the placement policies see them: an attached datum's bytes
/// count on its owner's node (`graph::team`), wherever its pages lie.
pub(crate) fn policy_access_infos(bindings: &[Binding]) -> AccessInfos {
    let mut out = AccessInfos::new();
    for b in bindings {
        let owner = b.data.owner_node();
        for_each_access(std::slice::from_ref(b), |mut a| {
            if owner.is_some() {
                a.node = owner;
            }
            out.push(a)
        });
    }
    out
}

/// The bytes read and written by the accesses [`for_each_keyed_access`] lists, summed
/// without looking at the buffers.
pub(crate) fn declared_bytes(bindings: &[Binding]) -> (u64, u64) {
    let (mut input, mut output) = (0u64, 0u64);
    for_each_leaf_access(bindings, |b, _, is_input| {
        let side = if is_input { &mut input } else { &mut output };
        *side += b.bytes as u64;
    });
    (input, output)
}

/// Calls `f` with each entry of [`access_infos`], without collecting them.
pub(super) fn for_each_access(bindings: &[Binding], mut f: impl FnMut(AccessInfo)) {
    for_each_keyed_access(bindings, |a, _| f(a));
}

/// What one access of a binding's leaf touches.
enum Touched<'a> {
    /// The version it reads or writes (none yet for some outputs).
    Version(Option<&'a VersionRef>),
    /// The private copy of a reduction, read and written.
    Reduction(&'a crate::data::reduce::ReduceBinding),
}

/// The accesses a task makes, one call of `f` per (leaf binding, what it touches,
/// whether it reads): a read of its input version, a write of its output version, and
/// a read and a write of a reduction's private copy. Weak bindings make none. The one
/// rule of what a task accesses, for the placement policies and the engines.
#[inline]
fn for_each_leaf_access<'a>(
    bindings: &'a [Binding],
    mut f: impl FnMut(&'a Binding, Touched<'a>, bool),
) {
    // One plain binding, the task of most graphs, is its own only leaf.
    if let [b] = bindings {
        if b.is_plain() {
            return leaf_accesses(b, &mut f);
        }
    }
    for b in bindings
        .iter()
        .filter(|b| !b.weak)
        .flat_map(Binding::leaves)
    {
        leaf_accesses(b, &mut f);
    }
}

/// [`for_each_leaf_access`] for one leaf binding `b`.
#[inline(always)]
fn leaf_accesses<'a>(b: &'a Binding, f: &mut impl FnMut(&'a Binding, Touched<'a>, bool)) {
    if b.mode.reads() {
        f(b, Touched::Version(b.read()), true);
    }
    if b.mode.writes() {
        f(b, Touched::Version(b.output()), false);
    }
    if let Kind::Reduction(r) = &b.kind {
        for input in [true, false] {
            f(b, Touched::Reduction(r), input);
        }
    }
}

/// Like [`for_each_access`], with the [`MemoryKey`] of each access.
#[inline]
pub(super) fn for_each_keyed_access(
    bindings: &[Binding],
    mut f: impl FnMut(AccessInfo, MemoryKey),
) {
    for_each_leaf_access(bindings, |b, touched, input| {
        keyed(b, touched, input, &mut f)
    });
}

/// [`for_each_keyed_access`] for one access of leaf binding `b`.
#[inline(always)]
fn keyed(
    b: &Binding,
    touched: Touched<'_>,
    input: bool,
    f: &mut impl FnMut(AccessInfo, MemoryKey),
) {
    match touched {
        Touched::Version(version) => {
            let key = version.map_or(0, |v| VersionRef::as_ptr(v) as usize);
            match version.and_then(|v| v.buffer()) {
                Some(Buffer::Shared(s)) => {
                    let mut offset = b.offset;
                    s.region.bytes_by_node(b.offset, b.bytes, |node, bytes| {
                        f(
                            AccessInfo {
                                bytes: bytes as u64,
                                node,
                                input,
                            },
                            MemoryKey {
                                buffer: Arc::as_ptr(s) as usize,
                                offset,
                            },
                        );
                        offset += bytes;
                    })
                }
                buffer => f(
                    AccessInfo {
                        bytes: b.bytes as u64,
                        node: buffer.map(Buffer::main_node),
                        input,
                    },
                    MemoryKey {
                        buffer: key,
                        offset: 0,
                    },
                ),
            }
        }
        // Its key is the binding's: the copy lives as long as the task's hold on it.
        Touched::Reduction(r) => f(
            AccessInfo {
                bytes: b.bytes as u64,
                node: r.node(),
                input,
            },
            MemoryKey {
                buffer: r as *const _ as usize,
                offset: 0,
            },
        ),
    }
}

/// Which memory an access touches, for an engine that models caches: accesses of one
/// run with equal keys touch the same bytes (from the key's first byte). A version's
/// buffer is named by its version; a shared datum's by its buffer and the access's
/// first byte. Keys of freed memory may be reused by later versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryKey {
    /// The address of the version, or of the shared datum's buffer.
    pub buffer: usize,
    /// First byte of the access in a shared datum; 0 for a version.
    pub offset: usize,
}

/// Counts the bytes a task whose body ran to its end read and wrote ([`access_infos`]),
/// by node, in a worker's counters.
#[inline]
pub(super) fn count_accesses(counters: &crate::metrics::WorkerCounters, bindings: &[Binding]) {
    for_each_access(bindings, counter(counters));
}

/// [`count_accesses`] of one plain binding (`Binding::is_plain`), its own only leaf:
/// its input read and its output written, without walking leaves or making keys.
#[inline(always)]
pub(super) fn count_plain_accesses(counters: &crate::metrics::WorkerCounters, b: &Binding) {
    debug_assert!(b.is_plain());
    let mut count = counter(counters);
    if b.mode.reads() {
        count_version(b, b.read(), true, &mut count);
    }
    if b.mode.writes() {
        count_version(b, b.output(), false, &mut count);
    }
}

/// Counts one access of `b` to `version` as [`keyed`] lists it.
#[inline(always)]
fn count_version(
    b: &Binding,
    version: Option<&VersionRef>,
    input: bool,
    count: &mut impl FnMut(AccessInfo),
) {
    match version.and_then(|v| v.buffer()) {
        // Bytes by node: the general path.
        Some(Buffer::Shared(_)) => keyed(b, Touched::Version(version), input, &mut |a, _| count(a)),
        buffer => count(AccessInfo {
            bytes: b.bytes as u64,
            node: buffer.map(Buffer::main_node),
            input,
        }),
    }
}

/// What counts an access in `counters`: its bytes, read or written, on its node.
#[inline(always)]
fn counter(counters: &crate::metrics::WorkerCounters) -> impl FnMut(AccessInfo) + '_ {
    |a: AccessInfo| {
        if let Some(n) = a.node {
            let bytes = if a.input {
                &counters.read_bytes[n]
            } else {
                &counters.write_bytes[n]
            };
            bytes.add(a.bytes);
        }
    }
}
