/* The `overhead` graph of Locus (crates/locus-bench/src/overhead.rs) as OpenMP tasks
 * with `depend` clauses: `chains` chains of `length` inout tasks on one word each, and
 * `rounds` fan-out/fan-in rounds of width `fan` on one source word, `fan` words and a
 * total, submitted interleaved by one sequential control program.
 *
 * Usage: overhead CHAINS LENGTH ROUNDS FAN
 * Prints one JSON object: tasks, wall_s, ns_per_task, verified. Exit status 1 when the
 * result does not match the sequential reference. */
#include "peer.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t step(uint64_t x, uint64_t k) { return x * 3 + k; }

#define MAX_FAN 1024

int main(int argc, char **argv) {
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
    long chains = v[0], length = v[1], rounds = v[2], fan = v[3];
    if (chains < 0 || length < 0 || rounds < 0 || fan < 1 || fan > MAX_FAN) {
        fprintf(stderr, "overhead: bad arguments: CHAINS LENGTH ROUNDS FAN are non-negative integers, FAN in 1..%d\n", MAX_FAN);
        return 2;
    }
    /* One word per cache line, as Locus gives each datum its own block. */
    typedef struct { uint64_t v; char pad[56]; } word;
    word *chain = calloc(chains ? chains : 1, sizeof(word));
    word *fans = calloc(fan, sizeof(word));
    word source = {0}, total = {0};

    long every = rounds ? length / rounds : 1;
    if (every < 1) every = 1;
    double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    {
        long round = 0;
#define SUBMIT_ROUND(R)                                                              \
    do {                                                                             \
        uint64_t r_ = (R);                                                           \
        _Pragma("omp task depend(out: source) firstprivate(r_)") source.v = r_;     \
        for (long k = 0; k < fan; k++) {                                             \
            _Pragma("omp task depend(in: source) depend(out: fans[k]) firstprivate(k)") \
            fans[k].v = step(source.v, (uint64_t)k);                                 \
        }                                                                            \
        _Pragma("omp task depend(iterator(j = 0:fan), in: fans[j]) depend(inout: total)") \
        {                                                                            \
            uint64_t s = 0;                                                          \
            for (long j = 0; j < fan; j++) s += fans[j].v;                           \
            total.v += s;                                                            \
        }                                                                            \
    } while (0)
        for (long i = 0; i < length; i++) {
            for (long c = 0; c < chains; c++) {
                uint64_t k = (uint64_t)(c * length + i);
#pragma omp task depend(inout: chain[c]) firstprivate(c, k)
                chain[c].v = step(chain[c].v, k);
            }
            if (i % every == 0 && round < rounds) {
                round++;
                SUBMIT_ROUND((uint64_t)round);
            }
        }
        while (round < rounds) {
            round++;
            SUBMIT_ROUND((uint64_t)round);
        }
    }
    double wall = omp_get_wtime() - t0;

    int ok = 1;
    for (long c = 0; c < chains; c++) {
        uint64_t x = 0;
        for (long i = 0; i < length; i++) x = step(x, (uint64_t)(c * length + i));
        ok &= chain[c].v == x;
    }
    uint64_t want = 0;
    for (long r = 1; r <= rounds; r++) {
        uint64_t s = 0;
        for (long k = 0; k < fan; k++) s += step((uint64_t)r, (uint64_t)k);
        want += s;
    }
    ok &= total.v == want;
    long tasks = chains * length + rounds * (fan + 2);
    printf("{\"peer\": \"" PEER "\", \"bench\": \"overhead\", \"threads\": %d, \"tasks\": %ld, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s}\n",
           omp_get_max_threads(), tasks, wall, tasks ? wall * 1e9 / tasks : 0.0, ok ? "true" : "false");
    free(chain);
    free(fans);
    return ok ? 0 : 1;
}
