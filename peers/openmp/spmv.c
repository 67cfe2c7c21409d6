/* Locus's `spmv` (crates/locus-bench/src/spmv.rs) as OpenMP tasks with `depend` clauses,
 * paper 3's Figure 3a: per product, one task per row partition reads the input vector's
 * slices its columns touch (`in` on the partition's own slice and its neighbours') and
 * writes its slice of the output (`out`), `affinity` on that slice in the strict and
 * non-strict modes (sparse.h). Each partition's rows are copied into arrays of its own by
 * an initialisation task, which also first-touches the partition's slices of the two
 * vectors; products alternate between the two vectors. The matrix is scaled by 1/8 (a
 * power of two: Locus scales to an infinity norm of at most 1) so that the iterates stay
 * finite.
 *
 * Usage: spmv [MESH PARTITIONS PRODUCTS [none|init|strict|non-strict]]
 * (default 256 16 50 strict, Locus's small size). Prints one JSON object; exit status 1
 * when the result differs (bitwise) from the sequential products, 2 on bad arguments. */
#include "sparse.h"

struct part {
    long r0, r1, lo, hi; /* rows; the columns the rows touch, [lo, hi) */
    long *rp;
    unsigned *col;
    double *val;
};

int main(int argc, char **argv) {
    long mesh = 256, parts = 16, products = 50;
    enum mode mode = MODE_STRICT;
    if (argc != 1 && argc != 4 && argc != 5) goto usage;
    if (argc >= 4 && (!(mesh = positive(argv[1])) || !(parts = positive(argv[2])) || !(products = positive(argv[3]))))
        goto usage;
    if (argc == 5 && !parse_mode(argv[4], &mode)) goto usage;
    if (mesh > 65535 || parts > mesh * mesh) goto usage;

    struct csr a = laplacian(mesh);
    for (long k = 0; k < a.nnz; k++) a.val[k] *= 0.125;
    long *start = partition_by_nnz(&a, parts), n = a.rows;
    struct part *p = calloc(parts, sizeof(struct part));
    for (long q = 0; q < parts; q++) {
        p[q].r0 = start[q], p[q].r1 = start[q + 1];
        long lo = n, hi = 0;
        for (long k = a.row_ptr[p[q].r0]; k < a.row_ptr[p[q].r1]; k++) {
            if (a.col[k] < lo) lo = a.col[k];
            if (a.col[k] + 1 > hi) hi = a.col[k] + 1;
        }
        p[q].lo = lo < hi ? lo : p[q].r0, p[q].hi = lo < hi ? hi : p[q].r0;
    }
    double *x[2] = {malloc(n * sizeof(double)), malloc(n * sizeof(double))};
    /* The first and last partitions whose slices a partition's columns touch. */
    long *first = malloc(parts * sizeof(long)), *last = malloc(parts * sizeof(long));
    for (long q = 0; q < parts; q++) {
        first[q] = q, last[q] = q;
        while (first[q] > 0 && p[first[q] - 1].r1 > p[q].lo) first[q]--;
        while (last[q] + 1 < parts && p[last[q] + 1].r0 < p[q].hi) last[q]++;
    }

    double t0 = omp_get_wtime();
#pragma omp parallel
    {
        /* The initialisation: each partition's rows and its slices of both vectors. */
#define INIT(q)                                                                              \
    do {                                                                                     \
        long r0 = p[q].r0, r1 = p[q].r1, e0 = a.row_ptr[r0], e1 = a.row_ptr[r1];             \
        p[q].rp = malloc((r1 - r0 + 1) * sizeof(long));                                      \
        p[q].col = malloc((e1 - e0 + 1) * sizeof(unsigned));                                 \
        p[q].val = malloc((e1 - e0 + 1) * sizeof(double));                                   \
        for (long i = r0; i <= r1; i++) p[q].rp[i - r0] = a.row_ptr[i] - e0;                 \
        memcpy(p[q].col, a.col + e0, (e1 - e0) * sizeof(unsigned));                          \
        memcpy(p[q].val, a.val + e0, (e1 - e0) * sizeof(double));                            \
        for (long i = r0; i < r1; i++) x[0][i] = initial(i), x[1][i] = 0.0;                  \
    } while (0)
        if (mode == MODE_NONE) {
#pragma omp single
            for (long q = 0; q < parts; q++) {
#pragma omp task firstprivate(q) depend(out: x[0][p[q].r0], x[1][p[q].r0])
                INIT(q);
            }
        } else {
#pragma omp for schedule(static)
            for (long q = 0; q < parts; q++) INIT(q);
        }
#pragma omp single
        for (long k = 0; k < products; k++) {
            const double *src = x[k % 2];
            double *dst = x[(k + 1) % 2];
            for (long q = 0; q < parts; q++) {
                long r0 = p[q].r0, len = p[q].r1 - r0;
                /* A task's dependences are the first element of each slice it reads. */
#pragma omp task firstprivate(src, dst, q, r0) depend(iterator(j = first[q] : last[q] + 1), in: src[p[j].r0]) \
    depend(out: dst[r0]) AFFINITY(dst[r0:len])
                {
                    const struct part *pp = &p[q];
                    for (long i = 0; i < pp->r1 - pp->r0; i++) {
                        double sum = 0.0;
                        for (long e = pp->rp[i]; e < pp->rp[i + 1]; e++) sum += pp->val[e] * src[pp->col[e]];
                        dst[pp->r0 + i] = sum;
                    }
                }
                (void)len;
            }
        }
    }
    double wall = omp_get_wtime() - t0;

    /* The sequential reference: the same products over the whole vector. */
    double *want = malloc(n * sizeof(double)), *next = malloc(n * sizeof(double));
    for (long i = 0; i < n; i++) want[i] = initial(i);
    for (long k = 0; k < products; k++) {
        product_rows(&a, 0, n, want, next);
        double *t = want;
        want = next, next = t;
    }
    int ok = memcmp(want, x[products % 2], n * sizeof(double)) == 0;
    long tasks = parts * (products + 1);
    printf("{\"peer\": \"" PEER "\", \"bench\": \"spmv\", \"threads\": %d, \"tasks\": %ld, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s, "
           "\"params\": {\"mesh\": %ld, \"partitions\": %ld, \"products\": %ld, \"affinity\": \"%s\"}}\n",
           omp_get_max_threads(), tasks, wall, wall * 1e9 / tasks, ok ? "true" : "false", mesh, parts, products,
           mode_names[mode]);
    return ok ? 0 : 1;
usage:
    fprintf(stderr, "usage: spmv [MESH PARTITIONS PRODUCTS [none|init|strict|non-strict]] (MESH <= 65535, PARTITIONS <= MESH^2)\n");
    return 2;
}
