/* Locus's `seidel-2d` (crates/locus-bench/src/seidel_2d.rs) with StarPU: one array, one
 * matrix handle per block; one task per block and iteration updates its block in place
 * (`STARPU_RW`) reading its four neighbours (`STARPU_R`). Submitted in block order,
 * StarPU's sequential consistency makes a task read its north and west neighbours as
 * this iteration left them and its south and east neighbours as the previous one did:
 * exactly the sequential in-place sweep.
 *
 * Usage: seidel_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS]
 * (default 512 512 64 128 20, Locus's small size). Prints one JSON object; exit status
 * 1 when the result differs (bitwise) from the sequential sweep, 2 on bad arguments,
 * 3 when StarPU fails. */
#include "stencil_2d.h"

static void seidel_cpu(void *buffers[], void *cl_arg) { stencil_task(buffers, cl_arg, 1); }

static struct starpu_codelet seidel_cl = {
    .cpu_funcs = {seidel_cpu},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .name = "seidel-2d",
};

int main(int argc, char **argv) {
    struct grid g = {512, 512, 64, 128, 20};
    if (!parse_grid(argc, argv, &g)) {
        fprintf(stderr, "usage: seidel_2d [ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS] (blocks divide the array)\n");
        return 2;
    }
    long len = g.rows * g.cols, nbi = g.rows / g.block_rows, nbj = g.cols / g.block_cols, nb = nbi * nbj;
    double *a = malloc(len * sizeof(double));
    fill_initial(a, len);
    starpu_data_handle_t *h = malloc(nb * sizeof(starpu_data_handle_t));
    start_starpu();

    double t0 = now_s();
    register_blocks(&g, a, h);
    for (long t = 0; t < g.iterations; t++) {
        for (long bi = 0; bi < nbi; bi++) {
            for (long bj = 0; bj < nbj; bj++) {
                struct starpu_data_descr d[5] = {{h[bi * nbj + bj], STARPU_RW}};
                int n = 1;
                int bits = add_neighbours(&g, h, bi, bj, d, &n);
                SUBMIT(&seidel_cl, STARPU_DATA_MODE_ARRAY, d, n, STARPU_VALUE, &bits, sizeof(bits));
            }
        }
    }
    starpu_task_wait_for_all();
    for (long b = 0; b < nb; b++) starpu_data_unregister(h[b]);
    double wall = now_s() - t0;
    unsigned threads = starpu_cpu_worker_get_count();
    starpu_shutdown();

    double *want = malloc(len * sizeof(double));
    fill_initial(want, len);
    for (long t = 0; t < g.iterations; t++) sweep_whole(g.rows, g.cols, g.block_rows, g.block_cols, want, want);
    int ok = memcmp(want, a, len * sizeof(double)) == 0;
    print_grid("seidel-2d", threads, &g, wall, ok);
    free(a), free(h), free(want);
    return ok ? 0 : 1;
}
