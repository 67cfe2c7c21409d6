/* Random task graphs with `depend`, checked against sequential execution.
 *
 *   taskgraphs [SEED [GRAPHS [RUNS [all|deferred]]]]     (defaults 1, 300, 2, all)
 *
 * Graph g (g = 0 .. GRAPHS-1) is generated from the seed SEED * 1000003 + g by a
 * splitmix64 stream: a few to a few dozen cells of 64-bit state and a program of tasks,
 * each with distinct cells as in, out, inout or mutexinoutset dependences, some tasks
 * undeferred (if(0)), some with nested child tasks (over the cells their parent writes)
 * and a taskwait. Each task's update is deterministic and, for mutexinoutset cells, an
 * addition of a value that does not depend on the cell itself, so every execution the
 * OpenMP 5.0 dependence rules allow gives the same final cells as the program order.
 * The program runs every graph once in program order (the reference), then RUNS times as
 * OpenMP tasks spawned by one thread of a parallel region, and compares the cells and the
 * number of task bodies run. Three spawn shapes give both of gcc's depend layouts:
 * `depend(in: a) depend(inout: b)`, `depend(in: a, b) depend(out: c)` (the [n, nout,
 * addrs] layout) and iterator clauses over every kind with mutexinoutset (the [0, n,
 * nout, nmtx, nin, addrs] layout).
 *
 * `deferred` spawns every task deferred (the same graphs, no if(0)): LLVM 14's libomp,
 * loaded in place of libgomp, fails an assertion (kmp_taskdeps.h) on undeferred tasks
 * with dependences.
 *
 * Prints one line per mismatch naming the seed, graph and run, and a summary; exits 0 when
 * every run matched, 1 on any mismatch, 2 on a bad argument.
 *
 * Build: gcc -fopenmp -O2 taskgraphs.c -o taskgraphs
 */
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CELLS 32
#define MAX_TASKS 160
#define MAX_DEPS 6
#define MAX_CHILDREN 6

enum kind { IN, OUT, INOUT, MTX, NKINDS };

struct task {
    int n[NKINDS];              /* dependences of each kind */
    int cell[NKINDS][MAX_DEPS]; /* their cells, distinct over all kinds */
    int shape;                  /* 0: in+inout, 1: in,in+out, 2: iterators */
    int undeferred;             /* if(0) */
    int work;                   /* spin iterations, to vary the interleaving */
    int nchildren;
    int child[MAX_CHILDREN];    /* indices into the graph's child table */
    uint64_t salt;
};

struct graph {
    int ncells, ntasks, nchild;
    uint64_t init[MAX_CELLS];
    struct task task[MAX_TASKS];
    struct task child[MAX_TASKS * 2];
};

static int deferred_only; /* the `deferred` argument */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int below(uint64_t *s, int n) { return (int)(splitmix(s) % (uint64_t)n); }

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t z = a * 0x9e3779b97f4a7c15ULL + b + 0x632be59bd9b4e019ULL;
    z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL;
    return z ^ (z >> 32);
}

/* Picks distinct cells for a task's dependences: only from `pool` (size npool) for reads
 * and only from `wpool` for writes. Shapes 0 and 1 fix the kinds and counts. */
static void make_task(uint64_t *s, struct task *t, const int *pool, int npool, const int *wpool,
                      int nwpool, int allow_mtx) {
    int used[MAX_CELLS] = {0};
    memset(t, 0, sizeof *t);
    t->salt = splitmix(s);
    t->work = below(s, 4) == 0 ? below(s, 3000) : 0;
    t->undeferred = below(s, 10) == 0 && !deferred_only;
    t->shape = below(s, 3);
    int want[NKINDS] = {0, 0, 0, 0};
    if (t->shape == 0) {
        want[IN] = 1;
        want[INOUT] = 1;
    } else if (t->shape == 1) {
        want[IN] = 2;
        want[OUT] = 1;
    } else {
        want[IN] = below(s, 3);
        want[OUT] = below(s, 2);
        want[INOUT] = below(s, 2);
        want[MTX] = allow_mtx ? below(s, 3) : 0;
    }
    for (int k = 0; k < NKINDS; k++) {
        const int *from = k == IN ? pool : wpool;
        int nfrom = k == IN ? npool : nwpool;
        for (int i = 0; i < want[k]; i++) {
            /* A few tries for a cell not used yet; give up on this dependence if none. */
            for (int tries = 0; tries < 8 && nfrom > 0; tries++) {
                int c = from[below(s, nfrom)];
                if (!used[c]) {
                    used[c] = 1;
                    t->cell[k][t->n[k]++] = c;
                    break;
                }
            }
        }
    }
    /* Shapes 0 and 1 need their exact counts: else the task uses the iterator shape. */
    if ((t->shape == 0 && (t->n[IN] != 1 || t->n[INOUT] != 1)) ||
        (t->shape == 1 && (t->n[IN] != 2 || t->n[OUT] != 1)))
        t->shape = 2;
}

static void make_graph(uint64_t seed, struct graph *g) {
    uint64_t s = seed;
    int all[MAX_CELLS];
    g->ncells = 2 + below(&s, MAX_CELLS - 1);
    g->ntasks = 5 + below(&s, MAX_TASKS - 4);
    g->nchild = 0;
    for (int c = 0; c < g->ncells; c++) {
        g->init[c] = splitmix(&s);
        all[c] = c;
    }
    for (int i = 0; i < g->ntasks; i++) {
        struct task *t = &g->task[i];
        make_task(&s, t, all, g->ncells, all, g->ncells, 1);
        /* Some tasks that write cells (out or inout, exclusively theirs while they run)
         * spawn children over those cells, reading also their own in cells. */
        int nw = t->n[OUT] + t->n[INOUT];
        if (nw > 0 && below(&s, 6) == 0 && g->nchild + MAX_CHILDREN <= MAX_TASKS * 2) {
            int wpool[MAX_DEPS * 2], rpool[MAX_DEPS * 3], nr = 0, nwp = 0;
            for (int k = OUT; k <= INOUT; k++)
                for (int j = 0; j < t->n[k]; j++) wpool[nwp++] = t->cell[k][j];
            for (int j = 0; j < nwp; j++) rpool[nr++] = wpool[j];
            for (int j = 0; j < t->n[IN]; j++) rpool[nr++] = t->cell[IN][j];
            t->nchildren = 1 + below(&s, MAX_CHILDREN);
            for (int j = 0; j < t->nchildren; j++) {
                struct task *ch = &g->child[g->nchild];
                make_task(&s, ch, rpool, nr, wpool, nwp, 1);
                ch->nchildren = 0;
                t->child[j] = g->nchild++;
            }
        }
    }
}

static void spin(int n) {
    volatile uint64_t x = 0;
    for (int i = 0; i < n; i++) x += (uint64_t)i;
    (void)x; /* read once: the variable is used (clang -Werror) */
}

/* The task's own update, after its children (if any) completed. */
static void update(const struct task *t, uint64_t *cells) {
    uint64_t acc = t->salt;
    spin(t->work);
    for (int j = 0; j < t->n[IN]; j++) acc = mix(acc, cells[t->cell[IN][j]]);
    for (int j = 0; j < t->n[INOUT]; j++) {
        uint64_t *c = &cells[t->cell[INOUT][j]];
        *c = mix(acc + (uint64_t)j, *c);
    }
    for (int j = 0; j < t->n[OUT]; j++) cells[t->cell[OUT][j]] = mix(acc, (uint64_t)j + 7);
    /* Mutually exclusive but unordered: an addition of a value independent of the cell. */
    for (int j = 0; j < t->n[MTX]; j++) cells[t->cell[MTX][j]] += mix(acc, (uint64_t)j + 11);
}

static long long bodies; /* task bodies run (atomic updates) */

static void run_seq(const struct graph *g, const struct task *t, uint64_t *cells) {
    for (int j = 0; j < t->nchildren; j++) run_seq(g, &g->child[t->child[j]], cells);
    update(t, cells);
}

static void body(const struct graph *g, const struct task *t, uint64_t *cells);

/* Spawns task t (a sibling of the others spawned by the same task) with its dependences. */
static void spawn(const struct graph *g, const struct task *t, uint64_t *cells) {
    const int *in = t->cell[IN], *out = t->cell[OUT], *io = t->cell[INOUT], *mx = t->cell[MTX];
    int nin = t->n[IN], nout = t->n[OUT], nio = t->n[INOUT], nmx = t->n[MTX];
    int deferred = !t->undeferred;
    /* gcc 12 warns that the iterator bounds are set but not used: they are. */
    (void)nin, (void)nout, (void)nio, (void)nmx;
    switch (t->shape) {
    case 0:
#pragma omp task if (deferred) depend(in : cells[in[0]]) depend(inout : cells[io[0]])
        body(g, t, cells);
        break;
    case 1:
#pragma omp task if (deferred) depend(in : cells[in[0]], cells[in[1]]) depend(out : cells[out[0]])
        body(g, t, cells);
        break;
    default:
#pragma omp task if (deferred) depend(iterator(i = 0 : nin), in : cells[in[i]])                \
    depend(iterator(i = 0 : nout), out : cells[out[i]])                                        \
    depend(iterator(i = 0 : nio), inout : cells[io[i]])                                        \
    depend(iterator(i = 0 : nmx), mutexinoutset : cells[mx[i]])
        body(g, t, cells);
        break;
    }
}

static void body(const struct graph *g, const struct task *t, uint64_t *cells) {
    if (t->nchildren > 0) {
        for (int j = 0; j < t->nchildren; j++) spawn(g, &g->child[t->child[j]], cells);
#pragma omp taskwait
    }
    update(t, cells);
#pragma omp atomic
    bodies++;
}

static long long count(const struct graph *g) {
    long long n = g->ntasks;
    for (int i = 0; i < g->ntasks; i++) n += g->task[i].nchildren;
    return n;
}

static int parse(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int main(int argc, char **argv) {
    long long seed = 1, graphs = 300, runs = 2;
    if (argc == 5 && strcmp(argv[4], "deferred") == 0)
        deferred_only = 1;
    else if (argc == 5 && strcmp(argv[4], "all") != 0)
        argc = 6; /* refused below */
    if (argc > 5 || (argc > 1 && !parse(argv[1], 0, 1LL << 40, &seed)) ||
        (argc > 2 && !parse(argv[2], 1, 1000000, &graphs)) ||
        (argc > 3 && !parse(argv[3], 1, 1000, &runs))) {
        fprintf(stderr, "usage: taskgraphs [SEED [GRAPHS [RUNS [all|deferred]]]] (SEED >= 0, GRAPHS >= 1, "
                        "RUNS >= 1)\n");
        return 2;
    }
    static struct graph g;
    uint64_t ref[MAX_CELLS], cells[MAX_CELLS];
    long long mismatches = 0, tasks = 0;
    for (long long k = 0; k < graphs; k++) {
        uint64_t gseed = (uint64_t)seed * 1000003ULL + (uint64_t)k;
        make_graph(gseed, &g);
        memcpy(ref, g.init, sizeof ref);
        for (int i = 0; i < g.ntasks; i++) run_seq(&g, &g.task[i], ref);
        long long expected = count(&g);
        for (long long r = 0; r < runs; r++) {
            memcpy(cells, g.init, sizeof cells);
            bodies = 0;
#pragma omp parallel
#pragma omp single
            for (int i = 0; i < g.ntasks; i++) spawn(&g, &g.task[i], cells);
            tasks += bodies;
            int bad = -1;
            for (int c = 0; c < g.ncells; c++)
                if (cells[c] != ref[c]) {
                    bad = c;
                    break;
                }
            if (bad >= 0 || bodies != expected) {
                mismatches++;
                printf("MISMATCH seed %lld graph %lld (graph seed %" PRIu64 ") run %lld: %d cells, "
                       "%d tasks; %lld of %lld bodies ran; first differing cell %d\n",
                       seed, k, gseed, r, g.ncells, g.ntasks, bodies, expected, bad);
            }
        }
    }
    printf("taskgraphs seed %lld: %lld graphs x %lld runs, %lld task bodies, %d threads: %s\n", seed,
           graphs, runs, tasks, omp_get_max_threads(),
           mismatches ? "MISMATCH" : "all match sequential execution");
    return mismatches ? 1 : 0;
}
