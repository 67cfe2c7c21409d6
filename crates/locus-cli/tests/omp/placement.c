/* Home placement of tasks by their dependences' memory: blocks first written by
 * initialisation tasks, then updated by compute tasks that name each block inout.
 * Prints "compute N" (the compute tasks) and "ok"; `locus omp --report` says how many
 * tasks had a home and ran on it. */
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 8
#define LEN 1024 /* doubles: two pages per block */
#define STEPS 10

int main(void) {
    double *blk[BLOCKS];
    for (int b = 0; b < BLOCKS; b++)
        if (posix_memalign((void **)&blk[b], 4096, LEN * sizeof(double))) return 1;
    int compute = 0;
    #pragma omp parallel
    #pragma omp single
    {
        for (int b = 0; b < BLOCKS; b++) {
            double *p = blk[b];
            #pragma omp task depend(out: p[0]) firstprivate(p)
            for (int i = 0; i < LEN; i++) p[i] = i;
        }
        for (int s = 0; s < STEPS; s++)
            for (int b = 0; b < BLOCKS; b++) {
                double *p = blk[b];
                compute++;
                #pragma omp task depend(inout: p[0]) firstprivate(p)
                for (int i = 0; i < LEN; i++) p[i] += 1.0;
            }
    }
    for (int b = 0; b < BLOCKS; b++)
        for (int i = 0; i < LEN; i++)
            if (blk[b][i] != i + STEPS) { printf("FAIL block %d element %d\n", b, i); return 1; }
    printf("compute %d\nok\n", compute);
    return 0;
}
