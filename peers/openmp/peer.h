/* What every OpenMP peer shares: its name in reports, which says which compiler (and so
 * which OpenMP runtime: gcc's libgomp or clang's libomp) built it, and strict
 * floating-point contraction, so that no fused multiply-add changes a rounding and the
 * float kernels stay bitwise equal to their sequential references. */
#ifndef LOCUS_PEER_OPENMP_PEER_H
#define LOCUS_PEER_OPENMP_PEER_H

#if defined(__clang__)
#define PEER "openmp-clang"
#pragma STDC FP_CONTRACT OFF
#else
#define PEER "openmp-gcc"
#pragma GCC optimize("fp-contract=off")
#endif

#endif
