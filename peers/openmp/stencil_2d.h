/* The shared part of jacobi_2d.c and seidel_2d.c: Locus's 2-D five-point stencil
 * (crates/locus-bench/src/stencil.rs) on one row-major `rows x cols` array of doubles.
 * The sweep itself, the initial values and the sequential reference are
 * ../common/stencil_2d_sweep.h, shared with the tbb and starpu peers. */
#ifndef LOCUS_PEER_STENCIL_2D_H
#define LOCUS_PEER_STENCIL_2D_H

#include "peer.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/stencil_2d_sweep.h"

struct grid {
    long rows, cols, block_rows, block_cols, iterations;
};

/* Updates the points of the block at block coordinates (bi, bj), row by row, reading
 * `src` and writing `dst` (the same array for Gauss-Seidel): what surrounds the block is
 * simply the neighbouring memory of the one array, or nothing at its edge. */
static inline void sweep_block(const struct grid *g, const double *src, double *dst, long bi, long bj) {
    long i0 = bi * g->block_rows, j0 = bj * g->block_cols, cols = g->cols, p0 = i0 * cols + j0;
    const double *north = i0 > 0 ? src + p0 - cols : NULL;
    const double *south = i0 + g->block_rows < g->rows ? src + p0 + g->block_rows * cols : NULL;
    const double *west = j0 > 0 ? src + p0 - 1 : NULL;
    const double *east = j0 + g->block_cols < cols ? src + p0 + g->block_cols : NULL;
    sweep_block_rows(src + p0, dst + p0, cols, g->block_rows, g->block_cols, north, south, west, east);
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
