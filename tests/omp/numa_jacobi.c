/* A blocked 1-D Jacobi with `depend`, reporting where its compute tasks ran relative to
 * the kernel's placement of the memory they write (tests/numa-vm: four emulated nodes).
 *
 *   numa_jacobi [MIN_PERCENT [BLOCKS [BLOCK_PAGES [ITERATIONS]]]]   (defaults 0 16 32 12)
 *
 * Every block of the two grids is its own page-aligned mapping, first touched by an
 * initialisation task that pins its thread (sched_setaffinity) to the CPUs of node
 * (block mod nodes) while it writes, then restores the thread's mask. The program checks
 * with move_pages (no target nodes) that every page of every block is on its node, before
 * and after the iterations. Each iteration spawns one task per block:
 * depend(in: the block and its two neighbours in the source grid) depend(out: the block
 * in the destination grid). Each compute task records the node of the CPU it runs on
 * (sched_getcpu and /sys/devices/system/node) and the node of its out block's first page
 * (get_mempolicy MPOL_F_NODE | MPOL_F_ADDR). The result is compared bit for bit with the
 * same sweeps run sequentially.
 *
 * Built with -DNUMA_JACOBI_AFFINITY (clang; OpenMP 5.0's task affinity clause, which gcc
 * drops), each compute task also names its out block in an affinity clause:
 * affinity(dst[b][0 : block length]).
 *
 * With NUMA_JACOBI_PIN_COMPUTE=1 in the environment, each compute task also pins its
 * thread to its out block's node (as the initialisation does) before it records where it
 * runs: whatever the runtime, every task is then local, which checks the instrument.
 *
 * With NUMA_JACOBI_INIT_NODE=K, every block is first touched on node K instead (the
 * mistake of an initialisation that runs on one node). With NUMA_JACOBI_EXPECT_MOVED=1,
 * the pages are expected to follow the tasks rather than stay put (a runtime that
 * migrates the memory of a task's out dependence to the node it runs on): after the run,
 * every page of every block must be on the node of the compute task that wrote the block
 * last, and the program prints how many blocks ended off their first-touch node. Under
 * gcc a dependence names one address, whose page is what such a runtime moves: run it
 * with blocks of one page (BLOCK_PAGES 1) for whole blocks to move. With
 * NUMA_JACOBI_TEAM=T, the parallel region asks for a team of T threads (num_threads).
 *
 * Prints `omp-jacobi: ...` lines: the nodes, the placement check, and
 * `omp-jacobi: N of M compute tasks on their out block's node (P%)`. Exits 0 when the
 * result verified, every page was where it was first touched (with
 * NUMA_JACOBI_EXPECT_MOVED=1: where its block's last writer ran), and P >= MIN_PERCENT; 1
 * otherwise; 2 on a bad argument or a system call that failed. On a one-node machine every
 * task is local.
 *
 * Build: gcc -fopenmp -O2 numa_jacobi.c -o numa_jacobi   (no libnuma: raw system calls)
 *        clang -fopenmp -O2 -DNUMA_JACOBI_AFFINITY numa_jacobi.c -o numa_jacobi_affinity
 */
#define _GNU_SOURCE
#ifdef NUMA_JACOBI_AFFINITY
#define AFFINITY(...) affinity(__VA_ARGS__)
#else
#define AFFINITY(...)
#endif
#include <errno.h>
#include <omp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_NODES 64
#define MAX_CPUS 1024
#define MPOL_F_NODE (1 << 0)
#define MPOL_F_ADDR (1 << 1)

static int nnodes;
static cpu_set_t node_cpus[MAX_NODES];
static int cpu_node[MAX_CPUS];
static long page;

static void die(const char *what) {
    printf("omp-jacobi: error: %s: %s\n", what, strerror(errno));
    exit(2);
}

/* Reads the online nodes and their CPUs from sysfs; one node 0 with every CPU if absent. */
static void read_nodes(void) {
    for (int c = 0; c < MAX_CPUS; c++) cpu_node[c] = 0;
    nnodes = 0;
    for (int n = 0; n < MAX_NODES; n++) {
        char path[96], list[4096];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
        FILE *f = fopen(path, "r");
        if (!f) break;
        if (!fgets(list, sizeof list, f)) list[0] = '\0';
        fclose(f);
        CPU_ZERO(&node_cpus[n]);
        for (char *p = list; *p && *p != '\n';) {
            char *end;
            long a = strtol(p, &end, 10), b = a;
            if (end == p) break;
            if (*end == '-') b = strtol(end + 1, &end, 10);
            for (long c = a; c <= b && c < MAX_CPUS; c++) {
                CPU_SET((int)c, &node_cpus[n]);
                cpu_node[c] = n;
            }
            p = *end == ',' ? end + 1 : end;
        }
        nnodes = n + 1;
    }
    if (nnodes == 0) {
        nnodes = 1;
        CPU_ZERO(&node_cpus[0]);
        for (int c = 0; c < MAX_CPUS; c++) CPU_SET(c, &node_cpus[0]);
    }
}

static int node_of_page(void *addr) {
    int node = -1;
    if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, addr, MPOL_F_NODE | MPOL_F_ADDR) != 0)
        return -1;
    return node;
}

/* Pages of [p, p + bytes) not on `node`, by move_pages without target nodes. */
static long pages_off_node(double *p, size_t bytes, int node) {
    long n = (long)(bytes / (size_t)page), off = 0;
    void **pages = malloc(sizeof(void *) * (size_t)n);
    int *status = malloc(sizeof(int) * (size_t)n);
    if (!pages || !status) die("malloc");
    for (long i = 0; i < n; i++) pages[i] = (char *)p + i * page;
    if (syscall(SYS_move_pages, 0, (unsigned long)n, pages, NULL, status, 0) != 0)
        die("move_pages");
    for (long i = 0; i < n; i++) off += status[i] != node;
    free(pages);
    free(status);
    return off;
}

static double *map_block(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("mmap");
#ifdef MADV_NOHUGEPAGE
    madvise(p, bytes, MADV_NOHUGEPAGE);
#endif
    return p;
}

static double initial(long b, long i) { return (double)((b * 7919 + i * 104729) % 1000) / 7.0; }

/* One sweep of block b: dst = the mean of each point and its two neighbours (the grid's
 * ends fixed), reading the neighbour blocks' edge points. */
static void sweep(double **src, double **dst, long b, long nb, long n) {
    const double *s = src[b];
    double *d = dst[b];
    for (long i = 0; i < n; i++) {
        double left = i > 0 ? s[i - 1] : (b > 0 ? src[b - 1][n - 1] : s[i]);
        double right = i < n - 1 ? s[i + 1] : (b < nb - 1 ? src[b + 1][0] : s[i]);
        d[i] = (b == 0 && i == 0) || (b == nb - 1 && i == n - 1) ? s[i] : (left + s[i] + right) / 3.0;
    }
}

static int parse(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int main(int argc, char **argv) {
    long min_pct = 0, nb = 16, block_pages = 32, iters = 12;
    if (argc > 5 || (argc > 1 && !parse(argv[1], 0, 100, &min_pct)) ||
        (argc > 2 && !parse(argv[2], 1, 4096, &nb)) ||
        (argc > 3 && !parse(argv[3], 1, 65536, &block_pages)) ||
        (argc > 4 && !parse(argv[4], 1, 100000, &iters))) {
        fprintf(stderr, "usage: numa_jacobi [MIN_PERCENT [BLOCKS [BLOCK_PAGES [ITERATIONS]]]]\n");
        return 2;
    }
    const char *pin = getenv("NUMA_JACOBI_PIN_COMPUTE");
    int pin_compute = pin && strcmp(pin, "1") == 0;
    const char *moved_env = getenv("NUMA_JACOBI_EXPECT_MOVED");
    int expect_moved = moved_env && strcmp(moved_env, "1") == 0;
    long init_node = -1, team = 0;
    const char *team_env = getenv("NUMA_JACOBI_TEAM");
    if (team_env && !parse(team_env, 1, 4096, &team)) {
        fprintf(stderr, "NUMA_JACOBI_TEAM=%s: expected a number of threads\n", team_env);
        return 2;
    }
    const char *init_env = getenv("NUMA_JACOBI_INIT_NODE");
    if (init_env && !parse(init_env, 0, MAX_NODES - 1, &init_node)) {
        fprintf(stderr, "NUMA_JACOBI_INIT_NODE=%s: expected a node number\n", init_env);
        return 2;
    }
    page = sysconf(_SC_PAGESIZE);
    read_nodes();
    if (init_node >= nnodes) {
        fprintf(stderr, "NUMA_JACOBI_INIT_NODE=%ld: the machine has %d nodes\n", init_node, nnodes);
        return 2;
    }
    size_t bytes = (size_t)block_pages * (size_t)page;
    long n = (long)(bytes / sizeof(double));
    double **grid[2];
    /* The node of each block's last writer: its first toucher, then compute tasks. */
    int *last[2];
    for (int g = 0; g < 2; g++) {
        grid[g] = malloc(sizeof(double *) * (size_t)nb);
        last[g] = malloc(sizeof(int) * (size_t)nb);
        if (!grid[g] || !last[g]) die("malloc");
        for (long b = 0; b < nb; b++) {
            grid[g][b] = map_block(bytes);
            last[g][b] = init_node >= 0 ? (int)init_node : (int)(b % nnodes);
        }
    }
    long total = nb * iters, local = 0, ran = 0, unknown = 0;
    if (team == 0) team = omp_get_max_threads();
    printf("omp-jacobi: %d nodes, %ld blocks of %ld pages, %ld iterations, %ld threads%s%s\n", nnodes,
           nb, block_pages, iters, team,
           pin_compute ? ", compute tasks pinned to their out block's node" : "",
#ifdef NUMA_JACOBI_AFFINITY
           ", compute tasks with affinity(out block)"
#else
           ""
#endif
    );

#pragma omp parallel num_threads(team)
#pragma omp single
    {
        /* First touch: block b of both grids on node b mod nodes. */
        for (long b = 0; b < nb; b++) {
#pragma omp task depend(out : grid[0][b][0], grid[1][b][0])
            {
                cpu_set_t saved;
                int node = init_node >= 0 ? (int)init_node : (int)(b % nnodes);
                if (sched_getaffinity(0, sizeof saved, &saved) != 0) die("sched_getaffinity");
                if (nnodes > 1 && sched_setaffinity(0, sizeof node_cpus[node], &node_cpus[node]) != 0)
                    die("sched_setaffinity");
                for (long i = 0; i < n; i++) {
                    grid[0][b][i] = initial(b, i);
                    grid[1][b][i] = 0.0;
                }
                if (nnodes > 1 && sched_setaffinity(0, sizeof saved, &saved) != 0) die("sched_setaffinity");
            }
        }
#pragma omp taskwait
        for (long it = 0; it < iters; it++) {
            double **src = grid[it % 2], **dst = grid[(it + 1) % 2];
            int *writer = last[(it + 1) % 2];
            for (long b = 0; b < nb; b++) {
                long l = b > 0 ? b - 1 : b, r = b < nb - 1 ? b + 1 : b;
#pragma omp task depend(in : src[l][0], src[b][0], src[r][0]) depend(out : dst[b][0]) AFFINITY(dst[b][0 : n])
                {
                    cpu_set_t saved;
                    int node = (int)(b % nnodes);
                    if (pin_compute) {
                        if (sched_getaffinity(0, sizeof saved, &saved) != 0) die("sched_getaffinity");
                        if (nnodes > 1 && sched_setaffinity(0, sizeof node_cpus[node], &node_cpus[node]) != 0)
                            die("sched_setaffinity");
                    }
                    int cpu = sched_getcpu();
                    int here = cpu >= 0 && cpu < MAX_CPUS ? cpu_node[cpu] : -1;
                    int there = node_of_page(dst[b]);
                    writer[b] = here;
                    sweep(src, dst, b, nb, n);
                    if (pin_compute && nnodes > 1 && sched_setaffinity(0, sizeof saved, &saved) != 0)
                        die("sched_setaffinity");
#pragma omp atomic
                    ran++;
                    if (here < 0 || there < 0) {
#pragma omp atomic
                        unknown++;
                    } else if (here == there) {
#pragma omp atomic
                        local++;
                    }
                }
            }
        }
    }

    /* Where the kernel says the pages are, after the run: where they were first touched,
     * or (expected moved) where their block's last writer ran. */
    long off = 0, moved = 0;
    for (int g = 0; g < 2; g++)
        for (long b = 0; b < nb; b++) {
            int first = init_node >= 0 ? (int)init_node : (int)(b % nnodes);
            off += pages_off_node(grid[g][b], bytes, expect_moved ? last[g][b] : first);
            moved += last[g][b] != first && pages_off_node(grid[g][b], bytes, first) == (long)block_pages;
        }
    if (expect_moved)
        printf("omp-jacobi: placement: %ld of %ld pages not on the node of their block's last writer; "
               "%ld of %ld blocks moved off the node that first touched them\n",
               off, 2 * nb * block_pages, moved, 2 * nb);
    else
        printf("omp-jacobi: placement: %ld of %ld pages not on the node that first touched them\n", off,
               2 * nb * block_pages);

    /* The same sweeps, sequentially. */
    double **ref[2];
    for (int g = 0; g < 2; g++) {
        ref[g] = malloc(sizeof(double *) * (size_t)nb);
        if (!ref[g]) die("malloc");
        for (long b = 0; b < nb; b++) {
            ref[g][b] = malloc(bytes);
            if (!ref[g][b]) die("malloc");
            for (long i = 0; i < n; i++) ref[g][b][i] = g == 0 ? initial(b, i) : 0.0;
        }
    }
    for (long it = 0; it < iters; it++)
        for (long b = 0; b < nb; b++) sweep(ref[it % 2], ref[(it + 1) % 2], b, nb, n);
    long wrong = 0;
    for (long b = 0; b < nb; b++)
        wrong += memcmp(ref[iters % 2][b], grid[iters % 2][b], bytes) != 0;

    double pct = total ? 100.0 * (double)local / (double)total : 0.0;
    printf("omp-jacobi: %ld of %ld compute tasks on their out block's node (%.1f%%)%s\n", local, total,
           pct, unknown ? " (some nodes unknown)" : "");
    printf("omp-jacobi: result %s (%ld of %ld blocks differ from sequential sweeps); %ld of %ld "
           "compute tasks ran\n",
           wrong ? "WRONG" : "verified", wrong, nb, ran, total);
    int ok = wrong == 0 && ran == total && off == 0 && pct >= (double)min_pct;
    if (!ok && pct < (double)min_pct)
        printf("omp-jacobi: %.1f%% of compute tasks on their out block's node, below %ld%%\n", pct, min_pct);
    return ok ? 0 : 1;
}
