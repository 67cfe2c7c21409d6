/* What the C and C++ peers' 2-D stencils share (openmp/, tbb/, starpu/ include it as
 * "../common/stencil_2d_sweep.h"): Locus's initial values and five-point sweep
 * (crates/locus-bench/src/stencil.rs) on a row-major array of doubles.
 *
 * A point becomes `(n + c + s + w + e) / 5`, summed in that order as Locus does, and a
 * neighbour outside the array is replaced by the point itself. The peers are built with
 * `-ffp-contract=off`, so no fused multiply-add changes a rounding: `sweep_block_rows`
 * (what the tasks run) and `sweep_whole` (the sequential reference, one point at a time
 * from the definition) agree with each other and with Locus bit for bit.
 *
 * Plain C that also compiles as C++ (`__restrict` is understood by gcc, clang and g++). */
#ifndef LOCUS_PEER_STENCIL_2D_SWEEP_H
#define LOCUS_PEER_STENCIL_2D_SWEEP_H

/* Locus's initial value of the element at row-major index `i`. */
static inline double initial(long i) { return (double)((i * 7919) % 1000) / 1000.0; }

static inline void fill_initial(double *a, long len) {
    for (long i = 0; i < len; i++) a[i] = initial(i);
}

/* One row of `bc` points of a Jacobi sweep, from `c` (with the rows `n` above and `s`
 * below, each `c` itself at the array's edge) into `d`, which overlaps none of them; `w0`
 * is the west neighbour of the first point, `e_last` the east neighbour of the last. */
static inline void sweep_row_from(const double *__restrict n, const double *__restrict c,
                                  const double *__restrict s, double w0, double e_last, double *__restrict d,
                                  long bc) {
    long last = bc - 1;
    if (last == 0) {
        d[0] = (n[0] + c[0] + s[0] + w0 + e_last) / 5.0;
        return;
    }
    d[0] = (n[0] + c[0] + s[0] + w0 + c[1]) / 5.0;
    for (long x = 1; x < last; x++) d[x] = (n[x] + c[x] + s[x] + c[x - 1] + c[x + 1]) / 5.0;
    d[last] = (n[last] + c[last] + s[last] + c[last - 1] + e_last) / 5.0;
}

/* One row of `bc` points of a Gauss-Seidel sweep, in place in `c`: `n` is the row above
 * as this sweep left it, `s` the row below as the previous one did (each `c` itself at
 * the array's edge, where `n[x]` and `s[x]` are read before `c[x]` is written); a point's
 * west neighbour is the point just updated, carried in `v`. */
static inline void sweep_row_in_place(const double *n, double *c, const double *s, double w0, double e_last,
                                      long bc) {
    long last = bc - 1;
    if (last == 0) {
        c[0] = (n[0] + c[0] + s[0] + w0 + e_last) / 5.0;
        return;
    }
    double v = (n[0] + c[0] + s[0] + w0 + c[1]) / 5.0;
    c[0] = v;
    for (long x = 1; x < last; x++) {
        v = (n[x] + c[x] + s[x] + v + c[x + 1]) / 5.0;
        c[x] = v;
    }
    c[last] = (n[last] + c[last] + s[last] + v + e_last) / 5.0;
}

/* Sweeps one `br x bc` block row by row, as Locus's `step_block` does: `src` is the
 * block's first point in the array read and `dst` in the array written (the same array
 * for Gauss-Seidel, updated in place), both with leading dimension `ld`. What surrounds
 * the block, each NULL at the array's edge: `north` the row above its first row, `south`
 * the row below its last, `west` the point left of its first point and `east` the point
 * right of its first row's last point (the next rows' are `ld` apart). Per row the north
 * and south rows and the two end values are chosen once; the points between the first
 * and the last take no branch. */
static inline void sweep_block_rows(const double *src, double *dst, long ld, long br, long bc, const double *north,
                                    const double *south, const double *west, const double *east) {
    int in_place = src == dst;
    for (long i = 0; i < br; i++) {
        const double *c = src + i * ld;
        const double *n = i > 0 ? c - ld : north ? north : c;
        const double *s = i + 1 < br ? c + ld : south ? south : c;
        double w0 = west ? west[i * ld] : c[0];
        double e_last = east ? east[i * ld] : c[bc - 1];
        if (in_place)
            sweep_row_in_place(n, dst + i * ld, s, w0, e_last, bc);
        else
            sweep_row_from(n, c, s, w0, e_last, dst + i * ld, bc);
    }
}

/* The sequential reference: one sweep of the whole `rows x cols` array, block by block
 * (`block_rows x block_cols`), row-major inside a block, from `src` into `dst` (the same
 * array for Gauss-Seidel), each point straight from the definition. */
static inline void sweep_whole(long rows, long cols, long block_rows, long block_cols, const double *src,
                               double *dst) {
    for (long bi = 0; bi < rows / block_rows; bi++)
        for (long bj = 0; bj < cols / block_cols; bj++)
            for (long i = bi * block_rows; i < (bi + 1) * block_rows; i++)
                for (long j = bj * block_cols; j < (bj + 1) * block_cols; j++) {
                    long p = i * cols + j;
                    double c = src[p];
                    double n = i > 0 ? src[p - cols] : c;
                    double s = i + 1 < rows ? src[p + cols] : c;
                    double w = j > 0 ? src[p - 1] : c;
                    double e = j + 1 < cols ? src[p + 1] : c;
                    dst[p] = (n + c + s + w + e) / 5.0;
                }
}

#endif
