/*
 * locus.h in ISO C90: a program written to -std=c89 -pedantic (declarations first,
 * no line comments) that runs one task and checks its result. scripts/capi-ci.sh
 * builds it with -Werror against the shared and the static library.
 */
#include <locus.h>

#include <stdio.h>

static int32_t twice(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    const double *in = (const double *)v[0].ptr;
    double *out = (double *)v[1].ptr;
    size_t i;
    (void)ctx;
    (void)n;
    (void)arg;
    for (i = 0; i < v[0].count; i++) out[i] = 2 * in[i];
    return 0;
}

typedef struct {
    locus_data x, y;
} pair;

static int32_t root(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    pair *p = (pair *)arg;
    locus_access acc[2];
    locus_task t = {0};
    (void)v;
    (void)n;
    acc[0].data = p->x;
    acc[0].mode = LOCUS_READ;
    acc[0].start = 0;
    acc[0].end = 0;
    acc[1].data = p->y;
    acc[1].mode = LOCUS_WRITE;
    acc[1].start = 0;
    acc[1].end = 0;
    t.name = "twice";
    t.body = twice;
    t.accesses = acc;
    t.naccesses = 2;
    return locus_spawn(ctx, &t) == LOCUS_OK ? 0 : 1;
}

int main(void) {
    double values[4] = {1, 2, 3, 4}, back[4];
    locus_settings none = {0};
    locus_runtime rt = {0};
    pair p = {{0}, {0}};
    size_t live = 1;
    if (locus_runtime_create("dsa-opt", "1x2", 0, none, &rt) != LOCUS_OK ||
        locus_data_from(rt, "x", sizeof(double), 4, values, &p.x) != LOCUS_OK ||
        locus_data_create(rt, "y", sizeof(double), 4, &p.y) != LOCUS_OK ||
        locus_run(rt, root, &p, NULL) != LOCUS_OK ||
        locus_fetch(rt, p.y, back, 4) != LOCUS_OK) {
        fprintf(stderr, "c89: %s\n", locus_last_error());
        return 1;
    }
    if (back[0] != 2 || back[3] != 8) {
        fprintf(stderr, "c89: got %g and %g, expected 2 and 8\n", back[0], back[3]);
        return 1;
    }
    if (locus_runtime_destroy(rt) != LOCUS_OK || locus_live_handles(&live) != LOCUS_OK ||
        live != 0) {
        fprintf(stderr, "c89: %lu handles left\n", (unsigned long)live);
        return 1;
    }
    printf("c89: twice(1 2 3 4) = 2 4 6 8\n");
    return 0;
}
