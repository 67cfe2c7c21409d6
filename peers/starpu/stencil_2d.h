/* The shared part of jacobi_2d.c and seidel_2d.c: Locus's 2-D five-point stencil
 * (crates/locus-bench/src/stencil.rs) on one row-major `rows x cols` array of doubles,
 * with one StarPU matrix handle per block. The sweep itself, the initial values and the
 * sequential reference (`sweep_whole`) are ../common/stencil_2d_sweep.h, shared with the
 * openmp and tbb peers. */
#ifndef LOCUS_PEER_STARPU_STENCIL_2D_H
#define LOCUS_PEER_STARPU_STENCIL_2D_H

#include "common.h"

#include "../common/stencil_2d_sweep.h"

struct grid {
    long rows, cols, block_rows, block_cols, iterations;
};

/* Reads `ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS` (all or none); 0 when bad. */
static int parse_grid(int argc, char **argv, struct grid *g) {
    long *const f[5] = {&g->rows, &g->cols, &g->block_rows, &g->block_cols, &g->iterations};
    return parse_longs(argc, argv, f, 5) && g->rows > 0 && g->cols > 0 && g->block_rows > 0 && g->block_cols > 0 &&
           g->iterations >= 0 && g->rows % g->block_rows == 0 && g->cols % g->block_cols == 0;
}

/* The neighbours a block has, as bits of a task's argument; the task's buffers are its
 * output block (or its block, read-write, for Gauss-Seidel), then for Jacobi its input
 * block, then the neighbours present in this order. */
enum { NORTH = 1, SOUTH = 2, WEST = 4, EAST = 8 };

/* The kernel of both stencils: `in_place` says whether buffer 0 is also the block read. */
static void stencil_task(void *buffers[], void *cl_arg, int in_place) {
    int neighbours;
    starpu_codelet_unpack_args(cl_arg, &neighbours);
    double *dst = (double *)STARPU_MATRIX_GET_PTR(buffers[0]);
    long bc = STARPU_MATRIX_GET_NX(buffers[0]), br = STARPU_MATRIX_GET_NY(buffers[0]);
    long ld = STARPU_MATRIX_GET_LD(buffers[0]);
    int next = in_place ? 1 : 2;
    const double *c = in_place ? dst : (const double *)STARPU_MATRIX_GET_PTR(buffers[1]);
    const double *side[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < 4; k++)
        if (neighbours & (1 << k)) side[k] = (const double *)STARPU_MATRIX_GET_PTR(buffers[next++]);
    /* What surrounds the block, from the neighbouring blocks: the north one's last row,
     * the south one's first, the west one's last column and the east one's first. */
    const double *north = side[0] ? side[0] + (br - 1) * ld : NULL, *south = side[1];
    const double *west = side[2] ? side[2] + bc - 1 : NULL, *east = side[3];
    sweep_block_rows(c, dst, ld, br, bc, north, south, west, east);
}

/* Registers the blocks of `a` as matrix handles, row-major by block. */
static void register_blocks(const struct grid *g, double *a, starpu_data_handle_t *h) {
    long nbi = g->rows / g->block_rows, nbj = g->cols / g->block_cols;
    for (long bi = 0; bi < nbi; bi++)
        for (long bj = 0; bj < nbj; bj++)
            starpu_matrix_data_register(&h[bi * nbj + bj], STARPU_MAIN_RAM,
                                        (uintptr_t)&a[bi * g->block_rows * g->cols + bj * g->block_cols], g->cols,
                                        g->block_cols, g->block_rows, sizeof(double));
}

/* Appends the present neighbours of block (bi, bj) to `d` (read-only), from `n`; gives
 * their bits. */
static int add_neighbours(const struct grid *g, starpu_data_handle_t *h, long bi, long bj,
                          struct starpu_data_descr *d, int *n) {
    long nbi = g->rows / g->block_rows, nbj = g->cols / g->block_cols, b = bi * nbj + bj;
    int bits = 0;
    long at[4] = {bi > 0 ? b - nbj : -1, bi + 1 < nbi ? b + nbj : -1, bj > 0 ? b - 1 : -1,
                  bj + 1 < nbj ? b + 1 : -1};
    for (int k = 0; k < 4; k++) {
        if (at[k] < 0) continue;
        d[*n].handle = h[at[k]];
        d[*n].mode = STARPU_R;
        (*n)++;
        bits |= 1 << k;
    }
    return bits;
}

static void print_grid(const char *bench, unsigned threads, const struct grid *g, double wall, int ok) {
    char params[256];
    snprintf(params, sizeof params,
             "{\"rows\": %ld, \"cols\": %ld, \"block_rows\": %ld, \"block_cols\": %ld, \"iterations\": %ld}", g->rows,
             g->cols, g->block_rows, g->block_cols, g->iterations);
    long tasks = (g->rows / g->block_rows) * (g->cols / g->block_cols) * g->iterations;
    print_result(bench, threads, tasks, wall, ok, params);
}

#endif
