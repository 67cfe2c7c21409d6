// What the oneTBB peers share: argument parsing, the thread limit, timing, the JSON
// line, and `dag`, a dependence graph of `tbb::flow::continue_node`s.
//
// A peer adds one node per task with the tasks it must follow (the same dependences as
// the `depend` clauses of the OpenMP peer: true, anti and output), then runs the graph:
// the nodes without predecessors are started and `wait_for_all` returns when every
// task has run. A `continue_node` fires once it has heard from all its predecessors.
#ifndef LOCUS_PEER_TBB_COMMON_H
#define LOCUS_PEER_TBB_COMMON_H

#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace peer {

// The number of worker threads: `TBB_NUM_THREADS` when set (read by these programs, the
// counterpart of `OMP_NUM_THREADS`), else oneTBB's default (one per CPU).
inline int threads_from_env() {
    const char *s = std::getenv("TBB_NUM_THREADS");
    if (s != nullptr) {
        char *end = nullptr;
        long n = std::strtol(s, &end, 10);
        if (*end == '\0' && end != s && n > 0 && n < 65536) return static_cast<int>(n);
        std::fprintf(stderr, "TBB_NUM_THREADS=%s is not a positive number; using the default\n", s);
    }
    return tbb::info::default_concurrency();
}

// Parses `argv[1..]` as exactly `count` integers into `out`; true when `argc` is 1
// (keep the defaults) or every argument is an integer.
inline bool parse_longs(int argc, char **argv, long *const *out, int count) {
    if (argc == 1) return true;
    if (argc != count + 1) return false;
    for (int k = 0; k < count; k++) {
        char *end = nullptr;
        *out[k] = std::strtol(argv[k + 1], &end, 10);
        if (*end != '\0' || end == argv[k + 1]) return false;
    }
    return true;
}

// Seconds since an arbitrary epoch.
inline double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Prints the one JSON line every peer prints; `params` is a JSON object or empty.
inline void print_result(const char *bench, int threads, long tasks, double wall, bool ok,
                         const std::string &params) {
    std::printf("{\"peer\": \"tbb\", \"bench\": \"%s\", \"threads\": %d, \"tasks\": %ld, \"wall_s\": %.6f, "
                "\"ns_per_task\": %.1f, \"verified\": %s%s%s}\n",
                bench, threads, tasks, wall, tasks ? wall * 1e9 / tasks : 0.0, ok ? "true" : "false",
                params.empty() ? "" : ", \"params\": ", params.c_str());
}

// A task graph: nodes added in submission order, each after the nodes it names.
class dag {
  public:
    using node = tbb::flow::continue_node<tbb::flow::continue_msg>;
    static constexpr long none = -1;

    // Adds a task running `body` after the tasks `after` (indices returned by earlier
    // calls; `none` and repeated indices are ignored); returns its index.
    template <class Body> long add(Body body, std::vector<long> after) {
        auto n = std::make_unique<node>(graph_, [body](const tbb::flow::continue_msg &) { body(); });
        std::sort(after.begin(), after.end());
        after.erase(std::unique(after.begin(), after.end()), after.end());
        bool source = true;
        for (long p : after) {
            if (p == none) continue;
            tbb::flow::make_edge(*nodes_[p], *n);
            source = false;
        }
        if (source) sources_.push_back(static_cast<long>(nodes_.size()));
        nodes_.push_back(std::move(n));
        return static_cast<long>(nodes_.size()) - 1;
    }

    // Starts the tasks without predecessors and waits for every task.
    void run() {
        for (long s : sources_) nodes_[s]->try_put(tbb::flow::continue_msg());
        graph_.wait_for_all();
    }

    long size() const { return static_cast<long>(nodes_.size()); }

  private:
    tbb::flow::graph graph_;
    // Declared after the graph, so destroyed before it.
    std::vector<std::unique_ptr<node>> nodes_;
    std::vector<long> sources_;
};

}  // namespace peer

#endif
