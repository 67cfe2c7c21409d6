// The `overhead` graph of Locus (crates/locus-bench/src/overhead.rs) as a oneTBB flow
// graph: `chains` chains of `length` nodes on one word each, and `rounds` fan-out/fan-in
// rounds of width `fan` (a source node writes a word, `fan` nodes each read it and write
// their own word, a join node adds them all to a total), created interleaved in the
// order of Locus's sequential control program, with the dependences of the OpenMP
// peer's `depend` clauses.
//
// Usage: overhead CHAINS LENGTH ROUNDS FAN
// Prints one JSON object: tasks, wall_s, ns_per_task, verified. Exit status 1 when the
// result does not match the sequential reference, 2 on bad arguments.
#include <cstdint>

#include "common.h"

namespace {

inline uint64_t step(uint64_t x, uint64_t k) { return x * 3 + k; }

// One word per cache line, as Locus gives each datum its own block.
struct alignas(64) word {
    uint64_t v = 0;
};

}  // namespace

int main(int argc, char **argv) {
    long chains = 0, length = 0, rounds = 0, fan = 0;
    long *const f[4] = {&chains, &length, &rounds, &fan};
    if (argc != 5 || !peer::parse_longs(argc, argv, f, 4) || chains < 0 || length < 0 || rounds < 0 || fan < 1) {
        std::fprintf(stderr, "usage: overhead CHAINS LENGTH ROUNDS FAN (FAN at least 1)\n");
        return 2;
    }
    int threads = peer::threads_from_env();
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    std::vector<word> chain(chains), fans(fan);
    word source, total;

    long every = rounds ? length / rounds : 1;
    if (every < 1) every = 1;
    double t0 = peer::now();
    peer::dag dag;
    std::vector<long> chain_last(chains, peer::dag::none), fan_last(fan, peer::dag::none);
    long source_last = peer::dag::none, total_last = peer::dag::none;
    word *chain_words = chain.data(), *fan_words = fans.data(), *src = &source, *tot = &total;
    auto submit_round = [&](uint64_t r) {
        // The source overwrites the word the previous round's fan read.
        std::vector<long> after = fan_last;
        after.push_back(source_last);
        source_last = dag.add([src, r] { src->v = r; }, after);
        for (long k = 0; k < fan; k++) {
            // Reads the source; overwrites the word the previous join read.
            fan_last[k] = dag.add([src, fan_words, k] { fan_words[k].v = step(src->v, static_cast<uint64_t>(k)); },
                                  {source_last, total_last});
        }
        std::vector<long> join = fan_last;
        join.push_back(total_last);
        total_last = dag.add(
            [fan_words, tot, fan] {
                uint64_t s = 0;
                for (long j = 0; j < fan; j++) s += fan_words[j].v;
                tot->v += s;
            },
            join);
    };
    long round = 0;
    for (long i = 0; i < length; i++) {
        for (long c = 0; c < chains; c++) {
            uint64_t k = static_cast<uint64_t>(c * length + i);
            chain_last[c] = dag.add([chain_words, c, k] { chain_words[c].v = step(chain_words[c].v, k); },
                                    {chain_last[c]});
        }
        if (i % every == 0 && round < rounds) submit_round(static_cast<uint64_t>(++round));
    }
    while (round < rounds) submit_round(static_cast<uint64_t>(++round));
    dag.run();
    double wall = peer::now() - t0;

    bool ok = true;
    for (long c = 0; c < chains; c++) {
        uint64_t x = 0;
        for (long i = 0; i < length; i++) x = step(x, static_cast<uint64_t>(c * length + i));
        ok &= chain[c].v == x;
    }
    uint64_t want = 0;
    for (long r = 1; r <= rounds; r++) {
        uint64_t s = 0;
        for (long k = 0; k < fan; k++) s += step(static_cast<uint64_t>(r), static_cast<uint64_t>(k));
        want += s;
    }
    ok &= total.v == want;
    char params_json[160];
    std::snprintf(params_json, sizeof params_json, "{\"chains\": %ld, \"length\": %ld, \"rounds\": %ld, \"fan\": %ld}",
                  chains, length, rounds, fan);
    peer::print_result("overhead", threads, dag.size(), wall, ok, params_json);
    return ok ? 0 : 1;
}
