/* What the C and C++ peers' cholesky share besides the tile kernels
 * (cholesky_tiles.h): the tiles of the lower triangle with Locus's initial values, and
 * the check against the unblocked left-looking factorisation of the whole matrix (which
 * calls none of the tile kernels), bit for bit on the lower triangle.
 *
 * Plain C that also compiles as C++. Build with -ffp-contract=off. */
#ifndef LOCUS_PEER_CHOLESKY_CHECK_H
#define LOCUS_PEER_CHOLESKY_CHECK_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cholesky_tiles.h"

/* Index of tile (i, j), j <= i, among the lower triangle's tiles. */
static inline long cholesky_slot(long i, long j) { return i * (i + 1) / 2 + j; }

/* The tiles of the lower triangle of order n in tiles of b, with the initial values. */
static inline double **cholesky_tiles_new(long n, long b) {
    long nt = n / b;
    double **t = (double **)malloc((size_t)(nt * (nt + 1) / 2) * sizeof(double *));
    for (long i = 0; i < nt; i++)
        for (long j = 0; j <= i; j++) {
            double *p = (double *)malloc((size_t)(b * b) * sizeof(double));
            for (long q = 0; q < b * b; q++) p[q] = cholesky_initial(n, i * b + q / b, j * b + q % b);
            t[cholesky_slot(i, j)] = p;
        }
    return t;
}

static inline void cholesky_tiles_free(double **t, long n, long b) {
    long nt = n / b;
    for (long q = 0; q < nt * (nt + 1) / 2; q++) free(t[q]);
    free(t);
}

/* 1 when the tiles hold the unblocked factorisation's L bit for bit. */
static inline int cholesky_verify(double **t, long n, long b) {
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
    int ok = 1;
    for (long i = 0; i < n && ok; i++)
        for (long j = 0; j <= i; j++) {
            double got = t[cholesky_slot(i / b, j / b)][(i % b) * b + j % b];
            if (memcmp(&got, &a[i * n + j], sizeof(double)) != 0) {
                ok = 0;
                break;
            }
        }
    free(a);
    return ok;
}

#endif
