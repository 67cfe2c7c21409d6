/* Locus's `bitonic` (crates/locus-bench/src/bitonic.rs) over the C API, with the Rust
 * kernel's data and accesses: the keys in blocks, double-buffered by handle, one step
 * of the blocked network after the other. Step 0 sorts every block (ascending or
 * descending) from one set into the other; then for each stage every distance of at
 * least a block is one task per pair of blocks (reads both, writes both: compare-
 * exchange element by element), and the distances inside a block are one merge task
 * per block. Blocks are sorted with an LSD radix sort (the Rust kernel's
 * `sort_unstable` and qsort give the same sorted block; a radix sort costs about what
 * the former does, qsort's comparison calls several times more).
 *
 * Usage: bitonic [LEN BLOCK_LEN] (powers of two; default 262144 4096). Exit status 1
 * when the keys are not the input sorted ascending, 2 on bad arguments, 3 when Locus
 * refuses a call. */
#include "locus_peer.h"

#include "../common/bitonic_blocks.h"

/* Sorts `keys` ascending (then reverses them when `desc`), with `tmp` as scratch. */
static void radix_sort(uint64_t *keys, uint64_t *tmp, long len, int desc) {
    uint64_t *from = keys, *to = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        long count[257] = {0};
        for (long i = 0; i < len; i++) count[((from[i] >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (long i = 0; i < len; i++) to[count[(from[i] >> shift) & 0xff]++] = from[i];
        uint64_t *t = from;
        from = to;
        to = t;
    }
    /* Eight passes: the keys are back in `keys`. */
    if (desc)
        for (long i = 0, j = len - 1; i < j; i++, j--) {
            uint64_t t = keys[i];
            keys[i] = keys[j];
            keys[j] = t;
        }
}

enum kind { SORT, PAIR, MERGE };

struct task_arg {
    enum kind kind;
    int desc;
};

/* SORT, MERGE: views input, output. PAIR: views lo, hi (read), lo, hi (write). */
static int32_t bitonic_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    (void)n;
    const struct task_arg *a = arg;
    long len = (long)v[0].count;
    if (a->kind == PAIR) {
        const uint64_t *lo = v[0].ptr, *hi = v[1].ptr;
        uint64_t *out_lo = v[2].ptr, *out_hi = v[3].ptr;
        for (long i = 0; i < len; i++) {
            uint64_t x = lo[i], y = hi[i];
            uint64_t small = x <= y ? x : y, large = x <= y ? y : x;
            out_lo[i] = a->desc ? large : small;
            out_hi[i] = a->desc ? small : large;
        }
        return 0;
    }
    uint64_t *out = v[1].ptr;
    memcpy(out, v[0].ptr, len * sizeof(uint64_t));
    if (a->kind == MERGE) {
        merge_block(out, len, a->desc);
        return 0;
    }
    uint64_t *tmp = malloc(len * sizeof(uint64_t));
    if (!tmp) return 1;
    radix_sort(out, tmp, len, a->desc);
    free(tmp);
    return 0;
}

struct program {
    long nb, block_len;
    locus_data *keys[2];
    long steps; /* set by the root */
};

static int submit(locus_ctx ctx, const struct program *p, long step, enum kind kind, long lo, long hi, int desc) {
    const locus_data *src = p->keys[step % 2], *dst = p->keys[(step + 1) % 2];
    struct task_arg a = {kind, desc};
    locus_access acc[4];
    size_t n = 0;
    if (kind == PAIR) {
        acc[n++] = (locus_access){src[lo], LOCUS_READ, 0, 0};
        acc[n++] = (locus_access){src[hi], LOCUS_READ, 0, 0};
        acc[n++] = (locus_access){dst[lo], LOCUS_WRITE, 0, 0};
        acc[n++] = (locus_access){dst[hi], LOCUS_WRITE, 0, 0};
    } else {
        acc[n++] = (locus_access){src[lo], LOCUS_READ, 0, 0};
        acc[n++] = (locus_access){dst[lo], LOCUS_WRITE, 0, 0};
    }
    static const char *names[] = {"bitonic-sort", "bitonic-pair", "bitonic-merge"};
    locus_task t = {0};
    t.name = names[kind];
    t.body = bitonic_task;
    t.arg = &a;
    t.arg_size = sizeof a;
    t.accesses = acc;
    t.naccesses = n;
    return locus_spawn(ctx, &t) == LOCUS_OK ? 0 : 1;
}

static int32_t root(locus_ctx ctx, const locus_view *views, size_t nviews, void *arg) {
    (void)views;
    (void)nviews;
    struct program *p = arg;
    int m = log2_of(p->nb), b = log2_of(p->block_len);
    /* The direction of stage k at block blk: bit k of the keys' positions. */
#define DESC(k, blk) (int)((((long)(blk) << b) >> (k)) & 1)
    long step = 0;
    for (long blk = 0; blk < p->nb; blk++)
        if (submit(ctx, p, step, SORT, blk, blk, DESC(b, blk))) goto refused;
    step++;
    for (int k = b + 1; k <= m + b; k++) {
        for (int j = k - 1; j >= b; j--) {
            long d = 1L << (j - b);
            for (long lo = 0; lo < p->nb; lo++)
                if ((lo & d) == 0 && submit(ctx, p, step, PAIR, lo, lo | d, DESC(k, lo))) goto refused;
            step++;
        }
        for (long blk = 0; blk < p->nb; blk++)
            if (submit(ctx, p, step, MERGE, blk, blk, DESC(k, blk))) goto refused;
        step++;
    }
#undef DESC
    p->steps = step;
    return 0;
refused:
    fprintf(stderr, PEER ": spawn: %s\n", locus_last_error());
    return 1;
}

static int run(int argc, char **argv, int timed) {
    long len = 1L << 18, block_len = 1L << 12;
    if (argc == 3) {
        char *e1, *e2;
        len = strtol(argv[1], &e1, 10);
        block_len = strtol(argv[2], &e2, 10);
        if (*e1 || *e2 || e1 == argv[1] || e2 == argv[2]) len = 0;
    }
    if ((argc != 1 && argc != 3) || !is_power_of_two(len) || !is_power_of_two(block_len) || block_len > len) {
        fprintf(stderr, "usage: bitonic [LEN BLOCK_LEN] (powers of two, BLOCK_LEN at most LEN)\n");
        return 2;
    }
    struct program p = {len / block_len, block_len, {NULL, NULL}, 0};
    uint64_t *keys = malloc(len * sizeof(uint64_t));
    for (long i = 0; i < len; i++) keys[i] = initial((uint64_t)i);
    locus_runtime rt = peer_runtime();
    for (int s = 0; s < 2; s++) p.keys[s] = calloc(p.nb, sizeof(locus_data));
    for (long blk = 0; blk < p.nb; blk++) {
        TRY(locus_data_from(rt, "keys0", sizeof(uint64_t), block_len, keys + blk * block_len, &p.keys[0][blk]));
        TRY(locus_data_create(rt, "keys1", sizeof(uint64_t), block_len, &p.keys[1][blk]));
    }
    locus_figures f = peer_run(rt, root, &p);
    if (!timed) {
        TRY(locus_runtime_destroy(rt));
        free(p.keys[0]), free(p.keys[1]), free(keys);
        return 0;
    }

    uint64_t *got = malloc(len * sizeof(uint64_t));
    for (long blk = 0; blk < p.nb; blk++)
        TRY(locus_fetch(rt, p.keys[p.steps % 2][blk], got + blk * block_len, block_len));
    qsort(keys, (size_t)len, sizeof(uint64_t), ascending);
    int ok = memcmp(got, keys, len * sizeof(uint64_t)) == 0;
    printf("{\"peer\": \"" PEER "\", \"bench\": \"bitonic\", \"threads\": %zu, \"tasks\": %llu, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"r_loc_rt\": %.4f, \"verified\": %s, "
           "\"params\": {\"len\": %ld, \"block_len\": %ld}}\n",
           peer_workers(rt), (unsigned long long)f.tasks, f.wall_s, f.tasks ? f.wall_s * 1e9 / f.tasks : 0.0,
           f.r_loc_rt, ok ? "true" : "false", len, block_len);
    TRY(locus_runtime_destroy(rt));
    free(p.keys[0]), free(p.keys[1]), free(keys), free(got);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) { return peer_main(argc, argv, run); }
