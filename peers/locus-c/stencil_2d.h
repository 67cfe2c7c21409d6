/* The shared part of jacobi_2d.c and seidel_2d.c: Locus's blocked 2-D five-point
 * stencil (crates/locus-bench/src/stencil.rs) over the C API. The `rows x cols` array is
 * cut into `block_rows x block_cols` blocks, each a datum, double-buffered by handle
 * (two sets). Task `(t, block)` reads its block whole, the facing row of its north and
 * south neighbours (one-row read ranges of their blocks) and the facing column of its
 * west and east neighbours (columns are strided, so every task also writes its block's
 * first and last columns as two small separate data), and writes its block's next
 * version and those two columns: the accesses, in the order of the Rust kernel.
 * Jacobi reads every neighbour from the previous iteration; Gauss-Seidel reads the
 * north and west ones from the current iteration and updates in block order.
 *
 * Usage: jacobi_2d|seidel_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS]
 * (default 512 512 64 128 20). Exit status 1 when the result differs (bitwise) from the
 * sequential sweep, 2 on bad arguments, 3 when Locus refuses a call. */
#ifndef LOCUS_PEER_LOCUS_C_STENCIL_2D_H
#define LOCUS_PEER_LOCUS_C_STENCIL_2D_H

#include "locus_peer.h"

#include "../common/stencil_2d_sweep.h"

struct grid {
    long rows, cols, block_rows, block_cols, iterations;
    int seidel;
};

/* One set of data: blocks, and the west and east columns of every block. */
struct set {
    locus_data *block, *west, *east;
};

struct program {
    const struct grid *g;
    struct set sets[2];
};

/* What a task knows of its place. */
struct block_arg {
    long br, bc;
    int seidel;
    unsigned char has[4]; /* north, south, west, east */
};

/* views: block, [north row], [south row], [west column], [east column], next block,
 * its west column, its east column (the halos only where there is a neighbour; with
 * more than one block column only, the columns). */
static int32_t block_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    const struct block_arg *a = arg;
    size_t k = 1;
    const double *halo[4] = {NULL, NULL, NULL, NULL};
    for (int h = 0; h < 4; h++)
        if (a->has[h]) halo[h] = v[k++].ptr;
    const double *cur = v[0].ptr;
    double *out = v[k++].ptr;
    long br = a->br, bc = a->bc;
    for (long y = 0; y < br; y++) {
        const double *mid = cur + y * bc;
        const double *north = y > 0 ? (a->seidel ? out + (y - 1) * bc : mid - bc) : halo[0] ? halo[0] : mid;
        const double *south = y + 1 < br ? mid + bc : halo[1] ? halo[1] : mid;
        double w0 = halo[2] ? halo[2][y] : mid[0];
        double e_last = halo[3] ? halo[3][y] : mid[bc - 1];
        if (a->seidel) {
            /* sweep_row_in_place updates in place: start from the current row. */
            memcpy(out + y * bc, mid, sizeof(double) * bc);
            sweep_row_in_place(north, out + y * bc, south, w0, e_last, bc);
        } else {
            sweep_row_from(north, mid, south, w0, e_last, out + y * bc, bc);
        }
    }
    if (k < n) { /* the block's first and last columns */
        double *west = v[k++].ptr, *east = v[k++].ptr;
        for (long y = 0; y < br; y++) {
            west[y] = out[y * bc];
            east[y] = out[y * bc + bc - 1];
        }
    }
    return k == n ? 0 : 1;
}

static int32_t stencil_root(locus_ctx ctx, const locus_view *views, size_t nviews, void *arg) {
    (void)views;
    (void)nviews;
    const struct program *p = arg;
    const struct grid *g = p->g;
    long nbi = g->rows / g->block_rows, nbj = g->cols / g->block_cols;
    long row = g->block_cols, len = g->block_rows * g->block_cols;
    int faces = nbj > 1;
    for (long t = 0; t < g->iterations; t++) {
        const struct set *src = &p->sets[t % 2], *dst = &p->sets[(t + 1) % 2];
        /* Gauss-Seidel: the lower neighbours are already swept in this iteration. */
        const struct set *lower = g->seidel ? dst : src;
        for (long bi = 0; bi < nbi; bi++)
            for (long bj = 0; bj < nbj; bj++) {
                long b = bi * nbj + bj;
                locus_access acc[8];
                size_t n = 0;
                struct block_arg a = {g->block_rows, g->block_cols, g->seidel, {0, 0, 0, 0}};
                acc[n++] = (locus_access){src->block[b], LOCUS_READ, 0, 0};
                if (bi > 0) {
                    a.has[0] = 1;
                    acc[n++] = (locus_access){lower->block[b - nbj], LOCUS_READ, (size_t)(len - row), (size_t)len};
                }
                if (bi + 1 < nbi) {
                    a.has[1] = 1;
                    acc[n++] = (locus_access){src->block[b + nbj], LOCUS_READ, 0, (size_t)row};
                }
                if (bj > 0) {
                    a.has[2] = 1;
                    acc[n++] = (locus_access){lower->east[b - 1], LOCUS_READ, 0, 0};
                }
                if (bj + 1 < nbj) {
                    a.has[3] = 1;
                    acc[n++] = (locus_access){src->west[b + 1], LOCUS_READ, 0, 0};
                }
                acc[n++] = (locus_access){dst->block[b], LOCUS_WRITE, 0, 0};
                if (faces) {
                    acc[n++] = (locus_access){dst->west[b], LOCUS_WRITE, 0, 0};
                    acc[n++] = (locus_access){dst->east[b], LOCUS_WRITE, 0, 0};
                }
                locus_task task = {0};
                task.name = g->seidel ? "seidel-2d" : "jacobi-2d";
                task.body = block_task;
                task.arg = &a;
                task.arg_size = sizeof a;
                task.accesses = acc;
                task.naccesses = n;
                SPAWN(ctx, &task);
            }
    }
    return 0;
}

static int parse_grid(int argc, char **argv, struct grid *g) {
    if (argc == 1) return 1;
    if (argc != 6) return 0;
    long *f[5] = {&g->rows, &g->cols, &g->block_rows, &g->block_cols, &g->iterations};
    for (int k = 0; k < 5; k++) {
        char *end;
        *f[k] = strtol(argv[k + 1], &end, 10);
        if (*end != '\0' || end == argv[k + 1]) return 0;
    }
    return g->rows > 0 && g->cols > 0 && g->block_rows > 0 && g->block_cols > 1 && g->iterations >= 1 &&
           g->rows % g->block_rows == 0 && g->cols % g->block_cols == 0;
}

/* Builds the data, runs the sweeps, checks against `sweep_whole`, prints the line. */
static int stencil_main(int argc, char **argv, int seidel, int timed) {
    const char *bench = seidel ? "seidel-2d" : "jacobi-2d";
    struct grid g = {512, 512, 64, 128, 20, seidel};
    if (!parse_grid(argc, argv, &g)) {
        fprintf(stderr, "usage: %s [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS] (blocks divide the array, "
                        "at least 2 columns per block, 1 iteration)\n",
                seidel ? "seidel_2d" : "jacobi_2d");
        return 2;
    }
    long nbi = g.rows / g.block_rows, nbj = g.cols / g.block_cols, blocks = nbi * nbj;
    long br = g.block_rows, bc = g.block_cols, len = br * bc;
    locus_runtime rt = peer_runtime();
    struct program p = {&g, {{0}, {0}}};
    double *init = malloc(sizeof(double) * len), *col = malloc(sizeof(double) * br);
    for (int k = 0; k < 2; k++) {
        p.sets[k].block = calloc(blocks, sizeof(locus_data));
        p.sets[k].west = calloc(blocks, sizeof(locus_data));
        p.sets[k].east = calloc(blocks, sizeof(locus_data));
        for (long b = 0; b < blocks; b++) {
            long bi = b / nbj, bj = b % nbj;
            if (k == 1) {
                TRY(locus_data_create(rt, "block", sizeof(double), len, &p.sets[k].block[b]));
                if (nbj > 1) {
                    TRY(locus_data_create(rt, "face-w", sizeof(double), br, &p.sets[k].west[b]));
                    TRY(locus_data_create(rt, "face-e", sizeof(double), br, &p.sets[k].east[b]));
                }
                continue;
            }
            for (long y = 0; y < br; y++)
                for (long x = 0; x < bc; x++) init[y * bc + x] = initial((bi * br + y) * g.cols + bj * bc + x);
            if (nbj > 1) {
                for (long y = 0; y < br; y++) col[y] = init[y * bc];
                TRY(locus_data_from(rt, "face-w", sizeof(double), br, col, &p.sets[k].west[b]));
                for (long y = 0; y < br; y++) col[y] = init[y * bc + bc - 1];
                TRY(locus_data_from(rt, "face-e", sizeof(double), br, col, &p.sets[k].east[b]));
            }
            TRY(locus_data_from(rt, "block", sizeof(double), len, init, &p.sets[k].block[b]));
        }
    }
    locus_figures f = peer_run(rt, stencil_root, &p);
    if (!timed) {
        TRY(locus_runtime_destroy(rt));
        for (int k = 0; k < 2; k++) free(p.sets[k].block), free(p.sets[k].west), free(p.sets[k].east);
        free(init), free(col);
        return 0;
    }

    long n = g.rows * g.cols;
    double *want = malloc(sizeof(double) * n), *next = malloc(sizeof(double) * n);
    fill_initial(want, n);
    for (long t = 0; t < g.iterations; t++) {
        if (seidel) {
            sweep_whole(g.rows, g.cols, br, bc, want, want);
        } else {
            sweep_whole(g.rows, g.cols, br, bc, want, next);
            double *tmp = want;
            want = next;
            next = tmp;
        }
    }
    int ok = 1;
    const struct set *result = &p.sets[g.iterations % 2];
    for (long b = 0; b < blocks; b++) {
        long bi = b / nbj, bj = b % nbj;
        TRY(locus_fetch(rt, result->block[b], init, len));
        for (long y = 0; y < br; y++)
            ok &= memcmp(init + y * bc, want + (bi * br + y) * g.cols + bj * bc, sizeof(double) * bc) == 0;
    }
    long tasks = blocks * g.iterations;
    printf("{\"peer\": \"" PEER "\", \"bench\": \"%s\", \"threads\": %zu, \"tasks\": %llu, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"r_loc_rt\": %.4f, \"verified\": %s, "
           "\"params\": {\"rows\": %ld, \"cols\": %ld, \"block_rows\": %ld, \"block_cols\": %ld, "
           "\"iterations\": %ld}}\n",
           bench, peer_workers(rt), (unsigned long long)f.tasks, f.wall_s, tasks ? f.wall_s * 1e9 / tasks : 0.0,
           f.r_loc_rt, ok ? "true" : "false", g.rows, g.cols, br, bc, g.iterations);
    TRY(locus_runtime_destroy(rt)); /* frees every datum too */
    for (int k = 0; k < 2; k++) free(p.sets[k].block), free(p.sets[k].west), free(p.sets[k].east);
    free(init), free(col), free(want), free(next);
    return ok ? 0 : 1;
}

#endif
