/*
 * jacobi-2d over Locus's C API: a ROWS x COLS grid of doubles in horizontal strips of
 * BLOCK_ROWS rows, one datum per strip and per buffer (two grids, swapped every
 * iteration); one task per strip and iteration reads its strip whole and only the
 * edge rows of its neighbours (read ranges), and writes its strip of the other grid.
 * Locus renames every write, places each strip where its writer runs, and orders the
 * tasks by their declared accesses. The result is checked bit for bit against a
 * sequential sweep.
 *
 *     jacobi_2d [ROWS COLS BLOCK_ROWS ITERATIONS [CONFIG [TOPOLOGY]]]
 *
 * Build: cc -O2 -ffp-contract=off jacobi_2d.c $(pkg-config --cflags --libs locus)
 */
#include <locus.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(call)                                                                  \
    do {                                                                           \
        locus_status s_ = (call);                                                  \
        if (s_ != LOCUS_OK) {                                                      \
            fprintf(stderr, "%s: %s: %s\n", #call, locus_status_name(s_),          \
                    locus_last_error());                                           \
            exit(3);                                                               \
        }                                                                          \
    } while (0)

static double initial(long i) { return (double)((i * 7919) % 1000) / 1000.0; }

/* One Jacobi step of `rows` rows of `cols` points: `c` the rows, `north` the row above
 * them and `south` the row below (NULL at the grid's edge: a neighbour outside the grid
 * is the point itself); the result goes to `d`. */
static void step(const double *c, const double *north, const double *south, double *d,
                 long rows, long cols) {
    for (long i = 0; i < rows; i++) {
        const double *row = c + i * cols;
        const double *n = i > 0 ? row - cols : north ? north : row;
        const double *s = i + 1 < rows ? row + cols : south ? south : row;
        for (long x = 0; x < cols; x++) {
            double w = x > 0 ? row[x - 1] : row[x];
            double e = x + 1 < cols ? row[x + 1] : row[x];
            d[i * cols + x] = (n[x] + row[x] + s[x] + w + e) / 5.0;
        }
    }
}

typedef struct {
    long rows, cols;
    int has_north, has_south;
} strip_arg;

/* views: [0] this strip (read), [1] north edge row (read, if any), [2] south edge row
 * (read, if any), then the strip written. */
static int32_t strip_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    const strip_arg *a = arg;
    size_t k = 1;
    const double *north = a->has_north ? v[k++].ptr : NULL;
    const double *south = a->has_south ? v[k++].ptr : NULL;
    if (k + 1 != n || v[0].count != (size_t)(a->rows * a->cols)) return 1;
    step(v[0].ptr, north, south, v[k].ptr, a->rows, a->cols);
    return 0;
}

typedef struct {
    long rows, cols, block_rows, iterations;
    locus_data *grid[2];
} program;

/* The control program: every task of every iteration, in order. */
static int32_t root(locus_ctx ctx, const locus_view *views, size_t nviews, void *arg) {
    (void)views;
    (void)nviews;
    const program *p = arg;
    long blocks = p->rows / p->block_rows;
    long cols = p->cols;
    for (long t = 0; t < p->iterations; t++) {
        locus_data *src = p->grid[t % 2], *dst = p->grid[(t + 1) % 2];
        for (long b = 0; b < blocks; b++) {
            locus_access acc[4];
            size_t n = 0;
            strip_arg a = {p->block_rows, cols, b > 0, b + 1 < blocks};
            acc[n++] = (locus_access){src[b], LOCUS_READ, 0, 0};
            if (a.has_north) /* the last row of the strip above */
                acc[n++] = (locus_access){src[b - 1], LOCUS_READ,
                                          (size_t)((p->block_rows - 1) * cols),
                                          (size_t)(p->block_rows * cols)};
            if (a.has_south) /* the first row of the strip below */
                acc[n++] = (locus_access){src[b + 1], LOCUS_READ, 0, (size_t)cols};
            acc[n++] = (locus_access){dst[b], LOCUS_WRITE, 0, 0};
            locus_task task = {0};
            task.name = "jacobi-strip";
            task.body = strip_task;
            task.arg = &a;
            task.arg_size = sizeof a;
            task.accesses = acc;
            task.naccesses = n;
            if (locus_spawn(ctx, &task) != LOCUS_OK) {
                fprintf(stderr, "spawn: %s\n", locus_last_error());
                return 1;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    long rows = 256, cols = 256, block_rows = 32, iterations = 10;
    const char *config = "dsa-opt", *topology = "2x1";
    if (argc >= 5) {
        rows = atol(argv[1]);
        cols = atol(argv[2]);
        block_rows = atol(argv[3]);
        iterations = atol(argv[4]);
    }
    if (argc >= 6) config = argv[5];
    if (argc >= 7) topology = argv[6];
    if (rows <= 0 || cols <= 0 || block_rows <= 0 || iterations < 0 || rows % block_rows) {
        fprintf(stderr, "jacobi_2d: ROWS must be a positive multiple of BLOCK_ROWS\n");
        return 2;
    }
    long blocks = rows / block_rows, len = rows * cols, strip = block_rows * cols;
    double *grid = malloc(sizeof(double) * len), *next = malloc(sizeof(double) * len);
    for (long i = 0; i < len; i++) grid[i] = initial(i);

    locus_runtime rt = {0};
    locus_settings none = {0};
    TRY(locus_runtime_create(config, topology, 0, none, &rt));
    locus_data *a = calloc(blocks, sizeof *a), *b = calloc(blocks, sizeof *b);
    for (long k = 0; k < blocks; k++) {
        TRY(locus_data_from(rt, "grid", sizeof(double), strip, grid + k * strip, &a[k]));
        TRY(locus_data_create(rt, "next", sizeof(double), strip, &b[k]));
    }
    program p = {rows, cols, block_rows, iterations, {a, b}};
    locus_report report = {0};
    TRY(locus_run(rt, root, &p, &report));
    locus_figures f;
    TRY(locus_report_figures(report, &f));

    /* The sequential reference, then the comparison. */
    for (long t = 0; t < iterations; t++) {
        step(grid, NULL, NULL, next, rows, cols);
        double *tmp = grid;
        grid = next;
        next = tmp;
    }
    locus_data *result = p.grid[iterations % 2];
    int verified = 1;
    for (long k = 0; k < blocks; k++) {
        TRY(locus_fetch(rt, result[k], next + k * strip, strip));
        verified &= memcmp(next + k * strip, grid + k * strip, sizeof(double) * strip) == 0;
    }
    printf("{\"example\": \"jacobi-2d\", \"config\": \"%s\", \"tasks\": %llu, \"wall_s\": %.6f, "
           "\"r_loc_rt\": %.3f, \"verified\": %s}\n",
           config, (unsigned long long)f.tasks, f.wall_s, f.r_loc_rt,
           verified ? "true" : "false");

    TRY(locus_report_free(report));
    for (long k = 0; k < blocks; k++) {
        TRY(locus_data_free(a[k]));
        TRY(locus_data_free(b[k]));
    }
    TRY(locus_runtime_destroy(rt));
    free(a);
    free(b);
    free(grid);
    free(next);
    return verified ? 0 : 1;
}
