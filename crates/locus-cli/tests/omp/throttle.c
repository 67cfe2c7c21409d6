/* Many tasks without dependences from one creator, and a recursive fib: past the
 * runtime's bound on pending tasks, new ones run at once in their creator. Each flat
 * task works for 10 microseconds, far longer than its creation takes, so that other
 * threads cannot keep the pending tasks below the bound. Checks its results; prints the
 * number of tasks it created, then "ok". */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define FLAT 20000

static long fib(int n, long *tasks)
{
    if (n < 2)
        return n;
    long a, b;
#pragma omp task shared(a) firstprivate(n)
    a = fib(n - 1, tasks);
#pragma omp task shared(b) firstprivate(n)
    b = fib(n - 2, tasks);
#pragma omp taskwait
#pragma omp atomic
    *tasks += 2;
    return a + b;
}

int main(void)
{
    static long slot[FLAT];
    long tasks = 0, f = 0;
#pragma omp parallel
#pragma omp single
    {
        for (int i = 0; i < FLAT; i++) {
            long v = 3L * i + 1; /* firstprivate: copied at creation */
#pragma omp task firstprivate(i, v)
            {
                double until = omp_get_wtime() + 10e-6;
                while (omp_get_wtime() < until)
                    ;
                slot[i] = v;
            }
        }
#pragma omp taskwait
        tasks += FLAT;
        f = fib(22, &tasks);
    }
    for (int i = 0; i < FLAT; i++)
        if (slot[i] != 3L * i + 1) {
            printf("slot %d: %ld\n", i, slot[i]);
            return 1;
        }
    if (f != 17711) {
        printf("fib(22) = %ld\n", f);
        return 1;
    }
    printf("tasks %ld\nok\n", tasks);
    return 0;
}
