/* Locus's `jacobi-2d` (crates/locus-bench/src/jacobi_2d.rs) with StarPU: two arrays
 * (swapped every iteration), one matrix handle per block of each; one task per block and
 * iteration writes its block of the next array (`STARPU_W`) from its block and the four
 * neighbouring blocks of the previous one (`STARPU_R`).
 *
 * Usage: jacobi_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS]
 * (default 512 512 64 128 20, Locus's small size). Prints one JSON object; exit status
 * 1 when the result differs (bitwise) from the sequential sweep, 2 on bad arguments,
 * 3 when StarPU fails. */
#include "stencil_2d.h"

static void jacobi_cpu(void *buffers[], void *cl_arg) { stencil_task(buffers, cl_arg, 0); }

static struct starpu_codelet jacobi_cl = {
    .cpu_funcs = {jacobi_cpu},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "jacobi-2d",
};

int main(int argc, char **argv) {
    struct grid g = {512, 512, 64, 128, 20};
    if (!parse_grid(argc, argv, &g)) {
        fprintf(stderr, "usage: jacobi_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS] (blocks divide the array)\n");
        return 2;
    }
    long len = g.rows * g.cols, nbi = g.rows / g.block_rows, nbj = g.cols / g.block_cols, nb = nbi * nbj;
    double *buf[2] = {malloc(len * sizeof(double)), malloc(len * sizeof(double))};
    fill_initial(buf[0], len);
    memset(buf[1], 0, len * sizeof(double));
    starpu_data_handle_t *h[2] = {malloc(nb * sizeof(starpu_data_handle_t)), malloc(nb * sizeof(starpu_data_handle_t))};
    start_starpu();

    double t0 = now_s();
    register_blocks(&g, buf[0], h[0]);
    register_blocks(&g, buf[1], h[1]);
    for (long t = 0; t < g.iterations; t++) {
        starpu_data_handle_t *src = h[t % 2], *dst = h[(t + 1) % 2];
        for (long bi = 0; bi < nbi; bi++) {
            for (long bj = 0; bj < nbj; bj++) {
                long b = bi * nbj + bj;
                struct starpu_data_descr d[6] = {{dst[b], STARPU_W}, {src[b], STARPU_R}};
                int n = 2;
                int bits = add_neighbours(&g, src, bi, bj, d, &n);
                SUBMIT(&jacobi_cl, STARPU_DATA_MODE_ARRAY, d, n, STARPU_VALUE, &bits, sizeof(bits));
            }
        }
    }
    starpu_task_wait_for_all();
    for (long b = 0; b < nb; b++) starpu_data_unregister(h[0][b]), starpu_data_unregister(h[1][b]);
    double wall = now_s() - t0;
    unsigned threads = starpu_cpu_worker_get_count();
    starpu_shutdown();

    double *want = malloc(len * sizeof(double)), *next = malloc(len * sizeof(double));
    fill_initial(want, len);
    for (long t = 0; t < g.iterations; t++) {
        sweep_whole(g.rows, g.cols, g.block_rows, g.block_cols, want, next);
        double *tmp = want;
        want = next;
        next = tmp;
    }
    int ok = memcmp(want, buf[g.iterations % 2], len * sizeof(double)) == 0;
    print_grid("jacobi-2d", threads, &g, wall, ok);
    free(buf[0]), free(buf[1]), free(h[0]), free(h[1]), free(want), free(next);
    return ok ? 0 : 1;
}
