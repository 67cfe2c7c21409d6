/* The `overhead` graph of Locus (crates/locus-bench/src/overhead.rs) with StarPU: one
 * variable handle per word. `chains` chains of `length` tasks updating their word
 * (`STARPU_RW`), and `rounds` fan-out/fan-in rounds of width `fan`: a source task writes
 * a word (`STARPU_W`), `fan` tasks each read it (`STARPU_R`) and write their own word
 * (`STARPU_W`), and a join reads them all and adds them to a total (`STARPU_RW`);
 * submitted interleaved in the order of Locus's sequential control program.
 *
 * Usage: overhead CHAINS LENGTH ROUNDS FAN
 * Prints one JSON object: tasks, wall_s, ns_per_task, verified. Exit status 1 when the
 * result does not match the sequential reference, 2 on bad arguments, 3 when StarPU
 * fails. */
#include <stdint.h>

#include "common.h"

static inline uint64_t step(uint64_t x, uint64_t k) { return x * 3 + k; }

/* One word per cache line, as Locus gives each datum its own block. */
typedef struct {
    uint64_t v;
    char pad[56];
} word;

/* Buffer: the chain's word (RW); argument: the step's constant. */
static void chain_cpu(void *buffers[], void *cl_arg) {
    uint64_t k;
    starpu_codelet_unpack_args(cl_arg, &k);
    uint64_t *x = (uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[0]);
    *x = step(*x, k);
}

/* Buffer: the source (W); argument: the round. */
static void source_cpu(void *buffers[], void *cl_arg) {
    uint64_t r;
    starpu_codelet_unpack_args(cl_arg, &r);
    *(uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[0]) = r;
}

/* Buffers: the source (R), the fan's word (W); argument: its index. */
static void fan_cpu(void *buffers[], void *cl_arg) {
    uint64_t k;
    starpu_codelet_unpack_args(cl_arg, &k);
    *(uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[1]) = step(*(const uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[0]), k);
}

/* Buffers: the total (RW), then the fan's words (R). */
static void join_cpu(void *buffers[], void *cl_arg) {
    (void)cl_arg;
    int n = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
    uint64_t s = 0;
    for (int j = 1; j < n; j++) s += *(const uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[j]);
    *(uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[0]) += s;
}

static struct starpu_codelet chain_cl = {.cpu_funcs = {chain_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "chain"};
static struct starpu_codelet source_cl = {
    .cpu_funcs = {source_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "source"};
static struct starpu_codelet fan_cl = {
    .cpu_funcs = {fan_cpu}, .nbuffers = 2, .modes = {STARPU_R, STARPU_W}, .name = "fan"};
static struct starpu_codelet join_cl = {.cpu_funcs = {join_cpu}, .nbuffers = STARPU_VARIABLE_NBUFFERS, .name = "join"};

/* One fan-out/fan-in round: the source, `fan` readers, the join (`join` holds the
 * total and the fan's words). */
static void submit_round(uint64_t r, starpu_data_handle_t source, const starpu_data_handle_t *fans, long fan,
                         struct starpu_data_descr *join) {
    SUBMIT(&source_cl, STARPU_W, source, STARPU_VALUE, &r, sizeof(r));
    for (long k = 0; k < fan; k++) {
        uint64_t kk = (uint64_t)k;
        SUBMIT(&fan_cl, STARPU_R, source, STARPU_W, fans[k], STARPU_VALUE, &kk, sizeof(kk));
    }
    SUBMIT(&join_cl, STARPU_DATA_MODE_ARRAY, join, (int)(fan + 1));
}

int main(int argc, char **argv) {
    long chains = 0, length = 0, rounds = 0, fan = 0;
    long *const f[4] = {&chains, &length, &rounds, &fan};
    if (argc != 5 || !parse_longs(argc, argv, f, 4) || chains < 0 || length < 0 || rounds < 0 || fan < 1) {
        fprintf(stderr, "usage: overhead CHAINS LENGTH ROUNDS FAN (FAN at least 1)\n");
        return 2;
    }
    word *chain = calloc(chains ? chains : 1, sizeof(word)), *fans = calloc(fan, sizeof(word));
    word source = {0}, total = {0};
    starpu_data_handle_t *hc = malloc((chains ? chains : 1) * sizeof(starpu_data_handle_t)),
                         *hf = malloc(fan * sizeof(starpu_data_handle_t)), hs, ht;
    struct starpu_data_descr *join = malloc((fan + 1) * sizeof(struct starpu_data_descr));
    start_starpu();

    long every = rounds ? length / rounds : 1;
    if (every < 1) every = 1;
    double t0 = now_s();
    for (long c = 0; c < chains; c++)
        starpu_variable_data_register(&hc[c], STARPU_MAIN_RAM, (uintptr_t)&chain[c].v, sizeof(uint64_t));
    for (long k = 0; k < fan; k++)
        starpu_variable_data_register(&hf[k], STARPU_MAIN_RAM, (uintptr_t)&fans[k].v, sizeof(uint64_t));
    starpu_variable_data_register(&hs, STARPU_MAIN_RAM, (uintptr_t)&source.v, sizeof(uint64_t));
    starpu_variable_data_register(&ht, STARPU_MAIN_RAM, (uintptr_t)&total.v, sizeof(uint64_t));
    join[0].handle = ht;
    join[0].mode = STARPU_RW;
    for (long k = 0; k < fan; k++) join[k + 1].handle = hf[k], join[k + 1].mode = STARPU_R;
    long round = 0;
    for (long i = 0; i < length; i++) {
        for (long c = 0; c < chains; c++) {
            uint64_t k = (uint64_t)(c * length + i);
            SUBMIT(&chain_cl, STARPU_RW, hc[c], STARPU_VALUE, &k, sizeof(k));
        }
        if (i % every == 0 && round < rounds) submit_round((uint64_t)++round, hs, hf, fan, join);
    }
    while (round < rounds) submit_round((uint64_t)++round, hs, hf, fan, join);
    starpu_task_wait_for_all();
    for (long c = 0; c < chains; c++) starpu_data_unregister(hc[c]);
    for (long k = 0; k < fan; k++) starpu_data_unregister(hf[k]);
    starpu_data_unregister(hs);
    starpu_data_unregister(ht);
    double wall = now_s() - t0;
    unsigned threads = starpu_cpu_worker_get_count();
    starpu_shutdown();

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
    char params[160];
    snprintf(params, sizeof params, "{\"chains\": %ld, \"length\": %ld, \"rounds\": %ld, \"fan\": %ld}", chains,
             length, rounds, fan);
    print_result("overhead", threads, tasks, wall, ok, params);
    free(chain), free(fans), free(hc), free(hf), free(join);
    return ok ? 0 : 1;
}
