/* Locus's `spmv` (crates/locus-bench/src/spmv.rs) with StarPU: both vectors registered
 * per row partition (a vector handle per slice); per product, one task per partition
 * writes its slice of the output (`STARPU_W`) from the slices of the input its columns
 * touch (`STARPU_R`), the matrix (scaled by 1/8, as Locus scales it) read from the
 * program's arrays. Products alternate between the two vectors.
 *
 * Affinity modes (Locus's `--affinity`): `none` initialises and computes wherever StarPU
 * schedules; `init` runs each partition's initialisation task on its owner worker
 * (`STARPU_EXECUTE_ON_WORKER`; contiguous runs of partitions per worker), so its slices
 * are first touched there; `strict` also runs every product on the owner. StarPU has no
 * non-strict worker hint, so `non-strict` is `init` here.
 *
 * Usage: spmv [MESH PARTITIONS PRODUCTS [none|init|strict|non-strict]]
 * (default 256 16 50 strict, Locus's small size). Prints one JSON object; exit status 1
 * when the result differs (bitwise) from the sequential products, 2 on bad arguments, 3
 * when StarPU fails. */
#include "common.h"

#include "../common/sparse_csr.h"

static const char *modes[] = {"none", "init", "strict", "non-strict"};

static struct csr a;
static long *start, *first;

/* Initialisation of partition q's slices: x0 = Locus's initial values, x1 = 0. */
static void init_cpu(void *buffers[], void *cl_arg) {
    long q;
    starpu_codelet_unpack_args(cl_arg, &q);
    double *x0 = (double *)STARPU_VECTOR_GET_PTR(buffers[0]), *x1 = (double *)STARPU_VECTOR_GET_PTR(buffers[1]);
    for (long i = start[q]; i < start[q + 1]; i++) x0[i - start[q]] = initial(i), x1[i - start[q]] = 0.0;
}

/* buffers[0]: the output slice; buffers[1..]: the input slices first[q]..=last[q], which
 * are adjacent in the program's array (registered in main memory), so the input is
 * indexed from the first one's start. */
static void product_cpu(void *buffers[], void *cl_arg) {
    long q;
    starpu_codelet_unpack_args(cl_arg, &q);
    double *y = (double *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const double *x = (const double *)STARPU_VECTOR_GET_PTR(buffers[1]) - start[first[q]];
    for (long i = start[q]; i < start[q + 1]; i++) {
        double sum = 0.0;
        for (long k = a.row_ptr[i]; k < a.row_ptr[i + 1]; k++) sum += a.val[k] * x[a.col[k]];
        y[i - start[q]] = sum;
    }
}

static struct starpu_codelet init_cl = {.cpu_funcs = {init_cpu}, .nbuffers = 2, .modes = {STARPU_W, STARPU_W}, .name = "init"};
static struct starpu_codelet product_cl = {
    .cpu_funcs = {product_cpu}, .nbuffers = STARPU_VARIABLE_NBUFFERS, .name = "spmv"};

int main(int argc, char **argv) {
    long mesh = 256, parts = 16, products = 50;
    int mode = 2;
    if (argc == 5) {
        mode = -1;
        for (int k = 0; k < 4; k++)
            if (strcmp(argv[4], modes[k]) == 0) mode = k;
        argc = mode < 0 ? 0 : 4;
    }
    long *args[3] = {&mesh, &parts, &products};
    if (!parse_longs(argc, argv, args, 3) || mesh < 1 || mesh > 65535 || parts < 1 || parts > mesh * mesh ||
        products < 1) {
        fprintf(stderr, "usage: spmv [MESH PARTITIONS PRODUCTS [none|init|strict|non-strict]] (MESH <= 65535, PARTITIONS <= MESH^2)\n");
        return 2;
    }
    a = laplacian(mesh);
    for (long k = 0; k < a.nnz; k++) a.val[k] *= 0.125;
    start = partition_by_nnz(&a, parts);
    long n = a.rows, *last = malloc(parts * sizeof(long));
    first = malloc(parts * sizeof(long));
    for (long q = 0; q < parts; q++) {
        long lo = n, hi = 0;
        for (long k = a.row_ptr[start[q]]; k < a.row_ptr[start[q + 1]]; k++) {
            if (a.col[k] < lo) lo = a.col[k];
            if (a.col[k] + 1 > hi) hi = a.col[k] + 1;
        }
        if (lo >= hi) lo = start[q], hi = start[q] + 1;
        first[q] = q, last[q] = q;
        while (first[q] > 0 && start[first[q]] > lo) first[q]--;
        while (last[q] + 1 < parts && start[last[q] + 1] < hi) last[q]++;
    }
    double *x[2] = {malloc(n * sizeof(double)), malloc(n * sizeof(double))};
    starpu_data_handle_t *h[2] = {malloc(parts * sizeof(starpu_data_handle_t)), malloc(parts * sizeof(starpu_data_handle_t))};
    start_starpu();
    unsigned workers = starpu_cpu_worker_get_count();
    int cpu[STARPU_NMAXWORKERS];
    starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, cpu, workers);
#define OWNER(q) cpu[(q) * (long)workers / parts]

    double t0 = now_s();
    for (int k = 0; k < 2; k++)
        for (long q = 0; q < parts; q++)
            starpu_vector_data_register(&h[k][q], STARPU_MAIN_RAM, (uintptr_t)(x[k] + start[q]), start[q + 1] - start[q],
                                        sizeof(double));
    for (long q = 0; q < parts; q++) {
        if (mode >= 1)
            SUBMIT(&init_cl, STARPU_W, h[0][q], STARPU_W, h[1][q], STARPU_VALUE, &q, sizeof(q), STARPU_EXECUTE_ON_WORKER,
                   OWNER(q));
        else
            SUBMIT(&init_cl, STARPU_W, h[0][q], STARPU_W, h[1][q], STARPU_VALUE, &q, sizeof(q));
    }
    struct starpu_data_descr *d = malloc((parts + 1) * sizeof(struct starpu_data_descr));
    for (long k = 0; k < products; k++) {
        starpu_data_handle_t *src = h[k % 2], *dst = h[(k + 1) % 2];
        for (long q = 0; q < parts; q++) {
            int nd = 0;
            d[nd++] = (struct starpu_data_descr){dst[q], STARPU_W};
            for (long j = first[q]; j <= last[q]; j++) d[nd++] = (struct starpu_data_descr){src[j], STARPU_R};
            if (mode == 2)
                SUBMIT(&product_cl, STARPU_DATA_MODE_ARRAY, d, nd, STARPU_VALUE, &q, sizeof(q), STARPU_EXECUTE_ON_WORKER,
                       OWNER(q));
            else
                SUBMIT(&product_cl, STARPU_DATA_MODE_ARRAY, d, nd, STARPU_VALUE, &q, sizeof(q));
        }
    }
    starpu_task_wait_for_all();
    for (long q = 0; q < parts; q++) starpu_data_unregister(h[0][q]), starpu_data_unregister(h[1][q]);
    double wall = now_s() - t0;
    starpu_shutdown();

    double *want = malloc(n * sizeof(double)), *next = malloc(n * sizeof(double));
    for (long i = 0; i < n; i++) want[i] = initial(i);
    for (long k = 0; k < products; k++) {
        product_rows(&a, 0, n, want, next);
        double *t = want;
        want = next, next = t;
    }
    int ok = memcmp(want, x[products % 2], n * sizeof(double)) == 0;
    char params[200];
    snprintf(params, sizeof params, "{\"mesh\": %ld, \"partitions\": %ld, \"products\": %ld, \"affinity\": \"%s\"}", mesh,
             parts, products, modes[mode]);
    print_result("spmv", workers, parts * (products + 1), wall, ok, params);
    return ok ? 0 : 1;
}
