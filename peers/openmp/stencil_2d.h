/* The shared part of jacobi_2d.c and seidel_2d.c: Locus's 2-D five-point stencil
 * (crates/locus-bench/src/stencil.rs) on one row-major `rows x cols` array of doubles.
 *
 * A point becomes `(n + c + s + w + e) / 5`, summed in that order as Locus does, and a
 * neighbour outside the array is replaced by the point itself; so the results equal
 * Locus's and the sequential references bit for bit. */
#ifndef LOCUS_PEER_STENCIL_2D_H
#define LOCUS_PEER_STENCIL_2D_H

#include "peer.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct grid {
    long rows, cols, block_rows, block_cols, iterations;
};

/* Locus's initial value of the element at row-major index `i`. */
static inline double initial(long i) { return (double)((i * 7919) % 1000) / 1000.0; }

static void fill_initial(double *a, long len) {
    for (long i = 0; i < len; i++) a[i] = initial(i);
}

/* Updates the points of the block at block coordinates (bi, bj), row-major, reading
 * `src` and writing `dst` (the same array for Gauss-Seidel). */
static inline void sweep_block(const struct grid *g, const double *src, double *dst, long bi, long bj) {
    long n_rows = g->rows, n_cols = g->cols;
    for (long i = bi * g->block_rows; i < (bi + 1) * g->block_rows; i++) {
        for (long j = bj * g->block_cols; j < (bj + 1) * g->block_cols; j++) {
            long p = i * n_cols + j;
            double c = src[p];
            double n = i > 0 ? src[p - n_cols] : c;
            double s = i + 1 < n_rows ? src[p + n_cols] : c;
            double w = j > 0 ? src[p - 1] : c;
            double e = j + 1 < n_cols ? src[p + 1] : c;
            dst[p] = (n + c + s + w + e) / 5.0;
        }
    }
}

/* Reads `ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS` (all or none); returns 0 when the
 * arguments are bad. */
static int parse_grid(int argc, char **argv, struct grid *g) {
    if (argc == 1) return 1;
    if (argc != 6) return 0;
    long *f[5] = {&g->rows, &g->cols, &g->block_rows, &g->block_cols, &g->iterations};
    for (int k = 0; k < 5; k++) {
        char *end;
        *f[k] = strtol(argv[k + 1], &end, 10);
        if (*end != '\0' || end == argv[k + 1]) return 0;
    }
    return g->rows > 0 && g->cols > 0 && g->block_rows > 0 && g->block_cols > 0 && g->iterations >= 0 &&
           g->rows % g->block_rows == 0 && g->cols % g->block_cols == 0;
}

static void print_result(const char *bench, const struct grid *g, double wall, int ok) {
    long tasks = (g->rows / g->block_rows) * (g->cols / g->block_cols) * g->iterations;
    printf("{\"peer\": \"" PEER "\", \"bench\": \"%s\", \"threads\": %d, \"tasks\": %ld, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s, "
           "\"params\": {\"rows\": %ld, \"cols\": %ld, \"block_rows\": %ld, \"block_cols\": %ld, "
           "\"iterations\": %ld}}\n",
           bench, omp_get_max_threads(), tasks, wall, tasks ? wall * 1e9 / tasks : 0.0, ok ? "true" : "false",
           g->rows, g->cols, g->block_rows, g->block_cols, g->iterations);
}

#endif
