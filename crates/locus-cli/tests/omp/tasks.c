/* Explicit tasks on Locus's OpenMP runtime: dependences of every kind in both of gcc's
 * layouts, taskwait, taskgroup, if(0), final, nested tasks. Prints "tasks N" (the
 * explicit tasks it created) and "ok", and exits 0 when every check holds. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int fails;
static int created;
#define CHECK(c) do { if (!(c)) { printf("FAIL line %d: %s\n", __LINE__, #c); fails++; } } while (0)
#define COUNT() do { _Pragma("omp atomic") created++; } while (0)

static long fib(int n) {
    if (n < 2) return n;
    long a, b;
    COUNT();
    #pragma omp task shared(a)
    a = fib(n - 1);
    COUNT();
    #pragma omp task shared(b)
    b = fib(n - 2);
    #pragma omp taskwait
    return a + b;
}

static void spin(void) { for (volatile int i = 0; i < 20000; i++) ; }

int main(void) {
    long f = 0;
    #pragma omp parallel
    #pragma omp single
    f = fib(18);
    CHECK(f == 2584);

    /* A chain of inout tasks, readers between writers: the old layout. */
    int x = 0, seen_bad = 0;
    #pragma omp parallel
    #pragma omp single
    {
        for (int i = 0; i < 50; i++) {
            COUNT();
            #pragma omp task depend(inout: x)
            { int v = x; spin(); x = v + 1; }
            for (int r = 0; r < 3; r++) {
                COUNT();
                #pragma omp task depend(in: x) firstprivate(i)
                { if (x != i + 1) { _Pragma("omp atomic") seen_bad++; } }
            }
        }
        COUNT();
        #pragma omp task depend(out: x)
        x = x * 2;
    }
    CHECK(x == 100 && seen_bad == 0);

    /* mutexinoutset (gcc's 5.0 layout): never two at once, all after the writer,
     * the reader after all of them. */
    int y = 0, inside = 0, overlap = 0, total = 0;
    #pragma omp parallel
    #pragma omp single
    {
        COUNT();
        #pragma omp task depend(out: y)
        { spin(); y = 1; }
        for (int i = 0; i < 20; i++) {
            COUNT();
            #pragma omp task depend(mutexinoutset: y)
            {
                int now;
                #pragma omp atomic capture
                now = ++inside;
                if (now != 1 || y < 1) { _Pragma("omp atomic") overlap++; }
                spin();
                #pragma omp atomic
                total++;
                #pragma omp atomic
                inside--;
            }
        }
        COUNT();
        #pragma omp task depend(in: y)
        { if (total != 20) { _Pragma("omp atomic") overlap++; } }
    }
    CHECK(overlap == 0 && total == 20);

    /* depobj and taskwait depend. */
    int z = 0;
    omp_depend_t obj;
    #pragma omp depobj(obj) depend(inout: z)
    #pragma omp parallel
    #pragma omp single
    {
        for (int i = 0; i < 10; i++) {
            COUNT();
            #pragma omp task depend(depobj: obj)
            { int v = z; spin(); z = v + 1; }
        }
        #pragma omp taskwait depend(in: z)
        if (z != 10) seen_bad++;
    }
    #pragma omp depobj(obj) destroy
    CHECK(z == 10 && seen_bad == 0);

    /* Independent writers of separate locations run; a taskgroup waits for descendants. */
    int cells[64] = {0};
    #pragma omp parallel
    #pragma omp single
    {
        #pragma omp taskgroup
        {
            for (int i = 0; i < 64; i++) {
                COUNT();
                #pragma omp task depend(out: cells[i]) firstprivate(i)
                {
                    COUNT();
                    #pragma omp task firstprivate(i)
                    { spin(); _Pragma("omp atomic") cells[i] += 1; }
                    cells[i] += 0;
                }
            }
        }
        for (int i = 0; i < 64; i++) if (cells[i] != 1) seen_bad++;
    }
    CHECK(seen_bad == 0);

    /* if(0) runs at once, after its dependences; final tasks include their children. */
    int order = 0, undeferred_ok = 0, final_ok = 0;
    #pragma omp parallel
    #pragma omp single
    {
        COUNT();
        #pragma omp task depend(out: order)
        { spin(); order = 1; }
        COUNT();
        #pragma omp task if(0) depend(inout: order)
        { undeferred_ok = (order == 1); order = 2; }
        CHECK(order == 2);
        COUNT();
        #pragma omp task final(1)
        {
            int ok = omp_in_final();
            COUNT();
            #pragma omp task
            { ok = ok && omp_in_final(); }
            final_ok = ok;
        }
        #pragma omp taskwait
    }
    CHECK(undeferred_ok && final_ok);

    /* Tasks outside any region run at once. */
    int outside = 0;
    COUNT();
    #pragma omp task shared(outside)
    outside = 1;
    CHECK(outside == 1);

    printf("tasks %d\n", created);
    if (fails) return 1;
    printf("ok\n");
    return 0;
}
