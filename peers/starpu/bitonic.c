/* Locus's `bitonic` (crates/locus-bench/src/bitonic.rs) with StarPU, in place in one
 * array of `u64` keys with one vector handle per block: the same blocked network, step
 * by step. Step 0 sorts every block (ascending or descending, with qsort); then for each
 * stage `k` every distance of at least a block is one task per pair of blocks
 * (compare-exchange element by element), and the distances inside a block are one merge
 * task per block; every task updates its blocks in place (`STARPU_RW`).
 *
 * Usage: bitonic [LEN BLOCK_LEN] (powers of two; default 262144 4096, Locus's small
 * size). Prints one JSON object; exit status 1 when the keys are not the input sorted
 * ascending, 2 on bad arguments, 3 when StarPU fails. */
#include <stdint.h>

#include "common.h"
#include "../common/bitonic_blocks.h"

/* Buffer: the block (RW); argument: the direction. */
static void sort_cpu(void *buffers[], void *cl_arg) {
    int desc;
    starpu_codelet_unpack_args(cl_arg, &desc);
    sort_block((uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), STARPU_VECTOR_GET_NX(buffers[0]), desc);
}

/* Buffers: the lower and the upper block (RW); argument: the direction. */
static void pair_cpu(void *buffers[], void *cl_arg) {
    int desc;
    starpu_codelet_unpack_args(cl_arg, &desc);
    uint64_t *lo = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), *hi = (uint64_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
    long len = STARPU_VECTOR_GET_NX(buffers[0]);
    pair_blocks(lo, hi, len, desc);
}

/* Buffer: the block (RW); argument: the direction. */
static void merge_cpu(void *buffers[], void *cl_arg) {
    int desc;
    starpu_codelet_unpack_args(cl_arg, &desc);
    merge_block((uint64_t *)STARPU_VECTOR_GET_PTR(buffers[0]), STARPU_VECTOR_GET_NX(buffers[0]), desc);
}

static struct starpu_codelet sort_cl = {.cpu_funcs = {sort_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "sort"};
static struct starpu_codelet pair_cl = {
    .cpu_funcs = {pair_cpu}, .nbuffers = 2, .modes = {STARPU_RW, STARPU_RW}, .name = "pair"};
static struct starpu_codelet merge_cl = {
    .cpu_funcs = {merge_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "merge"};

int main(int argc, char **argv) {
    long len = 1L << 18, block_len = 1L << 12;
    long *const f[2] = {&len, &block_len};
    if (!parse_longs(argc, argv, f, 2) || !is_power_of_two(len) || !is_power_of_two(block_len) || block_len > len) {
        fprintf(stderr, "usage: bitonic [LEN BLOCK_LEN] (powers of two, BLOCK_LEN <= LEN)\n");
        return 2;
    }
    long nb = len / block_len;
    int m = log2_of(nb), bits = log2_of(block_len);
    uint64_t *keys = malloc(len * sizeof(uint64_t)), *want = malloc(len * sizeof(uint64_t));
    for (long i = 0; i < len; i++) keys[i] = want[i] = initial((uint64_t)i);
    starpu_data_handle_t *h = malloc(nb * sizeof(starpu_data_handle_t));
    long tasks = 0;
    start_starpu();

    double t0 = now_s();
    for (long b = 0; b < nb; b++)
        starpu_vector_data_register(&h[b], STARPU_MAIN_RAM, (uintptr_t)(keys + b * block_len), block_len,
                                    sizeof(uint64_t));
    /* The direction of stage `k` at block `blk`: bit `k` of the keys' positions. */
#define DESC(k, blk) (int)((((uint64_t)(blk) << bits) >> (k)) & 1)
    for (long b = 0; b < nb; b++) {
        int desc = DESC(bits, b);
        SUBMIT(&sort_cl, STARPU_RW, h[b], STARPU_VALUE, &desc, sizeof(desc));
        tasks++;
    }
    for (int k = bits + 1; k <= m + bits; k++) {
        for (int j = k - 1; j >= bits; j--) {
            long d = 1L << (j - bits);
            for (long lo = 0; lo < nb; lo++) {
                if (lo & d) continue;
                int desc = DESC(k, lo);
                SUBMIT(&pair_cl, STARPU_RW, h[lo], STARPU_RW, h[lo | d], STARPU_VALUE, &desc, sizeof(desc));
                tasks++;
            }
        }
        for (long b = 0; b < nb; b++) {
            int desc = DESC(k, b);
            SUBMIT(&merge_cl, STARPU_RW, h[b], STARPU_VALUE, &desc, sizeof(desc));
            tasks++;
        }
    }
    starpu_task_wait_for_all();
    for (long b = 0; b < nb; b++) starpu_data_unregister(h[b]);
    double wall = now_s() - t0;
    unsigned threads = starpu_cpu_worker_get_count();
    starpu_shutdown();

    qsort(want, len, sizeof(uint64_t), ascending);
    int ok = memcmp(keys, want, len * sizeof(uint64_t)) == 0;
    char params[128];
    snprintf(params, sizeof params, "{\"len\": %ld, \"block_len\": %ld}", len, block_len);
    print_result("bitonic", threads, tasks, wall, ok, params);
    free(keys), free(want), free(h);
    return ok ? 0 : 1;
}
