// Locus's `kmeans` (crates/locus-bench/src/kmeans.rs) as a oneTBB flow graph: every
// iteration has one `continue_node` per block of points, which assigns each point to
// its nearest centroid and writes the block's partial sums, and one reduction node,
// which sums the partial sums in block order into the next centroids. A block node
// follows the previous reduction (it reads the centroids, and that reduction was the
// last reader of the partial sums it overwrites); a reduction follows its iteration's
// block nodes. The points stay in one array.
//
// Usage: kmeans [POINTS DIMS CLUSTERS BLOCK_POINTS ITERATIONS]
// (default 40960 10 11 2048 10, Locus's small size). Prints one JSON object; exit
// status 1 when the centroids (bitwise) or the assignments differ from a sequential run
// of the same functions, 2 on bad arguments.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common.h"

namespace {

struct params {
    long points = 40960, dims = 10, clusters = 11, block_points = 2048, iterations = 10;

    bool parse(int argc, char **argv) {
        long *const f[5] = {&points, &dims, &clusters, &block_points, &iterations};
        return peer::parse_longs(argc, argv, f, 5) && block_points > 0 && points % block_points == 0 &&
               dims > 0 && clusters > 0 && clusters <= points && iterations >= 0;
    }
    long blocks() const { return points / block_points; }
    long partial_len() const { return clusters * (dims + 1); }
};

// SplitMix64's finaliser, as Locus's `mix`.
uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// All points, row-major: a few blurred groups around integer centres.
std::vector<float> initial_points(const params &p) {
    std::vector<float> x(p.points * p.dims);
    for (long i = 0; i < p.points; i++) {
        for (long j = 0; j < p.dims; j++) {
            float centre = static_cast<float>((i % 7) * (j + 3) % 5);
            float noise = static_cast<float>(mix(static_cast<uint64_t>(i * p.dims + j)) >> 40) /
                          static_cast<float>(1ull << 24);
            x[i * p.dims + j] = centre + noise;
        }
    }
    return x;
}

// One block: nearest centroid of each point (squared distance, ties to the lower index)
// and the block's partial sums (`clusters x dims` sums, then `clusters` counts).
void assign_block(const params &p, const float *x, const float *centroids, uint32_t *assign, float *partial) {
    long d = p.dims, k = p.clusters;
    std::fill(partial, partial + k * (d + 1), 0.0f);
    for (long i = 0; i < p.block_points; i++) {
        const float *u = x + i * d;
        float best = INFINITY;
        long c = 0;
        for (long q = 0; q < k; q++) {
            float dist = 0.0f;
            for (long j = 0; j < d; j++) dist += (u[j] - centroids[q * d + j]) * (u[j] - centroids[q * d + j]);
            if (dist < best) best = dist, c = q;
        }
        assign[i] = static_cast<uint32_t>(c);
        for (long j = 0; j < d; j++) partial[c * d + j] += u[j];
        partial[k * d + c] += 1.0f;
    }
}

// Sums the partial sums in block order and divides; an empty cluster keeps its centroid.
void reduce(const params &p, const float *partials, float *centroids) {
    long d = p.dims, k = p.clusters, len = p.partial_len();
    std::vector<float> total(len, 0.0f);
    for (long b = 0; b < p.blocks(); b++)
        for (long t = 0; t < len; t++) total[t] += partials[b * len + t];
    for (long c = 0; c < k; c++) {
        float count = total[k * d + c];
        if (count > 0.0f)
            for (long j = 0; j < d; j++) centroids[c * d + j] = total[c * d + j] / count;
    }
}

}  // namespace

int main(int argc, char **argv) {
    params p;
    if (!p.parse(argc, argv)) {
        std::fprintf(stderr, "usage: kmeans [POINTS DIMS CLUSTERS BLOCK_POINTS ITERATIONS] (blocks divide the points)\n");
        return 2;
    }
    int threads = peer::threads_from_env();
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    long d = p.dims, k = p.clusters, nb = p.blocks(), plen = p.partial_len();
    std::vector<float> x = initial_points(p);
    std::vector<float> centroids(x.begin(), x.begin() + k * d), want_centroids = centroids;
    std::vector<uint32_t> assign(p.points), want_assign(p.points);
    std::vector<float> partials(nb * plen);

    double t0 = peer::now();
    peer::dag dag;
    long reduction = peer::dag::none;
    const float *points = x.data();
    float *cent = centroids.data(), *part = partials.data();
    uint32_t *asg = assign.data();
    for (long i = 0; i < p.iterations; i++) {
        std::vector<long> blocks;
        for (long b = 0; b < nb; b++) {
            blocks.push_back(dag.add(
                [&p, points, cent, asg, part, b, d, plen] {
                    assign_block(p, points + b * p.block_points * d, cent, asg + b * p.block_points, part + b * plen);
                },
                {reduction}));
        }
        blocks.push_back(reduction);
        reduction = dag.add([&p, part, cent] { reduce(p, part, cent); }, blocks);
    }
    dag.run();
    double wall = peer::now() - t0;

    for (long i = 0; i < p.iterations; i++) {
        for (long b = 0; b < nb; b++)
            assign_block(p, points + b * p.block_points * d, want_centroids.data(),
                         want_assign.data() + b * p.block_points, partials.data() + b * plen);
        reduce(p, partials.data(), want_centroids.data());
    }
    bool ok = std::memcmp(centroids.data(), want_centroids.data(), k * d * sizeof(float)) == 0 &&
              assign == want_assign;
    char params_json[256];
    std::snprintf(params_json, sizeof params_json,
                  "{\"points\": %ld, \"dims\": %ld, \"clusters\": %ld, \"block_points\": %ld, \"iterations\": %ld}",
                  p.points, p.dims, p.clusters, p.block_points, p.iterations);
    peer::print_result("kmeans", threads, dag.size(), wall, ok, params_json);
    return ok ? 0 : 1;
}
