/* A construct Locus's OpenMP runtime does not run (taskloop): the program must stop
 * with one line naming it and exit status 2, never run it wrongly. */
#include <stdio.h>
int main(void) {
    int s = 0;
    #pragma omp parallel
    #pragma omp single
    #pragma omp taskloop reduction(+: s)
    for (int i = 0; i < 10; i++) s += i;
    printf("ran: %d\n", s);
    return 0;
}
