/* What the C and C++ peers' bitonic sorts share (openmp/, tbb/, starpu/ include it as
 * "../common/bitonic_blocks.h"): Locus's keys (crates/locus-bench/src/bitonic.rs) and the
 * three block operations of the blocked network.
 *
 * Plain C that also compiles as C++. */
#ifndef LOCUS_PEER_BITONIC_BLOCKS_H
#define LOCUS_PEER_BITONIC_BLOCKS_H

#include <stdint.h>
#include <stdlib.h>

/* Locus's keys for seed 1: SplitMix64's finaliser of `i ^ rotl(seed, 32)`. */
static inline uint64_t initial(uint64_t i) {
    uint64_t z = (i ^ (1ull << 32)) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline int ascending(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static inline int descending(const void *a, const void *b) { return ascending(b, a); }

/* Sorts a block ascending, or descending when `desc` (step 0). */
static inline void sort_block(uint64_t *keys, long len, int desc) {
    qsort(keys, (size_t)len, sizeof(uint64_t), desc ? descending : ascending);
}

/* Compare-exchange of two blocks element by element (a distance of at least a block). */
static inline void pair_blocks(uint64_t *lo, uint64_t *hi, long len, int desc) {
    for (long i = 0; i < len; i++) {
        uint64_t a = lo[i], b = hi[i];
        uint64_t small = a <= b ? a : b, large = a <= b ? b : a;
        lo[i] = desc ? large : small;
        hi[i] = desc ? small : large;
    }
}

/* The half-cleaners of distances len/2 down to 1 on a bitonic block. */
static inline void merge_block(uint64_t *keys, long len, int desc) {
    for (long d = len / 2; d > 0; d /= 2) {
        for (long i = 0; i < len; i++) {
            if ((i & d) == 0 && (keys[i] > keys[i | d]) != desc) {
                uint64_t t = keys[i];
                keys[i] = keys[i | d];
                keys[i | d] = t;
            }
        }
    }
}

static inline int is_power_of_two(long x) { return x > 0 && (x & (x - 1)) == 0; }

static inline int log2_of(long x) {
    int n = 0;
    while ((1L << n) < x) n++;
    return n;
}

#endif
