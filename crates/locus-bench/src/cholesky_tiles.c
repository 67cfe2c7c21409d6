/* Locus's tile kernels of the tiled Cholesky factorisation: the functions of
 * peers/common/cholesky_tiles.h, which the peers include too, given external names for
 * crates/locus-bench/src/cholesky.rs. Compiled by the crate's build script with
 * -O2 -ffp-contract=off, as the peers are. */
#include "../../../peers/common/cholesky_tiles.h"

void locus_cholesky_potrf(long b, double *a) { cholesky_potrf(b, a); }
void locus_cholesky_trsm(long b, const double *l, double *a) { cholesky_trsm(b, l, a); }
void locus_cholesky_syrk(long b, const double *a, double *c) { cholesky_syrk(b, a, c); }
void locus_cholesky_gemm(long b, const double *a, const double *bt, double *c) {
    cholesky_gemm(b, a, bt, c);
}
double locus_cholesky_initial(long n, long i, long j) { return cholesky_initial(n, i, j); }
