//! `bitonic` (`crates/locus-bench/src/bitonic.rs`) fork-join, in place in one array of
//! `u64` keys: the same blocked network, one parallel loop per step. Step 0 sorts every
//! block (ascending or descending); then for each stage `k` every distance of at least a
//! block is a loop over the pairs of blocks (compare-exchange element by element), and
//! the distances inside a block are a loop of merges, one per block.
//!
//! Verification: the keys equal the input sorted ascending.

use rayon::prelude::*;

use crate::Outcome;

/// Locus's keys for seed 1: SplitMix64's finaliser of `i ^ rotl(seed, 32)`.
fn initial(i: u64) -> u64 {
    let mut z = (i ^ 1u64.rotate_left(32)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Compare-exchange two blocks element by element: the smaller keys go to `lo` unless
/// `descending`.
fn pair(lo: &mut [u64], hi: &mut [u64], descending: bool) {
    for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
        if (*a > *b) != descending {
            std::mem::swap(a, b);
        }
    }
}

/// The half-cleaners of distances `len/2` down to 1 on a bitonic block.
fn merge(keys: &mut [u64], descending: bool) {
    let mut d = keys.len() / 2;
    while d > 0 {
        for i in 0..keys.len() {
            if i & d == 0 && (keys[i] > keys[i | d]) != descending {
                keys.swap(i, i | d);
            }
        }
        d /= 2;
    }
}

/// Runs the kernel with the arguments after its name.
pub fn run(args: &[String]) -> Result<Outcome, String> {
    let [len, block_len] = crate::numbers(args, [1 << 18, 1 << 12])?;
    if !len.is_power_of_two() || !block_len.is_power_of_two() || block_len > len {
        return Err("LEN and BLOCK_LEN must be powers of two, BLOCK_LEN <= LEN".into());
    }
    let blocks = len / block_len;
    let (m, bits) = (
        blocks.trailing_zeros() as usize,
        block_len.trailing_zeros() as usize,
    );
    // The direction of stage `k` at block `blk`: bit `k` of the keys' positions.
    let descending = |k: usize, blk: usize| ((blk << bits) >> k) & 1 == 1;
    let mut keys: Vec<u64> = (0..len as u64).map(initial).collect();
    let mut tasks = 0;

    let ((), wall_s) = crate::timed(|| {
        keys.par_chunks_mut(block_len)
            .enumerate()
            .for_each(|(b, block)| {
                if descending(bits, b) {
                    block.sort_unstable_by(|x, y| y.cmp(x));
                } else {
                    block.sort_unstable();
                }
            });
        tasks += blocks;
        for k in bits + 1..=m + bits {
            for j in (bits..k).rev() {
                // Pairs of blocks `d` apart: groups of `2d` blocks, lower half against upper.
                let d = 1 << (j - bits);
                keys.par_chunks_mut(2 * d * block_len)
                    .enumerate()
                    .for_each(|(group, keys)| {
                        let (lower, upper) = keys.split_at_mut(d * block_len);
                        lower
                            .par_chunks_mut(block_len)
                            .zip(upper.par_chunks_mut(block_len))
                            .enumerate()
                            .for_each(|(i, (lo, hi))| {
                                pair(lo, hi, descending(k, group * 2 * d + i))
                            });
                    });
                tasks += blocks / 2;
            }
            keys.par_chunks_mut(block_len)
                .enumerate()
                .for_each(|(b, block)| merge(block, descending(k, b)));
            tasks += blocks;
        }
    });

    let mut want: Vec<u64> = (0..len as u64).map(initial).collect();
    want.sort_unstable();
    Ok(Outcome {
        tasks,
        wall_s,
        verified: keys == want,
        params: format!("{{\"len\": {len}, \"block_len\": {block_len}}}"),
    })
}
