//! [`MemoryCosts`]: what accessing and migrating memory costs, in nanoseconds.
//!
//! The cost matrix of a [`Topology`](crate::Topology) is relative (1.0 is a local
//! access). Broquedis et al., "Dynamic Task and Data Placement over NUMA Architectures:
//! An OpenMP Runtime Perspective" (paper 2, MaMI's Table 2), turn it into absolute costs
//! with two more figures, which this module holds:
//!
//! - the latency of one uncached local read and one local write (paper 2, Table 3:
//!   83 ns and 142 ns on its four-node Opteron);
//! - a linear model of page migration, `a + b x pages` (paper 2, section 3.2: 120 us +
//!   11 us per page with `move_pages` on that machine): [`MigrationModel`].
//!
//! # How an access cost is defined
//!
//! Reading `N` bytes of node `A`'s memory from a CPU of node `B` costs
//! `ceil(N / 64)` cache-line misses, each at the local read latency times the read
//! factor `read[B][A]`; writes likewise with the write latency and factor. It is the
//! cost of a stream of dependent misses with no overlap: an upper bound of the time,
//! meant to be compared with other costs of the same model (running a task remotely
//! against migrating its data), not to predict a bandwidth.
//!
//! Presets carry the figures of their paper; other topologies carry assumed ones
//! ([`CostSource::Assumed`]) until a measurement replaces them
//! ([`Topology::with_memory_costs`](crate::Topology::with_memory_costs); `locus topo
//! --probe` measures the host's migration model).

use serde::Serialize;

/// Bytes of one cache line in the access-cost model.
pub const CACHE_LINE: u64 = 64;

/// Where the absolute figures come from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostSource {
    /// Defaults of the order of a current server, not measured on this machine.
    Assumed,
    /// Published measurements of the machine a preset models.
    Paper,
    /// Measured on this host by a probe.
    Probed,
}

impl CostSource {
    /// The name in reports: `assumed`, `paper`, `probed`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            CostSource::Assumed => "assumed",
            CostSource::Paper => "paper",
            CostSource::Probed => "probed",
        }
    }
}

/// The cost of migrating pages: `fixed_ns + per_page_ns x pages` (paper 2, section 3.2).
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct MigrationModel {
    /// `a`: the cost of one migration call, whatever its size, in nanoseconds.
    pub fixed_ns: f64,
    /// `b`: the cost of each page moved, in nanoseconds.
    pub per_page_ns: f64,
    /// The page size the model counts in, in bytes.
    pub page_bytes: u64,
}

impl MigrationModel {
    /// The pages holding `bytes` bytes (a partial page counts whole).
    #[must_use]
    pub fn pages(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.page_bytes.max(1))
    }

    /// The cost of migrating `bytes` bytes in one call, in nanoseconds; 0 for none.
    ///
    /// ```
    /// use locus_topo::Topology;
    /// let m = Topology::preset("opteron-16").unwrap().memory_costs().migration;
    /// assert_eq!(m.cost_ns(10 * 4096), 120_000.0 + 10.0 * 11_000.0);
    /// ```
    #[must_use]
    pub fn cost_ns(&self, bytes: u64) -> f64 {
        match self.pages(bytes) {
            0 => 0.0,
            pages => self.fixed_ns + self.per_page_ns * pages as f64,
        }
    }
}

/// Absolute memory costs of a machine: local latencies and the migration model.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct MemoryCosts {
    /// Latency of one uncached local read, in nanoseconds.
    pub local_read_ns: f64,
    /// Latency of one uncached local write, in nanoseconds.
    pub local_write_ns: f64,
    /// The cost of migrating pages.
    pub migration: MigrationModel,
    /// Where the figures come from.
    pub source: CostSource,
}

impl MemoryCosts {
    /// Paper 2's machine (four quad-core Opterons): Table 3's local latencies and
    /// MaMI's migration model, 120 us + 11 us per 4 KiB page.
    pub const OPTERON_16: MemoryCosts = MemoryCosts {
        local_read_ns: 83.0,
        local_write_ns: 142.0,
        migration: MigrationModel {
            fixed_ns: 120_000.0,
            per_page_ns: 11_000.0,
            page_bytes: 4096,
        },
        source: CostSource::Paper,
    };

    /// Figures assumed for a machine nobody measured: 100 ns per local access, and
    /// 20 us + 1 us per 4 KiB page for migration (the order of `move_pages` on a
    /// current Linux server).
    pub const ASSUMED: MemoryCosts = MemoryCosts {
        local_read_ns: 100.0,
        local_write_ns: 100.0,
        migration: MigrationModel {
            fixed_ns: 20_000.0,
            per_page_ns: 1_000.0,
            page_bytes: 4096,
        },
        source: CostSource::Assumed,
    };

    /// The cost of `bytes / 64` (rounded up) misses at `latency_ns x factor`.
    #[must_use]
    pub fn access_ns(bytes: u64, latency_ns: f64, factor: f64) -> f64 {
        bytes.div_ceil(CACHE_LINE) as f64 * latency_ns * factor
    }
}

impl Default for MemoryCosts {
    fn default() -> Self {
        MemoryCosts::ASSUMED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_is_linear_in_whole_pages() {
        let m = MemoryCosts::OPTERON_16.migration;
        assert_eq!(m.cost_ns(0), 0.0);
        assert_eq!(m.cost_ns(1), 131_000.0);
        assert_eq!(m.cost_ns(4096), 131_000.0);
        assert_eq!(m.cost_ns(4097), 142_000.0);
        assert_eq!(m.pages(8 * 4096), 8);
    }

    #[test]
    fn access_counts_cache_lines() {
        assert_eq!(MemoryCosts::access_ns(0, 83.0, 1.0), 0.0);
        assert_eq!(MemoryCosts::access_ns(1, 83.0, 1.0), 83.0);
        assert_eq!(MemoryCosts::access_ns(128, 100.0, 1.5), 300.0);
    }
}
