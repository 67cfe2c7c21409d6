/* Locus's `cholesky` (crates/locus-bench/src/cholesky.rs) as OpenMP tasks with `depend`
 * clauses over the tiles of the lower triangle, one allocation per tile; the tile
 * kernels are Locus's own (../common/cholesky_tiles.h). Step k: potrf on (k, k), trsm
 * on (i, k), syrk on (i, i) and gemm on (i, j) for k < j < i.
 *
 * Usage: cholesky [N TILE] (TILE divides N; default 512 64, Locus's small size). Prints
 * one JSON object with GFLOP/s (n^3/3 operations); exit status 1 when L differs from
 * the unblocked factorisation, 2 on bad arguments. */
#include "peer.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/cholesky_check.h"

#define slot cholesky_slot

int main(int argc, char **argv) {
    long n = 512, b = 64;
    if (argc == 3) {
        char *e1, *e2;
        n = strtol(argv[1], &e1, 10);
        b = strtol(argv[2], &e2, 10);
        if (*e1 || *e2 || e1 == argv[1] || e2 == argv[2]) n = 0;
    }
    if ((argc != 1 && argc != 3) || n < 1 || b < 1 || n % b != 0 || n > 65536) {
        fprintf(stderr, "usage: cholesky [N TILE] (TILE divides N, N at most 65536)\n");
        return 2;
    }
    long nt = n / b;
    double **t = cholesky_tiles_new(n, b);
    char *dep = (char *)calloc((size_t)(nt * (nt + 1) / 2), 1);
    long tasks = 0;

    double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    {
        for (long k = 0; k < nt; k++) {
            double *d = t[slot(k, k)];
#pragma omp task depend(inout: dep[slot(k, k)]) firstprivate(d)
            cholesky_potrf(b, d);
            tasks++;
            for (long i = k + 1; i < nt; i++) {
                double *a = t[slot(i, k)];
#pragma omp task depend(in: dep[slot(k, k)]) depend(inout: dep[slot(i, k)]) firstprivate(d, a)
                cholesky_trsm(b, d, a);
                tasks++;
            }
            for (long i = k + 1; i < nt; i++) {
                double *a = t[slot(i, k)], *c = t[slot(i, i)];
#pragma omp task depend(in: dep[slot(i, k)]) depend(inout: dep[slot(i, i)]) firstprivate(a, c)
                cholesky_syrk(b, a, c);
                tasks++;
                for (long j = k + 1; j < i; j++) {
                    double *bt = t[slot(j, k)], *cij = t[slot(i, j)];
#pragma omp task depend(in: dep[slot(i, k)], dep[slot(j, k)]) depend(inout: dep[slot(i, j)]) \
    firstprivate(a, bt, cij)
                    cholesky_gemm(b, a, bt, cij);
                    tasks++;
                }
            }
        }
    }
    double wall = omp_get_wtime() - t0;

    int ok = cholesky_verify(t, n, b);
    double flops = (double)n * n * n / 3.0;
    printf("{\"peer\": \"" PEER "\", \"bench\": \"cholesky\", \"threads\": %d, \"tasks\": %ld, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s, \"gflop_s\": %.3f, "
           "\"params\": {\"n\": %ld, \"tile\": %ld}}\n",
           omp_get_max_threads(), tasks, wall, tasks ? wall * 1e9 / tasks : 0.0, ok ? "true" : "false",
           wall > 0 ? flops / wall / 1e9 : 0.0, n, b);
    cholesky_tiles_free(t, n, b);
    free(dep);
    return ok ? 0 : 1;
}
