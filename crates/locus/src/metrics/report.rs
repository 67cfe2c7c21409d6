//! The report of a run (every field in `docs/guide.md`, "Reading the report").

use serde::Serialize;

use super::RunCounters;

/// Metrics of one run, as printed by `locus run --json`.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The configuration's name.
    pub config: String,
    /// `threads` or `sim`.
    pub engine: String,
    /// The topology the run used.
    pub topology: TopologySummary,
    /// Number of workers.
    pub threads: usize,
    /// Settings of the configuration (allocation mode, steal order, window, ...).
    pub settings: Settings,
    /// Wall-clock time of the run in seconds (simulated time for `sim`).
    pub wall_s: f64,
    /// Tasks run, the root excluded (every task submitted: a run finishes them all).
    pub tasks: u64,
    /// Of those, control tasks ([`Scope::spawn_control`](crate::Scope::spawn_control)):
    /// tasks that only submit others, such as the creators of a parallel control
    /// program.
    pub control_tasks: u64,
    /// Bytes accessed through runtime-managed buffers, local and remote.
    pub locality: Locality,
    /// `traffic[i][j]`: bytes accessed by tasks running on node `i` in memory of node `j`.
    pub traffic: Vec<Vec<u64>>,
    /// Successful steals by distance class.
    pub steals: Steals,
    /// Work-pushing decisions.
    pub pushes: Pushes,
    /// Memory of the per-node pools.
    pub memory: MemoryReport,
    /// Versions created and alive.
    pub versions: VersionsReport,
    /// Per-worker figures.
    pub workers: Vec<WorkerReport>,
    /// Pages of shared data moved to another node during the run, by reason.
    pub migration: MigrationReport,
}

/// Pages of shared data the run moved between nodes (4 KiB each), by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct MigrationReport {
    /// Moved by migration tasks ([`Scope::migrate`](crate::Scope::migrate)) and the
    /// `now` migration setting.
    pub now_pages: u64,
    /// Moved on next touch, when their first declared toucher started (armed data, or
    /// the `next-touch` migration setting).
    pub next_touch_pages: u64,
    /// Moved by the `auto` migration setting, when migrating cost less than the
    /// remote accesses it saved.
    pub auto_pages: u64,
    /// Bytes of all the pages moved.
    pub bytes: u64,
    /// Tasks the `auto` migration setting ran on their data's node rather than their
    /// non-strict hint's, because their accesses cost less there
    /// ([`ReadyPolicy::moving_to_data`](crate::sched::ReadyPolicy::moving_to_data)).
    pub tasks_moved: u64,
}

/// Named settings of a run's configuration, in insertion order, so that every policy
/// can show its own.
#[derive(Clone, Debug, Default)]
pub struct Settings(pub Vec<(String, String)>);

impl Settings {
    /// Adds a setting.
    pub fn push(&mut self, name: &str, value: impl ToString) {
        self.0.push((name.to_string(), value.to_string()));
    }

    /// The value of a setting.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Serialize for Settings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Name and size of the topology.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct TopologySummary {
    /// The topology's name (`host`, `2x1`, a preset).
    pub name: String,
    /// Number of nodes.
    pub nodes: usize,
    /// Number of CPUs.
    pub cpus: usize,
}

/// Local and remote bytes (paper 1 section 5.1).
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct Locality {
    /// Bytes read from buffers on the reading task's node.
    pub read_local_bytes: u64,
    /// Bytes read from buffers on other nodes.
    pub read_remote_bytes: u64,
    /// Bytes written to buffers on the writing task's node.
    pub write_local_bytes: u64,
    /// Bytes written to buffers on other nodes.
    pub write_remote_bytes: u64,
    /// Local bytes over all bytes accessed through runtime-managed buffers (`R_loc^RT`
    /// of paper 1); 1.0 when nothing was accessed.
    pub r_loc_rt: f64,
}

/// Successful steals by distance class.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct Steals {
    /// From a worker of the same node.
    pub same_node: u64,
    /// From a worker of another node.
    pub remote: u64,
}

/// Work-pushing decisions (paper 1 Algorithm 1).
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct Pushes {
    /// Activations where the heuristic chose another node.
    pub attempted: u64,
    /// Tasks transferred to a worker of that node.
    pub transferred: u64,
    /// Transfers refused by a full mailbox (the task stayed local).
    pub rejected: u64,
    /// Activations below the size threshold (the task stayed local).
    pub kept_local: u64,
    /// Tasks run that had a preferred node (work-pushing or an affinity hint).
    pub with_preference: u64,
    /// Of those, tasks run by a worker of their preferred node.
    pub started_on_preferred: u64,
}

/// Memory of the per-node pools, and of shared data, during the run.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct MemoryReport {
    /// Highest sum over nodes of pool bytes in use, plus the highest bytes of shared
    /// data alive (the two peaks may not coincide: an upper bound when both are used).
    pub peak_bytes: u64,
    /// Highest bytes in use per node, pools plus shared data.
    pub peak_bytes_per_node: Vec<u64>,
    /// Highest bytes of shared data alive (in whole pages), all nodes.
    pub shared_peak_bytes: u64,
    /// Bytes still in use at the end (held by data handles).
    pub in_use_bytes: u64,
    /// Allocations served by another node than the one asked for.
    pub fallbacks: u64,
    /// Allocations during the run.
    pub allocations: u64,
    /// Allocations served from a pool's free list (reused blocks).
    pub reused: u64,
    /// Fresh blocks that their first writer placed on another node than the one that
    /// supplied them (first-touch pools, `locus_mem::pool::PoolConfig::first_touch`).
    pub first_touched: u64,
}

/// Versions created and alive.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct VersionsReport {
    /// Versions of versioned data created during the run (renamings). Writes of
    /// shared data update it in place and create none.
    pub created: u64,
    /// Highest number of versions alive at once.
    pub peak_live: usize,
    /// Versions alive at the end (the current versions of live handles).
    pub live_at_end: usize,
    /// Of the versions created, those that took over the buffer of the version they
    /// superseded (a read-write that was its only holder: updated in place, no copy).
    pub in_place: u64,
    /// Read-writes that continued the version of the writer before them, creating
    /// none: a chain of read-writes with no reader between them makes one version
    /// (`docs/architecture.md`, "Chains of read-writes").
    pub continued: u64,
}

/// Figures of one worker.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct WorkerReport {
    /// Worker index.
    pub worker: usize,
    /// Node of the worker.
    pub node: usize,
    /// Tasks run.
    pub tasks: u64,
    /// Successful steals from the same node.
    pub steals_same_node: u64,
    /// Successful steals from other nodes.
    pub steals_remote: u64,
}

impl Report {
    /// Adds `next`, the report of a run that followed this one on the same runtime, to
    /// this one: the report of both runs together (times, tasks, bytes, steals, pushes,
    /// migrations and per-worker figures add up; memory peaks are the larger of the
    /// two; the memory in use and the live versions are `next`'s).
    pub fn then(&mut self, next: &Report) {
        self.wall_s += next.wall_s;
        self.tasks += next.tasks;
        self.control_tasks += next.control_tasks;
        let (a, b) = (&mut self.locality, &next.locality);
        a.read_local_bytes += b.read_local_bytes;
        a.read_remote_bytes += b.read_remote_bytes;
        a.write_local_bytes += b.write_local_bytes;
        a.write_remote_bytes += b.write_remote_bytes;
        let local = a.read_local_bytes + a.write_local_bytes;
        let all = local + a.read_remote_bytes + a.write_remote_bytes;
        a.r_loc_rt = if all == 0 {
            1.0
        } else {
            local as f64 / all as f64
        };
        if self.traffic.is_empty() {
            self.traffic = next.traffic.clone();
        } else {
            for (row, other) in self.traffic.iter_mut().zip(&next.traffic) {
                for (cell, o) in row.iter_mut().zip(other) {
                    *cell += o;
                }
            }
        }
        self.steals.same_node += next.steals.same_node;
        self.steals.remote += next.steals.remote;
        let (p, q) = (&mut self.pushes, &next.pushes);
        p.attempted += q.attempted;
        p.transferred += q.transferred;
        p.rejected += q.rejected;
        p.kept_local += q.kept_local;
        p.with_preference += q.with_preference;
        p.started_on_preferred += q.started_on_preferred;
        let (m, n) = (&mut self.memory, &next.memory);
        m.peak_bytes = m.peak_bytes.max(n.peak_bytes);
        if m.peak_bytes_per_node.len() < n.peak_bytes_per_node.len() {
            m.peak_bytes_per_node.resize(n.peak_bytes_per_node.len(), 0);
        }
        for (a, b) in m.peak_bytes_per_node.iter_mut().zip(&n.peak_bytes_per_node) {
            *a = (*a).max(*b);
        }
        m.shared_peak_bytes = m.shared_peak_bytes.max(n.shared_peak_bytes);
        m.in_use_bytes = n.in_use_bytes;
        m.fallbacks += n.fallbacks;
        m.allocations += n.allocations;
        m.reused += n.reused;
        m.first_touched += n.first_touched;
        let (v, w) = (&mut self.versions, &next.versions);
        v.created += w.created;
        v.peak_live = v.peak_live.max(w.peak_live);
        v.live_at_end = w.live_at_end;
        v.in_place += w.in_place;
        v.continued += w.continued;
        if self.workers.is_empty() {
            self.workers = next.workers.clone();
        } else {
            for (a, b) in self.workers.iter_mut().zip(&next.workers) {
                a.tasks += b.tasks;
                a.steals_same_node += b.steals_same_node;
                a.steals_remote += b.steals_remote;
            }
        }
        self.migration.now_pages += next.migration.now_pages;
        self.migration.next_touch_pages += next.migration.next_touch_pages;
        self.migration.auto_pages += next.migration.auto_pages;
        self.migration.bytes += next.migration.bytes;
        self.migration.tasks_moved += next.migration.tasks_moved;
    }

    /// Fills the counter-derived fields from the workers' slots.
    pub(crate) fn add_counters(
        &mut self,
        counters: &RunCounters,
        worker_node: &[usize],
        nodes: usize,
    ) {
        let mut traffic = vec![vec![0u64; nodes]; nodes];
        let mut loc = Locality::default();
        for (w, slot) in counters.slots().enumerate() {
            let exec = worker_node[w];
            for (data_node, cell) in traffic[exec].iter_mut().enumerate() {
                let r = slot.read_bytes[data_node].get();
                let wr = slot.write_bytes[data_node].get();
                *cell += r + wr;
                if data_node == exec {
                    loc.read_local_bytes += r;
                    loc.write_local_bytes += wr;
                } else {
                    loc.read_remote_bytes += r;
                    loc.write_remote_bytes += wr;
                }
            }
            self.steals.same_node += slot.steals_same_node.get();
            self.steals.remote += slot.steals_remote.get();
            self.pushes.attempted += slot.pushes_attempted.get();
            self.pushes.transferred += slot.pushes_transferred.get();
            self.pushes.rejected += slot.pushes_rejected.get();
            self.pushes.kept_local += slot.pushes_kept_local.get();
            self.migration.tasks_moved += slot.tasks_moved.get();
            self.pushes.with_preference += slot.with_preference.get();
            self.pushes.started_on_preferred += slot.started_on_preferred.get();
            self.versions.in_place += slot.versions_in_place.get();
            self.versions.continued += slot.versions_continued.get();
            self.workers.push(WorkerReport {
                worker: w,
                node: exec,
                tasks: slot.tasks.get(),
                steals_same_node: slot.steals_same_node.get(),
                steals_remote: slot.steals_remote.get(),
            });
        }
        let local = loc.read_local_bytes + loc.write_local_bytes;
        let all = local + loc.read_remote_bytes + loc.write_remote_bytes;
        loc.r_loc_rt = if all == 0 {
            1.0
        } else {
            local as f64 / all as f64
        };
        self.locality = loc;
        self.traffic = traffic;
    }
}
