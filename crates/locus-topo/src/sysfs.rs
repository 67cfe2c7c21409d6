//! The default host backend: Linux sysfs.
//!
//! Under a root directory (`/` for the host, a fixture tree in tests) it reads:
//!
//! - `sys/devices/system/node/node*/cpulist`, `meminfo` (`MemTotal`; `MemFree` for
//!   [`SysfsReader::free_memory`]) and `distance`;
//!   a node with an empty `cpulist` is a memory-only node;
//! - HMAT performance values, when the firmware provides them:
//!   `node*/access1/initiators/{read,write}_latency` (CPU initiators), else `access0`;
//! - last-level cache groups: `sys/devices/system/cpu/cpu*/cache/index*/{level,type,shared_cpu_list}`.
//!
//! Without `sys/devices/system/node` (a kernel without NUMA) the machine is one node
//! with the CPUs of `sys/devices/system/cpu/online` and the memory of `proc/meminfo`.
//!
//! Cost factors are distance ratios `d(i,j) / d(i,i)`. With HMAT latencies they are
//! scaled by the memory kind: `read(i,j) = d(i,j) / d(i,i) * L_read(j) / L_read(i)`,
//! where `L_read(n)` is the read latency HMAT reports for node `n`'s memory from its
//! nearest initiators (likewise for writes). Distance carries the path, HMAT the
//! difference between kinds of memory (DRAM, HBM, CXL); a node without HMAT values
//! counts as a ratio of 1.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cpulist;
use crate::error::TopoError;
use crate::topology::{CostMatrix, CostOrigin, Parts, Source, Topology};

/// Reads a topology from a sysfs tree.
///
/// ```no_run
/// use locus_topo::SysfsReader;
///
/// let t = SysfsReader::new("/").read().unwrap();
/// println!("{} nodes", t.num_nodes());
/// ```
#[derive(Clone, Debug)]
pub struct SysfsReader {
    root: PathBuf,
    allowed: Option<Vec<usize>>,
    name: String,
}

/// What the reader found for one node.
struct RawNode {
    os: u32,
    cpus: Vec<usize>,
    memory: u64,
    distances: Option<Vec<u32>>,
    read_latency: Option<f64>,
    write_latency: Option<f64>,
}

impl SysfsReader {
    /// A reader of the tree under `root` (`/` for the running kernel).
    pub fn new(root: impl Into<PathBuf>) -> SysfsReader {
        SysfsReader {
            root: root.into(),
            allowed: None,
            name: "host".to_string(),
        }
    }

    /// Keeps only these OS CPUs (the process's affinity mask); by default all CPUs.
    #[must_use]
    pub fn allowed_cpus(mut self, cpus: Option<Vec<usize>>) -> SysfsReader {
        self.allowed = cpus.map(|mut c| {
            c.sort_unstable();
            c.dedup();
            c
        });
        self
    }

    /// The name of the topology read (default `host`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> SysfsReader {
        self.name = name.into();
        self
    }

    /// Reads the tree.
    pub fn read(&self) -> Result<Topology, TopoError> {
        let node_dir = self.root.join("sys/devices/system/node");
        let mut raw = self.read_nodes(&node_dir)?;
        if raw.is_empty() {
            raw.push(self.read_flat()?);
        }
        for node in &mut raw {
            if let Some(allowed) = &self.allowed {
                node.cpus.retain(|c| allowed.binary_search(c).is_ok());
            }
        }
        if self.allowed.is_some() && raw.iter().all(|n| n.cpus.is_empty()) {
            return Err(TopoError::NoAllowedCpus);
        }

        let n = raw.len();
        let distances: Vec<Vec<u32>> = if raw.iter().all(|r| r.distances.is_some()) {
            raw.iter()
                .map(|r| r.distances.clone().unwrap_or_default())
                .collect()
        } else {
            (0..n)
                .map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect())
                .collect()
        };
        let costs = hmat_costs(&raw, &distances);
        let cache_groups = self.cache_groups(raw.iter().flat_map(|r| r.cpus.iter().copied()));
        Topology::build(Parts {
            name: self.name.clone(),
            source: Source::Sysfs,
            node_cpus: raw.iter().map(|r| r.cpus.clone()).collect(),
            pinned: true,
            memory: raw.iter().map(|r| r.memory).collect(),
            os_nodes: Some(raw.iter().map(|r| r.os).collect()),
            cache_groups: Some(cache_groups),
            distances,
            costs,
        })
    }

    /// The free memory of the host node the kernel numbers `os_node`, in bytes: `MemFree`
    /// of `sys/devices/system/node/node<N>/meminfo`. On a machine without NUMA
    /// information (no `sys/devices/system/node`), node 0 is the whole machine and its
    /// `MemFree` comes from `proc/meminfo`. A node the tree does not have, or a file
    /// without a readable `MemFree` line, is an error.
    ///
    /// ```no_run
    /// use locus_topo::SysfsReader;
    ///
    /// let free = SysfsReader::new("/").free_memory(0).unwrap();
    /// println!("node 0: {} MiB free", free >> 20);
    /// ```
    pub fn free_memory(&self, os_node: u32) -> Result<u64, TopoError> {
        let node_dir = self.root.join("sys/devices/system/node");
        let path = if node_dir.is_dir() || os_node != 0 {
            node_dir.join(format!("node{os_node}")).join("meminfo")
        } else {
            self.root.join("proc/meminfo")
        };
        let text = fs::read_to_string(&path).map_err(|source| TopoError::Io {
            path: path.clone(),
            source: std::sync::Arc::new(source),
        })?;
        mem_free(&text, &path)
    }

    /// The free memory of the whole host, in bytes: the sum of [`free_memory`] over
    /// its nodes (`proc/meminfo` on a machine without NUMA information).
    ///
    /// [`free_memory`]: SysfsReader::free_memory
    pub fn total_free_memory(&self) -> Result<u64, TopoError> {
        let node_dir = self.root.join("sys/devices/system/node");
        if !node_dir.is_dir() {
            return self.free_memory(0);
        }
        let mut total = 0u64;
        for os in node_numbers(&node_dir) {
            total = total.saturating_add(self.free_memory(os)?);
        }
        Ok(total)
    }

    /// The `node<N>` directories, ascending by `N`; empty when there are none.
    fn read_nodes(&self, dir: &Path) -> Result<Vec<RawNode>, TopoError> {
        node_numbers(dir)
            .into_iter()
            .map(|os| {
                let node = dir.join(format!("node{os}"));
                let cpus = parse_cpulist(&node.join("cpulist"))?;
                let memory = match read_optional(&node.join("meminfo"))? {
                    Some(text) => mem_total(&text, &node.join("meminfo"))?,
                    None => 0,
                };
                let distances = match read_optional(&node.join("distance"))? {
                    Some(text) => Some(crate::spec::parse_numbers(&text).map_err(|reason| {
                        TopoError::Parse {
                            path: node.join("distance"),
                            reason,
                        }
                    })?),
                    None => None,
                };
                let (read_latency, write_latency) = hmat_latencies(&node)?;
                Ok(RawNode {
                    os,
                    cpus,
                    memory,
                    distances,
                    read_latency,
                    write_latency,
                })
            })
            .collect()
    }

    /// A machine without NUMA information: one node.
    fn read_flat(&self) -> Result<RawNode, TopoError> {
        let cpu_dir = self.root.join("sys/devices/system/cpu");
        let online = cpu_dir.join("online");
        let cpus = if online.exists() {
            parse_cpulist(&online)?
        } else {
            let mut cpus: Vec<usize> = fs::read_dir(&cpu_dir)
                .map_err(|source| TopoError::Io {
                    path: cpu_dir.clone(),
                    source: std::sync::Arc::new(source),
                })?
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
                .collect();
            cpus.sort_unstable();
            cpus
        };
        let meminfo = self.root.join("proc/meminfo");
        let memory = match read_optional(&meminfo)? {
            Some(text) => mem_total(&text, &meminfo)?,
            None => 0,
        };
        Ok(RawNode {
            os: 0,
            cpus,
            memory,
            distances: None,
            read_latency: None,
            write_latency: None,
        })
    }

    /// Groups of OS CPUs sharing their last-level cache; CPUs without cache information
    /// are left out (they get one group per node).
    fn cache_groups(&self, cpus: impl Iterator<Item = usize>) -> Vec<Vec<usize>> {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for cpu in cpus {
            let dir = self
                .root
                .join(format!("sys/devices/system/cpu/cpu{cpu}/cache"));
            let Some(shared) = last_level_cache(&dir) else {
                continue;
            };
            if !groups.contains(&shared) {
                groups.push(shared);
            }
        }
        groups
    }
}

/// The `N` of the `node<N>` directories under `dir`, ascending; empty when there are none.
fn node_numbers(dir: &Path) -> Vec<u32> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut numbers: Vec<u32> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name();
            let rest = name.to_str()?.strip_prefix("node")?;
            rest.parse().ok()
        })
        .collect();
    numbers.sort_unstable();
    numbers
}

/// The `shared_cpu_list` of the highest-level data or unified cache under `dir`.
fn last_level_cache(dir: &Path) -> Option<Vec<usize>> {
    let mut best: Option<(u32, Vec<usize>)> = None;
    for entry in fs::read_dir(dir).ok()?.filter_map(Result::ok) {
        let path = entry.path();
        let is_index = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with("index"));
        if !is_index {
            continue;
        }
        let kind = fs::read_to_string(path.join("type")).unwrap_or_default();
        if kind.trim() == "Instruction" {
            continue;
        }
        let Some(level) = fs::read_to_string(path.join("level"))
            .ok()
            .and_then(|l| l.trim().parse::<u32>().ok())
        else {
            continue;
        };
        let Some(shared) = fs::read_to_string(path.join("shared_cpu_list"))
            .ok()
            .and_then(|l| cpulist::parse(&l).ok())
        else {
            continue;
        };
        if !best.as_ref().is_some_and(|(l, _)| level <= *l) {
            best = Some((level, shared));
        }
    }
    best.map(|(_, shared)| shared)
}

/// HMAT latencies of a node's memory: `access1` (CPU initiators) first, then `access0`.
fn hmat_latencies(node: &Path) -> Result<(Option<f64>, Option<f64>), TopoError> {
    for access in ["access1", "access0"] {
        let dir = node.join(access).join("initiators");
        let read = read_positive(&dir.join("read_latency"))?;
        let write = read_positive(&dir.join("write_latency"))?;
        if read.is_some() || write.is_some() {
            return Ok((read, write));
        }
    }
    Ok((None, None))
}

fn read_positive(path: &Path) -> Result<Option<f64>, TopoError> {
    let Some(text) = read_optional(path)? else {
        return Ok(None);
    };
    let value: u64 = text.trim().parse().map_err(|_| TopoError::Parse {
        path: path.to_path_buf(),
        reason: format!("`{}` is not a number", text.trim()),
    })?;
    // 0 means "not reported".
    Ok((value > 0).then_some(value as f64))
}

/// Distance ratios, scaled by HMAT latencies when any node has them.
fn hmat_costs(raw: &[RawNode], distances: &[Vec<u32>]) -> Option<CostMatrix> {
    if raw
        .iter()
        .all(|r| r.read_latency.is_none() && r.write_latency.is_none())
    {
        return None;
    }
    let base = CostMatrix::from_distances(distances);
    let scale = |lat: &dyn Fn(&RawNode) -> Option<f64>, ratios: &[Vec<f64>]| {
        ratios
            .iter()
            .enumerate()
            .map(|(i, row)| {
                row.iter()
                    .enumerate()
                    .map(|(j, &r)| match (lat(&raw[j]), lat(&raw[i])) {
                        (Some(to), Some(from)) if i != j => r * to / from,
                        _ => r,
                    })
                    .collect()
            })
            .collect()
    };
    Some(CostMatrix {
        read: scale(&|r| r.read_latency, &base.read),
        write: scale(&|r| r.write_latency, &base.write),
        origin: CostOrigin::Hmat,
    })
}

fn read_optional(path: &Path) -> Result<Option<String>, TopoError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TopoError::Io {
            path: path.to_path_buf(),
            source: std::sync::Arc::new(source),
        }),
    }
}

fn parse_cpulist(path: &Path) -> Result<Vec<usize>, TopoError> {
    let text = fs::read_to_string(path).map_err(|source| TopoError::Io {
        path: path.to_path_buf(),
        source: std::sync::Arc::new(source),
    })?;
    cpulist::parse(&text).map_err(|reason| TopoError::Parse {
        path: path.to_path_buf(),
        reason,
    })
}

/// `MemTotal` in bytes from a `meminfo` file (`Node 0 MemTotal: 123 kB` or `MemTotal: 123 kB`).
fn mem_total(text: &str, path: &Path) -> Result<u64, TopoError> {
    meminfo_bytes(text, "MemTotal", path)
}

/// `MemFree` in bytes from a `meminfo` file (`Node 0 MemFree: 123 kB` or `MemFree: 123 kB`).
fn mem_free(text: &str, path: &Path) -> Result<u64, TopoError> {
    meminfo_bytes(text, "MemFree", path)
}

/// The size on the first line of a `meminfo` file whose key is `field` (the word before
/// the colon, after an optional `Node N` prefix), in bytes. A missing line, a value that
/// is not a number, or an unknown unit is an error naming the file.
fn meminfo_bytes(text: &str, field: &str, path: &Path) -> Result<u64, TopoError> {
    let parse_err = |reason: String| TopoError::Parse {
        path: path.to_path_buf(),
        reason,
    };
    let key = format!("{field}:");
    let (line, rest) = text
        .lines()
        .find_map(|l| {
            let (before, after) = l.split_once(&key)?;
            // The key is a whole word: `Node 0 MemFree:`, not `XMemFree:`.
            let whole = before.is_empty() || before.ends_with(char::is_whitespace);
            whole.then_some((l, after))
        })
        .ok_or_else(|| parse_err(format!("no {field} line")))?;
    let mut words = rest.split_whitespace();
    let value: u64 = words
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| parse_err(format!("cannot read a size in `{line}`")))?;
    let unit = match words.next() {
        Some("kB") | Some("KB") | Some("kb") => 1024,
        None | Some("B") => 1,
        Some(other) => return Err(parse_err(format!("unknown unit `{other}`"))),
    };
    Ok(value.saturating_mul(unit))
}

#[cfg(test)]
mod tests {
    use super::{mem_free, mem_total};
    use std::path::Path;

    #[test]
    fn meminfo_lines() {
        let p = Path::new("meminfo");
        assert_eq!(
            mem_total(
                "Node 0 MemTotal:        5204180 kB\nNode 0 MemFree: 1 kB\n",
                p
            )
            .unwrap(),
            5_204_180 * 1024
        );
        assert_eq!(mem_total("MemTotal: 2048 kB\n", p).unwrap(), 2 << 20);
        assert!(mem_total("MemFree: 1 kB\n", p).is_err());
        assert!(mem_total("MemTotal: lots\n", p).is_err());
    }

    #[test]
    fn mem_free_of_a_node_and_of_the_machine() {
        let p = Path::new("node1/meminfo");
        let node = "Node 1 MemTotal:       16777216 kB\n\
                    Node 1 MemFree:        14985464 kB\n\
                    Node 1 MemUsed:         1791752 kB\n";
        assert_eq!(mem_free(node, p).unwrap(), 14_985_464 * 1024);
        let machine = "MemTotal:        4194304 kB\nMemFree:     1048576 kB\n\
                       MemAvailable:    2097152 kB\n";
        assert_eq!(mem_free(machine, p).unwrap(), 1 << 30);
        // A value in bytes, and the first matching line only.
        assert_eq!(mem_free("MemFree: 4096\nMemFree: 1 kB\n", p).unwrap(), 4096);
        // Saturates rather than overflowing.
        let huge = format!("MemFree: {} kB\n", u64::MAX / 2);
        assert_eq!(mem_free(&huge, p).unwrap(), u64::MAX);
    }

    #[test]
    fn malformed_mem_free_is_an_error_not_a_panic() {
        let p = Path::new("node0/meminfo");
        for text in [
            "",
            "\n\n",
            "Node 0 MemTotal: 1024 kB\n",
            "Node 0 MemFree:\n",
            "Node 0 MemFree: kB\n",
            "Node 0 MemFree: -5 kB\n",
            "Node 0 MemFree: 1.5 kB\n",
            "Node 0 MemFree: 0x10 kB\n",
            "Node 0 MemFree: 99999999999999999999999 kB\n",
            "Node 0 MemFree: 12 MB\n",
            "Node 0 XMemFree: 12 kB\n",
            "MemFree 12 kB\n",
            "\u{fffd}\u{0}MemFree:\u{0}12",
        ] {
            let err = mem_free(text, p).expect_err(text);
            assert!(err.to_string().contains("node0/meminfo"), "{text:?}: {err}");
        }
    }
}
