/* Locus's `jacobi-2d` over the C API: see stencil_2d.h. */
#include "stencil_2d.h"

static int run(int argc, char **argv, int timed) { return stencil_main(argc, argv, 0, timed); }

int main(int argc, char **argv) { return peer_main(argc, argv, run); }
