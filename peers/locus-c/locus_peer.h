/* What the locus-c peers share: the runtime they run on and how they report.
 *
 * The locus-c peers are Locus's own kernels written in C against Locus's C API
 * (crates/locus-capi/include/locus.h): the same data, the same tasks with the same
 * declared accesses (and so the same dependences, placement and metrics) as the Rust
 * kernels of crates/locus-bench, so that `locus bench --peers` shows what the C
 * binding costs. Each prints the run's wall time as Locus's report gives it (the run
 * only, as the Rust column does), the tasks, and whether its result matches its own
 * sequential reference.
 *
 * The runtime: configuration LOCUS_CONFIG (default dsa-opt), topology LOCUS_TOPOLOGY
 * (default host), LOCUS_THREADS workers (default one per CPU of the topology).
 *
 * Warm-up: the Locus column of `locus bench --peers` runs each kernel on a fresh
 * runtime in a process that has run kernels before (its allocator's heaps and the
 * kernel's pages are warm). So that the two columns differ by the binding only, each
 * program first runs its kernel once, untimed, on a runtime it then destroys, and
 * times a second run on a fresh runtime (LOCUS_C_WARMUP=0: no warm-up run). */
#ifndef LOCUS_PEER_LOCUS_C_H
#define LOCUS_PEER_LOCUS_C_H

#include <locus.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEER "locus-c"

/* A failed call: one line on stderr, exit status 3 (the runtime refused something). */
#define TRY(call)                                                                          \
    do {                                                                                   \
        locus_status s_ = (call);                                                          \
        if (s_ != LOCUS_OK) {                                                              \
            fprintf(stderr, PEER ": %s: %s: %s\n", #call, locus_status_name(s_),           \
                    locus_last_error());                                                   \
            exit(3);                                                                       \
        }                                                                                  \
    } while (0)

static inline const char *env_or(const char *name, const char *fallback) {
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

static inline locus_runtime peer_runtime(void) {
    locus_runtime rt = {0};
    locus_settings none = {0};
    size_t threads = (size_t)strtoul(env_or("LOCUS_THREADS", "0"), NULL, 10);
    TRY(locus_runtime_create(env_or("LOCUS_CONFIG", "dsa-opt"), env_or("LOCUS_TOPOLOGY", "host"),
                             threads, none, &rt));
    return rt;
}

static inline size_t peer_workers(locus_runtime rt) {
    size_t w = 0;
    TRY(locus_runtime_size(rt, &w, NULL));
    return w;
}

/* Spawns from a root or body, or fails the root. */
#define SPAWN(ctx, task)                                                                   \
    do {                                                                                   \
        if (locus_spawn((ctx), (task)) != LOCUS_OK) {                                      \
            fprintf(stderr, PEER ": spawn: %s\n", locus_last_error());                     \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

/* Runs `root` and returns the run's report figures. */
static inline locus_figures peer_run(locus_runtime rt, locus_task_fn root, void *arg) {
    locus_report rep = {0};
    TRY(locus_run(rt, root, arg, &rep));
    locus_figures f;
    TRY(locus_report_figures(rep, &f));
    TRY(locus_report_free(rep));
    return f;
}

/* Runs `run(argc, argv, timed)` once untimed (unless LOCUS_C_WARMUP=0), then timed;
 * bad arguments (status 2) stop at the first. */
static inline int peer_main(int argc, char **argv, int (*run)(int, char **, int)) {
    if (strcmp(env_or("LOCUS_C_WARMUP", "1"), "0") != 0) {
        int status = run(argc, argv, 0);
        if (status == 2) return 2;
    }
    return run(argc, argv, 1);
}

#endif
