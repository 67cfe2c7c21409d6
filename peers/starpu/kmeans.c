/* Locus's `kmeans` (crates/locus-bench/src/kmeans.rs) with StarPU: vector handles per
 * block for the points, the assignments and the partial sums, and one for the
 * centroids. Every iteration has one task per block, which reads its points and the
 * centroids (`STARPU_R`) and writes its assignments and partial sums (`STARPU_W`), and
 * one reduction task, which reads every block's partial sums (`STARPU_R`) and updates
 * the centroids (`STARPU_RW`: an empty cluster keeps its old centroid), summing in block
 * order.
 *
 * Usage: kmeans [POINTS DIMS CLUSTERS BLOCK_POINTS ITERATIONS]
 * (default 40960 10 11 2048 10, Locus's small size). Prints one JSON object; exit
 * status 1 when the centroids (bitwise) or the assignments differ from a sequential run
 * of the same functions, 2 on bad arguments, 3 when StarPU fails. */
#include <math.h>
#include <stdint.h>

#include "common.h"

struct params {
    long points, dims, clusters, block_points, iterations;
};

/* The problem, read-only while tasks run. */
static struct params P = {40960, 10, 11, 2048, 10};

/* SplitMix64's finaliser, as Locus's `mix`. */
static uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* All points, row-major: a few blurred groups around integer centres. */
static void initial_points(float *x) {
    for (long i = 0; i < P.points; i++) {
        for (long j = 0; j < P.dims; j++) {
            float centre = (float)((i % 7) * (j + 3) % 5);
            float noise = (float)(mix((uint64_t)(i * P.dims + j)) >> 40) / (float)(1ull << 24);
            x[i * P.dims + j] = centre + noise;
        }
    }
}

/* One block: nearest centroid of each point (squared distance, ties to the lower
 * index) and the block's partial sums (`clusters x dims` sums, then `clusters` counts). */
static void assign_block(const float *x, const float *centroids, uint32_t *assign, float *partial) {
    long d = P.dims, k = P.clusters;
    memset(partial, 0, k * (d + 1) * sizeof(float));
    for (long i = 0; i < P.block_points; i++) {
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
static void reduce(const float *const *partials, float *centroids) {
    long d = P.dims, k = P.clusters, len = k * (d + 1), nb = P.points / P.block_points;
    float *total = calloc(len, sizeof(float));
    for (long b = 0; b < nb; b++)
        for (long t = 0; t < len; t++) total[t] += partials[b][t];
    for (long c = 0; c < k; c++) {
        float count = total[k * d + c];
        if (count > 0.0f)
            for (long j = 0; j < d; j++) centroids[c * d + j] = total[c * d + j] / count;
    }
    free(total);
}

/* Buffers: points (R), centroids (R), assignments (W), partial sums (W). */
static void assign_cpu(void *buffers[], void *cl_arg) {
    (void)cl_arg;
    assign_block((const float *)STARPU_VECTOR_GET_PTR(buffers[0]), (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
                 (uint32_t *)STARPU_VECTOR_GET_PTR(buffers[2]), (float *)STARPU_VECTOR_GET_PTR(buffers[3]));
}

/* Buffers: centroids (RW), then every block's partial sums (R) in block order. */
static void reduce_cpu(void *buffers[], void *cl_arg) {
    (void)cl_arg;
    long nb = P.points / P.block_points;
    const float **partials = malloc(nb * sizeof(float *));
    for (long b = 0; b < nb; b++) partials[b] = (const float *)STARPU_VECTOR_GET_PTR(buffers[b + 1]);
    reduce(partials, (float *)STARPU_VECTOR_GET_PTR(buffers[0]));
    free(partials);
}

static struct starpu_codelet assign_cl = {
    .cpu_funcs = {assign_cpu},
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_W},
    .name = "kmeans-assign",
};

static struct starpu_codelet reduce_cl = {
    .cpu_funcs = {reduce_cpu},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "kmeans-reduce",
};

static int parse(int argc, char **argv) {
    long *const f[5] = {&P.points, &P.dims, &P.clusters, &P.block_points, &P.iterations};
    return parse_longs(argc, argv, f, 5) && P.block_points > 0 && P.points % P.block_points == 0 && P.dims > 0 &&
           P.clusters > 0 && P.clusters <= P.points && P.iterations >= 0;
}

int main(int argc, char **argv) {
    if (!parse(argc, argv)) {
        fprintf(stderr, "usage: kmeans [POINTS DIMS CLUSTERS BLOCK_POINTS ITERATIONS] (blocks divide the points)\n");
        return 2;
    }
    long d = P.dims, k = P.clusters, bp = P.block_points, nb = P.points / bp, plen = k * (d + 1);
    float *x = malloc(P.points * d * sizeof(float));
    initial_points(x);
    float *centroids = malloc(k * d * sizeof(float)), *want_centroids = malloc(k * d * sizeof(float));
    memcpy(centroids, x, k * d * sizeof(float));
    memcpy(want_centroids, x, k * d * sizeof(float));
    uint32_t *assign = calloc(P.points, sizeof(uint32_t)), *want_assign = calloc(P.points, sizeof(uint32_t));
    float *partials = calloc(nb * plen, sizeof(float));
    starpu_data_handle_t *hx = malloc(nb * sizeof(starpu_data_handle_t)),
                         *ha = malloc(nb * sizeof(starpu_data_handle_t)),
                         *hp = malloc(nb * sizeof(starpu_data_handle_t)), hc;
    struct starpu_data_descr *red = malloc((nb + 1) * sizeof(struct starpu_data_descr));
    start_starpu();

    double t0 = now_s();
    starpu_vector_data_register(&hc, STARPU_MAIN_RAM, (uintptr_t)centroids, k * d, sizeof(float));
    for (long b = 0; b < nb; b++) {
        starpu_vector_data_register(&hx[b], STARPU_MAIN_RAM, (uintptr_t)(x + b * bp * d), bp * d, sizeof(float));
        starpu_vector_data_register(&ha[b], STARPU_MAIN_RAM, (uintptr_t)(assign + b * bp), bp, sizeof(uint32_t));
        starpu_vector_data_register(&hp[b], STARPU_MAIN_RAM, (uintptr_t)(partials + b * plen), plen, sizeof(float));
    }
    red[0].handle = hc;
    red[0].mode = STARPU_RW;
    for (long b = 0; b < nb; b++) red[b + 1].handle = hp[b], red[b + 1].mode = STARPU_R;
    for (long i = 0; i < P.iterations; i++) {
        for (long b = 0; b < nb; b++) SUBMIT(&assign_cl, STARPU_R, hx[b], STARPU_R, hc, STARPU_W, ha[b], STARPU_W, hp[b]);
        SUBMIT(&reduce_cl, STARPU_DATA_MODE_ARRAY, red, (int)(nb + 1));
    }
    starpu_task_wait_for_all();
    starpu_data_unregister(hc);
    for (long b = 0; b < nb; b++) starpu_data_unregister(hx[b]), starpu_data_unregister(ha[b]), starpu_data_unregister(hp[b]);
    double wall = now_s() - t0;
    unsigned threads = starpu_cpu_worker_get_count();
    starpu_shutdown();

    const float **parts = malloc(nb * sizeof(float *));
    for (long b = 0; b < nb; b++) parts[b] = partials + b * plen;
    for (long i = 0; i < P.iterations; i++) {
        for (long b = 0; b < nb; b++)
            assign_block(x + b * bp * d, want_centroids, want_assign + b * bp, partials + b * plen);
        reduce(parts, want_centroids);
    }
    int ok = memcmp(centroids, want_centroids, k * d * sizeof(float)) == 0 &&
             memcmp(assign, want_assign, P.points * sizeof(uint32_t)) == 0;
    char params[256];
    snprintf(params, sizeof params,
             "{\"points\": %ld, \"dims\": %ld, \"clusters\": %ld, \"block_points\": %ld, \"iterations\": %ld}",
             P.points, P.dims, P.clusters, P.block_points, P.iterations);
    print_result("kmeans", threads, P.iterations * (nb + 1), wall, ok, params);
    free(x), free(centroids), free(want_centroids), free(assign), free(want_assign), free(partials);
    free(hx), free(ha), free(hp), free(red), free(parts);
    return ok ? 0 : 1;
}
