/* The tile kernels of the tiled Cholesky factorisation, shared by Locus
 * (crates/locus-bench/src/cholesky_tiles.c, compiled by the crate's build script) and by
 * the C and C++ peers (openmp/, tbb/, starpu/ include it as
 * "../common/cholesky_tiles.h"), so that every runtime runs the same arithmetic.
 *
 * Tiles are B x B doubles, row-major. Only the lower triangle of a diagonal tile is
 * read or written. Every element subtracts its products one at a time, in increasing
 * order of the summation index, into a running value (no separate dot product): the
 * tiled factorisation then performs, element by element, exactly the operations of the
 * unblocked left-looking Cholesky factorisation, which is what the references check
 * bit for bit. Build with -ffp-contract=off.
 *
 * Plain C that also compiles as C++. */
#ifndef LOCUS_CHOLESKY_TILES_H
#define LOCUS_CHOLESKY_TILES_H

#include <math.h>

/* Factorises the diagonal tile in place: its lower triangle becomes L (A = L L^T). */
static inline void cholesky_potrf(long b, double *a) {
    for (long j = 0; j < b; j++) {
        double d = a[j * b + j];
        for (long k = 0; k < j; k++) d -= a[j * b + k] * a[j * b + k];
        d = sqrt(d);
        a[j * b + j] = d;
        for (long i = j + 1; i < b; i++) {
            double v = a[i * b + j];
            for (long k = 0; k < j; k++) v -= a[i * b + k] * a[j * b + k];
            a[i * b + j] = v / d;
        }
    }
}

/* Solves X L^T = A for the tile `a` below a factorised diagonal tile `l`; X replaces A. */
static inline void cholesky_trsm(long b, const double *l, double *a) {
    for (long r = 0; r < b; r++) {
        for (long j = 0; j < b; j++) {
            double v = a[r * b + j];
            for (long k = 0; k < j; k++) v -= a[r * b + k] * l[j * b + k];
            a[r * b + j] = v / l[j * b + j];
        }
    }
}

/* C -= A A^T on the lower triangle of the diagonal tile `c`. */
static inline void cholesky_syrk(long b, const double *a, double *c) {
    for (long i = 0; i < b; i++) {
        for (long j = 0; j <= i; j++) {
            double v = c[i * b + j];
            for (long k = 0; k < b; k++) v -= a[i * b + k] * a[j * b + k];
            c[i * b + j] = v;
        }
    }
}

/* C -= A B^T. */
static inline void cholesky_gemm(long b, const double *a, const double *bt, double *c) {
    for (long i = 0; i < b; i++) {
        for (long j = 0; j < b; j++) {
            double v = c[i * b + j];
            for (long k = 0; k < b; k++) v -= a[i * b + k] * bt[j * b + k];
            c[i * b + j] = v;
        }
    }
}

/* The initial symmetric positive definite matrix, element (i, j) of order n: a
 * deterministic value in [0, 1) off the diagonal (symmetric in i and j), n plus such a
 * value on it (strictly diagonally dominant). */
static inline double cholesky_initial(long n, long i, long j) {
    unsigned long long lo = (unsigned long long)(i < j ? i : j);
    unsigned long long hi = (unsigned long long)(i < j ? j : i);
    unsigned long long z = lo * 0x9E3779B97F4A7C15ull ^ (hi + 0x632BE59BD9B4E019ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    double v = (double)(z >> 11) / 9007199254740992.0;
    return i == j ? (double)n + v : v;
}

#endif
