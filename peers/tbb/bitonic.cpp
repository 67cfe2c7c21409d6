// Locus's `bitonic` (crates/locus-bench/src/bitonic.rs) as a oneTBB flow graph, in place
// in one array of `u64` keys: the same blocked network, step by step. Step 0 sorts every
// block (ascending or descending); then for each stage `k` every distance of at least a
// block is one node per pair of blocks (compare-exchange element by element), and the
// distances inside a block are one merge node per block. Every node follows the last
// node that touched each of its blocks.
//
// Usage: bitonic [LEN BLOCK_LEN] (powers of two; default 262144 4096, Locus's small
// size). Prints one JSON object; exit status 1 when the keys are not the input sorted
// ascending, 2 on bad arguments.
#include <cstdint>

#include "common.h"
#include "../common/bitonic_blocks.h"

namespace {

// Step 0 with the standard library's sort.
void sort_block_std(uint64_t *keys, long len, bool desc) {
    if (desc)
        std::sort(keys, keys + len, [](uint64_t a, uint64_t b) { return a > b; });
    else
        std::sort(keys, keys + len);
}

}  // namespace

int main(int argc, char **argv) {
    long len = 1L << 18, block_len = 1L << 12;
    long *const f[2] = {&len, &block_len};
    if (!peer::parse_longs(argc, argv, f, 2) || !is_power_of_two(len) || !is_power_of_two(block_len) ||
        block_len > len) {
        std::fprintf(stderr, "usage: bitonic [LEN BLOCK_LEN] (powers of two, BLOCK_LEN <= LEN)\n");
        return 2;
    }
    int threads = peer::threads_from_env();
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    long nb = len / block_len;
    int m = log2_of(nb), bits = log2_of(block_len);
    std::vector<uint64_t> keys(len), want(len);
    for (long i = 0; i < len; i++) keys[i] = want[i] = initial(static_cast<uint64_t>(i));

    double t0 = peer::now();
    peer::dag dag;
    // The direction of stage `k` at block `blk`: bit `k` of the keys' positions.
    auto desc = [bits](int k, long blk) { return (((static_cast<uint64_t>(blk) << bits) >> k) & 1) == 1; };
    uint64_t *data = keys.data();
    // The last node that touched each block.
    std::vector<long> last(nb, peer::dag::none);
    for (long b = 0; b < nb; b++) {
        bool down = desc(bits, b);
        last[b] = dag.add([data, b, block_len, down] { sort_block_std(data + b * block_len, block_len, down); }, {});
    }
    for (int k = bits + 1; k <= m + bits; k++) {
        for (int j = k - 1; j >= bits; j--) {
            long d = 1L << (j - bits);
            for (long lo = 0; lo < nb; lo++) {
                if (lo & d) continue;
                long hi = lo | d;
                bool down = desc(k, lo);
                long n = dag.add(
                    [data, lo, hi, block_len, down] {
                        pair_blocks(data + lo * block_len, data + hi * block_len, block_len, down);
                    },
                    {last[lo], last[hi]});
                last[lo] = last[hi] = n;
            }
        }
        for (long b = 0; b < nb; b++) {
            bool down = desc(k, b);
            last[b] = dag.add([data, b, block_len, down] { merge_block(data + b * block_len, block_len, down); },
                              {last[b]});
        }
    }
    dag.run();
    double wall = peer::now() - t0;

    std::sort(want.begin(), want.end());
    bool ok = keys == want;
    char params_json[128];
    std::snprintf(params_json, sizeof params_json, "{\"len\": %ld, \"block_len\": %ld}", len, block_len);
    peer::print_result("bitonic", threads, dag.size(), wall, ok, params_json);
    return ok ? 0 : 1;
}
