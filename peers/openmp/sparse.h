/* What spmv.c and bicgstab.c share: Locus's sparse layout (../common/sparse_csr.h) and the
 * affinity modes of paper 3
 * (Virouleau et al., the OpenMP task affinity clause):
 *
 * - none: initialisation tasks anywhere, so first touch places the pages wherever they ran;
 * - init: the initialisation is a `parallel for schedule(static)` over the partitions, so
 *   each thread first-touches a contiguous run of them (standard OpenMP cannot bind a task
 *   to a thread); compute tasks without hints;
 * - strict, non-strict: as init, and every compute task carries `affinity(...)` on its
 *   output slice where the compiler accepts the OpenMP 5.0 clause (clang and gcc parse it;
 *   both runtimes, libomp and libgomp, ignore it: standard OpenMP has no strict affinity,
 *   so the two modes are the same program here).
 *
 * Every float file turns off contraction (peer.h), so the arithmetic is bitwise Locus's. */
#ifndef LOCUS_PEER_SPARSE_H
#define LOCUS_PEER_SPARSE_H

#include "peer.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sparse_csr.h"

#if defined(_OPENMP) && _OPENMP >= 201811
#define AFFINITY(...) affinity(__VA_ARGS__)
#else
#define AFFINITY(...)
#endif

enum mode { MODE_NONE, MODE_INIT, MODE_STRICT, MODE_NON_STRICT };
static const char *mode_names[] = {"none", "init", "strict", "non-strict"};

static int parse_mode(const char *s, enum mode *m) {
    for (int k = 0; k < 4; k++)
        if (strcmp(s, mode_names[k]) == 0) return *m = (enum mode)k, 1;
    return 0;
}

/* Reads a positive integer argument; 0 when it is not one. */
static long positive(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' && end != s && v > 0 ? v : 0;
}

#endif
