// A parallel reduction over locus.hpp, with what Locus offers: one task per block sums
// its block into a datum of one element (each reads only its range of the input, a
// read range), then a tree of tasks adds the partial sums pairwise, each reading two
// partials and writing a new one, until one is left. Integer sums, checked exactly
// against the sequential sum.
//
//     reduction [LEN [BLOCK [CONFIG [TOPOLOGY]]]]
//
// Build: c++ -O2 -std=c++17 reduction.cpp $(pkg-config --cflags --libs locus)
#include <locus.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

int main(int argc, char **argv) {
    std::size_t len = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1 << 20;
    std::size_t block = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1 << 14;
    const char *config = argc > 3 ? argv[3] : "dsa-opt";
    const char *topology = argc > 4 ? argv[4] : "2x1";
    if (len == 0 || block == 0) {
        std::fprintf(stderr, "reduction: LEN and BLOCK must be positive\n");
        return 2;
    }
    std::vector<std::int64_t> values(len);
    for (std::size_t i = 0; i < len; i++) values[i] = static_cast<std::int64_t>((i * 7919) % 1000) - 500;
    try {
        locus::runtime rt(config, topology);
        auto input = rt.data_from("input", values);
        std::size_t blocks = (len + block - 1) / block;
        // Every partial sum of the tree: the leaves, then each level's.
        std::vector<locus::data<std::int64_t>> partial;
        locus::report report = rt.run([&](locus::context &ctx) {
            std::vector<std::size_t> level;
            for (std::size_t b = 0; b < blocks; b++) {
                partial.push_back(rt.data<std::int64_t>("partial", 1));
                level.push_back(partial.size() - 1);
                std::size_t end = std::min(len, (b + 1) * block);
                ctx.spawn("sum-block", {locus::read(input, b * block, end), locus::write(partial.back())},
                          [](locus::context &, locus::views v) {
                              auto in = v.get<const std::int64_t>(0);
                              v.get<std::int64_t>(1)[0] =
                                  std::accumulate(in.begin(), in.end(), std::int64_t{0});
                          });
            }
            while (level.size() > 1) {
                std::vector<std::size_t> next;
                for (std::size_t i = 0; i + 1 < level.size(); i += 2) {
                    partial.push_back(rt.data<std::int64_t>("partial", 1));
                    next.push_back(partial.size() - 1);
                    ctx.spawn("add",
                              {locus::read(partial[level[i]]), locus::read(partial[level[i + 1]]),
                               locus::write(partial.back())},
                              [](locus::context &, locus::views v) {
                                  v.get<std::int64_t>(2)[0] =
                                      v.get<const std::int64_t>(0)[0] + v.get<const std::int64_t>(1)[0];
                              });
                }
                if (level.size() % 2) next.push_back(level.back());
                level = next;
            }
        });
        // The last partial made is the root of the tree (the only leaf for one block).
        std::int64_t got = rt.fetch(partial.back())[0];
        std::int64_t want = std::accumulate(values.begin(), values.end(), std::int64_t{0});
        bool verified = got == want;
        locus_figures f = report.figures();
        std::printf("{\"example\": \"reduction\", \"len\": %zu, \"sum\": %lld, \"tasks\": %llu, "
                    "\"wall_s\": %.6f, \"r_loc_rt\": %.3f, \"verified\": %s}\n",
                    len, static_cast<long long>(got), static_cast<unsigned long long>(f.tasks),
                    f.wall_s, f.r_loc_rt, verified ? "true" : "false");
        return verified ? 0 : 1;
    } catch (const locus::error &e) {
        std::fprintf(stderr, "reduction: %s\n", e.what());
        return 3;
    }
}
