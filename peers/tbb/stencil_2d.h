// The shared part of jacobi_2d.cpp and seidel_2d.cpp: Locus's 2-D five-point stencil
// (crates/locus-bench/src/stencil.rs) on one row-major `rows x cols` array of doubles.
//
// A point becomes `(n + c + s + w + e) / 5`, summed in that order as Locus does, and a
// neighbour outside the array is replaced by the point itself (built with
// `-ffp-contract=off`), so the results equal Locus's and the sequential references bit
// for bit.
#ifndef LOCUS_PEER_TBB_STENCIL_2D_H
#define LOCUS_PEER_TBB_STENCIL_2D_H

#include "common.h"

namespace peer {

struct grid {
    long rows = 512, cols = 512, block_rows = 64, block_cols = 128, iterations = 20;

    long blocks_down() const { return rows / block_rows; }
    long blocks_across() const { return cols / block_cols; }

    // Reads `ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS` (all or none); false when the
    // arguments are bad.
    bool parse(int argc, char **argv) {
        long *const f[5] = {&rows, &cols, &block_rows, &block_cols, &iterations};
        return parse_longs(argc, argv, f, 5) && rows > 0 && cols > 0 && block_rows > 0 && block_cols > 0 &&
               iterations >= 0 && rows % block_rows == 0 && cols % block_cols == 0;
    }

    std::string params() const {
        char s[256];
        std::snprintf(s, sizeof s,
                      "{\"rows\": %ld, \"cols\": %ld, \"block_rows\": %ld, \"block_cols\": %ld, \"iterations\": %ld}",
                      rows, cols, block_rows, block_cols, iterations);
        return s;
    }
};

// Locus's initial value of the element at row-major index `i`.
inline double initial(long i) { return static_cast<double>((i * 7919) % 1000) / 1000.0; }

inline void fill_initial(std::vector<double> &a) {
    for (size_t i = 0; i < a.size(); i++) a[i] = initial(static_cast<long>(i));
}

// Updates the points of block (bi, bj), row-major, reading `src` and writing `dst` (the
// same array for Gauss-Seidel).
inline void sweep_block(const grid &g, const double *src, double *dst, long bi, long bj) {
    for (long i = bi * g.block_rows; i < (bi + 1) * g.block_rows; i++) {
        for (long j = bj * g.block_cols; j < (bj + 1) * g.block_cols; j++) {
            long p = i * g.cols + j;
            double c = src[p];
            double n = i > 0 ? src[p - g.cols] : c;
            double s = i + 1 < g.rows ? src[p + g.cols] : c;
            double w = j > 0 ? src[p - 1] : c;
            double e = j + 1 < g.cols ? src[p + 1] : c;
            dst[p] = (n + c + s + w + e) / 5.0;
        }
    }
}

}  // namespace peer

#endif
