//! Many threads allocating and freeing at once, with blocks crossing threads and
//! nodes. Each block is filled with a pattern unique to it and checked before it is
//! freed, so two live blocks that overlapped would be caught.

use std::sync::{Arc, Barrier, Mutex};

use locus_mem::pool::{AllocError, Block, PoolConfig, Pools};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Stamps and checks blocks: the first and last 8 bytes hold the block's id, the bytes
/// between a filler byte derived from it (compared with `memcmp` against a reference).
struct Pattern {
    reference: Vec<Vec<u8>>,
}

const FILLERS: usize = 61;
const MAX_SMALL: usize = 1 << 20;

impl Pattern {
    fn new() -> Self {
        Pattern {
            reference: (0..FILLERS)
                .map(|f| vec![filler(f as u64); MAX_SMALL])
                .collect(),
        }
    }

    fn stamp(&self, b: &Block, id: u64) {
        let n = b.len();
        // SAFETY: the block is owned by the caller and holds `n` bytes.
        unsafe {
            b.as_mut_ptr().write_bytes(filler(id), n);
            if n >= 16 {
                b.as_mut_ptr()
                    .cast::<[u8; 8]>()
                    .write_unaligned(id.to_le_bytes());
                b.as_mut_ptr()
                    .add(n - 8)
                    .cast::<[u8; 8]>()
                    .write_unaligned(id.to_le_bytes());
            }
        }
    }

    fn check(&self, b: &Block, id: u64) {
        let n = b.len();
        // SAFETY: the block is owned by the caller and was stamped over `n` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), n) };
        let inner = if n >= 16 {
            assert_eq!(
                bytes[..8],
                id.to_le_bytes(),
                "head of block {id} overwritten"
            );
            assert_eq!(
                bytes[n - 8..],
                id.to_le_bytes(),
                "tail of block {id} overwritten"
            );
            &bytes[8..n - 8]
        } else {
            bytes
        };
        let reference = &self.reference[(id % FILLERS as u64) as usize][..inner.len()];
        assert!(inner == reference, "body of block {id} overwritten");
    }
}

fn filler(id: u64) -> u8 {
    (id % FILLERS as u64) as u8 + 1
}

/// A size: mostly small, sometimes up to 64 KiB, rarely up to 1 MiB; sometimes 0.
fn random_size(rng: &mut SmallRng) -> usize {
    match rng.random_range(0..100) {
        0 => 0,
        1..=80 => rng.random_range(1..=4096),
        81..=98 => rng.random_range(4097..=65536),
        _ => rng.random_range(65537..=MAX_SMALL),
    }
}

struct Live {
    block: Block,
    id: u64,
    node: usize,
}

#[test]
fn concurrent_alloc_free_with_cross_thread_frees() {
    const THREADS: usize = 8;
    const NODES: usize = 4;
    let ops: usize = if cfg!(miri) { 200 } else { 10_000 };

    let pools = Pools::new(PoolConfig::virtual_nodes(NODES)).unwrap();
    let pattern = Arc::new(Pattern::new());
    // One mailbox per thread: blocks other threads hand over, to be checked and freed.
    let mailboxes: Arc<Vec<Mutex<Vec<Live>>>> =
        Arc::new((0..THREADS).map(|_| Mutex::new(Vec::new())).collect());
    let barrier = Arc::new(Barrier::new(THREADS));

    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (pools, pattern, mailboxes, barrier) = (
                pools.clone(),
                pattern.clone(),
                mailboxes.clone(),
                barrier.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(0x10c5 + t as u64);
                let mut live: Vec<Live> = Vec::new();
                let mut allocs = 0u64;
                barrier.wait();
                for op in 0..ops {
                    let free = !live.is_empty() && (live.len() >= 64 || rng.random_bool(0.5));
                    if free {
                        let l = live.swap_remove(rng.random_range(0..live.len()));
                        pattern.check(&l.block, l.id);
                        assert_eq!(l.block.node(), l.node);
                        if rng.random_bool(0.2) {
                            // Hand it to another thread, which frees it.
                            let to = (t + 1 + rng.random_range(0..THREADS - 1)) % THREADS;
                            mailboxes[to].lock().unwrap().push(l);
                        } else {
                            drop(l);
                        }
                    } else {
                        let node = rng.random_range(0..NODES);
                        let bytes = random_size(&mut rng);
                        let block = if rng.random_bool(0.3) {
                            let b = pools.alloc_zeroed(node, bytes).unwrap();
                            // SAFETY: the block is ours and holds `bytes` bytes.
                            let s = unsafe { std::slice::from_raw_parts(b.as_ptr(), bytes) };
                            assert!(
                                s.iter().all(|&x| x == 0),
                                "alloc_zeroed gave non-zero bytes"
                            );
                            b
                        } else {
                            pools.alloc(node, bytes).unwrap()
                        };
                        allocs += 1;
                        assert_eq!(block.node(), node);
                        assert!(block.capacity() >= bytes);
                        assert_eq!(block.as_ptr() as usize % 64, 0);
                        let id = ((t as u64) << 32) | op as u64;
                        pattern.stamp(&block, id);
                        live.push(Live { block, id, node });
                    }
                    if op % 32 == 0 {
                        let handed = std::mem::take(&mut *mailboxes[t].lock().unwrap());
                        for l in handed {
                            pattern.check(&l.block, l.id);
                        }
                    }
                }
                for l in &live {
                    pattern.check(&l.block, l.id);
                }
                allocs
            })
        })
        .collect();
    let allocs: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    for mailbox in mailboxes.iter() {
        for l in mailbox.lock().unwrap().drain(..) {
            pattern.check(&l.block, l.id);
        }
    }

    let stats = pools.stats();
    assert_eq!(pools.bytes_in_use(), 0, "{stats:?}");
    assert_eq!(stats.iter().map(|s| s.allocs).sum::<u64>(), allocs);
    assert!(stats
        .iter()
        .all(|s| s.in_use == 0 && s.fallbacks == 0 && s.reused > 0));
    assert!(stats.iter().all(|s| s.peak > 0 && s.cached > 0));
    pools.release_cached();
    for s in pools.stats() {
        assert_eq!(
            (s.chunks, s.cached, s.os_bytes, s.big_blocks),
            (0, 0, 0, 0),
            "{s:?}"
        );
    }
}

#[test]
fn concurrent_allocation_under_node_limits_never_exceeds_them() {
    const THREADS: usize = 4;
    const LIMIT: u64 = 1 << 20;
    let pools = Pools::new(PoolConfig::virtual_nodes(2).with_node_limit(LIMIT)).unwrap();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let pools = pools.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t as u64);
                let mut live = Vec::new();
                let (mut ok, mut fell_back, mut exhausted) = (0u64, 0u64, 0u64);
                for _ in 0..2_000 {
                    if !live.is_empty() && rng.random_bool(0.45) {
                        live.swap_remove(rng.random_range(0..live.len()));
                    }
                    match pools.alloc(t % 2, rng.random_range(1..=64 << 10)) {
                        Ok(b) => {
                            ok += 1;
                            fell_back += u64::from(b.fell_back());
                            assert_eq!(b.fell_back(), b.node() != t % 2);
                            live.push(b);
                        }
                        Err(AllocError::Exhausted { os: None, .. }) => exhausted += 1,
                        Err(e) => panic!("{e}"),
                    }
                    for s in pools.stats() {
                        assert!(s.in_use <= LIMIT && s.peak <= LIMIT, "{s:?}");
                    }
                }
                (ok, fell_back, exhausted)
            })
        })
        .collect();
    let results: Vec<(u64, u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let stats = pools.stats();
    let fell_back: u64 = results.iter().map(|r| r.1).sum();
    assert_eq!(stats.iter().map(|s| s.fallbacks).sum::<u64>(), fell_back);
    assert!(fell_back > 0, "the limits were never reached: {results:?}");
    assert!(results.iter().map(|r| r.2).sum::<u64>() > 0, "{results:?}");
    assert_eq!(pools.bytes_in_use(), 0);
}
