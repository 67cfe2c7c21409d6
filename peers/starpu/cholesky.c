/* Locus's `cholesky` (crates/locus-bench/src/cholesky.rs) with StarPU over the tiles of
 * the lower triangle, one allocation and one vector handle per tile, with Locus's own
 * tile kernels (../common/cholesky_tiles.h). Step k: potrf on (k, k), trsm on (i, k),
 * syrk on (i, i) and gemm on (i, j) for k < j < i; the written tile is `STARPU_RW`, the
 * others `STARPU_R`, and StarPU's sequential consistency derives the dependences.
 *
 * Usage: cholesky [N TILE] (TILE divides N; default 512 64, Locus's small size). Prints
 * one JSON object; exit status 1 when L differs from the unblocked factorisation, 2 on
 * bad arguments, 3 when StarPU fails. */
#include "common.h"
#include "../common/cholesky_check.h"

/* The order of a tile: a vector of b * b doubles. */
static long order(void *buffer) {
    long len = (long)STARPU_VECTOR_GET_NX(buffer), b = (long)sqrt((double)len);
    while (b * b < len) b++;
    while (b * b > len) b--;
    return b;
}

#define TILE(k) ((double *)STARPU_VECTOR_GET_PTR(buffers[k]))

static void potrf_cpu(void *buffers[], void *cl_arg) {
    (void)cl_arg;
    cholesky_potrf(order(buffers[0]), TILE(0));
}

static void trsm_cpu(void *buffers[], void *cl_arg) {
    (void)cl_arg;
    cholesky_trsm(order(buffers[0]), TILE(0), TILE(1));
}

static void syrk_cpu(void *buffers[], void *cl_arg) {
    (void)cl_arg;
    cholesky_syrk(order(buffers[0]), TILE(0), TILE(1));
}

static void gemm_cpu(void *buffers[], void *cl_arg) {
    (void)cl_arg;
    cholesky_gemm(order(buffers[0]), TILE(0), TILE(1), TILE(2));
}

static struct starpu_codelet potrf_cl = {
    .cpu_funcs = {potrf_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "potrf"};
static struct starpu_codelet trsm_cl = {
    .cpu_funcs = {trsm_cpu}, .nbuffers = 2, .modes = {STARPU_R, STARPU_RW}, .name = "trsm"};
static struct starpu_codelet syrk_cl = {
    .cpu_funcs = {syrk_cpu}, .nbuffers = 2, .modes = {STARPU_R, STARPU_RW}, .name = "syrk"};
static struct starpu_codelet gemm_cl = {
    .cpu_funcs = {gemm_cpu}, .nbuffers = 3, .modes = {STARPU_R, STARPU_R, STARPU_RW}, .name = "gemm"};

int main(int argc, char **argv) {
    long n = 512, b = 64;
    long *const f[2] = {&n, &b};
    if (!parse_longs(argc, argv, f, 2) || n < 1 || b < 1 || n % b != 0 || n > 65536) {
        fprintf(stderr, "usage: cholesky [N TILE] (TILE divides N, N at most 65536)\n");
        return 2;
    }
    long nt = n / b, ntiles = nt * (nt + 1) / 2;
    double **t = cholesky_tiles_new(n, b);
    starpu_data_handle_t *h = malloc((size_t)ntiles * sizeof(starpu_data_handle_t));
    long tasks = 0;
    start_starpu();

    double t0 = now_s();
    for (long q = 0; q < ntiles; q++)
        starpu_vector_data_register(&h[q], STARPU_MAIN_RAM, (uintptr_t)t[q], (uint32_t)(b * b), sizeof(double));
#define H(i, j) h[cholesky_slot(i, j)]
    for (long k = 0; k < nt; k++) {
        SUBMIT(&potrf_cl, STARPU_RW, H(k, k));
        tasks++;
        for (long i = k + 1; i < nt; i++) {
            SUBMIT(&trsm_cl, STARPU_R, H(k, k), STARPU_RW, H(i, k));
            tasks++;
        }
        for (long i = k + 1; i < nt; i++) {
            SUBMIT(&syrk_cl, STARPU_R, H(i, k), STARPU_RW, H(i, i));
            tasks++;
            for (long j = k + 1; j < i; j++) {
                SUBMIT(&gemm_cl, STARPU_R, H(i, k), STARPU_R, H(j, k), STARPU_RW, H(i, j));
                tasks++;
            }
        }
    }
    starpu_task_wait_for_all();
    for (long q = 0; q < ntiles; q++) starpu_data_unregister(h[q]);
    double wall = now_s() - t0;
    unsigned threads = starpu_cpu_worker_get_count();
    starpu_shutdown();

    int ok = cholesky_verify(t, n, b);
    char params[128];
    snprintf(params, sizeof params, "{\"n\": %ld, \"tile\": %ld}", n, b);
    print_result("cholesky", threads, tasks, wall, ok, params);
    cholesky_tiles_free(t, n, b);
    free(h);
    return ok ? 0 : 1;
}
