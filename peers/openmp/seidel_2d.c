/* Locus's `seidel-2d` (crates/locus-bench/src/seidel_2d.rs) as OpenMP tasks with
 * `depend` clauses: one task per block and iteration updates its block in place in one
 * shared array, row-major. Submitted in block order, the task reads its north and west
 * neighbours as this iteration left them and its south and east neighbours as the
 * previous one did: exactly the sequential in-place sweep of the whole array.
 *
 * Usage: seidel_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS]
 * (default 512 512 64 128 20, Locus's small size). Prints one JSON object; exit status
 * 1 when the result differs (bitwise) from the sequential sweep, 2 on bad arguments. */
#include "stencil_2d.h"

int main(int argc, char **argv) {
    struct grid g = {512, 512, 64, 128, 20};
    if (!parse_grid(argc, argv, &g)) {
        fprintf(stderr, "usage: seidel_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS] (blocks divide the array)\n");
        return 2;
    }
    long len = g.rows * g.cols, nbi = g.rows / g.block_rows, nbj = g.cols / g.block_cols;
    double *a = malloc(len * sizeof(double));
    /* One dependence object per block; `none` for a missing neighbour. */
    char *dep = calloc(nbi * nbj, 1);
    char none = 0;
    fill_initial(a, len);

    double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    for (long t = 0; t < g.iterations; t++) {
        for (long bi = 0; bi < nbi; bi++) {
            for (long bj = 0; bj < nbj; bj++) {
                long b = bi * nbj + bj;
                char *n = bi > 0 ? &dep[b - nbj] : &none, *s = bi + 1 < nbi ? &dep[b + nbj] : &none;
                char *w = bj > 0 ? &dep[b - 1] : &none, *e = bj + 1 < nbj ? &dep[b + 1] : &none;
#pragma omp task depend(in: *n, *s, *w, *e) depend(inout: dep[b]) firstprivate(bi, bj) shared(g, a)
                sweep_block(&g, a, a, bi, bj);
            }
        }
    }
    double wall = omp_get_wtime() - t0;

    double *want = malloc(len * sizeof(double));
    fill_initial(want, len);
    for (long t = 0; t < g.iterations; t++) sweep_whole(g.rows, g.cols, g.block_rows, g.block_cols, want, want);
    int ok = memcmp(want, a, len * sizeof(double)) == 0;
    print_result("seidel-2d", &g, wall, ok);
    free(a), free(dep), free(want);
    return ok ? 0 : 1;
}
