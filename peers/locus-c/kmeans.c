/* Locus's `kmeans` (crates/locus-bench/src/kmeans.rs) over the C API, with the Rust
 * kernel's data and accesses: the points in blocks, double-buffered by handle (each
 * block task copies its block along, as the Rust kernel does); every iteration one task
 * per block reads its points and the centroids and writes the next copy of its points,
 * its assignments and its partial sums, and one reduction task reads every partial sum
 * (in block order) and read-writes the centroids.
 *
 * Usage: kmeans [POINTS DIMS CLUSTERS BLOCK_POINTS ITERATIONS]
 * (default 40960 10 11 2048 10). Exit status 1 when the centroids (bitwise) or the
 * assignments differ from a sequential run of the same functions, 2 on bad arguments,
 * 3 when Locus refuses a call. */
#include "locus_peer.h"

#include <math.h>

struct params {
    long points, dims, clusters, block_points, iterations;
};

/* SplitMix64's finaliser, as Locus's `mix`. */
static uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* All points, row-major: a few blurred groups around integer centres. */
static void initial_points(const struct params *p, float *x) {
    for (long i = 0; i < p->points; i++) {
        for (long j = 0; j < p->dims; j++) {
            float centre = (float)((i % 7) * (j + 3) % 5);
            float noise = (float)(mix((uint64_t)(i * p->dims + j)) >> 40) / (float)(1ull << 24);
            x[i * p->dims + j] = centre + noise;
        }
    }
}

/* One block: nearest centroid of each point (squared distance, ties to the lower
 * index) and the block's partial sums (`clusters x dims` sums, then `clusters` counts). */
static void assign_block(const struct params *p, const float *x, const float *centroids, uint32_t *assign,
                         float *partial) {
    long d = p->dims, k = p->clusters;
    memset(partial, 0, k * (d + 1) * sizeof(float));
    for (long i = 0; i < p->block_points; i++) {
        const float *u = x + i * d;
        float best = INFINITY;
        long c = 0;
        for (long q = 0; q < k; q++) {
            float dist = 0.0f;
            for (long j = 0; j < d; j++) dist += (u[j] - centroids[q * d + j]) * (u[j] - centroids[q * d + j]);
            if (dist < best) best = dist, c = q;
        }
        assign[i] = (uint32_t)c;
        for (long j = 0; j < d; j++) partial[c * d + j] += u[j];
        partial[k * d + c] += 1.0f;
    }
}

/* Sums the partial sums (one view each, in block order) and divides; an empty
 * cluster keeps its centroid. */
static void reduce_views(const struct params *p, const locus_view *partials, long nb, float *total,
                         float *centroids) {
    long d = p->dims, k = p->clusters, len = k * (d + 1);
    memset(total, 0, len * sizeof(float));
    for (long b = 0; b < nb; b++) {
        const float *part = partials[b].ptr;
        for (long t = 0; t < len; t++) total[t] += part[t];
    }
    for (long c = 0; c < k; c++) {
        float count = total[k * d + c];
        if (count > 0.0f)
            for (long j = 0; j < d; j++) centroids[c * d + j] = total[c * d + j] / count;
    }
}

/* views: points, centroids (read), next points, assignments, partial sums (write). */
static int32_t block_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    (void)n;
    const struct params *p = arg;
    memcpy(v[2].ptr, v[0].ptr, v[0].count * sizeof(float));
    assign_block(p, v[0].ptr, v[1].ptr, v[3].ptr, v[4].ptr);
    return 0;
}

/* views: every partial sum (read), then the centroids (read-write). */
static int32_t reduce_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    const struct params *p = arg;
    float *total = malloc(p->clusters * (p->dims + 1) * sizeof(float));
    if (!total) return 1;
    reduce_views(p, v, (long)n - 1, total, v[n - 1].ptr);
    free(total);
    return 0;
}

struct program {
    struct params p;
    locus_data *points[2], *assign, *partial, centroids;
    locus_access *reduce; /* every partial sum, then the centroids */
};

static int32_t root(locus_ctx ctx, const locus_view *views, size_t nviews, void *arg) {
    (void)views;
    (void)nviews;
    struct program *g = arg;
    long nb = g->p.points / g->p.block_points;
    for (long i = 0; i < g->p.iterations; i++) {
        for (long b = 0; b < nb; b++) {
            locus_access acc[5] = {
                {g->points[i % 2][b], LOCUS_READ, 0, 0},
                {g->centroids, LOCUS_READ, 0, 0},
                {g->points[(i + 1) % 2][b], LOCUS_WRITE, 0, 0},
                {g->assign[b], LOCUS_WRITE, 0, 0},
                {g->partial[b], LOCUS_WRITE, 0, 0},
            };
            locus_task t = {0};
            t.name = "kmeans";
            t.body = block_task;
            t.arg = &g->p; /* borrowed: lives until the run ends */
            t.accesses = acc;
            t.naccesses = 5;
            SPAWN(ctx, &t);
        }
        locus_task t = {0};
        t.name = "kmeans-reduce";
        t.body = reduce_task;
        t.arg = &g->p;
        t.accesses = g->reduce;
        t.naccesses = (size_t)nb + 1;
        SPAWN(ctx, &t);
    }
    return 0;
}

static int parse(int argc, char **argv, struct params *p) {
    if (argc == 1) return 1;
    if (argc != 6) return 0;
    long *f[5] = {&p->points, &p->dims, &p->clusters, &p->block_points, &p->iterations};
    for (int k = 0; k < 5; k++) {
        char *end;
        *f[k] = strtol(argv[k + 1], &end, 10);
        if (*end != '\0' || end == argv[k + 1]) return 0;
    }
    return p->block_points > 0 && p->points % p->block_points == 0 && p->dims > 0 && p->clusters > 0 &&
           p->clusters <= p->points && p->iterations >= 0;
}

static int run(int argc, char **argv, int timed) {
    struct program g = {{40960, 10, 11, 2048, 10}, {NULL, NULL}, NULL, NULL, {0}, NULL};
    struct params p = g.p;
    if (!parse(argc, argv, &p) || p.iterations < 1) {
        fprintf(stderr, "usage: kmeans [POINTS DIMS CLUSTERS BLOCK_POINTS ITERATIONS] (blocks divide the points, "
                        "at least one iteration)\n");
        return 2;
    }
    g.p = p;
    long d = p.dims, k = p.clusters, nb = p.points / p.block_points, plen = k * (d + 1), bl = p.block_points * d;
    float *x = malloc(p.points * d * sizeof(float));
    initial_points(&p, x);
    locus_runtime rt = peer_runtime();
    for (int s = 0; s < 2; s++) g.points[s] = calloc(nb, sizeof(locus_data));
    g.assign = calloc(nb, sizeof(locus_data));
    g.partial = calloc(nb, sizeof(locus_data));
    g.reduce = calloc(nb + 1, sizeof(locus_access));
    for (long b = 0; b < nb; b++) {
        TRY(locus_data_from(rt, "points0", sizeof(float), bl, x + b * bl, &g.points[0][b]));
        TRY(locus_data_create(rt, "points1", sizeof(float), bl, &g.points[1][b]));
        TRY(locus_data_create(rt, "assign", sizeof(uint32_t), p.block_points, &g.assign[b]));
        TRY(locus_data_create(rt, "partial", sizeof(float), plen, &g.partial[b]));
        g.reduce[b] = (locus_access){g.partial[b], LOCUS_READ, 0, 0};
    }
    TRY(locus_data_from(rt, "centroids", sizeof(float), k * d, x, &g.centroids));
    g.reduce[nb] = (locus_access){g.centroids, LOCUS_READ_WRITE, 0, 0};

    locus_figures f = peer_run(rt, root, &g);
    if (!timed) {
        TRY(locus_runtime_destroy(rt));
        free(g.points[0]), free(g.points[1]), free(g.assign), free(g.partial), free(g.reduce), free(x);
        return 0;
    }

    /* The sequential reference. */
    float *want_centroids = malloc(k * d * sizeof(float)), *partials = calloc(nb * plen, sizeof(float));
    uint32_t *want_assign = calloc(p.points, sizeof(uint32_t));
    memcpy(want_centroids, x, k * d * sizeof(float));
    float *total = malloc(plen * sizeof(float));
    for (long i = 0; i < p.iterations; i++) {
        for (long b = 0; b < nb; b++)
            assign_block(&p, x + b * bl, want_centroids, want_assign + b * p.block_points, partials + b * plen);
        memset(total, 0, plen * sizeof(float));
        for (long b = 0; b < nb; b++)
            for (long t = 0; t < plen; t++) total[t] += partials[b * plen + t];
        for (long c = 0; c < k; c++)
            if (total[k * d + c] > 0.0f)
                for (long j = 0; j < d; j++) want_centroids[c * d + j] = total[c * d + j] / total[k * d + c];
    }
    float *centroids = malloc(k * d * sizeof(float));
    uint32_t *assign = malloc(p.block_points * sizeof(uint32_t));
    TRY(locus_fetch(rt, g.centroids, centroids, k * d));
    int ok = memcmp(centroids, want_centroids, k * d * sizeof(float)) == 0;
    for (long b = 0; b < nb; b++) {
        TRY(locus_fetch(rt, g.assign[b], assign, p.block_points));
        ok &= memcmp(assign, want_assign + b * p.block_points, p.block_points * sizeof(uint32_t)) == 0;
    }
    long tasks = p.iterations * (nb + 1);
    printf("{\"peer\": \"" PEER "\", \"bench\": \"kmeans\", \"threads\": %zu, \"tasks\": %llu, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"r_loc_rt\": %.4f, \"verified\": %s, "
           "\"params\": {\"points\": %ld, \"dims\": %ld, \"clusters\": %ld, \"block_points\": %ld, "
           "\"iterations\": %ld}}\n",
           peer_workers(rt), (unsigned long long)f.tasks, f.wall_s, tasks ? f.wall_s * 1e9 / tasks : 0.0, f.r_loc_rt,
           ok ? "true" : "false", p.points, p.dims, p.clusters, p.block_points, p.iterations);
    TRY(locus_runtime_destroy(rt));
    free(g.points[0]), free(g.points[1]), free(g.assign), free(g.partial), free(g.reduce);
    free(x), free(want_centroids), free(partials), free(want_assign), free(total), free(centroids), free(assign);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) { return peer_main(argc, argv, run); }
