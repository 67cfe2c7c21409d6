// Locus's `jacobi-2d` (crates/locus-bench/src/jacobi_2d.rs) as a oneTBB flow graph: one
// `continue_node` per block and iteration, which reads its block and the four
// neighbouring blocks of the previous iteration's array and writes its block of the next
// one (two arrays, swapped every iteration). Node (t, b) follows nodes (t - 1, b) and
// (t - 1, neighbours of b): they produced what it reads and were the last to read the
// block it overwrites.
//
// Usage: jacobi_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS]
// (default 512 512 64 128 20, Locus's small size). Prints one JSON object; exit status
// 1 when the result differs (bitwise) from the sequential sweep, 2 on bad arguments.
#include <cstring>

#include "stencil_2d.h"

int main(int argc, char **argv) {
    peer::grid g;
    if (!g.parse(argc, argv)) {
        std::fprintf(stderr, "usage: jacobi_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS] (blocks divide the array)\n");
        return 2;
    }
    int threads = peer::threads_from_env();
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    long len = g.rows * g.cols, nbi = g.blocks_down(), nbj = g.blocks_across(), nb = nbi * nbj;
    std::vector<double> buf[2] = {std::vector<double>(len), std::vector<double>(len)};
    peer::fill_initial(buf[0]);

    double t0 = peer::now();
    peer::dag dag;
    // The node of each block in the previous iteration (`none` before the first).
    std::vector<long> last(nb, peer::dag::none), next(nb);
    for (long t = 0; t < g.iterations; t++) {
        const double *src = buf[t % 2].data();
        double *dst = buf[(t + 1) % 2].data();
        for (long bi = 0; bi < nbi; bi++) {
            for (long bj = 0; bj < nbj; bj++) {
                long b = bi * nbj + bj;
                std::vector<long> after = {last[b]};
                if (bi > 0) after.push_back(last[b - nbj]);
                if (bi + 1 < nbi) after.push_back(last[b + nbj]);
                if (bj > 0) after.push_back(last[b - 1]);
                if (bj + 1 < nbj) after.push_back(last[b + 1]);
                next[b] = dag.add([&g, src, dst, bi, bj] { peer::sweep_block(g, src, dst, bi, bj); }, after);
            }
        }
        last.swap(next);
    }
    dag.run();
    double wall = peer::now() - t0;

    std::vector<double> want(len), other(len);
    peer::fill_initial(want);
    for (long t = 0; t < g.iterations; t++) {
        peer::sweep_whole(g, want.data(), other.data());
        want.swap(other);
    }
    bool ok = std::memcmp(want.data(), buf[g.iterations % 2].data(), len * sizeof(double)) == 0;
    peer::print_result("jacobi-2d", threads, dag.size(), wall, ok, g.params());
    return ok ? 0 : 1;
}
