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
#include <string.h>

#include "../common/cholesky_tiles.h"

static long slot(long i, long j) { return i * (i + 1) / 2 + j; }

/* The unblocked left-looking factorisation of the whole matrix: the check. */
static double *reference(long n) {
    double *a = (double *)malloc((size_t)(n * n) * sizeof(double));
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) a[i * n + j] = cholesky_initial(n, i, j);
    for (long j = 0; j < n; j++) {
        double d = a[j * n + j];
        for (long k = 0; k < j; k++) d -= a[j * n + k] * a[j * n + k];
        d = sqrt(d);
        a[j * n + j] = d;
        for (long i = j + 1; i < n; i++) {
            double v = a[i * n + j];
            for (long k = 0; k < j; k++) v -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = v / d;
        }
    }
    return a;
}

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
    double **t = (double **)malloc((size_t)(nt * (nt + 1) / 2) * sizeof(double *));
    for (long i = 0; i < nt; i++)
        for (long j = 0; j <= i; j++) {
            double *p = (double *)malloc((size_t)(b * b) * sizeof(double));
            for (long q = 0; q < b * b; q++) p[q] = cholesky_initial(n, i * b + q / b, j * b + q % b);
            t[slot(i, j)] = p;
        }
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

    double *want = reference(n);
    int ok = 1;
    for (long i = 0; i < n && ok; i++)
        for (long j = 0; j <= i; j++) {
            double got = t[slot(i / b, j / b)][(i % b) * b + j % b];
            if (memcmp(&got, &want[i * n + j], sizeof(double)) != 0) {
                ok = 0;
                break;
            }
        }
    double flops = (double)n * n * n / 3.0;
    printf("{\"peer\": \"" PEER "\", \"bench\": \"cholesky\", \"threads\": %d, \"tasks\": %ld, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s, \"gflop_s\": %.3f, "
           "\"params\": {\"n\": %ld, \"tile\": %ld}}\n",
           omp_get_max_threads(), tasks, wall, tasks ? wall * 1e9 / tasks : 0.0, ok ? "true" : "false",
           wall > 0 ? flops / wall / 1e9 : 0.0, n, b);
    for (long q = 0; q < nt * (nt + 1) / 2; q++) free(t[q]);
    free(t), free(dep), free(want);
    return ok ? 0 : 1;
}
