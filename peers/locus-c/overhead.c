/* Locus's `overhead` graph (crates/locus-bench/src/overhead.rs) over the C API:
 * `chains` chains of `length` read-write tasks on one-word data, and `rounds`
 * fan-out/fan-in rounds (a source writes a word, `fan` tasks each read it and write
 * their own word, a join reads all of them and adds their sum into a total), submitted
 * interleaved by one sequential control program, with the accesses of the Rust kernel.
 *
 * Usage: overhead CHAINS LENGTH ROUNDS FAN
 * Exit status 1 when the result does not match the sequential reference, 2 on bad
 * arguments, 3 when Locus refuses a call. */
#include "locus_peer.h"

static inline uint64_t step(uint64_t x, uint64_t k) { return x * 3 + k; }

struct graph {
    long chains, length, rounds, fan;
    locus_data *chain, *fans, source, total;
    locus_access *join; /* the join's accesses: every fan word, then the total */
};

static int32_t chain_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    (void)n;
    uint64_t *x = v[0].ptr;
    x[0] = step(x[0], (uint64_t)(uintptr_t)arg);
    return 0;
}

static int32_t source_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    (void)n;
    ((uint64_t *)v[0].ptr)[0] = (uint64_t)(uintptr_t)arg;
    return 0;
}

static int32_t fan_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    (void)n;
    ((uint64_t *)v[1].ptr)[0] = step(((const uint64_t *)v[0].ptr)[0], (uint64_t)(uintptr_t)arg);
    return 0;
}

static int32_t join_task(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    (void)arg;
    uint64_t s = 0;
    for (size_t j = 0; j + 1 < n; j++) s += ((const uint64_t *)v[j].ptr)[0];
    ((uint64_t *)v[n - 1].ptr)[0] += s;
    return 0;
}

/* The task's argument is a small integer, passed as the (borrowed) pointer itself. */
static int spawn(locus_ctx ctx, const char *name, locus_task_fn body, uint64_t k, const locus_access *acc,
                 size_t n) {
    locus_task t = {0};
    t.name = name;
    t.body = body;
    t.arg = (void *)(uintptr_t)k;
    t.accesses = acc;
    t.naccesses = n;
    return locus_spawn(ctx, &t) == LOCUS_OK ? 0 : 1;
}

static int submit_round(locus_ctx ctx, const struct graph *g, uint64_t r) {
    locus_access w = {g->source, LOCUS_WRITE, 0, 0};
    if (spawn(ctx, "source", source_task, r, &w, 1)) return 1;
    for (long k = 0; k < g->fan; k++) {
        locus_access acc[2] = {{g->source, LOCUS_READ, 0, 0}, {g->fans[k], LOCUS_WRITE, 0, 0}};
        if (spawn(ctx, "fan", fan_task, (uint64_t)k, acc, 2)) return 1;
    }
    return spawn(ctx, "join", join_task, 0, g->join, (size_t)g->fan + 1);
}

static int32_t root(locus_ctx ctx, const locus_view *views, size_t nviews, void *arg) {
    (void)views;
    (void)nviews;
    const struct graph *g = arg;
    long every = g->length / (g->rounds > 0 ? g->rounds : 1);
    if (every < 1) every = 1;
    long round = 0;
    for (long i = 0; i < g->length; i++) {
        for (long c = 0; c < g->chains; c++) {
            locus_access acc = {g->chain[c], LOCUS_READ_WRITE, 0, 0};
            if (spawn(ctx, "chain", chain_task, (uint64_t)(c * g->length + i), &acc, 1)) goto refused;
        }
        if (i % every == 0 && round < g->rounds) {
            round++;
            if (submit_round(ctx, g, (uint64_t)round)) goto refused;
        }
    }
    while (round < g->rounds) {
        round++;
        if (submit_round(ctx, g, (uint64_t)round)) goto refused;
    }
    return 0;
refused:
    fprintf(stderr, PEER ": spawn: %s\n", locus_last_error());
    return 1;
}

static int run(int argc, char **argv, int timed) {
    if (argc != 5) {
        fprintf(stderr, "usage: overhead CHAINS LENGTH ROUNDS FAN\n");
        return 2;
    }
    long v[4];
    for (int k = 0; k < 4; k++) {
        char *end;
        v[k] = strtol(argv[k + 1], &end, 10);
        if (*end != '\0' || end == argv[k + 1]) v[k] = -1;
    }
    struct graph g = {v[0], v[1], v[2], v[3], NULL, NULL, {0}, {0}, NULL};
    if (g.chains < 1 || g.length < 1 || g.rounds < 1 || g.fan < 1) {
        fprintf(stderr, "overhead: bad arguments: CHAINS LENGTH ROUNDS FAN are positive integers\n");
        return 2;
    }
    locus_runtime rt = peer_runtime();
    g.chain = calloc(g.chains, sizeof(locus_data));
    g.fans = calloc(g.fan, sizeof(locus_data));
    g.join = calloc(g.fan + 1, sizeof(locus_access));
    for (long c = 0; c < g.chains; c++) TRY(locus_data_create(rt, "chain", 8, 1, &g.chain[c]));
    TRY(locus_data_create(rt, "source", 8, 1, &g.source));
    for (long k = 0; k < g.fan; k++) {
        TRY(locus_data_create(rt, "fan", 8, 1, &g.fans[k]));
        g.join[k] = (locus_access){g.fans[k], LOCUS_READ, 0, 0};
    }
    TRY(locus_data_create(rt, "total", 8, 1, &g.total));
    g.join[g.fan] = (locus_access){g.total, LOCUS_READ_WRITE, 0, 0};

    locus_figures f = peer_run(rt, root, &g);
    if (!timed) {
        TRY(locus_runtime_destroy(rt));
        free(g.chain), free(g.fans), free(g.join);
        return 0;
    }

    int ok = 1;
    for (long c = 0; c < g.chains; c++) {
        uint64_t x = 0, got = 0;
        for (long i = 0; i < g.length; i++) x = step(x, (uint64_t)(c * g.length + i));
        TRY(locus_fetch(rt, g.chain[c], &got, 1));
        ok &= got == x;
    }
    uint64_t want = 0, total = 0;
    for (long r = 1; r <= g.rounds; r++) {
        uint64_t s = 0;
        for (long k = 0; k < g.fan; k++) s += step((uint64_t)r, (uint64_t)k);
        want += s;
    }
    TRY(locus_fetch(rt, g.total, &total, 1));
    ok &= total == want;
    long tasks = g.chains * g.length + g.rounds * (g.fan + 2);
    printf("{\"peer\": \"" PEER "\", \"bench\": \"overhead\", \"threads\": %zu, \"tasks\": %llu, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s}\n",
           peer_workers(rt), (unsigned long long)f.tasks, f.wall_s, tasks ? f.wall_s * 1e9 / tasks : 0.0,
           ok && f.tasks == (uint64_t)tasks ? "true" : "false");
    TRY(locus_runtime_destroy(rt));
    free(g.chain), free(g.fans), free(g.join);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) { return peer_main(argc, argv, run); }
