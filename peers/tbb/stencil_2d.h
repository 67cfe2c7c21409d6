// The shared part of jacobi_2d.cpp and seidel_2d.cpp: Locus's 2-D five-point stencil
// (crates/locus-bench/src/stencil.rs) on one row-major `rows x cols` array of doubles.
//
// The sweep itself, the initial values and the sequential reference are
// ../common/stencil_2d_sweep.h (C, shared with the openmp and starpu peers).
#ifndef LOCUS_PEER_TBB_STENCIL_2D_H
#define LOCUS_PEER_TBB_STENCIL_2D_H

#include "common.h"

#include "../common/stencil_2d_sweep.h"

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

// Fills `a` with Locus's initial values.
inline void fill_initial(std::vector<double> &a) { ::fill_initial(a.data(), static_cast<long>(a.size())); }

// Updates the points of block (bi, bj), row by row, reading `src` and writing `dst` (the
// same array for Gauss-Seidel): what surrounds the block is simply the neighbouring
// memory of the one array, or nothing at its edge.
inline void sweep_block(const grid &g, const double *src, double *dst, long bi, long bj) {
    long i0 = bi * g.block_rows, j0 = bj * g.block_cols, p0 = i0 * g.cols + j0;
    const double *north = i0 > 0 ? src + p0 - g.cols : nullptr;
    const double *south = i0 + g.block_rows < g.rows ? src + p0 + g.block_rows * g.cols : nullptr;
    const double *west = j0 > 0 ? src + p0 - 1 : nullptr;
    const double *east = j0 + g.block_cols < g.cols ? src + p0 + g.block_cols : nullptr;
    sweep_block_rows(src + p0, dst + p0, g.cols, g.block_rows, g.block_cols, north, south, west, east);
}

// The sequential reference (each point straight from the definition).
inline void sweep_whole(const grid &g, const double *src, double *dst) {
    ::sweep_whole(g.rows, g.cols, g.block_rows, g.block_cols, src, dst);
}

}  // namespace peer

#endif
