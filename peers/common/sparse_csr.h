/* Locus's sparse layout (crates/locus-bench/src/csr.rs), for the C peers of `spmv` and
 * `bicgstab`: the five-point Laplacian of a `mesh x mesh` grid in CSR form, its rows cut
 * into partitions of balanced non-zeros by the same rule (the row boundary nearest p/P of
 * the non-zeros, the earlier on a tie), and the same initial values. */
#ifndef LOCUS_PEER_SPARSE_CSR_H
#define LOCUS_PEER_SPARSE_CSR_H

#include <stdlib.h>

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

#endif
