/* Locus's `sparselu` (crates/locus-bench/src/sparselu.rs) as OpenMP tasks with `depend`
 * clauses, BOTS's program with dependences instead of taskwaits: step k runs lu0 on the
 * diagonal block, fwd on the blocks of row k, bdiv on the blocks of column k, and bmod on
 * every pair; a block filled in is allocated (zeroed) by the thread creating its first
 * bmod, since later tasks name it in their dependences.
 *
 * Usage: sparselu [BLOCKS BLOCK_LEN] (default 12 32, Locus's small size). Prints one
 * JSON object; exit status 1 when the factors differ from the dense elimination, 2 on
 * bad arguments. */
#include "peer.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/sparselu_blocks.h"

int main(int argc, char **argv) {
    long nb = 12, bs = 32;
    if (argc == 3) {
        char *e1, *e2;
        nb = strtol(argv[1], &e1, 10);
        bs = strtol(argv[2], &e2, 10);
        if (*e1 || *e2 || e1 == argv[1] || e2 == argv[2]) nb = 0;
    }
    if ((argc != 1 && argc != 3) || nb < 1 || bs < 1 || nb > 4096 || bs > 4096) {
        fprintf(stderr, "usage: sparselu [BLOCKS BLOCK_LEN] (each 1 to 4096)\n");
        return 2;
    }
    float **m = genmat(nb, bs);
    /* One dependence object per block. */
    char *dep = (char *)calloc((size_t)(nb * nb), 1);
    long tasks = 0;

    double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    {
        for (long k = 0; k < nb; k++) {
            float *diag = m[k * nb + k];
#pragma omp task depend(inout: dep[k * nb + k]) firstprivate(diag)
            lu0(diag, bs);
            tasks++;
            for (long j = k + 1; j < nb; j++) {
                float *col = m[k * nb + j];
                if (!col) continue;
#pragma omp task depend(in: dep[k * nb + k]) depend(inout: dep[k * nb + j]) firstprivate(diag, col)
                fwd(diag, col, bs);
                tasks++;
            }
            for (long i = k + 1; i < nb; i++) {
                float *row = m[i * nb + k];
                if (!row) continue;
#pragma omp task depend(in: dep[k * nb + k]) depend(inout: dep[i * nb + k]) firstprivate(diag, row)
                bdiv(diag, row, bs);
                tasks++;
            }
            for (long i = k + 1; i < nb; i++) {
                float *row = m[i * nb + k];
                if (!row) continue;
                for (long j = k + 1; j < nb; j++) {
                    float *col = m[k * nb + j];
                    if (!col) continue;
                    if (!m[i * nb + j]) m[i * nb + j] = (float *)calloc((size_t)(bs * bs), sizeof(float));
                    float *inner = m[i * nb + j];
#pragma omp task depend(in: dep[i * nb + k], dep[k * nb + j]) depend(inout: dep[i * nb + j]) \
    firstprivate(row, col, inner)
                    bmod(row, col, inner, bs);
                    tasks++;
                }
            }
        }
    }
    double wall = omp_get_wtime() - t0;

    int ok = sparselu_verify(m, nb, bs);
    printf("{\"peer\": \"" PEER "\", \"bench\": \"sparselu\", \"threads\": %d, \"tasks\": %ld, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s, "
           "\"params\": {\"blocks\": %ld, \"block_len\": %ld}}\n",
           omp_get_max_threads(), tasks, wall, tasks ? wall * 1e9 / tasks : 0.0, ok ? "true" : "false", nb, bs);
    for (long b = 0; b < nb * nb; b++) free(m[b]);
    free(m), free(dep);
    return ok ? 0 : 1;
}
