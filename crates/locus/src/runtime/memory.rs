//! The runtime's memory API (Broquedis et al., "Dynamic Task and Data Placement over NUMA
//! Architectures: An OpenMP Runtime Perspective", MaMI's Table 2, in Locus's terms): costs of
//! access and migration, migrating a datum now or on its next touch, and registering a
//! user's buffer as a shared datum. `docs/guide.md`, "Memory", explains the choices.
//!
//! | MaMI | Locus |
//! |---|---|
//! | `mami_malloc` with a policy | [`Runtime::shared`] with a [`RegionPolicy`](crate::RegionPolicy) |
//! | `mami_register` | [`Runtime::register`] |
//! | `mami_migrate_on_node` | [`Runtime::migrate`], [`Runtime::migrate_range`] |
//! | `mami_migrate_on_next_touch` | [`Runtime::migrate_on_next_touch`] |
//! | `mami_cost_for_read_access` (and write) | [`Runtime::read_cost`], [`Runtime::write_cost`] |
//! | migration cost | [`Runtime::migration_cost`] |
//! | free memory of a node | [`Runtime::free_memory`] |
//!
//! # Next touch without a pager
//!
//! MaMI migrates on next touch with a user-level pager: `mprotect` the area, catch the
//! `SIGSEGV` of the first access, `move_pages` there and unprotect. Locus does not need
//! one: every task declares the data it touches, so the pages of an armed datum move to
//! the node of the first task that declares an access to them, when that task starts,
//! through the same path that places first-touch pages (`SharedBuffer::touch`). This
//! avoids what makes a pager hard to get right: the handler must be async-signal-safe
//! (no locks, no allocation, yet it must find the region and call `move_pages`); it must
//! tell its faults from foreign ones (a genuine segmentation fault, or another library's
//! protected pages) and chain to their handlers; and with many threads, several may
//! fault on one page at once while another unprotects it. The cost is granularity: a
//! declared access moves all the armed pages it covers, touched by the body or not.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use locus_mem::region::{Region, PAGE};
use locus_topo::{NodeId, SysfsReader};

use super::Runtime;
use crate::data::version::Version;
use crate::data::{Data, DataInner, Element};
use crate::error::Error;
use crate::graph::current_executor;

/// What a migration moved.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Migrated {
    /// Pages moved (4 KiB each).
    pub pages: u64,
    /// Bytes moved: the pages' bytes.
    pub bytes: u64,
}

impl Migrated {
    fn pages(pages: u64) -> Migrated {
        Migrated {
            pages,
            bytes: pages * PAGE as u64,
        }
    }
}

/// Pages the runtime has migrated since it was built.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrationCounts {
    /// Moved by [`Runtime::migrate`] and [`Runtime::migrate_range`].
    pub now: Migrated,
    /// Moved on next touch, when their first declared toucher started.
    pub next_touch: Migrated,
    /// Moved by the `auto` migration setting, when it found migrating cheaper than
    /// accessing them remotely ([`crate::sched::migrate`]).
    pub auto: Migrated,
}

impl Runtime {
    /// The cost in nanoseconds for a CPU of `from_node` to read `bytes` bytes of
    /// `data_node`'s memory: one miss per 64-byte line at the topology's local read
    /// latency times its read factor (`locus_topo::MemoryCosts`). A node outside the
    /// topology is an error.
    ///
    /// ```
    /// use locus::{Runtime, Topology};
    /// let rt = Runtime::builder().topology(Topology::from_spec("opteron-16")?).threads(4).build()?;
    /// // One line from the opposite node (paper 2, Table 3: 117 ns).
    /// assert!((rt.read_cost(64, 2, 0)? - 117.0).abs() < 0.1);
    /// assert!(rt.read_cost(64, 4, 0).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_cost(&self, bytes: u64, data_node: usize, from_node: usize) -> Result<f64, Error> {
        let (data, from) = self.node_pair("read_cost", data_node, from_node)?;
        Ok(self.topology.read_cost_ns(bytes, data, from))
    }

    /// The cost in nanoseconds for a CPU of `from_node` to write `bytes` bytes of
    /// `data_node`'s memory, as [`read_cost`](Self::read_cost) with the write latency
    /// and factors.
    pub fn write_cost(&self, bytes: u64, data_node: usize, from_node: usize) -> Result<f64, Error> {
        let (data, from) = self.node_pair("write_cost", data_node, from_node)?;
        Ok(self.topology.write_cost_ns(bytes, data, from))
    }

    /// The cost in nanoseconds of migrating `bytes` bytes in one call: `a + b x pages`,
    /// the topology's migration model (a preset's published one, assumed figures
    /// otherwise; `locus topo --probe` measures the host's).
    pub fn migration_cost(&self, bytes: u64) -> f64 {
        self.topology.migration_cost_ns(bytes)
    }

    /// Pages migrated since the runtime was built, now and on next touch.
    pub fn migrated(&self) -> MigrationCounts {
        let [now, next_touch, auto] = self.shared.migrated_pages();
        MigrationCounts {
            now: Migrated::pages(now),
            next_touch: Migrated::pages(next_touch),
            auto: Migrated::pages(auto),
        }
    }

    /// The free memory of `node` in bytes (MaMI lets a program ask each node's free
    /// memory before it places data).
    ///
    /// - On the host's real nodes: the kernel's `MemFree` for the node
    ///   (`/sys/devices/system/node/node<N>/meminfo`, or `/proc/meminfo` on a machine
    ///   without NUMA information). Locus's own memory is part of what the kernel
    ///   counts as used.
    /// - On virtual nodes (`2x1`, `4x1`, a preset) with a node limit
    ///   ([`RuntimeBuilder::node_limit`](crate::RuntimeBuilder::node_limit)): the limit
    ///   minus what Locus holds on the node, the bytes of task buffers in use from its
    ///   pool and the pages of shared data placed (or reserved for first touch) there;
    ///   that is, what Locus will still place on the node before falling back to
    ///   another. Deterministic: it does not depend on the host.
    /// - On virtual nodes without a limit: the node's share of the host's free memory,
    ///   in proportion to its memory in the topology (equal shares when the model gives
    ///   none, as when it is laid over the host), and at most the node's memory minus
    ///   what Locus holds there. When the host's free memory cannot be read, or the
    ///   runtime's buffers hold no memory (a simulation with skipped bodies), the node's
    ///   memory minus what Locus holds there; a node the model gives no memory is then
    ///   an error.
    ///
    /// A node outside the topology is an error; so is a host whose sysfs cannot be read
    /// (real nodes).
    ///
    /// ```
    /// use locus::{RegionPolicy, Runtime, Topology};
    /// let rt = Runtime::builder()
    ///     .topology(Topology::from_spec("4x1")?)
    ///     .node_limit(1 << 20)
    ///     .build()?;
    /// assert_eq!(rt.free_memory(3)?, 1 << 20);
    /// let v = rt.shared::<u64>("v", 4096, RegionPolicy::Interleave)?; // 2 pages a node
    /// assert_eq!(rt.free_memory(3)?, (1 << 20) - 2 * 4096);
    /// rt.migrate(&v, 3)?;
    /// assert_eq!(rt.free_memory(3)?, (1 << 20) - 8 * 4096);
    /// assert_eq!(rt.free_memory(0)?, 1 << 20);
    /// assert!(rt.free_memory(4).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn free_memory(&self, node: usize) -> Result<u64, Error> {
        self.check_node("free_memory", node)?;
        let id = NodeId(node as u32);
        if !self.topology.is_virtual() {
            let os = self.topology.os_node(id).unwrap_or(id.0);
            return Ok(SysfsReader::new("/").free_memory(os)?);
        }
        let pools = self.pools();
        let stats = pools.stats()[node];
        let held = stats.in_use.saturating_add(stats.reserved);
        if let Some(limit) = pools.config().node_limit {
            return Ok(limit.saturating_sub(held));
        }
        let memory = self.topology.nodes()[node].memory_bytes;
        let total = self.topology.total_memory_bytes();
        let host = if pools.config().accounting_only {
            None
        } else {
            SysfsReader::new("/").total_free_memory().ok()
        };
        let share = host.map(|free| {
            let nodes = self.topology.num_nodes() as u128;
            let share = if total == 0 {
                u128::from(free) / nodes
            } else {
                u128::from(free) * u128::from(memory) / u128::from(total)
            };
            u64::try_from(share).unwrap_or(u64::MAX)
        });
        let room = (memory > 0).then(|| memory.saturating_sub(held));
        match (share, room) {
            (Some(share), Some(room)) => Ok(share.min(room)),
            (Some(free), None) | (None, Some(free)) => Ok(free),
            (None, None) => Err(Error::Config(format!(
                "free_memory: node {node} of topology `{}` has no memory size, and the \
                 host's free memory cannot be read",
                self.topology.name()
            ))),
        }
    }

    /// Moves every page of the datum to `node` now (`move_pages` on real nodes; the
    /// page table on virtual ones) and returns what moved. A shared datum's pages move
    /// in place (pages a first-touch datum has not had touched hold no memory and stay
    /// to their first touch). A versioned datum is renamed: its current contents are
    /// copied into a block of `node`'s pool, which becomes its current version (the
    /// block may come from a nearer node when `node` is full, as any allocation).
    ///
    /// Errors: a node outside the topology, a handle of another runtime, a call from
    /// inside a task or while another thread runs a program on this runtime, a datum
    /// without memory, or a node limit the pages do not fit under.
    ///
    /// ```
    /// use locus::{RegionPolicy, Runtime, Topology};
    /// let rt = Runtime::builder().topology(Topology::from_spec("4x1")?).build()?;
    /// let v = rt.shared::<u64>("v", 4096, RegionPolicy::Interleave)?;
    /// let moved = rt.migrate(&v, 3)?;
    /// assert_eq!(moved.pages, 6); // 8 pages, 2 were on node 3 already
    /// assert_eq!(rt.bytes_per_node(&v).unwrap(), vec![0, 0, 0, 8 * 4096]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn migrate<T: Element>(&self, data: &Data<T>, node: usize) -> Result<Migrated, Error> {
        self.migrate_range(data, 0..data.len(), node)
    }

    /// Moves the pages holding the elements of `range` to `node` now, as
    /// [`migrate`](Self::migrate) does for the whole datum. Pages partly in the range
    /// move whole. A versioned datum moves whole only (its buffer is one block): a
    /// range of it that is not the whole datum is an error.
    pub fn migrate_range<T: Element>(
        &self,
        data: &Data<T>,
        range: Range<usize>,
        node: usize,
    ) -> Result<Migrated, Error> {
        self.migrate_inner(&data.inner, range, node)
    }

    /// [`migrate_range`](Self::migrate_range) of a datum of any element type.
    pub(crate) fn migrate_inner(
        &self,
        inner: &DataInner,
        range: Range<usize>,
        node: usize,
    ) -> Result<Migrated, Error> {
        let op = "migrate";
        let _quiet = self.quiescent(op, inner)?;
        self.check_node(op, node)?;
        if range.start > range.end || range.end > inner.len {
            return Err(Error::Config(format!(
                "{op}: range {range:?} is outside `{}` ({} elements)",
                inner.name, inner.len
            )));
        }
        let elem = inner.elem_size;
        let (offset, len) = (range.start * elem, (range.end - range.start) * elem);
        match &inner.shared {
            Some(buffer) => buffer
                .migrate(offset, len, node)
                .map(Migrated::pages)
                .map_err(|message| Error::OutOfMemory {
                    task: format!("{op}({})", inner.name),
                    bytes: len,
                    message,
                }),
            None if range != (0..inner.len) => Err(Error::Config(format!(
                "{op}: `{}` is versioned, its buffer moves whole only",
                inner.name
            ))),
            None => self.rename_to(inner, node),
        }
    }

    /// Arms every page of a shared datum for migration on next touch: each page moves
    /// to the node of the first task that declares an access to it, when that task
    /// starts (see the module documentation for why no pager is needed). Returns the
    /// pages armed. A versioned datum is an error: its next version is allocated where
    /// its producer runs anyway (deferred allocation), or moved with
    /// [`migrate`](Self::migrate). Other errors as for [`migrate`](Self::migrate).
    pub fn migrate_on_next_touch<T: Element>(&self, data: &Data<T>) -> Result<usize, Error> {
        let op = "migrate_on_next_touch";
        let _quiet = self.quiescent(op, &data.inner)?;
        match &data.inner.shared {
            Some(buffer) => Ok(buffer.arm_next_touch()),
            None => Err(Error::Config(format!(
                "{op}: `{}` is versioned: its next version is placed by its producer; \
                 move its current one with migrate",
                data.inner.name
            ))),
        }
    }

    /// Makes a user's vector a shared datum, without copying it: the datum's memory is
    /// the vector's, its pages stay where they are (on real nodes their nodes are read
    /// from the kernel, and pages never touched are placed by their first touch; on
    /// virtual nodes they count on the node of worker 0, where the control program
    /// runs), and it is freed as the vector it was when the last handle and task let go
    /// of it. Tasks then update it in place, as any shared datum.
    ///
    /// The vector's first and last pages may hold other memory of the process: they
    /// count as the datum's, and migrating the datum moves them whole. Allocate
    /// page-aligned memory for exact placement.
    ///
    /// Errors: a runtime whose buffers hold no memory (a simulation with skipped
    /// bodies), or node limits the pages do not fit under; the vector is dropped then.
    ///
    /// ```
    /// use locus::{Runtime, Topology};
    /// let rt = Runtime::builder().topology(Topology::from_spec("2x1")?).build()?;
    /// let v: Vec<u32> = (0..1000).collect();
    /// let at = v.as_ptr() as usize;
    /// let data = rt.register("v", v)?;
    /// rt.run(|s| {
    ///     s.spawn("bump", data.read_write(), move |_, x| {
    ///         assert_eq!(x.as_ptr() as usize, at); // the vector's own memory
    ///         x[0] += 7;
    ///     })
    ///     .unwrap();
    /// })?;
    /// assert_eq!(rt.fetch(&data)?[..2], [7, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register<T: Element>(
        &self,
        name: impl Into<String>,
        values: Vec<T>,
    ) -> Result<Data<T>, Error> {
        let mut values = std::mem::ManuallyDrop::new(values);
        let (ptr, len, capacity) = (values.as_mut_ptr(), values.len(), values.capacity());
        let address = ptr as usize;
        let free = Box::new(move || {
            // SAFETY: the parts of the vector taken apart above, reassembled once, when
            // the region over its memory is dropped (or the registration is refused).
            drop(unsafe { Vec::from_raw_parts(address as *mut T, len, capacity) });
        });
        let start = std::ptr::NonNull::new(ptr).expect("a Vec's pointer is not null");
        // SAFETY: the vector's memory is valid until `free` runs, and nothing else can
        // reach it: the vector was taken apart above.
        unsafe { self.register_raw(name, start, len, free) }
    }

    /// [`register`](Self::register) for memory Locus cannot own as a `Vec` (a C
    /// program's buffer): `len` elements at `ptr` become a shared datum without a copy,
    /// and `free` is called once, when the last handle and task let go of the datum,
    /// or at once if the registration is refused (the error says why).
    ///
    /// # Safety
    ///
    /// `ptr` is aligned for `T` and `ptr..ptr + len` is memory that holds valid `T`s,
    /// stays valid, and that nothing but the datum's tasks and fetches reads or writes,
    /// until `free` is called.
    pub unsafe fn register_raw<T: Element>(
        &self,
        name: impl Into<String>,
        ptr: std::ptr::NonNull<T>,
        len: usize,
        free: Box<dyn FnOnce() + Send>,
    ) -> Result<Data<T>, Error> {
        let name = name.into();
        if self.pools().config().accounting_only {
            free();
            return Err(Error::Config(format!(
                "register({name}): this runtime's buffers hold no memory (a simulation with \
                 skipped bodies)"
            )));
        }
        let Some(bytes) = len.checked_mul(std::mem::size_of::<T>()) else {
            free();
            return Err(Error::Size {
                data: name,
                len,
                elem_size: std::mem::size_of::<T>(),
            });
        };
        let home = self.engine.worker_node()[0];
        // SAFETY: forwarded from the caller; the region calls `free` when dropped, also
        // when it is refused below.
        let region =
            unsafe { Region::register(ptr.cast(), bytes, free, home, &self.shared.config) }
                .map_err(|e| Error::OutOfMemory {
                    task: format!("register({name})"),
                    bytes,
                    message: e.to_string(),
                })?;
        let buffer = self.shared.register(&name, region)?;
        Ok(Data::from_inner(Arc::new(DataInner::with_shared_buffer(
            self.id,
            name,
            len,
            std::mem::size_of::<T>(),
            self.versions.counts(),
            buffer,
        ))))
    }

    /// A versioned datum's current contents copied into a block of `node`'s pool,
    /// which becomes its current version.
    fn rename_to(&self, inner: &DataInner, node: usize) -> Result<Migrated, Error> {
        let current = inner.current();
        let Some(old) = current.buffer() else {
            // Never written: no memory to move; its first version goes where its
            // producer runs.
            return Ok(Migrated::default());
        };
        if old.main_node() == node {
            return Ok(Migrated::default());
        }
        let bytes = inner.bytes();
        let renamed = Version::initial(bytes, self.versions.counts(), None);
        let block = renamed
            .buffer_or_alloc(|| self.pools().alloc(node, bytes))
            .map_err(|e| Error::OutOfMemory {
                task: format!("migrate({})", inner.name),
                bytes,
                message: e.to_string(),
            })?;
        if !old.is_accounted_only() && !block.is_accounted_only() {
            // SAFETY: (1) both buffers hold the datum's `bytes` bytes; (2) no run is in
            // progress (the caller holds the run lock), so nothing writes the old
            // buffer, and the new one is not reachable by anyone else yet.
            unsafe { std::ptr::copy_nonoverlapping(old.as_ptr(), block.as_mut_ptr(), bytes) };
        }
        let moved = if block.main_node() == old.main_node() {
            0
        } else {
            bytes.div_ceil(PAGE) as u64
        };
        inner.follow(renamed);
        self.shared.migrated[0].fetch_add(moved, Ordering::Relaxed);
        Ok(Migrated::pages(moved))
    }

    /// Both nodes as topology ids, or the error naming the bad one.
    fn node_pair(&self, op: &str, a: usize, b: usize) -> Result<(NodeId, NodeId), Error> {
        self.check_node(op, a)?;
        self.check_node(op, b)?;
        Ok((NodeId(a as u32), NodeId(b as u32)))
    }

    pub(crate) fn check_node(&self, op: &str, node: usize) -> Result<(), Error> {
        let nodes = self.topology.num_nodes();
        if node >= nodes {
            return Err(Error::Config(format!(
                "{op}: node {node} does not exist (topology `{}` has {nodes})",
                self.topology.name()
            )));
        }
        Ok(())
    }

    /// The run lock, held while memory moves: refused for a handle of another runtime,
    /// a datum without memory, from inside a task, or while a run is in progress.
    fn quiescent(&self, op: &str, inner: &DataInner) -> Result<MutexGuard<'_, ()>, Error> {
        if inner.runtime != self.id {
            return Err(Error::ForeignData {
                task: op.into(),
                data: inner.name.clone(),
            });
        }
        if let Some(reason) = &inner.extras.unavailable {
            return Err(Error::Config(format!(
                "{op}: `{}` has no memory: {reason}",
                inner.name
            )));
        }
        if inner.is_partitioned() {
            return Err(Error::Config(format!(
                "{op}: `{}` is partitioned or a part: its contents live in segments, which \
                 deferred allocation places where their writers run",
                inner.name
            )));
        }
        if inner.extras.reduction.is_set() {
            return Err(Error::Config(format!(
                "{op}: `{}` has a reduction in progress: fetch it (or run a task that \
                 reads it) first",
                inner.name
            )));
        }
        if current_executor(|_| ()).is_some() {
            return Err(Error::Declaration {
                task: op.into(),
                message: format!(
                    "`{}` cannot move from inside a task: its tasks may be using it",
                    inner.name
                ),
            });
        }
        self.no_run_in_progress(op).map_err(|_| {
            Error::Config(format!(
                "{op}: `{}` cannot move while a run is in progress",
                inner.name
            ))
        })
    }
}
