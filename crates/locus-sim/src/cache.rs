//! The last-level cache of each node: the memory its tasks touched recently, as far as
//! it fits, so that a task reading it again costs no memory traffic.
//!
//! The model is a least-recently-used set of whole accesses per node, keyed by the
//! memory they touch ([`MemoryKey`]): a task's reads and writes enter its node's cache
//! when it starts, evicting the least recently touched accesses beyond the capacity;
//! an access larger than the cache never enters it. A read hits for the bytes its key
//! held in the cache, provided nothing wrote that memory since (a write anywhere makes
//! the other nodes' copies stale: each key has a generation, bumped by every write).
//! Writes always go to memory (their lines are written back). No associativity, no
//! lines shared between nodes, no prefetching.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use locus::engine::MemoryKey;

/// A multiplicative hash of the keys' words (the Fx hash of rustc): keys are addresses,
/// and the maps are looked up a few times per task, never iterated.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type KeyMap<V> = HashMap<MemoryKey, V, BuildHasherDefault<KeyHasher>>;

/// One node's cache.
#[derive(Default)]
struct Llc {
    entries: KeyMap<Entry>,
    /// Keys by the stamp of their last touch, oldest first.
    lru: BTreeMap<u64, MemoryKey>,
    bytes: u64,
}

#[derive(Clone, Copy)]
struct Entry {
    stamp: u64,
    bytes: u64,
    generation: u64,
}

/// The caches of every node.
pub(crate) struct Caches {
    nodes: Vec<Llc>,
    capacity: u64,
    /// Writes per key so far; a cached entry of an older generation is stale.
    generation: KeyMap<u64>,
    clock: u64,
}

impl Caches {
    /// Caches of `capacity` bytes for `nodes` nodes; a capacity of 0 caches nothing.
    pub(crate) fn new(nodes: usize, capacity: u64) -> Self {
        Caches {
            nodes: (0..nodes).map(|_| Llc::default()).collect(),
            capacity,
            generation: KeyMap::default(),
            clock: 0,
        }
    }

    /// A task on `node` reads `bytes` of `key`: returns the bytes that hit in the
    /// node's cache, and keeps them there as the most recently used.
    pub(crate) fn read(&mut self, node: usize, key: MemoryKey, bytes: u64) -> u64 {
        if self.capacity == 0 {
            return 0;
        }
        let generation = self.generation.get(&key).copied().unwrap_or(0);
        let hit = match self.nodes[node].entries.get(&key) {
            Some(e) if e.generation == generation => e.bytes.min(bytes),
            _ => 0,
        };
        self.touch(node, key, bytes, generation);
        hit
    }

    /// A task on `node` writes `bytes` of `key`: the node's cache holds the new
    /// contents, every other copy is stale.
    pub(crate) fn write(&mut self, node: usize, key: MemoryKey, bytes: u64) {
        if self.capacity == 0 {
            return;
        }
        let generation = self.generation.entry(key).or_insert(0);
        *generation += 1;
        let generation = *generation;
        self.touch(node, key, bytes, generation);
    }

    fn touch(&mut self, node: usize, key: MemoryKey, bytes: u64, generation: u64) {
        let llc = &mut self.nodes[node];
        let mut kept = bytes;
        if let Some(old) = llc.entries.remove(&key) {
            llc.lru.remove(&old.stamp);
            llc.bytes -= old.bytes;
            if old.generation == generation {
                kept = kept.max(old.bytes);
            }
        }
        if kept > self.capacity {
            return;
        }
        self.clock += 1;
        let stamp = self.clock;
        llc.entries.insert(
            key,
            Entry {
                stamp,
                bytes: kept,
                generation,
            },
        );
        llc.lru.insert(stamp, key);
        llc.bytes += kept;
        while llc.bytes > self.capacity {
            let (_, oldest) = llc.lru.pop_first().expect("bytes held by some entry");
            let e = llc
                .entries
                .remove(&oldest)
                .expect("every stamp has its entry");
            llc.bytes -= e.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(buffer: usize) -> MemoryKey {
        MemoryKey { buffer, offset: 0 }
    }

    #[test]
    fn reads_hit_what_the_node_touched_recently_and_still_fits() {
        let mut c = Caches::new(2, 100);
        c.write(0, key(1), 60);
        assert_eq!(c.read(0, key(1), 60), 60, "written here, still cached");
        assert_eq!(c.read(1, key(1), 60), 0, "another node's cache");
        assert_eq!(
            c.read(1, key(1), 60),
            60,
            "read there once: now cached there too"
        );
        // 60 + 60 > 100: key 1, the least recently used on node 0, is evicted.
        c.write(0, key(2), 60);
        assert_eq!(c.read(0, key(1), 60), 0);
        // Too big to be cached at all.
        c.write(0, key(3), 101);
        assert_eq!(c.read(0, key(3), 101), 0);
    }

    #[test]
    fn a_write_makes_other_copies_stale() {
        let mut c = Caches::new(2, 100);
        c.write(0, key(1), 40);
        assert_eq!(c.read(1, key(1), 40), 0);
        assert_eq!(c.read(1, key(1), 40), 40);
        c.write(0, key(1), 40);
        assert_eq!(c.read(1, key(1), 40), 0, "node 1's copy is stale");
        assert_eq!(c.read(0, key(1), 40), 40);
    }

    #[test]
    fn no_capacity_no_hits() {
        let mut c = Caches::new(1, 0);
        c.write(0, key(1), 1);
        assert_eq!(c.read(0, key(1), 1), 0);
    }
}
