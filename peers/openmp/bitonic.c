/* Locus's `bitonic` (crates/locus-bench/src/bitonic.rs) as OpenMP tasks with `depend`
 * clauses, in place in one shared array of `u64` keys: the same blocked network, step by
 * step. Step 0 sorts every block (ascending or descending, with qsort); then for each
 * stage `k` every distance of at least a block is one task per pair of blocks
 * (compare-exchange element by element), and the distances inside a block are one merge
 * task per block.
 *
 * Usage: bitonic [LEN BLOCK_LEN] (powers of two; default 262144 4096, Locus's small
 * size). Prints one JSON object; exit status 1 when the keys are not the input sorted
 * ascending, 2 on bad arguments. */
#include "peer.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/bitonic_blocks.h"


int main(int argc, char **argv) {
    long len = 1L << 18, block_len = 1L << 12;
    if (argc == 3) {
        char *e1, *e2;
        len = strtol(argv[1], &e1, 10);
        block_len = strtol(argv[2], &e2, 10);
        if (*e1 || *e2 || e1 == argv[1] || e2 == argv[2]) len = 0;
    }
    if ((argc != 1 && argc != 3) || !is_power_of_two(len) || !is_power_of_two(block_len) || block_len > len) {
        fprintf(stderr, "usage: bitonic [LEN BLOCK_LEN] (powers of two, BLOCK_LEN <= LEN)\n");
        return 2;
    }
    long nb = len / block_len;
    int m = log2_of(nb), bits = log2_of(block_len);
    uint64_t *keys = malloc(len * sizeof(uint64_t)), *want = malloc(len * sizeof(uint64_t));
    for (long i = 0; i < len; i++) keys[i] = want[i] = initial((uint64_t)i);
    /* One dependence object per block. */
    char *dep = calloc(nb, 1);
    long tasks = 0;

    double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    {
        /* The direction of stage `k` at block `blk`: bit `k` of the keys' positions. */
#define DESC(k, blk) (int)((((uint64_t)(blk) << bits) >> (k)) & 1)
        for (long b = 0; b < nb; b++) {
#pragma omp task depend(inout: dep[b]) firstprivate(b)
            sort_block(keys + b * block_len, block_len, DESC(bits, b));
        }
        tasks += nb;
        for (int k = bits + 1; k <= m + bits; k++) {
            for (int j = k - 1; j >= bits; j--) {
                long d = 1L << (j - bits);
                for (long lo = 0; lo < nb; lo++) {
                    if (lo & d) continue;
                    long hi = lo | d;
#pragma omp task depend(inout: dep[lo], dep[hi]) firstprivate(lo, hi, k)
                    pair_blocks(keys + lo * block_len, keys + hi * block_len, block_len, DESC(k, lo));
                    tasks++;
                }
            }
            for (long b = 0; b < nb; b++) {
#pragma omp task depend(inout: dep[b]) firstprivate(b, k)
                merge_block(keys + b * block_len, block_len, DESC(k, b));
            }
            tasks += nb;
        }
    }
    double wall = omp_get_wtime() - t0;

    qsort(want, len, sizeof(uint64_t), ascending);
    int ok = memcmp(keys, want, len * sizeof(uint64_t)) == 0;
    printf("{\"peer\": \"" PEER "\", \"bench\": \"bitonic\", \"threads\": %d, \"tasks\": %ld, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s, "
           "\"params\": {\"len\": %ld, \"block_len\": %ld}}\n",
           omp_get_max_threads(), tasks, wall, tasks ? wall * 1e9 / tasks : 0.0, ok ? "true" : "false", len,
           block_len);
    free(keys), free(want), free(dep);
    return ok ? 0 : 1;
}
