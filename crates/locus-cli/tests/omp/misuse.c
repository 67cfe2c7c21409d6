/* Misuse Locus's OpenMP runtime reports in one line, exit status 2: argv[1] is
 * "destroyed-lock" (a destroyed lock set) or "barrier-in-task" (a barrier reached from
 * an explicit task, through a function gcc cannot see into). */
#include <omp.h>
#include <stdio.h>
#include <string.h>

void __attribute__((noinline)) wait_all(void) {
    #pragma omp barrier
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "destroyed-lock")) {
        omp_lock_t l;
        omp_init_lock(&l);
        omp_destroy_lock(&l);
        omp_set_lock(&l);
    } else {
        #pragma omp parallel
        #pragma omp single
        {
            #pragma omp task
            wait_all();
        }
    }
    printf("ran on\n");
    return 0;
}
