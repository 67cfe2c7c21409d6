// Locus's `cholesky` (crates/locus-bench/src/cholesky.rs) as a oneTBB flow graph over
// the tiles of the lower triangle, one allocation per tile, with Locus's own tile kernels
// (../common/cholesky_tiles.h). Step k: potrf on (k, k), trsm on (i, k), syrk on (i, i)
// and gemm on (i, j) for k < j < i. A node follows the last writer of every tile it
// touches and, for the tile it writes, the readers since that writer.
//
// Usage: cholesky [N TILE] (TILE divides N; default 512 64, Locus's small size). Prints
// one JSON object; exit status 1 when L differs from the unblocked factorisation, 2 on
// bad arguments.
#include "common.h"
#include "../common/cholesky_check.h"

namespace {

// Dependences of tasks on tiles updated in place.
struct tracker {
    std::vector<long> writer;
    std::vector<std::vector<long>> readers;

    explicit tracker(long tiles) : writer(tiles, peer::dag::none), readers(tiles) {}

    // The predecessors of a task reading `reads` and writing `w`.
    std::vector<long> after(const std::vector<long> &reads, long w) const {
        std::vector<long> a{writer[w]};
        a.insert(a.end(), readers[w].begin(), readers[w].end());
        for (long r : reads) a.push_back(writer[r]);
        return a;
    }

    void added(long node, const std::vector<long> &reads, long w) {
        for (long r : reads) readers[r].push_back(node);
        writer[w] = node;
        readers[w].clear();
    }
};

}  // namespace

int main(int argc, char **argv) {
    long n = 512, b = 64;
    long *const f[2] = {&n, &b};
    if (!peer::parse_longs(argc, argv, f, 2) || n < 1 || b < 1 || n % b != 0 || n > 65536) {
        std::fprintf(stderr, "usage: cholesky [N TILE] (TILE divides N, N at most 65536)\n");
        return 2;
    }
    int threads = peer::threads_from_env();
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    long nt = n / b;
    double **t = cholesky_tiles_new(n, b);

    double t0 = peer::now();
    peer::dag dag;
    tracker deps(nt * (nt + 1) / 2);
    auto add = [&](const std::vector<long> &reads, long w, auto body) {
        long node = dag.add(body, deps.after(reads, w));
        deps.added(node, reads, w);
    };
    for (long k = 0; k < nt; k++) {
        double *d = t[cholesky_slot(k, k)];
        add({}, cholesky_slot(k, k), [d, b] { cholesky_potrf(b, d); });
        for (long i = k + 1; i < nt; i++) {
            double *a = t[cholesky_slot(i, k)];
            add({cholesky_slot(k, k)}, cholesky_slot(i, k), [d, a, b] { cholesky_trsm(b, d, a); });
        }
        for (long i = k + 1; i < nt; i++) {
            double *a = t[cholesky_slot(i, k)], *c = t[cholesky_slot(i, i)];
            add({cholesky_slot(i, k)}, cholesky_slot(i, i), [a, c, b] { cholesky_syrk(b, a, c); });
            for (long j = k + 1; j < i; j++) {
                double *bt = t[cholesky_slot(j, k)], *cij = t[cholesky_slot(i, j)];
                add({cholesky_slot(i, k), cholesky_slot(j, k)}, cholesky_slot(i, j),
                    [a, bt, cij, b] { cholesky_gemm(b, a, bt, cij); });
            }
        }
    }
    dag.run();
    double wall = peer::now() - t0;

    bool ok = cholesky_verify(t, n, b) == 1;
    char params_json[128];
    std::snprintf(params_json, sizeof params_json, "{\"n\": %ld, \"tile\": %ld}", n, b);
    peer::print_result("cholesky", threads, dag.size(), wall, ok, params_json);
    cholesky_tiles_free(t, n, b);
    return ok ? 0 : 1;
}
