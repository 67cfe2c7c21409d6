/* Tasks naming their block in an `affinity` clause (OpenMP 5.0; clang passes it to the
 * runtime, gcc drops it). Initialisation tasks write each block (depend out, with its
 * length), then rounds of compute tasks update each block, naming it in an affinity
 * clause and an inout dependence. Prints the number of compute tasks, then "ok" when
 * every element holds its expected value. */
#include <stdio.h>
#include <stdlib.h>

#define NB 16
#define BS 8192 /* doubles per block: 64 KiB, 16 pages */
#define ROUNDS 4

int main(void)
{
    double *a;
    if (posix_memalign((void **)&a, 4096, sizeof(double) * NB * BS) != 0)
        return 1;
#pragma omp parallel
#pragma omp single
    {
        for (int b = 0; b < NB; b++) {
#pragma omp task depend(out : a[b * BS : BS]) firstprivate(b)
            for (int i = 0; i < BS; i++)
                a[b * BS + i] = b;
        }
        for (int r = 0; r < ROUNDS; r++)
            for (int b = 0; b < NB; b++) {
#pragma omp task affinity(a[b * BS : BS]) depend(inout : a[b * BS : BS]) firstprivate(b)
                for (int i = 0; i < BS; i++)
                    a[b * BS + i] += 1.0;
            }
#pragma omp taskwait
    }
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < BS; i++)
            if (a[b * BS + i] != b + ROUNDS) {
                printf("a[%d] = %g, expected %d\n", b * BS + i, a[b * BS + i], b + ROUNDS);
                return 1;
            }
    printf("affinity tasks %d\nok\n", NB * ROUNDS);
    free(a);
    return 0;
}
