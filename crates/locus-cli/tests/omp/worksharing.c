/* Parallel regions, barriers, single, critical, atomic, every loop schedule, sections
 * and locks on Locus's OpenMP runtime: prints "ok" and exits 0 when every check holds. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000
static int fails;
#define CHECK(c) do { if (!(c)) { printf("FAIL line %d: %s\n", __LINE__, #c); fails++; } } while (0)

static void check_loop(const char *name, int *hits) {
    for (int i = 0; i < N; i++)
        if (hits[i] != 1) { printf("FAIL %s: iteration %d ran %d times\n", name, i, hits[i]); fails++; return; }
}

int main(void) {
    int nthreads = 0, arrived = 0, after = 0, singles = 0, crit = 0;
    int ids[64] = {0};
    #pragma omp parallel
    {
        #pragma omp atomic
        arrived++;
        #pragma omp barrier
        #pragma omp master
        nthreads = omp_get_num_threads();
        #pragma omp barrier
        if (arrived != omp_get_num_threads()) {
            #pragma omp atomic
            after++;
        }
        int me = omp_get_thread_num();
        if (me >= 0 && me < 64) {
            #pragma omp atomic
            ids[me]++;
        }
        #pragma omp single
        singles++;
        for (int k = 0; k < 100; k++) {
            #pragma omp critical
            crit++;
        }
        #pragma omp critical(named)
        crit += 0;
    }
    CHECK(nthreads == omp_get_max_threads());
    CHECK(arrived == nthreads && after == 0);
    for (int t = 0; t < nthreads; t++) CHECK(ids[t] == 1);
    CHECK(singles == 1);
    CHECK(crit == 100 * nthreads);
    CHECK(omp_in_parallel() == 0 && omp_get_level() == 0);

    static int hits[N];
#define LOOP(name, sched) \
    for (int i = 0; i < N; i++) hits[i] = 0; \
    _Pragma("omp parallel") { \
        _Pragma(sched) for (int i = 0; i < N; i++) { _Pragma("omp atomic") hits[i]++; } \
    } \
    check_loop(name, hits);
    LOOP("static", "omp for schedule(static)")
    LOOP("static,7", "omp for schedule(static, 7)")
    LOOP("dynamic", "omp for schedule(dynamic)")
    LOOP("dynamic,5", "omp for schedule(dynamic, 5)")
    LOOP("monotonic dynamic", "omp for schedule(monotonic: dynamic, 3)")
    LOOP("guided", "omp for schedule(guided)")
    LOOP("guided,4", "omp for schedule(guided, 4)")
    LOOP("runtime", "omp for schedule(runtime)")
    LOOP("nowait", "omp for schedule(dynamic) nowait")

    /* Combined parallel loops, a reduction, a descending loop, unsigned long long. */
    long sum = 0;
    #pragma omp parallel for schedule(dynamic, 8) reduction(+: sum)
    for (int i = 0; i < N; i++) sum += i;
    CHECK(sum == (long)N * (N - 1) / 2);
    sum = 0;
    #pragma omp parallel for schedule(guided) reduction(+: sum)
    for (int i = N; i > 0; i -= 3) sum += i;
    long expect = 0;
    for (int i = N; i > 0; i -= 3) expect += i;
    CHECK(sum == expect);
    sum = 0;
    #pragma omp parallel for schedule(runtime) reduction(+: sum)
    for (unsigned long long u = 10; u < 10000000000ULL; u += 1000000000ULL) sum += 1;
    CHECK(sum == 10);

    /* Sections, each once. */
    int sec[4] = {0};
    #pragma omp parallel sections
    {
        #pragma omp section
        sec[0]++;
        #pragma omp section
        sec[1]++;
        #pragma omp section
        sec[2]++;
        #pragma omp section
        sec[3]++;
    }
    for (int s = 0; s < 4; s++) CHECK(sec[s] == 1);
    int sec2 = 0;
    #pragma omp parallel
    {
        #pragma omp sections reduction(+: sec2)
        {
            #pragma omp section
            sec2 += 1;
            #pragma omp section
            sec2 += 10;
        }
    }
    CHECK(sec2 == 11);

    /* single copyprivate. */
    int shared_value = 0;
    #pragma omp parallel
    {
        int v = -1;
        #pragma omp single copyprivate(v)
        v = 42;
        if (v != 42) {
            #pragma omp atomic
            shared_value++;
        }
    }
    CHECK(shared_value == 0);

    /* Locks and nest locks. */
    omp_lock_t lock;
    omp_nest_lock_t nest;
    omp_init_lock(&lock);
    omp_init_nest_lock(&nest);
    int counter = 0, nested_ok = 0;
    #pragma omp parallel
    {
        for (int k = 0; k < 200; k++) {
            omp_set_lock(&lock);
            counter++;
            omp_unset_lock(&lock);
        }
        omp_set_nest_lock(&nest);
        if (omp_test_nest_lock(&nest) == 2) nested_ok++;
        omp_unset_nest_lock(&nest);
        omp_unset_nest_lock(&nest);
    }
    CHECK(counter == 200 * nthreads);
    CHECK(nested_ok == nthreads);
    CHECK(omp_test_lock(&lock) == 1);
    omp_unset_lock(&lock);
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);

    /* A nested region is serialised: a team of one at level 2. */
    int inner = 0, level = 0;
    #pragma omp parallel
    {
        #pragma omp parallel
        {
            #pragma omp single
            { inner = omp_get_num_threads(); level = omp_get_level(); }
        }
    }
    CHECK(inner == 1 && level == 2);
    CHECK(omp_get_wtime() >= 0.0 && omp_get_wtick() > 0.0 && omp_get_num_procs() >= 1);
    void *p = omp_alloc(100, omp_default_mem_alloc);
    CHECK(p != NULL);
    omp_free(p, omp_default_mem_alloc);

    if (fails) return 1;
    printf("ok\n");
    return 0;
}
