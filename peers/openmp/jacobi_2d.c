/* Locus's `jacobi-2d` (crates/locus-bench/src/jacobi_2d.rs) as OpenMP tasks with
 * `depend` clauses: one task per block and iteration reads its block and the four
 * neighbouring blocks of the previous iteration's array and writes its block of the
 * next one (two shared arrays, swapped every iteration).
 *
 * Usage: jacobi_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS]
 * (default 512 512 64 128 20, Locus's small size). Prints one JSON object; exit status
 * 1 when the result differs (bitwise) from the sequential sweep, 2 on bad arguments. */
#include "stencil_2d.h"

int main(int argc, char **argv) {
    struct grid g = {512, 512, 64, 128, 20};
    if (!parse_grid(argc, argv, &g)) {
        fprintf(stderr, "usage: jacobi_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS] (blocks divide the array)\n");
        return 2;
    }
    long len = g.rows * g.cols, nbi = g.rows / g.block_rows, nbj = g.cols / g.block_cols;
    double *buf[2] = {malloc(len * sizeof(double)), malloc(len * sizeof(double))};
    /* One dependence object per block of each array; `none` for a missing neighbour. */
    char *dep[2] = {calloc(nbi * nbj, 1), calloc(nbi * nbj, 1)};
    char none = 0;
    fill_initial(buf[0], len);

    double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    for (long t = 0; t < g.iterations; t++) {
        const double *src = buf[t % 2];
        double *dst = buf[(t + 1) % 2];
        char *dep_src = dep[t % 2];
        for (long bi = 0; bi < nbi; bi++) {
            for (long bj = 0; bj < nbj; bj++) {
                long b = bi * nbj + bj;
                char *n = bi > 0 ? &dep_src[b - nbj] : &none, *s = bi + 1 < nbi ? &dep_src[b + nbj] : &none;
                char *w = bj > 0 ? &dep_src[b - 1] : &none, *e = bj + 1 < nbj ? &dep_src[b + 1] : &none;
#pragma omp task depend(in: dep_src[b], *n, *s, *w, *e) depend(out: dep[(t + 1) % 2][b]) firstprivate(src, dst, bi, bj) shared(g)
                sweep_block(&g, src, dst, bi, bj);
            }
        }
    }
    double wall = omp_get_wtime() - t0;

    double *want = malloc(len * sizeof(double)), *next = malloc(len * sizeof(double));
    fill_initial(want, len);
    for (long t = 0; t < g.iterations; t++) {
        sweep_whole(g.rows, g.cols, g.block_rows, g.block_cols, want, next);
        double *tmp = want;
        want = next;
        next = tmp;
    }
    int ok = memcmp(want, buf[g.iterations % 2], len * sizeof(double)) == 0;
    print_result("jacobi-2d", &g, wall, ok);
    free(buf[0]), free(buf[1]), free(dep[0]), free(dep[1]), free(want), free(next);
    return ok ? 0 : 1;
}
