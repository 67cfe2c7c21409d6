/* What spmv.c and bicgstab.c share: Locus's sparse layout (crates/locus-bench/src/csr.rs):
 * the five-point Laplacian of a `mesh x mesh` grid in CSR form, cut into row partitions of
 * balanced non-zeros by the same rule (the row boundary nearest p/P of the non-zeros, the
 * earlier on a tie), the same initial values, and the affinity modes of paper 3
 * (Virouleau et al., the OpenMP task affinity clause):
 *
 * - none: initialisation tasks anywhere, so first touch places the pages wherever they ran;
 * - init: the initialisation is a `parallel for schedule(static)` over the partitions, so
 *   each thread first-touches a contiguous run of them (standard OpenMP cannot bind a task
 *   to a thread); compute tasks without hints;
 * - strict, non-strict: as init, and every compute task carries `affinity(...)` on its
 *   output slice where the compiler accepts the OpenMP 5.0 clause (clang and gcc parse it;
 *   both runtimes, libomp and libgomp, ignore it: standard OpenMP has no strict affinity,
 *   so the two modes are the same program here).
 *
 * Every float file turns off contraction (peer.h), so the arithmetic is bitwise Locus's. */
#ifndef LOCUS_PEER_SPARSE_H
#define LOCUS_PEER_SPARSE_H

#include "peer.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_OPENMP) && _OPENMP >= 201811
#define AFFINITY(...) affinity(__VA_ARGS__)
#else
#define AFFINITY(...)
#endif

enum mode { MODE_NONE, MODE_INIT, MODE_STRICT, MODE_NON_STRICT };
static const char *mode_names[] = {"none", "init", "strict", "non-strict"};

static int parse_mode(const char *s, enum mode *m) {
    for (int k = 0; k < 4; k++)
        if (strcmp(s, mode_names[k]) == 0) return *m = (enum mode)k, 1;
    return 0;
}

struct csr {
    long rows, nnz;
    long *row_ptr;
    unsigned *col;
    double *val;
};

/* Locus's `csr::Csr::laplacian`: 4 on the diagonal, -1 per neighbour, columns in order. */
static struct csr laplacian(long n) {
    struct csr a = {n * n, 0, malloc((n * n + 1) * sizeof(long)), malloc(5 * n * n * sizeof(unsigned)),
                    malloc(5 * n * n * sizeof(double))};
    long k = 0;
    a.row_ptr[0] = 0;
    for (long y = 0; y < n; y++)
        for (long x = 0; x < n; x++) {
            long i = y * n + x;
#define PUSH(j, v) (a.col[k] = (unsigned)(j), a.val[k] = (v), k++)
            if (y > 0) PUSH(i - n, -1.0);
            if (x > 0) PUSH(i - 1, -1.0);
            PUSH(i, 4.0);
            if (x + 1 < n) PUSH(i + 1, -1.0);
            if (y + 1 < n) PUSH(i + n, -1.0);
#undef PUSH
            a.row_ptr[i + 1] = k;
        }
    a.nnz = k;
    return a;
}

/* Locus's `csr::partition_by_nnz`: `start[0..=parts]`. */
static long *partition_by_nnz(const struct csr *a, long parts) {
    long *start = malloc((parts + 1) * sizeof(long));
    start[0] = 0;
    for (long p = 1; p < parts; p++) {
        long target = (long)((__int128)a->nnz * p / parts);
        long lo = 0, hi = a->rows + 1; /* first index with row_ptr >= target */
        while (lo < hi) {
            long mid = (lo + hi) / 2;
            if (a->row_ptr[mid] < target) lo = mid + 1;
            else hi = mid;
        }
        long first = lo < a->rows ? lo : a->rows;
        if (first > 0 && target - a->row_ptr[first - 1] <= a->row_ptr[first] - target) first--;
        long min = start[p - 1] + 1, max = a->rows - (parts - p);
        start[p] = first < min ? min : first > max ? max : first;
    }
    start[parts] = a->rows;
    return start;
}

/* Locus's `stencil::initial(i) + 0.5` (spmv's initial vector, bicgstab's solution). */
static inline double initial(long i) {
    return (double)((i * 7919) % 1000) / 1000.0 + 0.5;
}

/* One partition's rows of y = A x, each row's entries summed in order. */
static inline void product_rows(const struct csr *a, long r0, long r1, const double *x, double *y) {
    for (long i = r0; i < r1; i++) {
        double sum = 0.0;
        for (long k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) sum += a->val[k] * x[a->col[k]];
        y[i] = sum;
    }
}

/* Reads a positive integer argument; 0 when it is not one. */
static long positive(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' && end != s && v > 0 ? v : 0;
}

#endif
