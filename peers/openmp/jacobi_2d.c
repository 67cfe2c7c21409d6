/* Locus's `jacobi-2d` (crates/locus-bench/src/jacobi_2d.rs) as OpenMP tasks with
 * `depend` clauses: one task per block and iteration reads its block and the four
 * neighbouring blocks of the previous iteration's array and writes its block of the
 * next one (two shared arrays, swapped every iteration).
 *
 * With a sixth argument, the KASTORS program of paper 3 (Virouleau et al., Figures 1-2;
 * Locus's `jacobi-2d --affinity MODE`): the blocks of the first array are written by
 * initialisation tasks (first touch), `none` submitting them from one thread, `init`,
 * `strict` and `non-strict` as a `parallel for schedule(static)` over the blocks, and
 * `strict` and `non-strict` add `affinity` on the output block to every block task where
 * the compiler accepts the clause (sparse.h says why the two are one program here).
 *
 * Usage: jacobi_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS [none|init|strict|non-strict]]
 * (default 512 512 64 128 20, Locus's small size). Prints one JSON object; exit status
 * 1 when the result differs (bitwise) from the sequential sweep, 2 on bad arguments. */
#include "stencil_2d.h"

#if defined(_OPENMP) && _OPENMP >= 201811
#define AFFINITY(...) affinity(__VA_ARGS__)
#else
#define AFFINITY(...)
#endif

static const char *modes[] = {"none", "init", "strict", "non-strict"};

/* Writes the initial values of block (bi, bj) of `a`. */
static void init_block(const struct grid *g, double *a, long bi, long bj) {
    for (long i = bi * g->block_rows; i < (bi + 1) * g->block_rows; i++)
        for (long j = bj * g->block_cols; j < (bj + 1) * g->block_cols; j++) a[i * g->cols + j] = initial(i * g->cols + j);
}

int main(int argc, char **argv) {
    struct grid g = {512, 512, 64, 128, 20};
    int mode = -1; /* -1: the initial array is given (Locus's paper-1 program) */
    if (argc == 7) {
        for (int k = 0; k < 4; k++)
            if (strcmp(argv[6], modes[k]) == 0) mode = k;
        argc = mode < 0 ? 0 : 6;
    }
    if (!parse_grid(argc, argv, &g)) {
        fprintf(stderr, "usage: jacobi_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS [none|init|strict|non-strict]] (blocks divide the array)\n");
        return 2;
    }
    long len = g.rows * g.cols, nbi = g.rows / g.block_rows, nbj = g.cols / g.block_cols;
    double *buf[2] = {malloc(len * sizeof(double)), malloc(len * sizeof(double))};
    /* One dependence object per block of each array; `none` for a missing neighbour. */
    char *dep[2] = {calloc(nbi * nbj, 1), calloc(nbi * nbj, 1)};
    char none = 0;
    if (mode < 0) fill_initial(buf[0], len);

    double t0 = omp_get_wtime();
#pragma omp parallel
    {
    if (mode == 0) {
#pragma omp single
        for (long b = 0; b < nbi * nbj; b++) {
#pragma omp task firstprivate(b) depend(out: dep[0][b]) shared(g, buf)
            init_block(&g, buf[0], b / nbj, b % nbj);
        }
    } else if (mode > 0) {
#pragma omp for schedule(static)
        for (long b = 0; b < nbi * nbj; b++) init_block(&g, buf[0], b / nbj, b % nbj);
    }
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
                if (mode >= 2) {
                    /* The first row of the output block stands for it. */
                    double *first = dst + bi * g.block_rows * g.cols + bj * g.block_cols;
#pragma omp task depend(in: dep_src[b], *n, *s, *w, *e) depend(out: dep[(t + 1) % 2][b]) firstprivate(src, dst, bi, bj) shared(g) AFFINITY(first[0:g.block_cols])
                    sweep_block(&g, src, dst, bi, bj);
                    (void)first;
                } else {
#pragma omp task depend(in: dep_src[b], *n, *s, *w, *e) depend(out: dep[(t + 1) % 2][b]) firstprivate(src, dst, bi, bj) shared(g)
                    sweep_block(&g, src, dst, bi, bj);
                }
            }
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
