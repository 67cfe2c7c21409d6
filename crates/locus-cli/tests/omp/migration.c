/* Migration of dependence memory. BLOCKS blocks of one page each (page-aligned: the
 * page holding a dependence's address, its extent for gcc, is the whole block) are first
 * written by initialisation tasks of a team of 2: member t creates the tasks of the
 * blocks b with b % 2 == t, and in a team smaller than the runtime's a task stays on its
 * creator's worker, so block b is first written on worker b % 2. Then the one member of a
 * team of 1 updates every block STEPS times with tasks `depend(inout: block)`, all on
 * worker 0: with 4 workers on 4 virtual nodes, the odd blocks lie on node 1 and the
 * tasks run on node 0. Prints "blocks B", "steps S" and "ok" once every block holds its
 * expected values. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 8
#define LEN 512 /* doubles: one page */
#define STEPS 10

int main(void) {
    double *blk[BLOCKS];
    for (int b = 0; b < BLOCKS; b++)
        if (posix_memalign((void **)&blk[b], 4096, LEN * sizeof(double))) return 1;
    #pragma omp parallel num_threads(2)
    {
        int t = omp_get_thread_num();
        for (int b = 0; b < BLOCKS; b++) {
            double *p = blk[b];
            if (b % 2 == t) {
                #pragma omp task depend(out: p[0]) firstprivate(p, b)
                for (int i = 0; i < LEN; i++) p[i] = b * LEN + i;
            }
        }
    }
    #pragma omp parallel num_threads(1)
    for (int s = 0; s < STEPS; s++)
        for (int b = 0; b < BLOCKS; b++) {
            double *p = blk[b];
            #pragma omp task depend(inout: p[0]) firstprivate(p)
            for (int i = 0; i < LEN; i++) p[i] += 1.0;
        }
    for (int b = 0; b < BLOCKS; b++)
        for (int i = 0; i < LEN; i++)
            if (blk[b][i] != b * LEN + i + STEPS) {
                printf("FAIL block %d element %d\n", b, i);
                return 1;
            }
    printf("blocks %d\nsteps %d\nok\n", BLOCKS, STEPS);
    return 0;
}
