/* Locus's `kmeans` (crates/locus-bench/src/kmeans.rs) as OpenMP tasks with `depend`
 * clauses: every iteration has one task per block of points, which assigns each point
 * to its nearest centroid and writes the block's partial sums, and one reduction task,
 * which sums the partial sums in block order into the next centroids. The points stay
 * in one shared array (Locus copies each block along its chain of tasks).
 *
 * Usage: kmeans [POINTS DIMS CLUSTERS BLOCK_POINTS ITERATIONS]
 * (default 40960 10 11 2048 10, Locus's small size). Prints one JSON object; exit
 * status 1 when the centroids (bitwise) or the assignments differ from a sequential run
 * of the same functions, 2 on bad arguments. */
#include "peer.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Sums the partial sums in block order and divides; an empty cluster keeps its centroid. */
static void reduce(const struct params *p, const float *partials, float *centroids) {
    long d = p->dims, k = p->clusters, len = k * (d + 1), nb = p->points / p->block_points;
    float *total = calloc(len, sizeof(float));
    for (long b = 0; b < nb; b++)
        for (long t = 0; t < len; t++) total[t] += partials[b * len + t];
    for (long c = 0; c < k; c++) {
        float count = total[k * d + c];
        if (count > 0.0f)
            for (long j = 0; j < d; j++) centroids[c * d + j] = total[c * d + j] / count;
    }
    free(total);
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

int main(int argc, char **argv) {
    struct params p = {40960, 10, 11, 2048, 10};
    if (!parse(argc, argv, &p)) {
        fprintf(stderr, "usage: kmeans [POINTS DIMS CLUSTERS BLOCK_POINTS ITERATIONS] (blocks divide the points)\n");
        return 2;
    }
    long d = p.dims, k = p.clusters, nb = p.points / p.block_points, plen = k * (d + 1);
    float *x = malloc(p.points * d * sizeof(float));
    initial_points(&p, x);
    float *centroids = malloc(k * d * sizeof(float)), *want_centroids = malloc(k * d * sizeof(float));
    memcpy(centroids, x, k * d * sizeof(float));
    memcpy(want_centroids, x, k * d * sizeof(float));
    uint32_t *assign = calloc(p.points, sizeof(uint32_t)), *want_assign = calloc(p.points, sizeof(uint32_t));
    float *partials = calloc(nb * plen, sizeof(float));

    double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    for (long i = 0; i < p.iterations; i++) {
        for (long b = 0; b < nb; b++) {
#pragma omp task depend(in: centroids[0]) depend(out: partials[b * plen]) firstprivate(b) shared(p)
            assign_block(&p, x + b * p.block_points * d, centroids, assign + b * p.block_points, partials + b * plen);
        }
#pragma omp task depend(iterator(b = 0:nb), in: partials[b * plen]) depend(inout: centroids[0]) shared(p)
        reduce(&p, partials, centroids);
    }
    double wall = omp_get_wtime() - t0;

    for (long i = 0; i < p.iterations; i++) {
        for (long b = 0; b < nb; b++)
            assign_block(&p, x + b * p.block_points * d, want_centroids, want_assign + b * p.block_points,
                         partials + b * plen);
        reduce(&p, partials, want_centroids);
    }
    int ok = memcmp(centroids, want_centroids, k * d * sizeof(float)) == 0 &&
             memcmp(assign, want_assign, p.points * sizeof(uint32_t)) == 0;
    long tasks = p.iterations * (nb + 1);
    printf("{\"peer\": \"" PEER "\", \"bench\": \"kmeans\", \"threads\": %d, \"tasks\": %ld, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s, "
           "\"params\": {\"points\": %ld, \"dims\": %ld, \"clusters\": %ld, \"block_points\": %ld, "
           "\"iterations\": %ld}}\n",
           omp_get_max_threads(), tasks, wall, tasks ? wall * 1e9 / tasks : 0.0, ok ? "true" : "false", p.points,
           p.dims, p.clusters, p.block_points, p.iterations);
    free(x), free(centroids), free(want_centroids), free(assign), free(want_assign), free(partials);
    return ok ? 0 : 1;
}
