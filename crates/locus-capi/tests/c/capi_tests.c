/*
 * The C API's test suite: every function's errors (null, freed and made-up handles,
 * handles of another runtime, bad modes, bad sizes, contexts used out of their body)
 * and its behaviour (runs, views, ranges, nested tasks, arguments and their
 * destructors, reports, the memory API on virtual nodes, teams and attached data).
 * One program, one test per name:
 *
 *     capi_tests NAME    runs one test (as ctest does)
 *     capi_tests         runs them all
 *
 * It ends with "N passed, N failed" and exits 1 on a failure. Every test frees what it
 * made, so that LeakSanitizer can check the library too.
 */
#include <locus.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                              \
        }                                                                            \
    } while (0)

/* A call returns `want`, and on failure the error text `text` (evaluated after the
 * call) contains `needle`. */
#define EXPECT_TEXT(call, want, needle, text)                                          \
    do {                                                                               \
        locus_status got_ = (call);                                                    \
        const char *text_ = (text);                                                    \
        if (got_ != (want)) {                                                          \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (error: %s)\n",        \
                    __FILE__, __LINE__, #call, locus_status_name(got_),                \
                    locus_status_name(want), text_);                                   \
            failures++;                                                                \
        } else if ((want) != LOCUS_OK && !strstr(text_, (needle))) {                   \
            fprintf(stderr, "%s:%d: %s: error \"%s\" does not name \"%s\"\n", __FILE__, \
                    __LINE__, #call, text_, (needle));                                 \
            failures++;                                                                \
        }                                                                              \
    } while (0)

/* The same, with this thread's last error. */
#define EXPECT(call, want, needle) EXPECT_TEXT(call, want, needle, locus_last_error())

/* The same for a spawn made by a run's root, on a worker thread: its message is the
 * one the root copied from that thread's last error. */
#define EXPECT_SPAWN(call, want, needle) EXPECT_TEXT(call, want, needle, spawn_message)

#define OK(call) EXPECT(call, LOCUS_OK, "")

static const locus_settings NO_SETTINGS = {0};

static locus_runtime make_runtime(const char *config) {
    locus_runtime rt = {0};
    OK(locus_runtime_create(config, "2x1", 2, NO_SETTINGS, &rt));
    return rt;
}

/* Bodies and roots used by the tests. */

typedef struct {
    locus_status status; /* what the root's call returned */
    const locus_task *task; /* the task the root spawns, if any */
    locus_ctx saved;        /* a context kept past its body */
} root_state;

static char spawn_message[1024];

static int32_t spawn_one(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    root_state *st = arg;
    st->saved = ctx;
    st->status = locus_spawn(ctx, st->task);
    /* The last error is per thread: the root runs on worker 0, not on main's thread. */
    snprintf(spawn_message, sizeof spawn_message, "%s", locus_last_error());
    return 0;
}

static int32_t fill_index(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)arg;
    for (size_t v = 0; v < n; v++) {
        if (views[v].mode == LOCUS_WRITE) {
            double *x = views[v].ptr;
            for (size_t i = 0; i < views[v].count; i++) x[i] = (double)i;
        }
    }
    return 0;
}

static int32_t noop(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)views;
    (void)n;
    (void)arg;
    return 0;
}

/* A run whose root's spawn of task `task` was refused failed, naming the task, the
 * status and the reason (the main thread's last error is locus_run's). */
#define REFUSED_RUN(run, task, status, needle)                                           \
    do {                                                                               \
        CHECK((run) == LOCUS_E_RUN_FAILED);                                            \
        CHECK(strstr(locus_last_error(), "locus_spawn of task `" task "` was refused")); \
        CHECK(strstr(locus_last_error(), status));                                     \
        CHECK(strstr(locus_last_error(), needle));                                     \
    } while (0)

/* Spawns `task` from a run's root and returns what locus_spawn said. */
static locus_status spawn_in_run(locus_runtime rt, const locus_task *task, locus_status *run) {
    root_state st = {LOCUS_E_INTERNAL, task, {0}};
    locus_status r = locus_run(rt, spawn_one, &st, NULL);
    if (run) *run = r;
    return st.status;
}

/* ---- status, version, settings ---- */

static void test_status_and_version(void) {
    CHECK(strcmp(locus_status_name(LOCUS_E_HANDLE), "LOCUS_E_HANDLE") == 0);
    CHECK(strcmp(locus_status_name(99), "LOCUS_E_UNKNOWN") == 0);
    CHECK(strlen(locus_version()) > 0);
    CHECK(locus_last_error() != NULL);
}

static void test_settings_errors(void) {
    locus_settings s = {0};
    EXPECT(locus_settings_create(NULL), LOCUS_E_NULL, "out");
    OK(locus_settings_create(&s));
    EXPECT(locus_settings_set(s, "windw", "4"), LOCUS_E_ARGUMENT, "windw");
    EXPECT(locus_settings_set(s, "window", "many"), LOCUS_E_ARGUMENT, "many");
    EXPECT(locus_settings_set(s, "allocation", "later"), LOCUS_E_ARGUMENT, "later");
    EXPECT(locus_settings_set(s, "shared_placement", "bind:x"), LOCUS_E_ARGUMENT, "bind:x");
    EXPECT(locus_settings_set(s, "push_weights", "1"), LOCUS_E_ARGUMENT, "push_weights");
    EXPECT(locus_settings_set(s, "steal_half", "maybe"), LOCUS_E_ARGUMENT, "maybe");
    EXPECT(locus_settings_set(s, "huge_pages", "sometimes"), LOCUS_E_ARGUMENT, "sometimes");
    EXPECT(locus_settings_set(s, "proc_bind", "master"), LOCUS_E_ARGUMENT, "spread or close");
    EXPECT(locus_settings_set(s, "migration", "later"), LOCUS_E_ARGUMENT, "next-touch");
    EXPECT(locus_settings_set(s, NULL, "4"), LOCUS_E_NULL, "key");
    EXPECT(locus_settings_set(s, "window", NULL), LOCUS_E_NULL, "value");
    EXPECT(locus_settings_set(s, "\xff", "4"), LOCUS_E_ARGUMENT, "UTF-8");
    EXPECT(locus_settings_set(NO_SETTINGS, "window", "4"), LOCUS_E_HANDLE, "null settings");
    OK(locus_settings_set(s, "window", "16"));
    OK(locus_settings_set(s, "allocation", "deferred"));
    OK(locus_settings_set(s, "shared_placement", "bind:1"));
    OK(locus_settings_set(s, "huge_pages", "true"));
    OK(locus_settings_free(s));
    EXPECT(locus_settings_free(s), LOCUS_E_HANDLE, "freed");
    EXPECT(locus_settings_set(s, "window", "4"), LOCUS_E_HANDLE, "freed");
    locus_settings made_up = {0x1234567800000009ull};
    EXPECT(locus_settings_free(made_up), LOCUS_E_HANDLE, "never made");
}

static void test_settings_reach_the_runtime(void) {
    locus_settings s = {0};
    OK(locus_settings_create(&s));
    OK(locus_settings_set(s, "window", "3"));
    OK(locus_settings_set(s, "proc_bind", "close"));
    OK(locus_settings_set(s, "migration", "auto"));
    locus_runtime rt = {0};
    OK(locus_runtime_create("dsa-base", "2x1", 2, s, &rt));
    OK(locus_settings_free(s));
    locus_data x = {0};
    OK(locus_data_create(rt, "x", sizeof(double), 8, &x));
    locus_access acc = {x, LOCUS_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "fill";
    t.body = fill_index;
    t.accesses = &acc;
    t.naccesses = 1;
    locus_report rep = {0};
    root_state st = {LOCUS_E_INTERNAL, &t, {0}};
    OK(locus_run(rt, spawn_one, &st, &rep));
    char *json = NULL;
    OK(locus_report_json(rep, &json));
    CHECK(json && strstr(json, "\"window\":\"3\""));
    CHECK(json && strstr(json, "\"proc_bind\":\"close\""));
    CHECK(json && strstr(json, "\"migration\":\"auto\""));
    locus_string_free(json);
    OK(locus_report_free(rep));
    OK(locus_runtime_destroy(rt));
    /* A value no runtime accepts is refused when set; one this configuration cannot
     * use, by the builder. */
    OK(locus_settings_create(&s));
    EXPECT(locus_settings_set(s, "vicinity", "0"), LOCUS_E_ARGUMENT, "at least 1 worker");
    OK(locus_settings_set(s, "allocation", "deferred"));
    EXPECT(locus_runtime_create("push-out", "2x1", 2, s, &rt), LOCUS_E_CONFIG, "deferred");
    OK(locus_settings_free(s));
}

/* ---- runtimes ---- */

static void test_runtime_errors(void) {
    locus_runtime rt = {0};
    EXPECT(locus_runtime_create("dsa", "2x1", 2, NO_SETTINGS, &rt), LOCUS_E_CONFIG, "`dsa`");
    EXPECT(locus_runtime_create("dfa", "3y", 2, NO_SETTINGS, &rt), LOCUS_E_CONFIG, "3y");
    EXPECT(locus_runtime_create("dfa", "2x1", 2, NO_SETTINGS, NULL), LOCUS_E_NULL, "out");
    EXPECT(locus_runtime_create("\xfe", "2x1", 2, NO_SETTINGS, &rt), LOCUS_E_ARGUMENT, "UTF-8");
    locus_settings freed = {0};
    OK(locus_settings_create(&freed));
    OK(locus_settings_free(freed));
    EXPECT(locus_runtime_create("dfa", "2x1", 2, freed, &rt), LOCUS_E_HANDLE, "settings");
    CHECK(rt.bits == 0);
    EXPECT(locus_runtime_destroy(rt), LOCUS_E_HANDLE, "null runtime");
    rt = make_runtime("dfa");
    size_t workers = 0, nodes = 0;
    OK(locus_runtime_size(rt, &workers, &nodes));
    CHECK(workers == 2 && nodes == 2);
    OK(locus_runtime_destroy(rt));
    EXPECT(locus_runtime_destroy(rt), LOCUS_E_HANDLE, "freed");
    EXPECT(locus_runtime_size(rt, &workers, &nodes), LOCUS_E_HANDLE, "runtime");
    EXPECT(locus_runtime_bytes_in_use(rt, NULL, NULL), LOCUS_E_HANDLE, "runtime");
    /* Defaults: NULL config and topology. */
    OK(locus_runtime_create(NULL, NULL, 1, NO_SETTINGS, &rt));
    OK(locus_runtime_destroy(rt));
}

/* ---- data ---- */

static void test_data_errors(void) {
    locus_runtime rt = make_runtime("dfa");
    locus_data d = {0};
    double values[4] = {1, 2, 3, 4};
    EXPECT(locus_data_create(rt, NULL, 8, 4, &d), LOCUS_E_NULL, "name");
    EXPECT(locus_data_create(rt, "zero", 0, 4, &d), LOCUS_E_SIZE, "zero");
    EXPECT(locus_data_create(rt, "huge", 16, SIZE_MAX / 8, &d), LOCUS_E_SIZE, "huge");
    EXPECT(locus_data_create(rt, "x", 8, 4, NULL), LOCUS_E_NULL, "out");
    EXPECT(locus_data_from(rt, "x", 8, 4, NULL, &d), LOCUS_E_NULL, "values");
    EXPECT(locus_data_shared(rt, "s", 8, 4, 9, 0, NULL, &d), LOCUS_E_ARGUMENT, "policy 9");
    EXPECT(locus_data_shared(rt, "s", 8, 4, LOCUS_POLICY_BIND, 7, NULL, &d), LOCUS_E_CONFIG,
           "7");
    /* 1 PiB: refused at once, before anything is mapped or touched. */
    EXPECT(locus_data_shared(rt, "s", 8, (size_t)1 << 47, LOCUS_POLICY_INTERLEAVE, 0, NULL, &d),
           LOCUS_E_OUT_OF_MEMORY, "more than this machine's memory");
    locus_runtime freed = make_runtime("dfa");
    OK(locus_runtime_destroy(freed));
    EXPECT(locus_data_create(freed, "x", 8, 4, &d), LOCUS_E_HANDLE, "runtime");
    CHECK(d.bits == 0);

    OK(locus_data_from(rt, "x", sizeof(double), 4, values, &d));
    size_t elem = 0, count = 0;
    OK(locus_data_size(d, &elem, &count));
    CHECK(elem == 8 && count == 4);
    double back[4] = {0};
    EXPECT(locus_fetch(rt, d, back, 3), LOCUS_E_SIZE, "4 elements");
    EXPECT(locus_fetch(rt, d, NULL, 4), LOCUS_E_NULL, "buf");
    OK(locus_fetch(rt, d, back, 4));
    CHECK(memcmp(back, values, sizeof values) == 0);
    int64_t node = -2;
    EXPECT(locus_node_of(rt, d, NULL), LOCUS_E_NULL, "node");
    OK(locus_node_of(rt, d, &node));
    CHECK(node == 0);

    locus_runtime other = make_runtime("dfa");
    EXPECT(locus_fetch(other, d, back, 4), LOCUS_E_WRONG_RUNTIME, "`x`");
    EXPECT(locus_node_of(other, d, &node), LOCUS_E_WRONG_RUNTIME, "`x`");
    OK(locus_runtime_destroy(other));

    OK(locus_data_free(d));
    EXPECT(locus_data_free(d), LOCUS_E_HANDLE, "freed");
    EXPECT(locus_fetch(rt, d, back, 4), LOCUS_E_HANDLE, "data");
    EXPECT(locus_data_size(d, &elem, &count), LOCUS_E_HANDLE, "data");
    EXPECT(locus_node_of(rt, d, &node), LOCUS_E_HANDLE, "data");
    locus_data null_data = {0};
    EXPECT(locus_data_free(null_data), LOCUS_E_HANDLE, "null data");

    /* A datum never written has no node; its runtime's destruction frees its handle. */
    OK(locus_data_create(rt, "fresh", 8, 4, &d));
    OK(locus_node_of(rt, d, &node));
    CHECK(node == -1);
    OK(locus_runtime_destroy(rt));
    EXPECT(locus_data_free(d), LOCUS_E_HANDLE, "freed");
}

static void test_shared_data(void) {
    locus_runtime rt = make_runtime("dsa-base");
    locus_data s = {0};
    int64_t init[512];
    for (int i = 0; i < 512; i++) init[i] = i;
    OK(locus_data_shared(rt, "s", sizeof(int64_t), 512, LOCUS_POLICY_BIND, 1, init, &s));
    int64_t node = -1;
    OK(locus_node_of(rt, s, &node));
    CHECK(node == 1);
    int64_t back[512];
    OK(locus_fetch(rt, s, back, 512));
    CHECK(back[511] == 511);
    uint64_t shared_bytes = 0;
    OK(locus_runtime_bytes_in_use(rt, NULL, &shared_bytes));
    CHECK(shared_bytes >= 4096);
    OK(locus_data_free(s));
    OK(locus_runtime_bytes_in_use(rt, NULL, &shared_bytes));
    CHECK(shared_bytes == 0);
    OK(locus_runtime_destroy(rt));
}

/* ---- runs and tasks ---- */

static int32_t sum_range(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)arg;
    if (n != 2 || views[0].mode != LOCUS_READ || views[1].mode != LOCUS_WRITE) return 7;
    const double *x = views[0].ptr;
    double *out = views[1].ptr;
    if ((uintptr_t)x % _Alignof(double) != 0) return 8;
    out[0] = 0;
    for (size_t i = 0; i < views[0].count; i++) out[0] += x[i];
    out[1] = (double)views[0].count;
    return 0;
}

static void test_run_views_and_ranges(void) {
    locus_runtime rt = make_runtime("dsa-opt");
    double values[10];
    for (int i = 0; i < 10; i++) values[i] = i;
    locus_data x = {0}, out = {0};
    OK(locus_data_from(rt, "x", sizeof(double), 10, values, &x));
    OK(locus_data_create(rt, "out", sizeof(double), 2, &out));
    locus_access acc[2] = {{x, LOCUS_READ, 3, 7}, {out, LOCUS_WRITE, 0, 0}};
    locus_task t = {0};
    t.name = "sum";
    t.body = sum_range;
    t.accesses = acc;
    t.naccesses = 2;
    t.cost_ns = 1000;
    t.affinity = LOCUS_AFFINITY_DATA;
    t.affinity_data = x;
    locus_report rep = {0};
    root_state st = {LOCUS_E_INTERNAL, &t, {0}};
    OK(locus_run(rt, spawn_one, &st, &rep));
    OK(st.status);
    double r[2];
    OK(locus_fetch(rt, out, r, 2));
    CHECK(r[0] == 3 + 4 + 5 + 6 && r[1] == 4);
    locus_figures f;
    EXPECT(locus_report_figures(rep, NULL), LOCUS_E_NULL, "figures");
    OK(locus_report_figures(rep, &f));
    CHECK(f.tasks == 1);
    CHECK(f.read_local_bytes + f.read_remote_bytes == 4 * sizeof(double));
    CHECK(f.write_local_bytes + f.write_remote_bytes == 2 * sizeof(double));
    char *json = NULL;
    EXPECT(locus_report_json(rep, NULL), LOCUS_E_NULL, "json");
    OK(locus_report_json(rep, &json));
    CHECK(json && strstr(json, "\"tasks\":1"));
    locus_string_free(json);
    locus_string_free(NULL);
    OK(locus_report_free(rep));
    EXPECT(locus_report_free(rep), LOCUS_E_HANDLE, "freed");
    EXPECT(locus_report_json(rep, &json), LOCUS_E_HANDLE, "report");
    EXPECT(locus_report_figures(rep, &f), LOCUS_E_HANDLE, "report");
    OK(locus_data_free(x));
    OK(locus_data_free(out));
    uint64_t pool = 1;
    OK(locus_runtime_bytes_in_use(rt, &pool, NULL));
    CHECK(pool == 0);
    OK(locus_runtime_destroy(rt));
}

static void test_spawn_errors(void) {
    locus_runtime rt = make_runtime("dfa");
    locus_runtime other = make_runtime("dfa");
    locus_data x = {0}, y = {0}, foreign = {0}, freed = {0};
    OK(locus_data_create(rt, "x", 8, 4, &x));
    OK(locus_data_create(rt, "y", 8, 4, &y));
    OK(locus_data_create(other, "foreign", 8, 4, &foreign));
    OK(locus_data_create(rt, "gone", 8, 4, &freed));
    OK(locus_data_free(freed));
    locus_status run;

    locus_access acc = {x, 4, 0, 0};
    locus_task t = {0};
    t.name = "bad";
    t.body = noop;
    t.accesses = &acc;
    t.naccesses = 1;
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_ARGUMENT, "unknown mode 4");
    REFUSED_RUN(run, "bad", "LOCUS_E_ARGUMENT", "unknown mode 4");
    acc.mode = 99;
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_ARGUMENT, "unknown mode 99");
    REFUSED_RUN(run, "bad", "LOCUS_E_ARGUMENT", "unknown mode 99");
    acc = (locus_access){x, LOCUS_READ, 2, 9};
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_SIZE, "[2, 9)");
    REFUSED_RUN(run, "bad", "LOCUS_E_SIZE", "[2, 9)");
    acc = (locus_access){x, LOCUS_READ, 3, 3};
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_SIZE, "[3, 3)");
    REFUSED_RUN(run, "bad", "LOCUS_E_SIZE", "[3, 3)");
    acc = (locus_access){x, LOCUS_WRITE, 0, 2};
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_SIZE, "LOCUS_READ only");
    REFUSED_RUN(run, "bad", "LOCUS_E_SIZE", "LOCUS_READ only");
    acc = (locus_access){freed, LOCUS_READ, 0, 0};
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_HANDLE, "access 0");
    REFUSED_RUN(run, "bad", "LOCUS_E_HANDLE", "access 0");
    acc = (locus_access){foreign, LOCUS_READ, 0, 0};
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_WRONG_RUNTIME, "`foreign`");
    REFUSED_RUN(run, "bad", "LOCUS_E_WRONG_RUNTIME", "`foreign`");
    acc = (locus_access){x, LOCUS_READ, 0, 0};
    t.accesses = NULL;
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_NULL, "accesses");
    REFUSED_RUN(run, "bad", "LOCUS_E_NULL", "accesses");
    t.accesses = &acc;
    t.affinity = 9;
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_ARGUMENT, "affinity kind 9");
    REFUSED_RUN(run, "bad", "LOCUS_E_ARGUMENT", "affinity kind 9");
    t.affinity = LOCUS_AFFINITY_DATA;
    t.affinity_data = foreign;
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_WRONG_RUNTIME, "affinity_data");
    REFUSED_RUN(run, "bad", "LOCUS_E_WRONG_RUNTIME", "affinity_data");
    t.affinity_data = freed;
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_HANDLE, "affinity_data");
    REFUSED_RUN(run, "bad", "LOCUS_E_HANDLE", "affinity_data");
    t.affinity = LOCUS_AFFINITY_NONE;
    t.body = NULL;
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_NULL, "body");
    REFUSED_RUN(run, "bad", "LOCUS_E_NULL", "body");
    t.body = noop;
    EXPECT_SPAWN(spawn_in_run(rt, NULL, &run), LOCUS_E_NULL, "task");
    REFUSED_RUN(run, "task", "LOCUS_E_NULL", "task");
    t.name = "\xff\xfe";
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_ARGUMENT, "UTF-8");
    REFUSED_RUN(run, "task", "LOCUS_E_ARGUMENT", "UTF-8");
    t.name = "bad";

    /* A datum declared twice with a write: Locus refuses it, and the run fails. */
    locus_access twice[2] = {{y, LOCUS_WRITE, 0, 0}, {y, LOCUS_READ, 0, 0}};
    t.accesses = twice;
    t.naccesses = 2;
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_DECLARATION, "bad");
    CHECK(run == LOCUS_E_RUN_FAILED);

    /* Nothing was submitted by the refused spawns: both runtimes hold no buffer. */
    OK(locus_data_free(x));
    OK(locus_data_free(y));
    OK(locus_data_free(foreign));
    uint64_t pool = 1;
    OK(locus_runtime_bytes_in_use(rt, &pool, NULL));
    CHECK(pool == 0);
    OK(locus_runtime_destroy(rt));
    OK(locus_runtime_destroy(other));
}

static int32_t fail_with_message(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    (void)arg;
    locus_ctx_fail(ctx, "the input was odd");
    return 3;
}

static int32_t root_returns_2(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)views;
    (void)n;
    (void)arg;
    return 2;
}

static void test_failed_runs(void) {
    locus_runtime rt = make_runtime("dfa");
    double one[3] = {1, 1, 1};
    locus_data x = {0};
    OK(locus_data_from(rt, "x", sizeof(double), 3, one, &x));
    locus_access acc = {x, LOCUS_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "odd";
    t.body = fail_with_message;
    t.accesses = &acc;
    t.naccesses = 1;
    locus_report rep = {0};
    root_state st = {LOCUS_E_INTERNAL, &t, {0}};
    EXPECT(locus_run(rt, spawn_one, &st, &rep), LOCUS_E_RUN_FAILED, "the input was odd");
    CHECK(strstr(locus_last_error(), "task `odd` failed: body returned 3"));
    CHECK(!strstr(locus_last_error(), "panicked"));
    CHECK(rep.bits != 0);
    OK(locus_report_free(rep));
    /* The datum keeps its last complete version. */
    double back[3];
    OK(locus_fetch(rt, x, back, 3));
    CHECK(back[0] == 1 && back[2] == 1);

    EXPECT(locus_run(rt, root_returns_2, NULL, NULL), LOCUS_E_RUN_FAILED, "root returned 2");
    EXPECT(locus_run(rt, NULL, NULL, NULL), LOCUS_E_NULL, "root");
    locus_runtime freed = make_runtime("dfa");
    OK(locus_runtime_destroy(freed));
    EXPECT(locus_run(freed, noop, NULL, NULL), LOCUS_E_HANDLE, "runtime");
    OK(locus_runtime_destroy(rt));
}

/* ---- arguments ---- */

static int frees;
static void count_free(void *arg) {
    (void)arg;
    frees++;
}

typedef struct {
    int value;
    double pad;
} payload;

static int32_t check_copy(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)views;
    (void)n;
    const payload *p = arg;
    if ((uintptr_t)arg % 16 != 0) return 5;
    return p->value == 42 ? 0 : 6;
}

typedef struct {
    locus_task task;
    payload *source;
    locus_status status;
} copy_state;

static int32_t spawn_then_change(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    copy_state *st = arg;
    st->status = locus_spawn(ctx, &st->task);
    st->source->value = -1; /* the task has its own copy */
    return 0;
}

static void test_arguments_and_destructors(void) {
    locus_runtime rt = make_runtime("dfa");
    payload p = {42, 0};
    copy_state st = {{0}, &p, LOCUS_E_INTERNAL};
    st.task.name = "copied";
    st.task.body = check_copy;
    st.task.arg = &p;
    st.task.arg_size = sizeof p;
    st.task.arg_free = count_free;
    frees = 0;
    OK(locus_run(rt, spawn_then_change, &st, NULL));
    OK(st.status);
    CHECK(frees == 1);

    /* Borrowed, and freed once also when the spawn fails. */
    int borrowed = 0;
    locus_task t = {0};
    t.body = NULL; /* refused */
    t.arg = &borrowed;
    t.arg_free = count_free;
    frees = 0;
    EXPECT_SPAWN(spawn_in_run(rt, &t, NULL), LOCUS_E_NULL, "body");
    CHECK(frees == 1);
    t.body = noop;
    t.arg_size = 8;
    t.arg = NULL;
    frees = 0;
    EXPECT_SPAWN(spawn_in_run(rt, &t, NULL), LOCUS_E_NULL, "arg is NULL");
    CHECK(frees == 1);
    /* A name that is not UTF-8: refused, the argument still freed once. */
    t.arg_size = 0;
    t.arg = &borrowed;
    t.name = "\xff";
    frees = 0;
    EXPECT_SPAWN(spawn_in_run(rt, &t, NULL), LOCUS_E_ARGUMENT, "UTF-8");
    CHECK(frees == 1);
    OK(locus_runtime_destroy(rt));
}

/* ---- contexts ---- */

static locus_ctx kept;

static int32_t keep_ctx(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    (void)arg;
    kept = ctx;
    return 0;
}

static void *use_ctx_elsewhere(void *arg) {
    locus_ctx *ctx = arg;
    locus_task t = {0};
    t.body = noop;
    return (void *)(intptr_t)locus_spawn(*ctx, &t);
}

static int32_t ctx_on_other_thread(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    locus_status *out = arg;
    pthread_t th;
    void *ret = NULL;
    pthread_create(&th, NULL, use_ctx_elsewhere, &ctx);
    pthread_join(th, &ret);
    *out = (locus_status)(intptr_t)ret;
    /* the thread's failure left its message there, not here */
    return 0;
}

typedef struct {
    locus_status wait, fetch, where, run, data, fetch_in_task;
    size_t worker, node;
    locus_runtime rt;
    locus_data d;
} root_calls;

static int32_t root_tries_everything(locus_ctx ctx, const locus_view *views, size_t n,
                                     void *arg) {
    (void)views;
    (void)n;
    root_calls *c = arg;
    c->wait = locus_wait(ctx);
    double buf[1];
    c->fetch = locus_ctx_fetch(ctx, c->d, buf, 1);
    c->where = locus_ctx_where(ctx, &c->worker, &c->node);
    c->run = locus_run(c->rt, noop, NULL, NULL);
    c->fetch_in_task = locus_fetch(c->rt, c->d, buf, 1);
    locus_data scoped = {0};
    c->data = locus_ctx_data(ctx, "scoped", 0, 1, &scoped);
    return 0;
}

static void test_contexts(void) {
    locus_runtime rt = make_runtime("dfa");
    locus_task t = {0};
    t.body = noop;
    EXPECT(locus_spawn(kept, &t), LOCUS_E_CONTEXT, "null task context");
    OK(locus_run(rt, keep_ctx, NULL, NULL));
    EXPECT(locus_spawn(kept, &t), LOCUS_E_CONTEXT, "body has returned");
    EXPECT(locus_wait(kept), LOCUS_E_CONTEXT, "body has returned");
    size_t w;
    EXPECT(locus_ctx_where(kept, &w, NULL), LOCUS_E_CONTEXT, "context");
    EXPECT(locus_ctx_fail(kept, "x"), LOCUS_E_CONTEXT, "context");
    locus_data d = {0};
    EXPECT(locus_ctx_data(kept, "d", 8, 1, &d), LOCUS_E_CONTEXT, "context");
    OK(locus_data_create(rt, "d", 8, 1, &d));
    double buf[1];
    EXPECT(locus_ctx_fetch(kept, d, buf, 1), LOCUS_E_CONTEXT, "context");

    locus_status other = LOCUS_OK;
    OK(locus_run(rt, ctx_on_other_thread, &other, NULL));
    CHECK(other == LOCUS_E_CONTEXT);

    root_calls c = {0};
    c.rt = rt;
    c.d = d;
    OK(locus_run(rt, root_tries_everything, &c, NULL));
    CHECK(c.wait == LOCUS_E_CONTEXT);
    CHECK(c.fetch == LOCUS_E_CONTEXT);
    CHECK(c.where == LOCUS_OK && c.worker == 0);
    CHECK(c.run == LOCUS_E_STATE);
    CHECK(c.fetch_in_task == LOCUS_E_DECLARATION);
    CHECK(c.data == LOCUS_E_SIZE);
    OK(locus_data_free(d));
    OK(locus_runtime_destroy(rt));
}

/* ---- nested tasks: spawn, wait, fetch ---- */

typedef struct {
    int n;
    locus_runtime rt;
} fib_arg;

static int32_t fib_body(locus_ctx ctx, const locus_view *views, size_t n, void *arg);

static int32_t fib_body(locus_ctx ctx, const locus_view *views, size_t nv, void *arg) {
    const fib_arg *a = arg;
    int64_t *out = views[0].ptr;
    (void)nv;
    if (a->n < 2) {
        out[0] = a->n;
        return 0;
    }
    locus_data half[2];
    for (int k = 0; k < 2; k++) {
        if (locus_ctx_data(ctx, "half", sizeof(int64_t), 1, &half[k]) != LOCUS_OK) return 10;
        fib_arg child = {a->n - 1 - k, a->rt};
        locus_access acc = {half[k], LOCUS_WRITE, 0, 0};
        locus_task t = {0};
        t.name = "fib";
        t.body = fib_body;
        t.arg = &child;
        t.arg_size = sizeof child;
        t.accesses = &acc;
        t.naccesses = 1;
        if (locus_spawn(ctx, &t) != LOCUS_OK) return 11;
    }
    if (locus_wait(ctx) != LOCUS_OK) return 12;
    int64_t r[2];
    for (int k = 0; k < 2; k++) {
        if (locus_ctx_fetch(ctx, half[k], &r[k], 1) != LOCUS_OK) return 13;
        locus_data_free(half[k]);
    }
    out[0] = r[0] + r[1];
    return 0;
}

static void test_nested_fib(void) {
    locus_runtime rt = make_runtime("dfa");
    locus_data out = {0};
    OK(locus_data_create(rt, "out", sizeof(int64_t), 1, &out));
    fib_arg a = {12, rt};
    locus_access acc = {out, LOCUS_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "fib";
    t.body = fib_body;
    t.arg = &a;
    t.arg_size = sizeof a;
    t.accesses = &acc;
    t.naccesses = 1;
    root_state st = {LOCUS_E_INTERNAL, &t, {0}};
    OK(locus_run(rt, spawn_one, &st, NULL));
    int64_t r = 0;
    OK(locus_fetch(rt, out, &r, 1));
    CHECK(r == 144);
    OK(locus_data_free(out));
    OK(locus_runtime_destroy(rt));
}

/* A wait for children that need the task's own (strong) output is refused, and the
 * refusal fails the run though the body goes on and returns 0. */
static int32_t wait_on_own_output(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    locus_data *x = arg;
    locus_access acc = {*x, LOCUS_READ, 0, 0};
    locus_task t = {0};
    t.name = "reader";
    t.body = noop;
    t.accesses = &acc;
    t.naccesses = 1;
    if (locus_spawn(ctx, &t) != LOCUS_OK) return 20;
    return locus_wait(ctx) == LOCUS_E_DECLARATION ? 0 : 21;
}

static void test_wait_refused(void) {
    locus_runtime rt = make_runtime("dfa");
    locus_data x = {0};
    OK(locus_data_create(rt, "x", 8, 1, &x));
    locus_access acc = {x, LOCUS_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "parent";
    t.body = wait_on_own_output;
    t.arg = &x;
    t.arg_size = sizeof x;
    t.accesses = &acc;
    t.naccesses = 1;
    root_state st = {LOCUS_E_INTERNAL, &t, {0}};
    EXPECT(locus_run(rt, spawn_one, &st, NULL), LOCUS_E_RUN_FAILED,
           "task `parent` failed: locus_wait was refused (LOCUS_E_DECLARATION)");
    OK(locus_data_free(x));
    OK(locus_runtime_destroy(rt));
}

/* A recursion that waits for its child at every level: the waits nest on the worker's
 * stack. Too deep for the stack, the run fails with a clear error instead of a crash. */
typedef struct {
    locus_data token;
    size_t levels;
} levels_arg;

static int32_t waiting_level(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    const levels_arg *a = arg;
    if (a->levels == 0) return 0;
    levels_arg next = {a->token, a->levels - 1};
    locus_access acc = {a->token, LOCUS_WEAK_READ, 0, 0};
    locus_task t = {0};
    t.name = "level";
    t.body = waiting_level;
    t.arg = &next;
    t.arg_size = sizeof next;
    t.accesses = &acc;
    t.naccesses = 1;
    /* Both fail once the run has failed; the run then says why. */
    if (locus_spawn(ctx, &t) == LOCUS_OK) (void)locus_wait(ctx);
    return 0;
}

static locus_status run_levels(const char *stack, size_t levels) {
    locus_settings s = {0};
    OK(locus_settings_create(&s));
    OK(locus_settings_set(s, "worker_stack", stack));
    locus_runtime rt = {0};
    OK(locus_runtime_create(NULL, "1x1", 1, s, &rt));
    OK(locus_settings_free(s));
    levels_arg a = {{0}, levels};
    OK(locus_data_create(rt, "token", 8, 1, &a.token));
    locus_access acc = {a.token, LOCUS_WEAK_READ, 0, 0};
    locus_task t = {0};
    t.name = "level";
    t.body = waiting_level;
    t.arg = &a;
    t.arg_size = sizeof a;
    t.accesses = &acc;
    t.naccesses = 1;
    root_state st = {LOCUS_E_INTERNAL, &t, {0}};
    locus_status status = locus_run(rt, spawn_one, &st, NULL);
    char message[1024];
    snprintf(message, sizeof message, "%s", locus_last_error());
    OK(locus_data_free(a.token));
    OK(locus_runtime_destroy(rt));
    if (status != LOCUS_OK && !strstr(message, "nest too deeply")) {
        fprintf(stderr, "%s:%d: unexpected error: %s\n", __FILE__, __LINE__, message);
        failures++;
    }
    return status;
}

static void test_deep_waits(void) {
    CHECK(run_levels("262144", 1000000) == LOCUS_E_RUN_FAILED);
    CHECK(run_levels("8388608", 50) == LOCUS_OK);
    locus_settings s = {0};
    OK(locus_settings_create(&s));
    /* Refused when set, naming the least stack (was: at create). */
    EXPECT(locus_settings_set(s, "worker_stack", "4096"), LOCUS_E_ARGUMENT, "at least 262144");
    OK(locus_settings_free(s));
}

/* ---- more context errors, tasks dropped unrun, a runtime destroyed by its own run ---- */

typedef struct {
    locus_data mine, foreign;
    locus_status count, foreign_status, name, out;
} ctx_errors_state;

static int32_t child_writes(locus_ctx ctx, const locus_view *v, size_t n, void *arg) {
    (void)ctx;
    (void)n;
    (void)arg;
    ((int64_t *)v[0].ptr)[0] = 5;
    return 0;
}

static int32_t parent_misuses(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    ctx_errors_state *st = arg;
    locus_data half = {0};
    if (locus_ctx_data(ctx, "half", sizeof(int64_t), 1, &half) != LOCUS_OK) return 30;
    locus_access acc = {half, LOCUS_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "child";
    t.body = child_writes;
    t.accesses = &acc;
    t.naccesses = 1;
    if (locus_spawn(ctx, &t) != LOCUS_OK) return 31;
    int64_t buf[2];
    st->count = locus_ctx_fetch(ctx, half, buf, 2);
    st->foreign_status = locus_ctx_fetch(ctx, st->foreign, buf, 1);
    locus_data d = {0};
    st->name = locus_ctx_data(ctx, NULL, 8, 1, &d);
    st->out = locus_ctx_data(ctx, "d", 8, 1, NULL);
    int ok = locus_ctx_fetch(ctx, half, buf, 1) == LOCUS_OK && buf[0] == 5;
    locus_data_free(half);
    return ok ? 0 : 32;
}

static void test_ctx_errors(void) {
    locus_runtime rt = make_runtime("dfa");
    locus_runtime other = make_runtime("dfa");
    ctx_errors_state st = {{0}, {0}, LOCUS_OK, LOCUS_OK, LOCUS_OK, LOCUS_OK};
    OK(locus_data_create(rt, "mine", 8, 1, &st.mine));
    OK(locus_data_create(other, "foreign", 8, 1, &st.foreign));
    locus_access acc = {st.mine, LOCUS_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "parent";
    t.body = parent_misuses;
    t.arg = &st;
    t.accesses = &acc;
    t.naccesses = 1;
    root_state rs = {LOCUS_E_INTERNAL, &t, {0}};
    OK(locus_run(rt, spawn_one, &rs, NULL));
    CHECK(st.count == LOCUS_E_SIZE);
    CHECK(st.foreign_status == LOCUS_E_WRONG_RUNTIME);
    CHECK(st.name == LOCUS_E_NULL);
    CHECK(st.out == LOCUS_E_NULL);
    OK(locus_data_free(st.mine));
    OK(locus_runtime_destroy(rt));
    OK(locus_runtime_destroy(other));
}

static int32_t fails(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)views;
    (void)n;
    (void)arg;
    return 1;
}

typedef struct {
    locus_data x;
} two_tasks;

static int32_t spawn_failing_then_dependent(locus_ctx ctx, const locus_view *views, size_t n,
                                            void *arg) {
    (void)views;
    (void)n;
    two_tasks *st = arg;
    locus_access w = {st->x, LOCUS_WRITE, 0, 0};
    locus_task first = {0};
    first.name = "fails";
    first.body = fails;
    first.accesses = &w;
    first.naccesses = 1;
    if (locus_spawn(ctx, &first) != LOCUS_OK) return 40;
    locus_access r = {st->x, LOCUS_READ, 0, 0};
    locus_task second = {0};
    second.name = "never-runs";
    second.body = noop;
    second.arg = st; /* borrowed */
    second.arg_free = count_free;
    second.accesses = &r;
    second.naccesses = 1;
    locus_spawn(ctx, &second); /* refused if the run failed already: freed either way */
    return 0;
}

static void test_unrun_tasks_free_their_argument(void) {
    locus_runtime rt = make_runtime("dfa");
    two_tasks st = {{0}};
    OK(locus_data_create(rt, "x", 8, 1, &st.x));
    frees = 0;
    EXPECT(locus_run(rt, spawn_failing_then_dependent, &st, NULL), LOCUS_E_RUN_FAILED, "`fails`");
    CHECK(frees == 1);
    OK(locus_data_free(st.x));
    OK(locus_runtime_destroy(rt));
}

static int32_t destroy_own_runtime(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)views;
    (void)n;
    locus_runtime *rt = arg;
    return locus_runtime_destroy(*rt) == LOCUS_OK ? 0 : 50;
}

static void test_runtime_destroyed_by_its_run(void) {
    locus_runtime rt = make_runtime("dfa");
    locus_data d = {0};
    OK(locus_data_create(rt, "d", 8, 1, &d));
    OK(locus_run(rt, destroy_own_runtime, &rt, NULL));
    EXPECT(locus_run(rt, noop, NULL, NULL), LOCUS_E_HANDLE, "runtime");
    EXPECT(locus_data_free(d), LOCUS_E_HANDLE, "freed");
}

/* ---- partitions ---- */

typedef struct {
    locus_data parts[4];
    locus_status status;
} tiles_state;

/* Doubles every element of its one tile, and checks the tile is 2 x 2 elements. */
static int32_t double_tile(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)arg;
    if (n != 1 || views[0].count != 4 || views[0].elem_size != sizeof(double)) return 9;
    double *x = views[0].ptr;
    for (size_t i = 0; i < 4; i++) x[i] *= 2;
    return 0;
}

static int32_t spawn_per_tile(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    tiles_state *st = arg;
    st->status = LOCUS_OK;
    for (int i = 0; i < 4; i++) {
        locus_access acc = {st->parts[i], LOCUS_READ_WRITE, 0, 0};
        locus_task t = {0};
        t.name = "double";
        t.body = double_tile;
        t.accesses = &acc;
        t.naccesses = 1;
        locus_status s = locus_spawn(ctx, &t);
        if (s != LOCUS_OK) st->status = s;
    }
    return 0;
}

static void test_partitions(void) {
    locus_runtime rt = make_runtime("dsa-opt");
    double values[16];
    for (int i = 0; i < 16; i++) values[i] = i;
    locus_data m = {0};
    OK(locus_data_from(rt, "m", sizeof(double), 16, values, &m));
    locus_partition_spec tiles = {0};
    tiles.kind = LOCUS_PARTITION_TILES;
    tiles.rows = 4;
    tiles.cols = 4;
    tiles.tile_rows = 2;
    tiles.tile_cols = 2;
    size_t count = 0;
    EXPECT(locus_partition(rt, m, NULL, NULL, 0, &count), LOCUS_E_NULL, "spec");
    EXPECT(locus_partition(rt, m, &tiles, NULL, 0, NULL), LOCUS_E_NULL, "count");
    /* Asking with no room gives the number of parts, and partitions nothing. */
    EXPECT(locus_partition(rt, m, &tiles, NULL, 0, &count), LOCUS_E_SIZE, "4 parts");
    CHECK(count == 4);
    locus_partition_spec bad = tiles;
    bad.kind = 7;
    EXPECT(locus_partition(rt, m, &bad, NULL, 0, &count), LOCUS_E_ARGUMENT, "kind 7");
    bad = tiles;
    bad.tile_cols = 3; /* does not divide 4 columns */
    tiles_state st = {{{0}}, LOCUS_E_INTERNAL};
    CHECK(locus_partition(rt, m, &bad, st.parts, 4, &count) != LOCUS_OK);
    locus_range past_end = {10, 20};
    locus_partition_spec ranges = {0};
    ranges.kind = LOCUS_PARTITION_RANGES;
    ranges.ranges = &past_end;
    ranges.range_count = 1;
    CHECK(locus_partition(rt, m, &ranges, st.parts, 4, &count) != LOCUS_OK);

    OK(locus_partition(rt, m, &tiles, st.parts, 4, &count));
    CHECK(count == 4);
    size_t elem = 0, n = 0;
    OK(locus_data_size(st.parts[3], &elem, &n));
    CHECK(elem == sizeof(double) && n == 4);
    OK(locus_run(rt, spawn_per_tile, &st, NULL));
    OK(st.status);
    double back[16];
    OK(locus_fetch(rt, m, back, 16));
    for (int i = 0; i < 16; i++) CHECK(back[i] == 2.0 * i);
    /* Tile (1, 0) holds rows 2-3, columns 0-1, row after row. */
    double tile[4];
    OK(locus_fetch(rt, st.parts[2], tile, 4));
    CHECK(tile[0] == 16 && tile[1] == 18 && tile[2] == 24 && tile[3] == 26);
    for (int i = 0; i < 4; i++) OK(locus_data_free(st.parts[i]));
    OK(locus_data_free(m));
    OK(locus_runtime_destroy(rt));

    /* Two accesses that meet on one tile alone, one writing: elements 0-1 of the whole
     * lie in tile (0, 0). Refused under every configuration (under shm-base both
     * views would be the tile's one buffer), and the run fails instead of waiting. */
    const char *configs[] = {"dsa-opt", "shm-base"};
    for (int c = 0; c < 2; c++) {
        rt = make_runtime(configs[c]);
        OK(locus_data_create(rt, "m", sizeof(double), 16, &m));
        OK(locus_partition(rt, m, &tiles, st.parts, 4, &count));
        locus_access clash[2] = {{m, LOCUS_READ, 0, 2}, {st.parts[0], LOCUS_WRITE, 0, 0}};
        locus_task t = {0};
        t.name = "clash";
        t.body = noop;
        t.accesses = clash;
        t.naccesses = 2;
        locus_status run;
        EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_DECLARATION, "overlap");
        CHECK(run == LOCUS_E_RUN_FAILED);
        for (int i = 0; i < 4; i++) OK(locus_data_free(st.parts[i]));
        OK(locus_data_free(m));
        OK(locus_runtime_destroy(rt));
    }
}

/* ---- registered user memory ---- */

static int released;
static void *released_ptr;

static void count_release(void *p) {
    released++;
    released_ptr = p;
    free(p);
}

typedef struct {
    locus_data d;
    void *expect;
    locus_status status;
} register_state;

static int32_t same_memory_doubled(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    register_state *st = arg;
    if (n != 1 || views[0].ptr != st->expect) return 5; /* no copy: the caller's memory */
    double *x = views[0].ptr;
    for (size_t i = 0; i < views[0].count; i++) x[i] *= 2;
    return 0;
}

static int32_t spawn_doubling(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    register_state *st = arg;
    locus_access acc = {st->d, LOCUS_READ_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "double";
    t.body = same_memory_doubled;
    t.arg = st;
    t.accesses = &acc;
    t.naccesses = 1;
    st->status = locus_spawn(ctx, &t);
    return 0;
}

static void test_registered_memory(void) {
    locus_runtime rt = make_runtime("dsa-opt");
    locus_data d = {0};
    released = 0;
    EXPECT(locus_data_register(rt, "r", 8, 4, NULL, count_release, &d), LOCUS_E_NULL, "ptr");
    CHECK(released == 0);
    double *bad = malloc(4 * sizeof(double));
    EXPECT(locus_data_register(rt, "r", 0, 4, bad, count_release, &d), LOCUS_E_SIZE, "elem_size");
    CHECK(released == 1 && released_ptr == bad); /* refused: given back at once */

    double *mine = malloc(512 * sizeof(double));
    for (int i = 0; i < 512; i++) mine[i] = i;
    OK(locus_data_register(rt, "r", sizeof(double), 512, mine, count_release, &d));
    /* The same memory, or part of it, again: two data over one buffer, refused, and its
     * release is not called (the memory is the first datum's). */
    locus_data again = {0};
    EXPECT(locus_data_register(rt, "again", sizeof(double), 8, mine + 100, count_release, &again),
           LOCUS_E_ARGUMENT, "overlap memory registered already");
    EXPECT(locus_data_register(rt, "again", sizeof(double), 512, mine, count_release, &again),
           LOCUS_E_ARGUMENT, "overlap memory registered already");
    CHECK(released == 1);
    register_state st = {d, mine, LOCUS_E_INTERNAL};
    OK(locus_run(rt, spawn_doubling, &st, NULL));
    OK(st.status);
    CHECK(mine[511] == 1022); /* written in place */
    double back[512];
    OK(locus_fetch(rt, d, back, 512));
    CHECK(back[3] == 6 && back[511] == 1022);
    CHECK(released == 1);
    OK(locus_data_free(d));
    OK(locus_runtime_destroy(rt));
    CHECK(released == 2 && released_ptr == mine); /* once Locus let go, exactly once */

    /* Released, the memory may be registered again. */
    double *reused = malloc(16 * sizeof(double));
    rt = make_runtime("dsa-opt");
    OK(locus_data_register(rt, "first", sizeof(double), 16, reused, NULL, &d));
    OK(locus_data_free(d));
    OK(locus_runtime_destroy(rt));
    rt = make_runtime("dsa-opt");
    OK(locus_data_register(rt, "second", sizeof(double), 16, reused, NULL, &d));
    OK(locus_data_free(d));
    OK(locus_runtime_destroy(rt));
    free(reused);
}

/* ---- the memory API ---- */

#define PAGE 4096u

/* A shared datum of `count` int64_t holding 0, 1, 2, ... under `policy`. */
static locus_data shared_index(locus_runtime rt, size_t count, locus_policy policy, size_t node) {
    int64_t *init = malloc(count * sizeof(int64_t));
    for (size_t i = 0; i < count; i++) init[i] = (int64_t)i;
    locus_data d = {0};
    OK(locus_data_shared(rt, "v", sizeof(int64_t), count, policy, node, init, &d));
    free(init);
    return d;
}

static int64_t node_of(locus_runtime rt, locus_data d) {
    int64_t node = -2;
    OK(locus_node_of(rt, d, &node));
    return node;
}

static void test_memory_costs(void) {
    locus_runtime rt = {0};
    OK(locus_runtime_create("dsa-opt", "opteron-16", 4, NO_SETTINGS, &rt));
    double ns = 0;
    OK(locus_read_cost(rt, 64, 2, 0, &ns));
    CHECK(ns > 116.9 && ns < 117.1); /* paper 2, Table 3: 117 ns to the opposite node */
    OK(locus_read_cost(rt, 64, 0, 0, &ns));
    CHECK(ns > 82.9 && ns < 83.1);
    OK(locus_write_cost(rt, 64, 2, 0, &ns));
    CHECK(ns > 142.0 * 1.46 - 1e-6 && ns < 142.0 * 1.46 + 1e-6);
    OK(locus_migration_cost(rt, 2 * PAGE, &ns));
    CHECK(ns == 142000.0); /* MaMI: 120 us + 11 us per page */
    EXPECT(locus_read_cost(rt, 64, 4, 0, &ns), LOCUS_E_CONFIG, "node 4 does not exist");
    EXPECT(locus_write_cost(rt, 64, 0, 9, &ns), LOCUS_E_CONFIG, "node 9 does not exist");
    EXPECT(locus_read_cost(rt, 64, 0, 0, NULL), LOCUS_E_NULL, "ns");
    EXPECT(locus_write_cost(rt, 64, 0, 0, NULL), LOCUS_E_NULL, "ns");
    EXPECT(locus_migration_cost(rt, 64, NULL), LOCUS_E_NULL, "ns");
    locus_runtime null_rt = {0};
    EXPECT(locus_read_cost(null_rt, 64, 0, 0, &ns), LOCUS_E_HANDLE, "null runtime");
    EXPECT(locus_migration_cost(null_rt, 64, &ns), LOCUS_E_HANDLE, "null runtime");
    OK(locus_runtime_destroy(rt));
    EXPECT(locus_write_cost(rt, 64, 0, 0, &ns), LOCUS_E_HANDLE, "freed");
}

static void test_migrate_now(void) {
    locus_runtime rt = {0}, other = {0};
    OK(locus_runtime_create("dsa-opt", "4x1", 0, NO_SETTINGS, &rt));
    OK(locus_runtime_create("dsa-opt", "2x1", 0, NO_SETTINGS, &other));
    /* 4096 int64_t: 8 pages interleaved over 4 nodes, 2 on each. */
    locus_data v = shared_index(rt, 4096, LOCUS_POLICY_INTERLEAVE, 0);
    locus_data w = shared_index(other, 512, LOCUS_POLICY_BIND, 0);
    uint64_t pages = 99;
    OK(locus_migrate(rt, v, 3, &pages));
    CHECK(pages == 6); /* 2 were on node 3 already */
    CHECK(node_of(rt, v) == 3);
    OK(locus_migrate(rt, v, 3, &pages));
    CHECK(pages == 0);
    /* Elements 0..600 are on pages 0 and 1; a NULL count is allowed. */
    OK(locus_migrate_range(rt, v, 0, 600, 1, &pages));
    CHECK(pages == 2);
    OK(locus_migrate_range(rt, v, 4095, 1, 2, NULL));
    locus_migration_counts counts = {0};
    OK(locus_migrated(rt, &counts));
    CHECK(counts.now_pages == 9 && counts.now_bytes == 9 * PAGE);
    CHECK(counts.next_touch_pages == 0 && counts.auto_pages == 0);
    int64_t *back = malloc(4096 * sizeof(int64_t));
    OK(locus_fetch(rt, v, back, 4096));
    int same = 1;
    for (int i = 0; i < 4096; i++) same &= back[i] == i;
    CHECK(same); /* the contents moved with the pages */
    free(back);

    EXPECT(locus_migrate(rt, v, 4, &pages), LOCUS_E_CONFIG, "node 4 does not exist");
    EXPECT(locus_migrate_range(rt, v, 4000, 97, 0, &pages), LOCUS_E_SIZE, "4096 elements");
    EXPECT(locus_migrate_range(rt, v, 1, SIZE_MAX, 0, &pages), LOCUS_E_SIZE, "outside");
    EXPECT(locus_migrate_range(rt, v, 0, 1, 9, &pages), LOCUS_E_CONFIG, "node 9");
    EXPECT(locus_migrate(rt, w, 0, &pages), LOCUS_E_WRONG_RUNTIME, "another runtime");
    EXPECT(locus_migrate_range(other, v, 0, 1, 0, &pages), LOCUS_E_WRONG_RUNTIME, "another");
    locus_data null_data = {0};
    EXPECT(locus_migrate(rt, null_data, 0, &pages), LOCUS_E_HANDLE, "null data");
    locus_data made_up = {0x77777777000000ffull};
    EXPECT(locus_migrate(rt, made_up, 0, &pages), LOCUS_E_HANDLE, "never made");
    locus_runtime null_rt = {0};
    EXPECT(locus_migrate(null_rt, v, 0, &pages), LOCUS_E_HANDLE, "null runtime");
    EXPECT(locus_migrated(rt, NULL), LOCUS_E_NULL, "counts");
    EXPECT(locus_migrated(null_rt, &counts), LOCUS_E_HANDLE, "null runtime");

    /* A versioned datum moves whole, by renaming. */
    double values[1024];
    for (int i = 0; i < 1024; i++) values[i] = 1.5;
    locus_data x = {0};
    OK(locus_data_from(rt, "x", sizeof(double), 1024, values, &x));
    OK(locus_migrate(rt, x, 2, &pages));
    CHECK(pages == 2);
    CHECK(node_of(rt, x) == 2);
    EXPECT(locus_migrate_range(rt, x, 0, 10, 1, &pages), LOCUS_E_CONFIG, "versioned");

    OK(locus_data_free(v));
    EXPECT(locus_migrate(rt, v, 0, &pages), LOCUS_E_HANDLE, "freed");
    OK(locus_data_free(x));
    OK(locus_data_free(w));
    OK(locus_runtime_destroy(rt));
    OK(locus_runtime_destroy(other));
}

static void test_migrate_on_next_touch(void) {
    locus_runtime rt = {0};
    OK(locus_runtime_create("dsa-opt", "4x1", 0, NO_SETTINGS, &rt));
    locus_data v = shared_index(rt, 4096, LOCUS_POLICY_BIND, 0);
    uint64_t armed = 0;
    OK(locus_migrate_on_next_touch(rt, v, &armed));
    CHECK(armed == 8);
    CHECK(node_of(rt, v) == 0); /* nothing moves before a task touches it */
    /* Its first toucher runs on node 3. */
    locus_access acc = {v, LOCUS_READ, 0, 0};
    locus_task t = {0};
    t.name = "toucher";
    t.body = noop;
    t.accesses = &acc;
    t.naccesses = 1;
    t.affinity = LOCUS_AFFINITY_NODE;
    t.affinity_index = 3;
    t.affinity_strict = true;
    root_state st = {LOCUS_E_INTERNAL, &t, {0}};
    OK(locus_run(rt, spawn_one, &st, NULL));
    OK(st.status);
    CHECK(node_of(rt, v) == 3);
    locus_migration_counts counts = {0};
    OK(locus_migrated(rt, &counts));
    CHECK(counts.next_touch_pages == 8 && counts.next_touch_bytes == 8 * PAGE);
    CHECK(counts.now_pages == 0);
    OK(locus_migrate_on_next_touch(rt, v, NULL));

    locus_data x = {0};
    OK(locus_data_create(rt, "x", sizeof(double), 8, &x));
    EXPECT(locus_migrate_on_next_touch(rt, x, &armed), LOCUS_E_CONFIG, "versioned");
    locus_data null_data = {0};
    EXPECT(locus_migrate_on_next_touch(rt, null_data, &armed), LOCUS_E_HANDLE, "null data");
    OK(locus_data_free(x));
    OK(locus_data_free(v));
    OK(locus_runtime_destroy(rt));
}

static void test_free_memory(void) {
    const uint64_t limit = 1u << 20;
    locus_settings s = {0};
    OK(locus_settings_create(&s));
    OK(locus_settings_set(s, "node_limit", "1048576"));
    locus_runtime rt = {0};
    OK(locus_runtime_create("dsa-opt", "4x1", 0, s, &rt));
    OK(locus_settings_free(s));
    uint64_t free_bytes = 0;
    OK(locus_free_memory(rt, 3, &free_bytes));
    CHECK(free_bytes == limit);
    locus_data v = shared_index(rt, 4096, LOCUS_POLICY_INTERLEAVE, 0);
    OK(locus_free_memory(rt, 3, &free_bytes));
    CHECK(free_bytes == limit - 2 * PAGE);
    OK(locus_migrate(rt, v, 3, NULL));
    OK(locus_free_memory(rt, 3, &free_bytes));
    CHECK(free_bytes == limit - 8 * PAGE);
    OK(locus_free_memory(rt, 0, &free_bytes));
    CHECK(free_bytes == limit);
    OK(locus_data_free(v));
    OK(locus_free_memory(rt, 3, &free_bytes));
    CHECK(free_bytes == limit);
    EXPECT(locus_free_memory(rt, 4, &free_bytes), LOCUS_E_CONFIG, "node 4 does not exist");
    EXPECT(locus_free_memory(rt, 0, NULL), LOCUS_E_NULL, "bytes");
    locus_runtime null_rt = {0};
    EXPECT(locus_free_memory(null_rt, 0, &free_bytes), LOCUS_E_HANDLE, "null runtime");
    OK(locus_runtime_destroy(rt));
    /* Without a limit: a share of the host's free memory. */
    rt = make_runtime("dsa-opt");
    free_bytes = 0;
    OK(locus_free_memory(rt, 1, &free_bytes));
    CHECK(free_bytes > 0);
    OK(locus_runtime_destroy(rt));
}

/* What a body's calls of the memory API returned, with their messages. */
typedef struct {
    locus_runtime rt;
    locus_data v, versioned, foreign;
    locus_status statuses[9];
    char messages[9][256];
    int calls;
} migrating_state;

static void note(migrating_state *st, locus_status s) {
    if (st->calls < 9) {
        st->statuses[st->calls] = s;
        snprintf(st->messages[st->calls], sizeof st->messages[0], "%s", locus_last_error());
        st->calls++;
    }
}

/* Adds 1 to element 0 of its read-write view. */
static int32_t bump(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)arg;
    if (n != 1 || views[0].mode != LOCUS_READ_WRITE) return 30;
    ((int64_t *)views[0].ptr)[0] += 1;
    return 0;
}

/* A task that hands `v` to its children (weak read-write): a migration task to node 1
 * between two bumps, then every call a body may not make or gets wrong. */
static int32_t migrating_phase(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    migrating_state *st = arg;
    locus_access acc = {st->v, LOCUS_READ_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "bump";
    t.body = bump;
    t.accesses = &acc;
    t.naccesses = 1;
    if (locus_spawn(ctx, &t) != LOCUS_OK) return 31;
    note(st, locus_scope_migrate(ctx, st->v, 1));
    if (locus_spawn(ctx, &t) != LOCUS_OK) return 32;
    note(st, locus_scope_migrate(ctx, st->versioned, 0));
    note(st, locus_scope_migrate(ctx, st->v, 7));
    note(st, locus_scope_migrate(ctx, st->foreign, 0));
    locus_ctx null_ctx = {0};
    note(st, locus_scope_migrate(null_ctx, st->v, 0));
    uint64_t pages = 0;
    note(st, locus_migrate(st->rt, st->v, 0, &pages));
    note(st, locus_migrate_on_next_touch(st->rt, st->v, &pages));
    uint64_t free_bytes = 0;
    note(st, locus_free_memory(st->rt, 1, &free_bytes)); /* queries are fine */
    double ns = 0;
    note(st, locus_read_cost(st->rt, 64, 0, 1, &ns));
    return 0;
}

/* A root that moves `v` back to node 0 between runs' tasks. */
static int32_t scope_migrate_root(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    migrating_state *st = arg;
    return locus_scope_migrate(ctx, st->v, 0) == LOCUS_OK ? 0 : 40;
}

static void test_scope_migrate(void) {
    locus_runtime rt = make_runtime("dsa-opt");
    locus_runtime other = make_runtime("dsa-opt");
    migrating_state st;
    memset(&st, 0, sizeof st);
    st.rt = rt;
    st.v = shared_index(rt, 4096, LOCUS_POLICY_BIND, 0);
    st.foreign = shared_index(other, 8, LOCUS_POLICY_BIND, 0);
    OK(locus_data_create(rt, "x", sizeof(double), 8, &st.versioned));
    locus_access acc = {st.v, LOCUS_WEAK_READ_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "phase";
    t.body = migrating_phase;
    t.arg = &st;
    t.accesses = &acc;
    t.naccesses = 1;
    root_state rs = {LOCUS_E_INTERNAL, &t, {0}};
    locus_report rep = {0};
    OK(locus_run(rt, spawn_one, &rs, &rep));
    OK(rs.status);
    const struct {
        locus_status status;
        const char *needle;
    } want[9] = {
        {LOCUS_OK, ""},
        {LOCUS_E_DECLARATION, "versioned"},
        {LOCUS_E_DECLARATION, "node 7 does not exist"},
        {LOCUS_E_WRONG_RUNTIME, "another runtime"},
        {LOCUS_E_CONTEXT, "null task context"},
        {LOCUS_E_STATE, "locus_scope_migrate"},
        {LOCUS_E_STATE, "inside a task body"},
        {LOCUS_OK, ""},
        {LOCUS_OK, ""},
    };
    CHECK(st.calls == 9);
    for (int i = 0; i < st.calls; i++) {
        EXPECT_TEXT(st.statuses[i], want[i].status, want[i].needle, st.messages[i]);
    }
    CHECK(node_of(rt, st.v) == 1);
    int64_t *back = malloc(4096 * sizeof(int64_t));
    OK(locus_fetch(rt, st.v, back, 4096));
    CHECK(back[0] == 2 && back[4095] == 4095); /* both bumps, around the move */
    free(back);
    locus_migration_counts counts = {0};
    OK(locus_migrated(rt, &counts));
    CHECK(counts.now_pages == 8);
    char *json = NULL;
    OK(locus_report_json(rep, &json));
    CHECK(json && strstr(json, "\"now_pages\":8"));
    locus_string_free(json);
    OK(locus_report_free(rep));

    /* From the run's root too. */
    OK(locus_run(rt, scope_migrate_root, &st, NULL));
    CHECK(node_of(rt, st.v) == 0);

    OK(locus_data_free(st.v));
    OK(locus_data_free(st.versioned));
    OK(locus_data_free(st.foreign));
    OK(locus_runtime_destroy(rt));
    OK(locus_runtime_destroy(other));
}

/* ---- teams and attached data ---- */

/* Writes the node it runs on to its first view (an int64_t written). */
static int32_t write_node(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)arg;
    size_t node = 0;
    if (n < 1 || views[0].mode != LOCUS_WRITE) return 50;
    if (locus_ctx_where(ctx, NULL, &node) != LOCUS_OK) return 51;
    ((int64_t *)views[0].ptr)[0] = (int64_t)node;
    return 0;
}

#define MEMBERS 6

/* A team's leader: hands its slots to its children (weak writes) and spawns one
 * write_node child per slot, with no team of its own (they join the leader's). */
typedef struct {
    locus_data slots[MEMBERS];
    locus_access weak[MEMBERS];
    locus_status statuses[MEMBERS];
} leader_state;

static int32_t lead(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    leader_state *st = arg;
    for (int i = 0; i < MEMBERS; i++) {
        locus_access acc = {st->slots[i], LOCUS_WRITE, 0, 0};
        locus_task t = {0};
        t.name = "member";
        t.body = write_node;
        t.accesses = &acc;
        t.naccesses = 1;
        st->statuses[i] = locus_spawn(ctx, &t);
    }
    return 0;
}

/* A root spawning the `count` tasks of a task_list; fails if a spawn does. */
typedef struct {
    const locus_task *tasks;
    size_t count;
} task_list;

static int32_t spawn_all(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    const task_list *list = arg;
    for (size_t i = 0; i < list->count; i++) {
        if (locus_spawn(ctx, &list->tasks[i]) != LOCUS_OK) return 60;
    }
    return 0;
}

static int64_t fetch_i64(locus_runtime rt, locus_data d) {
    int64_t x = -2;
    OK(locus_fetch(rt, d, &x, 1));
    return x;
}

/* Runs one task that writes its node to `slot` and returns that node. */
static int64_t node_of_task(locus_runtime rt, const locus_task *t, locus_data slot) {
    task_list list = {t, 1};
    OK(locus_run(rt, spawn_all, &list, NULL));
    return fetch_i64(rt, slot);
}

static void test_team_strict_children(void) {
    locus_runtime rt = {0};
    OK(locus_runtime_create("dsa-opt", "4x1", 0, NO_SETTINGS, &rt));
    size_t n = 99;
    EXPECT(locus_team_spread(rt, NULL, 0, &n), LOCUS_E_SIZE, "4 teams, room for 0");
    CHECK(n == 4); /* the number, to size the array */
    locus_team teams[4] = {{0}};
    OK(locus_team_spread(rt, teams, 4, &n));
    CHECK(n == 4);
    leader_state leaders[4];
    locus_task tasks[4];
    memset(leaders, 0, sizeof leaders);
    memset(tasks, 0, sizeof tasks);
    for (int k = 0; k < 4; k++) {
        size_t nodes[4] = {9, 9, 9, 9}, count = 0;
        OK(locus_team_nodes(teams[k], nodes, 4, &count));
        CHECK(count == 1 && nodes[0] == (size_t)k);
        OK(locus_team_set_strict(teams[k], true));
        for (int i = 0; i < MEMBERS; i++) {
            OK(locus_data_create(rt, "slot", sizeof(int64_t), 1, &leaders[k].slots[i]));
            leaders[k].weak[i] = (locus_access){leaders[k].slots[i], LOCUS_WEAK_WRITE, 0, 0};
        }
        tasks[k].name = "leader";
        tasks[k].body = lead;
        tasks[k].arg = &leaders[k];
        tasks[k].accesses = leaders[k].weak;
        tasks[k].naccesses = MEMBERS;
        tasks[k].team = teams[k];
    }
    task_list list = {tasks, 4};
    OK(locus_run(rt, spawn_all, &list, NULL));
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < MEMBERS; i++) {
            OK(leaders[k].statuses[i]);
            int64_t node = fetch_i64(rt, leaders[k].slots[i]);
            if (node != k) fprintf(stderr, "team %d, member %d ran on node %lld\n", k, i,
                                   (long long)node);
            CHECK(node == k);
            OK(locus_data_free(leaders[k].slots[i]));
        }
        OK(locus_team_free(teams[k]));
    }

    /* A two-node team deals its members to its nodes in turn; a member's own affinity
     * wins. */
    locus_team pair = {0};
    const size_t pair_nodes[2] = {3, 1};
    OK(locus_team_create(rt, pair_nodes, 2, &pair));
    OK(locus_team_set_strict(pair, true));
    locus_data out[5];
    locus_access acc[5];
    locus_task members[5];
    memset(members, 0, sizeof members);
    for (int i = 0; i < 5; i++) {
        OK(locus_data_create(rt, "out", sizeof(int64_t), 1, &out[i]));
        acc[i] = (locus_access){out[i], LOCUS_WRITE, 0, 0};
        members[i].name = "member";
        members[i].body = write_node;
        members[i].accesses = &acc[i];
        members[i].naccesses = 1;
        members[i].team = pair;
    }
    members[4].affinity = LOCUS_AFFINITY_NODE;
    members[4].affinity_index = 2;
    members[4].affinity_strict = true;
    task_list five = {members, 5};
    OK(locus_run(rt, spawn_all, &five, NULL));
    const int64_t want[5] = {3, 1, 3, 1, 2};
    for (int i = 0; i < 5; i++) {
        CHECK(fetch_i64(rt, out[i]) == want[i]);
        OK(locus_data_free(out[i]));
    }
    OK(locus_team_free(pair));
    EXPECT(locus_team_free(pair), LOCUS_E_HANDLE, "freed");
    OK(locus_runtime_destroy(rt));
}

static void test_team_move(void) {
    locus_runtime rt = {0};
    OK(locus_runtime_create("dsa-opt", "4x1", 0, NO_SETTINGS, &rt));
    /* 8 pages each: all on node 0; 2 on each node; all on node 0. */
    locus_data bound = shared_index(rt, 4096, LOCUS_POLICY_BIND, 0);
    locus_data spread = shared_index(rt, 4096, LOCUS_POLICY_INTERLEAVE, 0);
    locus_data other = shared_index(rt, 4096, LOCUS_POLICY_BIND, 0);
    locus_team team = {0};
    const size_t zero[1] = {0}, two[1] = {2}, three_one[2] = {3, 1}, one[1] = {1};
    OK(locus_team_create(rt, zero, 1, &team));
    OK(locus_team_set_strict(team, true));
    OK(locus_attach_team(rt, bound, team));
    OK(locus_attach_team(rt, spread, team));
    size_t attached = 0;
    OK(locus_team_attached(team, &attached));
    CHECK(attached == 2);
    uint64_t pages = 99;
    OK(locus_team_move(rt, team, two, 1, false, &pages));
    CHECK(pages == 0); /* without take_data nothing moves */
    CHECK(node_of(rt, bound) == 0);
    OK(locus_team_move(rt, team, three_one, 2, true, &pages));
    CHECK(pages == 8 + 6); /* bound: all 8 to node 3; spread: the 6 not on node 1 */
    CHECK(node_of(rt, bound) == 3 && node_of(rt, spread) == 1);
    CHECK(node_of(rt, other) == 0); /* only attached data move */
    size_t nodes[2] = {0, 0}, count = 0;
    OK(locus_team_nodes(team, nodes, 2, &count));
    CHECK(count == 2 && nodes[0] == 3 && nodes[1] == 1);
    locus_migration_counts counts = {0};
    OK(locus_migrated(rt, &counts));
    CHECK(counts.now_pages == 14);
    int64_t *back = malloc(4096 * sizeof(int64_t));
    OK(locus_fetch(rt, spread, back, 4096));
    int same = 1;
    for (int i = 0; i < 4096; i++) same &= back[i] == i;
    CHECK(same); /* the contents moved with the pages */
    free(back);

    /* The team's next task goes to its new first node. */
    locus_data slot = {0};
    OK(locus_data_create(rt, "slot", sizeof(int64_t), 1, &slot));
    locus_access acc = {slot, LOCUS_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "after";
    t.body = write_node;
    t.accesses = &acc;
    t.naccesses = 1;
    t.team = team;
    CHECK(node_of_task(rt, &t, slot) == 3);

    /* Detached or freed, a datum no longer moves with its team. */
    OK(locus_detach(rt, bound));
    OK(locus_team_move(rt, team, zero, 1, true, NULL));
    CHECK(node_of(rt, bound) == 3 && node_of(rt, spread) == 0);
    OK(locus_data_free(spread));
    OK(locus_team_attached(team, &attached));
    CHECK(attached == 0);
    OK(locus_team_move(rt, team, one, 1, true, &pages));
    CHECK(pages == 0);

    /* A team freed before the data attached to it, and a datum left attached when its
     * runtime goes: LeakSanitizer checks that nothing is kept. */
    OK(locus_attach_team(rt, other, team));
    OK(locus_team_free(team));
    OK(locus_data_free(other));
    locus_team kept = {0};
    OK(locus_team_create(rt, one, 1, &kept));
    OK(locus_attach_team(rt, bound, kept));
    OK(locus_data_free(slot));
    OK(locus_runtime_destroy(rt)); /* frees bound and kept */
    EXPECT(locus_team_free(kept), LOCUS_E_HANDLE, "freed");
    EXPECT(locus_data_free(bound), LOCUS_E_HANDLE, "freed");
}

static void test_attached_data(void) {
    locus_runtime rt = {0};
    OK(locus_runtime_create("dsa-opt", "4x1", 0, NO_SETTINGS, &rt));
    locus_data v = shared_index(rt, 4096, LOCUS_POLICY_BIND, 0);
    locus_data slot = {0};
    OK(locus_data_create(rt, "slot", sizeof(int64_t), 1, &slot));
    locus_access acc[2] = {{slot, LOCUS_WRITE, 0, 0}, {v, LOCUS_READ, 0, 0}};
    locus_task t = {0};
    t.name = "reader";
    t.body = write_node;
    t.accesses = acc;
    t.naccesses = 2;
    t.affinity = LOCUS_AFFINITY_DATA;
    t.affinity_data = v;
    t.affinity_strict = true;
    CHECK(node_of_task(rt, &t, slot) == 0); /* where its pages are */
    OK(locus_attach_node(rt, v, 2));
    CHECK(node_of_task(rt, &t, slot) == 2);
    OK(locus_attach_worker(rt, v, 3));
    CHECK(node_of_task(rt, &t, slot) == 3); /* worker 3 is on node 3 */
    locus_team team = {0};
    const size_t one[1] = {1};
    OK(locus_team_create(rt, one, 1, &team));
    OK(locus_attach_team(rt, v, team));
    CHECK(node_of_task(rt, &t, slot) == 1);
    OK(locus_detach(rt, v));
    OK(locus_detach(rt, v)); /* detaching a datum without an owner does nothing */
    CHECK(node_of_task(rt, &t, slot) == 0);
    CHECK(node_of(rt, v) == 0); /* its pages never moved */
    OK(locus_team_free(team));
    OK(locus_data_free(slot));
    OK(locus_data_free(v));
    OK(locus_runtime_destroy(rt));
}

/* What a body's calls of the team API returned, with their messages. */
typedef struct {
    locus_runtime rt;
    locus_team team;
    locus_data v;
    locus_status statuses[6];
    char messages[6][256];
    int calls;
} team_calls;

static void note_team(team_calls *st, locus_status s) {
    if (st->calls < 6) {
        st->statuses[st->calls] = s;
        snprintf(st->messages[st->calls], sizeof st->messages[0], "%s", locus_last_error());
        st->calls++;
    }
}

static int32_t call_team_api(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)views;
    (void)n;
    team_calls *st = arg;
    const size_t one[1] = {1};
    locus_team made = {0};
    note_team(st, locus_team_create(st->rt, one, 1, &made));
    note_team(st, locus_team_free(made));
    note_team(st, locus_attach_node(st->rt, st->v, 1));
    note_team(st, locus_detach(st->rt, st->v));
    note_team(st, locus_team_set_strict(st->team, true));
    note_team(st, locus_team_move(st->rt, st->team, one, 1, false, NULL));
    return 0;
}

static void test_team_errors(void) {
    /* Two workers over four nodes: nodes 2 and 3 have none. */
    locus_runtime rt = {0}, other = {0};
    OK(locus_runtime_create("dsa-opt", "4x1", 2, NO_SETTINGS, &rt));
    other = make_runtime("dsa-opt");
    locus_data v = shared_index(rt, 512, LOCUS_POLICY_BIND, 0);
    locus_data foreign_data = shared_index(other, 512, LOCUS_POLICY_BIND, 0);
    locus_runtime null_rt = {0};
    locus_team null_team = {0}, made_up = {0x5555555500000007ull};
    const size_t ok_nodes[2] = {1, 0}, zero[1] = {0}, out_of_range[2] = {0, 4},
                 no_workers[1] = {2}, three[1] = {3};
    locus_team team = {0}, foreign = {0}, t = {0};
    OK(locus_team_create(rt, ok_nodes, 2, &team));
    OK(locus_team_create(other, zero, 1, &foreign));

    EXPECT(locus_team_create(rt, NULL, 0, &t), LOCUS_E_CONFIG, "at least one node");
    EXPECT(locus_team_create(rt, zero, 0, &t), LOCUS_E_CONFIG, "at least one node");
    EXPECT(locus_team_create(rt, NULL, 2, &t), LOCUS_E_NULL, "nodes");
    EXPECT(locus_team_create(rt, zero, 1, NULL), LOCUS_E_NULL, "out");
    EXPECT(locus_team_create(rt, out_of_range, 2, &t), LOCUS_E_CONFIG, "node 4 does not exist");
    EXPECT(locus_team_create(rt, no_workers, 1, &t), LOCUS_E_CONFIG, "node 2 has no workers");
    EXPECT(locus_team_create(null_rt, zero, 1, &t), LOCUS_E_HANDLE, "null runtime");
    CHECK(t.bits == 0); /* nothing made */
    size_t n = 0;
    EXPECT(locus_team_spread(rt, NULL, 0, NULL), LOCUS_E_NULL, "count");
    EXPECT(locus_team_spread(rt, NULL, 2, &n), LOCUS_E_NULL, "teams");
    locus_team room[1] = {{0}};
    EXPECT(locus_team_spread(rt, room, 1, &n), LOCUS_E_SIZE, "2 teams, room for 1");
    CHECK(n == 2 && room[0].bits == 0);
    EXPECT(locus_team_spread(null_rt, room, 1, &n), LOCUS_E_HANDLE, "null runtime");
    size_t nodes[1] = {0};
    EXPECT(locus_team_nodes(team, nodes, 1, &n), LOCUS_E_SIZE, "2 nodes, room for 1");
    CHECK(n == 2);
    EXPECT(locus_team_nodes(team, NULL, 1, &n), LOCUS_E_NULL, "nodes");
    EXPECT(locus_team_nodes(team, nodes, 1, NULL), LOCUS_E_NULL, "count");
    EXPECT(locus_team_nodes(null_team, NULL, 0, &n), LOCUS_E_HANDLE, "null team");
    EXPECT(locus_team_nodes(made_up, NULL, 0, &n), LOCUS_E_HANDLE, "never made");
    EXPECT(locus_team_attached(team, NULL), LOCUS_E_NULL, "count");
    EXPECT(locus_team_attached(null_team, &n), LOCUS_E_HANDLE, "null team");
    EXPECT(locus_team_set_strict(made_up, true), LOCUS_E_HANDLE, "never made");
    EXPECT(locus_team_free(null_team), LOCUS_E_HANDLE, "null team");

    /* Moves. */
    EXPECT(locus_team_move(rt, foreign, zero, 1, false, NULL), LOCUS_E_WRONG_RUNTIME,
           "another runtime");
    EXPECT(locus_team_move(rt, team, three, 1, true, NULL), LOCUS_E_CONFIG,
           "node 3 has no workers");
    EXPECT(locus_team_move(rt, team, NULL, 0, true, NULL), LOCUS_E_CONFIG, "at least one node");
    EXPECT(locus_team_move(rt, team, NULL, 1, true, NULL), LOCUS_E_NULL, "nodes");
    EXPECT(locus_team_move(rt, null_team, zero, 1, true, NULL), LOCUS_E_HANDLE, "null team");
    EXPECT(locus_team_move(null_rt, team, zero, 1, true, NULL), LOCUS_E_HANDLE, "null runtime");
    size_t count = 0, got[2] = {9, 9};
    OK(locus_team_nodes(team, got, 2, &count));
    CHECK(count == 2 && got[0] == 1 && got[1] == 0); /* failed moves change nothing */

    /* Attachments. */
    EXPECT(locus_attach_worker(rt, v, 2), LOCUS_E_CONFIG, "worker 2 does not exist");
    EXPECT(locus_attach_node(rt, v, 4), LOCUS_E_CONFIG, "node 4 does not exist");
    EXPECT(locus_attach_team(rt, v, foreign), LOCUS_E_WRONG_RUNTIME, "another runtime");
    EXPECT(locus_attach_team(rt, v, null_team), LOCUS_E_HANDLE, "null team");
    EXPECT(locus_attach_node(rt, foreign_data, 0), LOCUS_E_WRONG_RUNTIME, "another runtime");
    locus_data null_data = {0};
    EXPECT(locus_attach_worker(rt, null_data, 0), LOCUS_E_HANDLE, "null data");
    EXPECT(locus_attach_node(null_rt, v, 0), LOCUS_E_HANDLE, "null runtime");
    EXPECT(locus_detach(null_rt, v), LOCUS_E_HANDLE, "null runtime");
    EXPECT(locus_detach(other, v), LOCUS_E_WRONG_RUNTIME, "another runtime");
    OK(locus_team_attached(team, &n));
    CHECK(n == 0);

    /* Spawns naming a bad team are refused, and fail the run. */
    locus_data slot = {0};
    OK(locus_data_create(rt, "slot", sizeof(int64_t), 1, &slot));
    locus_access acc = {slot, LOCUS_WRITE, 0, 0};
    locus_task task = {0};
    task.name = "member";
    task.body = write_node;
    task.accesses = &acc;
    task.naccesses = 1;
    task.team = foreign;
    locus_status run;
    EXPECT_SPAWN(spawn_in_run(rt, &task, &run), LOCUS_E_WRONG_RUNTIME, "team");
    REFUSED_RUN(run, "member", "LOCUS_E_WRONG_RUNTIME", "team");
    locus_team dead = {0};
    OK(locus_team_create(rt, zero, 1, &dead));
    OK(locus_team_free(dead));
    task.team = dead;
    EXPECT_SPAWN(spawn_in_run(rt, &task, &run), LOCUS_E_HANDLE, "team");
    REFUSED_RUN(run, "member", "LOCUS_E_HANDLE", "team");
    task.team = made_up;
    EXPECT_SPAWN(spawn_in_run(rt, &task, &run), LOCUS_E_HANDLE, "never made");

    /* From a body: everything but the move, which is between runs only. */
    team_calls st;
    memset(&st, 0, sizeof st);
    st.rt = rt;
    st.team = team;
    st.v = v;
    locus_task caller = {0};
    caller.name = "caller";
    caller.body = call_team_api;
    caller.arg = &st;
    OK(spawn_in_run(rt, &caller, NULL));
    CHECK(st.calls == 6);
    for (int i = 0; i < 5; i++) OK(st.statuses[i]);
    EXPECT_TEXT(st.statuses[5], LOCUS_E_STATE, "locus_team_move", st.messages[5]);

    /* Destroying a runtime frees its teams. */
    OK(locus_data_free(foreign_data));
    OK(locus_runtime_destroy(other));
    EXPECT(locus_team_free(foreign), LOCUS_E_HANDLE, "freed");
    OK(locus_data_free(slot));
    OK(locus_data_free(v));
    OK(locus_team_free(team));
    OK(locus_runtime_destroy(rt));
}

/* ---- refused spawns and handle kinds ---- */

/* A body that spawns the task in `arg` (a child with a bad range) and returns 0. */
static int32_t spawn_bad_child(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    return locus_spawn(ctx, arg) == LOCUS_E_SIZE ? 0 : 5;
}

/* A refused spawn from a task's body (the refusals from the root are in
 * test_spawn_errors). */
static void test_refused_spawns_fail_the_run(void) {
    locus_runtime rt = make_runtime("dsa-opt");
    double ones[4] = {1, 1, 1, 1};
    locus_data x = {0};
    OK(locus_data_from(rt, "x", sizeof(double), 4, ones, &x));
    locus_status run;

    /* Refused inside a task's body that returns 0: the body's task fails. */
    locus_access bad_range = {x, LOCUS_READ, 3, 99};
    locus_task child = {0};
    child.name = "child";
    child.body = noop;
    child.accesses = &bad_range;
    child.naccesses = 1;
    locus_task parent = {0};
    parent.name = "parent";
    parent.body = spawn_bad_child;
    parent.arg = &child;
    EXPECT_SPAWN(spawn_in_run(rt, &parent, &run), LOCUS_OK, "");
    CHECK(run == LOCUS_E_RUN_FAILED);
    CHECK(strstr(locus_last_error(), "task `parent` failed"));
    CHECK(strstr(locus_last_error(), "locus_spawn of task `child` was refused (LOCUS_E_SIZE)"));

    /* Nothing was written: x keeps its contents, and a good spawn still runs. */
    double back[4] = {0};
    OK(locus_fetch(rt, x, back, 4));
    CHECK(back[0] == 1 && back[3] == 1);
    locus_access acc = {x, LOCUS_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "good";
    t.body = fill_index;
    t.accesses = &acc;
    t.naccesses = 1;
    EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_OK, "");
    OK(run);
    OK(locus_fetch(rt, x, back, 4));
    CHECK(back[0] == 0 && back[3] == 3);

    OK(locus_data_free(x));
    OK(locus_runtime_destroy(rt));
}

static void test_handle_kinds(void) {
    locus_runtime rt = make_runtime("dsa-opt");
    locus_runtime other = make_runtime("dsa-opt");
    locus_data x = {0}, foreign = {0};
    OK(locus_data_create(rt, "x", 8, 4, &x));
    OK(locus_data_create(other, "foreign", 8, 4, &foreign));
    size_t node = 0;
    locus_team team = {0};
    OK(locus_team_create(rt, &node, 1, &team));
    locus_report rep = {0};
    OK(locus_run(rt, noop, NULL, &rep));
    uint64_t buf[4];

    /* Handles of other kinds where a datum is expected: each named as what it is,
     * whatever slot and generation it shares with a live datum. */
    locus_data as_data[3] = {{rt.bits}, {team.bits}, {rep.bits}};
    const char *kinds[3] = {"a runtime handle", "a team handle", "a report handle"};
    for (int k = 0; k < 3; k++) {
        EXPECT(locus_fetch(rt, as_data[k], buf, 4), LOCUS_E_HANDLE, kinds[k]);
        CHECK(strstr(locus_last_error(), "where a data handle is expected"));
        locus_access acc = {as_data[k], LOCUS_READ, 0, 0};
        locus_task t = {0};
        t.name = "kind";
        t.body = noop;
        t.accesses = &acc;
        t.naccesses = 1;
        locus_status run;
        EXPECT_SPAWN(spawn_in_run(rt, &t, &run), LOCUS_E_HANDLE, kinds[k]);
        REFUSED_RUN(run, "kind", "LOCUS_E_HANDLE", kinds[k]);
        EXPECT(locus_data_free(as_data[k]), LOCUS_E_HANDLE, kinds[k]);
    }
    /* A datum where a runtime or a team is expected. */
    EXPECT(locus_run((locus_runtime){x.bits}, noop, NULL, NULL), LOCUS_E_HANDLE,
           "a data handle where a runtime handle is expected");
    EXPECT(locus_team_free((locus_team){x.bits}), LOCUS_E_HANDLE,
           "a data handle where a team handle is expected");
    /* A datum of another runtime. */
    EXPECT(locus_fetch(rt, foreign, buf, 4), LOCUS_E_WRONG_RUNTIME, "`foreign`");
    /* The right kinds still work. */
    OK(locus_fetch(rt, x, buf, 4));

    OK(locus_report_free(rep));
    OK(locus_team_free(team));
    OK(locus_data_free(x));
    OK(locus_data_free(foreign));
    OK(locus_runtime_destroy(rt));
    OK(locus_runtime_destroy(other));
}

/* ---- what a failed task leaves ---- */

/* Writes half of its read-write view, then returns 1. */
static int32_t half_then_fail(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)n;
    (void)arg;
    double *v = views[0].ptr;
    for (size_t i = 0; i < views[0].count / 2; i++) v[i] = 99;
    return 1;
}

/* Adds 1 to every element of its read-write view. */
static int32_t add_one(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)n;
    (void)arg;
    double *v = views[0].ptr;
    for (size_t i = 0; i < views[0].count; i++) v[i] += 1;
    return 0;
}

typedef struct {
    locus_data d;
    locus_task_fn fail;
} fail_after_step;

/* Spawns `step` (add_one) then `check` (the failing body), both read-writes of d. */
static int32_t step_then_check(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)views;
    (void)n;
    fail_after_step *f = arg;
    locus_access acc = {f->d, LOCUS_READ_WRITE, 0, 0};
    locus_task t = {0};
    t.name = "step";
    t.body = add_one;
    t.accesses = &acc;
    t.naccesses = 1;
    if (locus_spawn(ctx, &t) != LOCUS_OK) return 7;
    t.name = "check";
    t.body = f->fail;
    return locus_spawn(ctx, &t) == LOCUS_OK ? 0 : 7;
}

static void test_failed_tasks_leave_the_last_complete_version(void) {
    const char *topologies[2] = {"1x1", "2x1"};
    const char *configs[3] = {"dsa-opt", "dsa-base", "dfa"};
    locus_task_fn bodies[2] = {fails, half_then_fail};
    for (int tp = 0; tp < 2; tp++) {
        for (int c = 0; c < 3; c++) {
            locus_runtime rt = {0};
            OK(locus_runtime_create(configs[c], topologies[tp], 0, NO_SETTINGS, &rt));
            double init[64];
            for (int i = 0; i < 64; i++) init[i] = 1;
            locus_data d = {0};
            OK(locus_data_from(rt, "d", sizeof(double), 64, init, &d));
            /* 12 rounds, failing with and without writing: always the version of the
             * last `step`, never poisoned (it used to be LOCUS_E_STATE "may be partly
             * written" every time on 1x1 and 8 times in 12 on 2x1). */
            for (int round = 0; round < 12; round++) {
                fail_after_step f = {d, bodies[round % 2]};
                EXPECT(locus_run(rt, step_then_check, &f, NULL), LOCUS_E_RUN_FAILED,
                       "task `check` failed: body returned 1");
                double back[64] = {0};
                OK(locus_fetch(rt, d, back, 64));
                CHECK(back[0] == 2 + round && back[63] == 2 + round);
                if (back[0] != 2 + round) {
                    fprintf(stderr, "  %s %s round %d: %g\n", topologies[tp], configs[c],
                            round, back[0]);
                    break;
                }
            }
            OK(locus_data_free(d));
            OK(locus_runtime_destroy(rt));
        }
    }

    /* Shared data are updated in place with no copy: a failed read-write poisons them,
     * even one that wrote nothing, until a task writes them whole. */
    locus_runtime rt = {0};
    OK(locus_runtime_create("shm-base", "2x1", 0, NO_SETTINGS, &rt));
    double init[64] = {0};
    locus_data g = {0};
    OK(locus_data_shared(rt, "grid", sizeof(double), 64, LOCUS_POLICY_INTERLEAVE, 0, init,
                         &g));
    fail_after_step f = {g, fails};
    EXPECT(locus_run(rt, step_then_check, &f, NULL), LOCUS_E_RUN_FAILED, "task `check`");
    double back[64];
    EXPECT(locus_fetch(rt, g, back, 64), LOCUS_E_STATE, "`check`");
    locus_access whole = {g, LOCUS_WRITE, 0, 0};
    locus_task heal = {0};
    heal.name = "heal";
    heal.body = fill_index;
    heal.accesses = &whole;
    heal.naccesses = 1;
    locus_status run;
    EXPECT_SPAWN(spawn_in_run(rt, &heal, &run), LOCUS_OK, "");
    OK(run);
    OK(locus_fetch(rt, g, back, 64));
    CHECK(back[5] == 5);
    OK(locus_data_free(g));
    OK(locus_runtime_destroy(rt));
}

/* ---- the table of tests ---- */

typedef struct {
    const char *name;
    void (*run)(void);
} test_case;

/* ---- recorded graphs ---- */

/* x[i] += step[0] + iteration: a read-write that depends on the iteration. */
static int32_t add_step(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    uint64_t it = 99;
    int *calls = arg;
    if (n != 2 || locus_ctx_iteration(ctx, &it) != LOCUS_OK) return 7;
    /* A replayed body cannot spawn or wait. */
    if (locus_wait(ctx) != LOCUS_E_CONTEXT) return 8;
    const double *step = views[0].ptr;
    double *x = views[1].ptr;
    for (size_t i = 0; i < views[1].count; i++) x[i] += step[0] + (double)it;
    (*calls)++;
    return 0;
}

/* Zeroes its one view. */
static int32_t zero_all(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    (void)ctx;
    (void)arg;
    if (n != 1) return 7;
    memset(views[0].ptr, 0, views[0].count * views[0].elem_size);
    return 0;
}

/* Fails at iteration 3. */
static int32_t fail_at_three(locus_ctx ctx, const locus_view *views, size_t n, void *arg) {
    uint64_t it = 0;
    (void)views;
    (void)n;
    (void)arg;
    OK(locus_ctx_iteration(ctx, &it));
    if (it == 3) {
        locus_ctx_fail(ctx, "three");
        return 1;
    }
    return 0;
}

typedef struct {
    locus_task tasks[2];
    size_t ntasks;
    locus_status spawned[2];
} record_state;

static int32_t record_tasks(locus_recorder rec, void *arg) {
    record_state *st = arg;
    for (size_t i = 0; i < st->ntasks; i++) st->spawned[i] = locus_graph_spawn(rec, &st->tasks[i]);
    return 0;
}

static int32_t record_nothing_and_fail(locus_recorder rec, void *arg) {
    (void)rec;
    (void)arg;
    return 5;
}

static void add_thousand(void *arg) { (*(int *)arg) += 1000; }

static void test_recorded_graphs(void) {
    locus_runtime rt = make_runtime("dsa-opt");
    double zeros[4] = {0, 0, 0, 0}, one = 1.0;
    locus_data x = {0}, step = {0};
    OK(locus_data_from(rt, "x", sizeof(double), 4, zeros, &x));
    OK(locus_data_from(rt, "step", sizeof(double), 1, &one, &step));
    int calls = 0;
    locus_access acc[2] = {{step, LOCUS_READ, 0, 0}, {x, LOCUS_READ_WRITE, 0, 0}};
    record_state st;
    memset(&st, 0, sizeof st);
    st.ntasks = 1;
    st.tasks[0].name = "add";
    st.tasks[0].body = add_step;
    st.tasks[0].arg = &calls;
    st.tasks[0].arg_free = add_thousand;
    st.tasks[0].accesses = acc;
    st.tasks[0].naccesses = 2;
    locus_graph g = {0};
    EXPECT(locus_graph_record(rt, "g", record_tasks, &st, NULL), LOCUS_E_NULL, "out");
    EXPECT(locus_graph_record(rt, "g", NULL, &st, &g), LOCUS_E_NULL, "program");
    OK(locus_graph_record(rt, "g", record_tasks, &st, &g));
    OK(st.spawned[0]);
    CHECK(calls == 0); /* recording runs nothing */
    locus_report rep = {0};
    OK(locus_graph_replay(rt, g, 3, &rep));
    locus_figures f;
    OK(locus_report_figures(rep, &f));
    CHECK(f.tasks == 3);
    OK(locus_report_free(rep));
    OK(locus_graph_replay(rt, g, 2, NULL));
    CHECK(calls == 5);
    double back[4];
    OK(locus_fetch(rt, x, back, 4));
    /* 5 steps of 1 plus iterations 0 + 1 + 2 + 3 + 4. */
    CHECK(back[0] == 15.0 && back[3] == 15.0);
    /* A recorder outside its program, a context that is not a replayed body's. */
    locus_recorder stale = {1};
    EXPECT(locus_graph_spawn(stale, &st.tasks[0]), LOCUS_E_CONTEXT, "recorder");
    uint64_t it = 0;
    locus_ctx none = {0};
    EXPECT(locus_ctx_iteration(none, &it), LOCUS_E_CONTEXT, "context");
    /* Written outside the graph: the next replay fails, for good. */
    locus_access whole[1] = {{x, LOCUS_WRITE, 0, 0}};
    locus_task poke = {0};
    poke.name = "poke";
    poke.body = zero_all;
    poke.accesses = whole;
    poke.naccesses = 1;
    root_state rs = {LOCUS_E_INTERNAL, &poke, {0}};
    OK(locus_run(rt, spawn_one, &rs, NULL));
    OK(rs.status);
    EXPECT(locus_graph_replay(rt, g, 1, NULL), LOCUS_E_STATE, "`x` was written outside the graph");
    locus_runtime other = make_runtime("dsa-opt");
    EXPECT(locus_graph_replay(other, g, 1, NULL), LOCUS_E_WRONG_RUNTIME, "another runtime");
    OK(locus_runtime_destroy(other));
    OK(locus_graph_free(g));
    CHECK(calls == 1005); /* the argument is freed with the graph */
    EXPECT(locus_graph_free(g), LOCUS_E_HANDLE, "freed");
    EXPECT(locus_graph_replay(rt, g, 1, NULL), LOCUS_E_HANDLE, "freed");

    /* A failing body fails the replay naming the task, and the graph for good. */
    locus_access one_rw[1] = {{x, LOCUS_READ_WRITE, 0, 0}};
    memset(&st, 0, sizeof st);
    st.ntasks = 1;
    st.tasks[0].name = "fails";
    st.tasks[0].body = fail_at_three;
    st.tasks[0].accesses = one_rw;
    st.tasks[0].naccesses = 1;
    OK(locus_graph_record(rt, "failing", record_tasks, &st, &g));
    EXPECT(locus_graph_replay(rt, g, 5, &rep), LOCUS_E_RUN_FAILED, "fails");
    OK(locus_report_free(rep));
    EXPECT(locus_graph_replay(rt, g, 1, NULL), LOCUS_E_STATE, "failed");
    OK(locus_graph_free(g));

    /* Refusals: a weak access, an affinity, a program returning non-zero. */
    locus_access weak[1] = {{x, LOCUS_WEAK_READ, 0, 0}};
    st.tasks[0].accesses = weak;
    EXPECT(locus_graph_record(rt, "weak", record_tasks, &st, &g), LOCUS_E_DECLARATION, "weak");
    CHECK(st.spawned[0] == LOCUS_E_DECLARATION);
    st.tasks[0].accesses = one_rw;
    st.tasks[0].affinity = LOCUS_AFFINITY_NODE;
    EXPECT(locus_graph_record(rt, "placed", record_tasks, &st, &g), LOCUS_E_ARGUMENT, "affinity");
    EXPECT(locus_graph_record(rt, "fails", record_nothing_and_fail, NULL, &g), LOCUS_E_RUN_FAILED,
           "returned 5");
    CHECK(g.bits == 0 || locus_graph_free(g) == LOCUS_E_HANDLE);
    OK(locus_data_free(step));
    OK(locus_data_free(x));
    OK(locus_runtime_destroy(rt));
}

static const test_case TESTS[] = {
    {"status_and_version", test_status_and_version},
    {"settings_errors", test_settings_errors},
    {"settings_reach_the_runtime", test_settings_reach_the_runtime},
    {"runtime_errors", test_runtime_errors},
    {"data_errors", test_data_errors},
    {"shared_data", test_shared_data},
    {"run_views_and_ranges", test_run_views_and_ranges},
    {"partitions", test_partitions},
    {"registered_memory", test_registered_memory},
    {"memory_costs", test_memory_costs},
    {"migrate_now", test_migrate_now},
    {"migrate_on_next_touch", test_migrate_on_next_touch},
    {"free_memory", test_free_memory},
    {"scope_migrate", test_scope_migrate},
    {"team_strict_children", test_team_strict_children},
    {"team_move", test_team_move},
    {"attached_data", test_attached_data},
    {"team_errors", test_team_errors},
    {"spawn_errors", test_spawn_errors},
    {"failed_runs", test_failed_runs},
    {"refused_spawns_fail_the_run", test_refused_spawns_fail_the_run},
    {"handle_kinds", test_handle_kinds},
    {"failed_tasks_leave_the_last_complete_version",
     test_failed_tasks_leave_the_last_complete_version},
    {"recorded_graphs", test_recorded_graphs},
    {"arguments_and_destructors", test_arguments_and_destructors},
    {"contexts", test_contexts},
    {"nested_fib", test_nested_fib},
    {"wait_refused", test_wait_refused},
    {"deep_waits", test_deep_waits},
    {"ctx_errors", test_ctx_errors},
    {"unrun_tasks_free_their_argument", test_unrun_tasks_free_their_argument},
    {"runtime_destroyed_by_its_run", test_runtime_destroyed_by_its_run},
};

int main(int argc, char **argv) {
    size_t n = sizeof TESTS / sizeof TESTS[0];
    int passed = 0, failed = 0, ran = 0;
    for (size_t i = 0; i < n; i++) {
        if (argc > 1 && strcmp(argv[1], TESTS[i].name) != 0) continue;
        int before = failures;
        TESTS[i].run();
        ran++;
        /* Every test frees every handle it made. */
        size_t live = 1;
        OK(locus_live_handles(&live));
        if (live != 0) {
            fprintf(stderr, "%s left %zu live handles\n", TESTS[i].name, live);
            failures++;
        }
        EXPECT(locus_live_handles(NULL), LOCUS_E_NULL, "count");
        if (failures == before) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "FAILED: %s\n", TESTS[i].name);
        }
    }
    if (ran == 0) {
        fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "");
        return 2;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
