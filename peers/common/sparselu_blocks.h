/* What the C and C++ peers' sparselu share (openmp/ includes it as
 * "../common/sparselu_blocks.h"): Locus's matrix (crates/locus-bench/src/sparselu.rs):
 * BOTS's genmat pattern and values with the diagonal raised by 2n, BOTS's four block
 * kernels, and the dense right-looking elimination that checks them.
 *
 * Plain C that also compiles as C++. Build with -ffp-contract=off. */
#ifndef LOCUS_PEER_SPARSELU_BLOCKS_H
#define LOCUS_PEER_SPARSELU_BLOCKS_H

#include <stdlib.h>
#include <string.h>

/* Whether BOTS's genmat allocates block (i, j). */
static inline int genmat_present(long i, long j) {
    int null_entry = (i < j && i % 3 != 0) || (i > j && j % 3 != 0) || i % 2 == 1 || j % 2 == 1;
    if (i == j || i + 1 == j || j + 1 == i) null_entry = 0;
    return !null_entry;
}

/* Allocates and fills the present blocks of nb x nb blocks of bs x bs (NULL elsewhere). */
static inline float **genmat(long nb, long bs) {
    float **m = (float **)calloc((size_t)(nb * nb), sizeof(float *));
    unsigned v = 1325;
    float boost = (float)(2 * nb * bs);
    for (long b = 0; b < nb * nb; b++) {
        if (!genmat_present(b / nb, b % nb)) continue;
        float *p = (float *)malloc((size_t)(bs * bs) * sizeof(float));
        for (long q = 0; q < bs * bs; q++) {
            v = (3125 * v) % 65536;
            float x = ((float)v - 32768.0f) / 16384.0f;
            p[q] = (b / nb == b % nb && q / bs == q % bs) ? x + boost : x;
        }
        m[b] = p;
    }
    return m;
}

static inline void lu0(float *diag, long bs) {
    for (long k = 0; k < bs; k++)
        for (long i = k + 1; i < bs; i++) {
            diag[i * bs + k] /= diag[k * bs + k];
            for (long j = k + 1; j < bs; j++) diag[i * bs + j] -= diag[i * bs + k] * diag[k * bs + j];
        }
}

static inline void fwd(const float *diag, float *col, long bs) {
    for (long j = 0; j < bs; j++)
        for (long k = 0; k < bs; k++)
            for (long i = k + 1; i < bs; i++) col[i * bs + j] -= diag[i * bs + k] * col[k * bs + j];
}

static inline void bdiv(const float *diag, float *row, long bs) {
    for (long i = 0; i < bs; i++)
        for (long k = 0; k < bs; k++) {
            row[i * bs + k] /= diag[k * bs + k];
            for (long j = k + 1; j < bs; j++) row[i * bs + j] -= row[i * bs + k] * diag[k * bs + j];
        }
}

static inline void bmod(const float *row, const float *col, float *inner, long bs) {
    for (long i = 0; i < bs; i++)
        for (long j = 0; j < bs; j++)
            for (long k = 0; k < bs; k++) inner[i * bs + j] -= row[i * bs + k] * col[k * bs + j];
}

/* The check: the whole matrix of order nb * bs factorised densely, right-looking,
 * without pivoting; then every present block must equal it bit for bit and every absent
 * one be zero there. Returns 1 when they do. */
static inline int sparselu_verify(float **m, long nb, long bs) {
    long n = nb * bs;
    float **init = genmat(nb, bs);
    float *a = (float *)calloc((size_t)(n * n), sizeof(float));
    for (long b = 0; b < nb * nb; b++)
        if (init[b])
            for (long q = 0; q < bs * bs; q++) a[(b / nb * bs + q / bs) * n + (b % nb) * bs + q % bs] = init[b][q];
    for (long k = 0; k < n; k++) {
        float pivot = a[k * n + k];
        for (long i = k + 1; i < n; i++) {
            a[i * n + k] /= pivot;
            float l = a[i * n + k];
            for (long j = k + 1; j < n; j++) a[i * n + j] -= l * a[k * n + j];
        }
    }
    int ok = 1;
    for (long b = 0; b < nb * nb && ok; b++)
        for (long q = 0; q < bs * bs; q++) {
            float want = a[(b / nb * bs + q / bs) * n + (b % nb) * bs + q % bs];
            float got = m[b] ? m[b][q] : 0.0f;
            /* Bitwise for present blocks; absent ones hold zeros of either sign. */
            int same = m[b] ? memcmp(&got, &want, sizeof(float)) == 0 : want == 0.0f;
            if (!same) {
                ok = 0;
                break;
            }
        }
    for (long b = 0; b < nb * nb; b++) free(init[b]);
    free(init), free(a);
    return ok;
}

#endif
