// Locus's `seidel-2d` (crates/locus-bench/src/seidel_2d.rs) as a oneTBB flow graph: one
// `continue_node` per block and iteration updates its block in place in one array,
// row-major. Node (t, b) follows nodes (t, north), (t, west), (t - 1, south),
// (t - 1, east) and (t - 1, b): it reads its north and west neighbours as this
// iteration left them and its south and east neighbours as the previous one did, and
// those were the last to read its block; exactly the sequential in-place sweep.
//
// Usage: seidel_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS]
// (default 512 512 64 128 20, Locus's small size). Prints one JSON object; exit status
// 1 when the result differs (bitwise) from the sequential sweep, 2 on bad arguments.
#include <cstring>

#include "stencil_2d.h"

int main(int argc, char **argv) {
    peer::grid g;
    if (!g.parse(argc, argv)) {
        std::fprintf(stderr, "usage: seidel_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS] (blocks divide the array)\n");
        return 2;
    }
    int threads = peer::threads_from_env();
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    long len = g.rows * g.cols, nbi = g.blocks_down(), nbj = g.blocks_across(), nb = nbi * nbj;
    std::vector<double> a(len);
    peer::fill_initial(a);

    double t0 = peer::now();
    peer::dag dag;
    // The last node of each block: of this iteration for the blocks already visited,
    // of the previous one for the others.
    std::vector<long> last(nb, peer::dag::none);
    double *data = a.data();
    for (long t = 0; t < g.iterations; t++) {
        for (long bi = 0; bi < nbi; bi++) {
            for (long bj = 0; bj < nbj; bj++) {
                long b = bi * nbj + bj;
                std::vector<long> after = {last[b]};
                if (bi > 0) after.push_back(last[b - nbj]);
                if (bi + 1 < nbi) after.push_back(last[b + nbj]);
                if (bj > 0) after.push_back(last[b - 1]);
                if (bj + 1 < nbj) after.push_back(last[b + 1]);
                last[b] = dag.add([&g, data, bi, bj] { peer::sweep_block(g, data, data, bi, bj); }, after);
            }
        }
    }
    dag.run();
    double wall = peer::now() - t0;

    std::vector<double> want(len);
    peer::fill_initial(want);
    for (long t = 0; t < g.iterations; t++) peer::sweep_whole(g, want.data(), want.data());
    bool ok = std::memcmp(want.data(), a.data(), len * sizeof(double)) == 0;
    peer::print_result("seidel-2d", threads, dag.size(), wall, ok, g.params());
    return ok ? 0 : 1;
}
