// fib over locus.hpp: nested tasks. Each task computing fib(n) spawns two children
// into its scope, each writing a datum of that scope, waits for them and fetches
// their results (as OpenMP's `task` / `taskwait`). Below a cut-off a task computes
// sequentially. Checked against the closed loop.
//
//     fib [N [CUTOFF [CONFIG [TOPOLOGY]]]]
//
// Build: c++ -O2 -std=c++17 fib.cpp $(pkg-config --cflags --libs locus)
#include <locus.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

static std::int64_t fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

// The body of a task writing fib(n) to its only view.
static void fib_task(locus::context &ctx, locus::views v, int n, int cutoff) {
    auto out = v.get<std::int64_t>(0);
    if (n <= cutoff) {
        out[0] = fib_seq(n);
        return;
    }
    auto a = ctx.data<std::int64_t>("fib-a", 1);
    auto b = ctx.data<std::int64_t>("fib-b", 1);
    ctx.spawn("fib", {locus::write(a)},
              [n, cutoff](locus::context &c, locus::views w) { fib_task(c, w, n - 1, cutoff); });
    ctx.spawn("fib", {locus::write(b)},
              [n, cutoff](locus::context &c, locus::views w) { fib_task(c, w, n - 2, cutoff); });
    ctx.wait();
    out[0] = ctx.fetch(a)[0] + ctx.fetch(b)[0];
}

int main(int argc, char **argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 24;
    int cutoff = argc > 2 ? std::atoi(argv[2]) : 12;
    const char *config = argc > 3 ? argv[3] : "dfa";
    const char *topology = argc > 4 ? argv[4] : "2x1";
    if (n < 0 || n > 80 || cutoff < 1) {
        std::fprintf(stderr, "fib: N must be in 0..80 and CUTOFF at least 1\n");
        return 2;
    }
    try {
        locus::runtime rt(config, topology);
        auto result = rt.data<std::int64_t>("result", 1);
        locus::report report = rt.run([&](locus::context &ctx) {
            ctx.spawn("fib", {locus::write(result)},
                      [n, cutoff](locus::context &c, locus::views v) { fib_task(c, v, n, cutoff); });
        });
        std::int64_t got = rt.fetch(result)[0];
        std::int64_t a = 0, b = 1;
        for (int i = 0; i < n; i++) {
            std::int64_t t = a + b;
            a = b;
            b = t;
        }
        bool verified = got == a;
        locus_figures f = report.figures();
        std::printf("{\"example\": \"fib\", \"n\": %d, \"fib\": %lld, \"tasks\": %llu, "
                    "\"wall_s\": %.6f, \"verified\": %s}\n",
                    n, static_cast<long long>(got), static_cast<unsigned long long>(f.tasks),
                    f.wall_s, verified ? "true" : "false");
        return verified ? 0 : 1;
    } catch (const locus::error &e) {
        std::fprintf(stderr, "fib: %s\n", e.what());
        return 3;
    }
}
