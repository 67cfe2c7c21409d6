/*
 * Tiled Cholesky factorisation over Locus's C API, one datum per tile: an N x N
 * symmetric positive definite matrix in T x T tiles of NB x NB doubles, factorised in
 * place into its lower factor L (A = L L^T) by the classic right-looking tile
 * algorithm, one task per tile kernel:
 *
 *   for k:  POTRF(A[k][k])
 *           for i > k:        TRSM(A[k][k] -> A[i][k])
 *           for i > k:        SYRK(A[i][k] -> A[i][i])
 *           for k < j < i:    GEMM(A[i][k], A[j][k] -> A[i][j])
 *
 * Each task reads the tiles it needs and read-writes the one it updates; Locus derives
 * the dependences from those declarations. The result is checked bit for bit against
 * the same tile algorithm run sequentially, and the factor against A (the largest
 * element of L L^T - A, relative to A's).
 *
 *     cholesky [TILES TILE_SIZE [CONFIG [TOPOLOGY]]]
 *
 * Build: cc -O2 -ffp-contract=off cholesky.c $(pkg-config --cflags --libs locus) -lm
 */
#include <locus.h>

#include <math.h>
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

/* Tile kernels on row-major nb x nb tiles. */

/* a := its lower Cholesky factor (the upper part is zeroed). */
static void potrf(double *a, long nb) {
    for (long j = 0; j < nb; j++) {
        double s = a[j * nb + j];
        for (long k = 0; k < j; k++) s -= a[j * nb + k] * a[j * nb + k];
        a[j * nb + j] = sqrt(s);
        for (long i = j + 1; i < nb; i++) {
            double t = a[i * nb + j];
            for (long k = 0; k < j; k++) t -= a[i * nb + k] * a[j * nb + k];
            a[i * nb + j] = t / a[j * nb + j];
            a[j * nb + i] = 0.0;
        }
    }
}

/* b := b L^-T, for the lower factor l. */
static void trsm(const double *l, double *b, long nb) {
    for (long r = 0; r < nb; r++)
        for (long j = 0; j < nb; j++) {
            double t = b[r * nb + j];
            for (long k = 0; k < j; k++) t -= b[r * nb + k] * l[j * nb + k];
            b[r * nb + j] = t / l[j * nb + j];
        }
}

/* c := c - a b^T (SYRK when a is b). */
static void gemm(const double *a, const double *b, double *c, long nb) {
    for (long i = 0; i < nb; i++)
        for (long j = 0; j < nb; j++) {
            double t = c[i * nb + j];
            for (long k = 0; k < nb; k++) t -= a[i * nb + k] * b[j * nb + k];
            c[i * nb + j] = t;
        }
}

enum kernel { POTRF, TRSM, SYRK, GEMM };
static const char *NAMES[] = {"potrf", "trsm", "syrk", "gemm"};

typedef struct {
    enum kernel kernel;
    long nb;
} tile_arg;

/* views: the tiles read, then the tile updated (read-write), in the order below. */
static int32_t tile_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    const tile_arg *a = arg;
    switch (a->kernel) {
    case POTRF: potrf(v[0].ptr, a->nb); break;
    case TRSM: trsm(v[0].ptr, v[1].ptr, a->nb); break;
    case SYRK: gemm(v[0].ptr, v[0].ptr, v[1].ptr, a->nb); break;
    case GEMM: gemm(v[0].ptr, v[1].ptr, v[2].ptr, a->nb); break;
    }
    return n >= 1 ? 0 : 1;
}

typedef struct {
    long tiles, nb;
    locus_data *tile; /* tiles x tiles, only the lower triangle used */
} program;

static int spawn(locus_ctx ctx, enum kernel k, long nb, locus_data *reads, size_t nreads,
                 locus_data update) {
    locus_access acc[3];
    for (size_t i = 0; i < nreads; i++) acc[i] = (locus_access){reads[i], LOCUS_READ, 0, 0};
    acc[nreads] = (locus_access){update, LOCUS_READ_WRITE, 0, 0};
    tile_arg a = {k, nb};
    locus_task t = {0};
    t.name = NAMES[k];
    t.body = tile_task;
    t.arg = &a;
    t.arg_size = sizeof a;
    t.accesses = acc;
    t.naccesses = nreads + 1;
    t.cost_ns = (uint64_t)(nb * nb * nb); /* the order of the kernels' flops */
    if (locus_spawn(ctx, &t) != LOCUS_OK) {
        fprintf(stderr, "spawn %s: %s\n", NAMES[k], locus_last_error());
        return 1;
    }
    return 0;
}

static int32_t root(locus_ctx ctx, const locus_view *views, size_t nviews, void *arg) {
    (void)views;
    (void)nviews;
    const program *p = arg;
    long T = p->tiles, nb = p->nb;
#define TILE(i, j) p->tile[(i) * T + (j)]
    for (long k = 0; k < T; k++) {
        if (spawn(ctx, POTRF, nb, NULL, 0, TILE(k, k))) return 1;
        for (long i = k + 1; i < T; i++)
            if (spawn(ctx, TRSM, nb, &TILE(k, k), 1, TILE(i, k))) return 1;
        for (long i = k + 1; i < T; i++) {
            if (spawn(ctx, SYRK, nb, &TILE(i, k), 1, TILE(i, i))) return 1;
            for (long j = k + 1; j < i; j++) {
                locus_data reads[2] = {TILE(i, k), TILE(j, k)};
                if (spawn(ctx, GEMM, nb, reads, 2, TILE(i, j))) return 1;
            }
        }
    }
#undef TILE
    return 0;
}

/* The matrix: symmetric, diagonally dominant, so positive definite. */
static double element(long i, long j, long n) {
    return 1.0 / (1.0 + (double)labs(i - j)) + (i == j ? (double)n : 0.0);
}

int main(int argc, char **argv) {
    long T = 6, nb = 32;
    const char *config = "dsa-opt", *topology = "2x1";
    if (argc >= 3) {
        T = atol(argv[1]);
        nb = atol(argv[2]);
    }
    if (argc >= 4) config = argv[3];
    if (argc >= 5) topology = argv[4];
    if (T <= 0 || nb <= 0) {
        fprintf(stderr, "cholesky: TILES and TILE_SIZE must be positive\n");
        return 2;
    }
    long n = T * nb, tlen = nb * nb;
    /* tiles[i * T + j]: tile (i, j), row-major inside. */
    double *tiles = malloc(sizeof(double) * n * n);
    for (long ti = 0; ti < T; ti++)
        for (long tj = 0; tj < T; tj++)
            for (long r = 0; r < nb; r++)
                for (long c = 0; c < nb; c++)
                    tiles[(ti * T + tj) * tlen + r * nb + c] = element(ti * nb + r, tj * nb + c, n);
    double *orig = malloc(sizeof(double) * n * n);
    memcpy(orig, tiles, sizeof(double) * n * n);

    locus_runtime rt = {0};
    locus_settings none = {0};
    TRY(locus_runtime_create(config, topology, 0, none, &rt));
    locus_data *d = calloc(T * T, sizeof *d);
    for (long i = 0; i < T; i++)
        for (long j = 0; j <= i; j++)
            TRY(locus_data_from(rt, "tile", sizeof(double), tlen, tiles + (i * T + j) * tlen,
                                &d[i * T + j]));
    program p = {T, nb, d};
    locus_report report = {0};
    TRY(locus_run(rt, root, &p, &report));
    locus_figures f;
    TRY(locus_report_figures(report, &f));

    /* The sequential tile algorithm, in the same order. */
    for (long k = 0; k < T; k++) {
        double *kk = tiles + (k * T + k) * tlen;
        potrf(kk, nb);
        for (long i = k + 1; i < T; i++) trsm(kk, tiles + (i * T + k) * tlen, nb);
        for (long i = k + 1; i < T; i++) {
            double *ik = tiles + (i * T + k) * tlen;
            gemm(ik, ik, tiles + (i * T + i) * tlen, nb);
            for (long j = k + 1; j < i; j++)
                gemm(ik, tiles + (j * T + k) * tlen, tiles + (i * T + j) * tlen, nb);
        }
    }
    int verified = 1;
    double *got = malloc(sizeof(double) * tlen);
    for (long i = 0; i < T; i++)
        for (long j = 0; j <= i; j++) {
            TRY(locus_fetch(rt, d[i * T + j], got, tlen));
            verified &= memcmp(got, tiles + (i * T + j) * tlen, sizeof(double) * tlen) == 0;
        }
    /* L L^T against A. */
    double worst = 0, scale = 0;
#define L(r, c) ((r) / nb >= (c) / nb ? tiles[((r) / nb * T + (c) / nb) * tlen + (r) % nb * nb + (c) % nb] : 0.0)
    for (long r = 0; r < n; r++)
        for (long c = 0; c <= r; c++) {
            double s = 0;
            for (long k = 0; k <= c; k++) s += L(r, k) * L(c, k);
            double a = orig[(r / nb * T + c / nb) * tlen + r % nb * nb + c % nb];
            worst = fmax(worst, fabs(s - a));
            scale = fmax(scale, fabs(a));
        }
#undef L
    verified &= worst <= 1e-12 * scale;
    printf("{\"example\": \"cholesky\", \"config\": \"%s\", \"tasks\": %llu, \"wall_s\": %.6f, "
           "\"r_loc_rt\": %.3f, \"residual\": %.3g, \"verified\": %s}\n",
           config, (unsigned long long)f.tasks, f.wall_s, f.r_loc_rt, worst / scale,
           verified ? "true" : "false");

    TRY(locus_report_free(report));
    for (long i = 0; i < T; i++)
        for (long j = 0; j <= i; j++) TRY(locus_data_free(d[i * T + j]));
    TRY(locus_runtime_destroy(rt));
    free(d);
    free(got);
    free(tiles);
    free(orig);
    return verified ? 0 : 1;
}
