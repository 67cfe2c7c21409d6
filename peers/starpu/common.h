/* What the StarPU peers share: argument parsing, start-up, timing and the JSON line.
 *
 * Each program registers its data per block in main memory (so a task's buffers point
 * into the program's own arrays), submits one task per block with the access modes of
 * the OpenMP peer's `depend` clauses (`STARPU_RW` where a block's old value is needed,
 * `STARPU_R`/`STARPU_W` otherwise) and lets StarPU's sequential consistency derive the
 * dependences. CPU workers only: the number comes from `STARPU_NCPU` (StarPU's own
 * variable), all CPUs when unset. */
#ifndef LOCUS_PEER_STARPU_COMMON_H
#define LOCUS_PEER_STARPU_COMMON_H

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses `argv[1..]` as exactly `count` integers into `out`; 1 when `argc` is 1 (keep
 * the defaults) or every argument is an integer, 0 otherwise. */
static int parse_longs(int argc, char **argv, long *const *out, int count) {
    if (argc == 1) return 1;
    if (argc != count + 1) return 0;
    for (int k = 0; k < count; k++) {
        char *end;
        *out[k] = strtol(argv[k + 1], &end, 10);
        if (*end != '\0' || end == argv[k + 1]) return 0;
    }
    return 1;
}

/* Starts StarPU with CPU workers only; exits with status 3 when it cannot. */
static void start_starpu(void) {
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    conf.ncuda = 0;
    conf.nopencl = 0;
    conf.nmic = 0;
    int err = starpu_init(&conf);
    if (err != 0) {
        fprintf(stderr, "starpu_init failed: %s\n", strerror(-err));
        exit(3);
    }
}

/* Seconds on StarPU's clock. */
static double now_s(void) { return starpu_timing_now() * 1e-6; }

/* Prints the one JSON line every peer prints; `threads` is the number of CPU workers
 * and `params` a JSON object. */
static void print_result(const char *bench, unsigned threads, long tasks, double wall, int ok, const char *params) {
    printf("{\"peer\": \"starpu\", \"bench\": \"%s\", \"threads\": %u, \"tasks\": %ld, \"wall_s\": %.6f, "
           "\"ns_per_task\": %.1f, \"verified\": %s, \"params\": %s}\n",
           bench, threads, tasks, wall, tasks ? wall * 1e9 / tasks : 0.0,
           ok ? "true" : "false", params);
}

/* Submits a task or exits with status 3: a failed submission is a broken run. */
#define SUBMIT(...)                                                                      \
    do {                                                                                 \
        int err_ = starpu_task_insert(__VA_ARGS__, 0);                                   \
        if (err_ != 0) {                                                                 \
            fprintf(stderr, "starpu_task_insert failed: %s\n", strerror(-err_));        \
            exit(3);                                                                     \
        }                                                                                \
    } while (0)

#endif
