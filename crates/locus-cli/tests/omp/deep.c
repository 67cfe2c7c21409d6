/* A chain of tasks 200 deep, each waiting for the next in a taskwait, and at its
 * bottom a loop creating 1,000 tasks without dependences. Every task of the chain is
 * pending while the loop runs, but none is queued: the runtime's bound on queued tasks
 * (LOCUS_OMP_THROTTLE) still defers the loop's first tasks, for idle threads to take.
 * Checks its results; prints the number of tasks it created, then "ok". */
#include <omp.h>
#include <stdio.h>

#define DEPTH 200
#define FLAT 1000

static long slot[FLAT];

static void chain(int depth)
{
    if (depth == 0) {
        for (int i = 0; i < FLAT; i++) {
            long v = 7L * i + 3; /* firstprivate: copied at creation */
#pragma omp task firstprivate(i, v)
            slot[i] = v;
        }
#pragma omp taskwait
        return;
    }
#pragma omp task firstprivate(depth)
    chain(depth - 1);
#pragma omp taskwait
}

int main(void)
{
#pragma omp parallel
#pragma omp single
    chain(DEPTH);
    for (int i = 0; i < FLAT; i++)
        if (slot[i] != 7L * i + 3) {
            printf("slot %d: %ld\n", i, slot[i]);
            return 1;
        }
    printf("tasks %d\nok\n", DEPTH + FLAT);
    return 0;
}
