/* Part of libomp.so.5, the shim clang-compiled programs load (README, "Symbol
 * versions"): what the trampolines cannot express.
 *
 * __kmpc_fork_call is variadic: the outlined function's shared variables follow
 * `argc`. It gathers them into an array and hands the region to the runtime
 * (lomp_kmp_fork_call in liblocus_omp.so), which calls the outlined function on each
 * member with the array spread back into arguments.
 *
 * The allocator and memory-space handles are data that clang's omp.h declares as
 * `extern const` objects in C; their values are those of the OpenMP specification's
 * predefined allocators, as omp.h's C++ enumeration numbers them. */
#include <stdarg.h>
#include <stdint.h>

typedef void (*kmpc_micro)(int32_t *gtid, int32_t *tid, ...);

extern void lomp_kmp_fork_call(void *loc, int32_t argc, kmpc_micro microtask, void **argv);
extern _Noreturn void lomp_refuse(const char *what);

/* More shared variables than this is not a program a compiler wrote. */
#define MAX_ARGS 4096

void __kmpc_fork_call(void *loc, int32_t argc, kmpc_micro microtask, ...)
{
    if (argc < 0 || argc > MAX_ARGS)
        lomp_refuse("a parallel region with a negative or huge count of shared variables (__kmpc_fork_call)");
    void *argv[argc > 0 ? argc : 1];
    va_list ap;
    va_start(ap, microtask);
    for (int32_t i = 0; i < argc; i++)
        argv[i] = va_arg(ap, void *);
    va_end(ap);
    lomp_kmp_fork_call(loc, argc, microtask, argv);
}

const uintptr_t omp_null_allocator = 0;
const uintptr_t omp_default_mem_alloc = 1;
const uintptr_t omp_large_cap_mem_alloc = 2;
const uintptr_t omp_const_mem_alloc = 3;
const uintptr_t omp_high_bw_mem_alloc = 4;
const uintptr_t omp_low_lat_mem_alloc = 5;
const uintptr_t omp_cgroup_mem_alloc = 6;
const uintptr_t omp_pteam_mem_alloc = 7;
const uintptr_t omp_thread_mem_alloc = 8;
const uintptr_t omp_default_mem_space = 0;
const uintptr_t omp_large_cap_mem_space = 1;
const uintptr_t omp_const_mem_space = 2;
const uintptr_t omp_high_bw_mem_space = 3;
const uintptr_t omp_low_lat_mem_space = 4;
