/* Locus's `bicgstab` (crates/locus-bench/src/bicgstab.rs) as OpenMP tasks with `depend`
 * clauses: the same iteration, task by task (two products, three dot products as
 * per-partition partial sums and one combine task adding them in partition order, the
 * vector updates per partition), `affinity` on each task's output slice in the strict and
 * non-strict modes (sparse.h). The thread submitting the iterations waits for each
 * (`taskwait`) and reads the residual, as Locus's solver task does. b = A x* for Locus's
 * x*, from x = 0; stops when |r| <= 10^-DIGITS |b| or after MAX_ITERATIONS.
 *
 * Usage: bicgstab [MESH PARTITIONS DIGITS MAX_ITERATIONS [none|init|strict|non-strict]]
 * (default 128 16 8 2000 strict, Locus's small size). Prints one JSON object; exit status
 * 1 when the solution differs (bitwise) from the sequential solve or the true residual
 * exceeds ten times the one reached, 2 on bad arguments. */
#include "sparse.h"

enum { RHO, ALPHA, OMEGA, BETA, RR, BB, SCALARS };

struct state {
    const struct csr *a;
    const long *start;
    long parts;
    double *b, *x, *r, *rhat, *p, *v, *s, *t, *partial; /* partial: two per partition */
    double sc[SCALARS];
};

static double dot(const double *u, const double *w, long r0, long r1) {
    double sum = 0.0;
    for (long i = r0; i < r1; i++) sum += u[i] * w[i];
    return sum;
}

/* omega = (t, s) / (t, t), or 0 when t = 0: then s = 0, the half step solved the system. */
static double omega(double ts, double tt) { return tt == 0.0 ? 0.0 : ts / tt; }

/* beta = (rho' / rho)(alpha / omega), or 0 when omega = 0: the system is solved. */
static double beta(double rho_next, double rho, double alpha, double omega) {
    return omega == 0.0 ? 0.0 : (rho_next / rho) * (alpha / omega);
}

static void combine(struct state *z, double sums[2]) {
    sums[0] = sums[1] = 0.0;
    for (long q = 0; q < z->parts; q++) sums[0] += z->partial[2 * q], sums[1] += z->partial[2 * q + 1];
}

#define SLICE(v, q) v[z->start[q]]
#define LEN(q) (z->start[q + 1] - z->start[q])

/* The first and last partitions whose slices partition q's columns touch. */
static void halo(const struct state *z, long q, long *f, long *l) {
    long lo = z->a->rows, hi = 0;
    for (long k = z->a->row_ptr[z->start[q]]; k < z->a->row_ptr[z->start[q + 1]]; k++) {
        if (z->a->col[k] < lo) lo = z->a->col[k];
        if (z->a->col[k] + 1 > hi) hi = z->a->col[k] + 1;
    }
    *f = q, *l = q;
    while (*f > 0 && z->start[*f] > lo) (*f)--;
    while (*l + 1 < z->parts && z->start[*l + 1] < hi) (*l)++;
}

/* Submits one iteration. */
static void iteration(struct state *z, enum mode mode, const long *first, const long *last) {
    int hint = mode >= MODE_STRICT;
    double *sc = z->sc;
    for (long q = 0; q < z->parts; q++) {
        long r0 = z->start[q], r1 = z->start[q + 1];
        long len __attribute__((unused)) = LEN(q); /* for AFFINITY */
        double *p = z->p, *v = z->v;
        if (hint) {
#pragma omp task depend(iterator(j = first[q] : last[q] + 1), in: p[z->start[j]]) depend(out: v[r0]) AFFINITY(v[r0:len])
            product_rows(z->a, r0, r1, p, v);
        } else {
#pragma omp task depend(iterator(j = first[q] : last[q] + 1), in: p[z->start[j]]) depend(out: v[r0])
            product_rows(z->a, r0, r1, p, v);
        }
#pragma omp task depend(in: z->rhat[r0], v[r0]) depend(out: z->partial[2 * q]) AFFINITY(v[r0:len])
        z->partial[2 * q] = dot(z->rhat, v, r0, r1), z->partial[2 * q + 1] = 0.0;
    }
#pragma omp task depend(iterator(j = 0 : z->parts), in: z->partial[2 * j]) depend(inout: sc[0])
    {
        double s[2];
        combine(z, s);
        sc[ALPHA] = sc[RHO] / s[0];
    }
    for (long q = 0; q < z->parts; q++) {
        long r0 = z->start[q], r1 = z->start[q + 1];
        long len __attribute__((unused)) = LEN(q); /* for AFFINITY */
#pragma omp task depend(in: sc[0], z->r[r0], z->v[r0]) depend(out: z->s[r0]) AFFINITY(z->s[r0:len])
        for (long i = r0; i < r1; i++) z->s[i] = z->r[i] - sc[ALPHA] * z->v[i];
    }
    for (long q = 0; q < z->parts; q++) {
        long r0 = z->start[q], r1 = z->start[q + 1];
        long len __attribute__((unused)) = LEN(q); /* for AFFINITY */
        double *s = z->s, *t = z->t;
#pragma omp task depend(iterator(j = first[q] : last[q] + 1), in: s[z->start[j]]) depend(out: t[r0]) AFFINITY(t[r0:len])
        product_rows(z->a, r0, r1, s, t);
#pragma omp task depend(in: t[r0], s[r0]) depend(out: z->partial[2 * q]) AFFINITY(t[r0:len])
        z->partial[2 * q] = dot(t, s, r0, r1), z->partial[2 * q + 1] = dot(t, t, r0, r1);
    }
#pragma omp task depend(iterator(j = 0 : z->parts), in: z->partial[2 * j]) depend(inout: sc[0])
    {
        double s[2];
        combine(z, s);
        sc[OMEGA] = omega(s[0], s[1]);
    }
    for (long q = 0; q < z->parts; q++) {
        long r0 = z->start[q], r1 = z->start[q + 1];
        long len __attribute__((unused)) = LEN(q); /* for AFFINITY */
#pragma omp task depend(in: sc[0], z->p[r0], z->s[r0], z->t[r0]) depend(inout: z->x[r0]) \
    depend(out: z->r[r0], z->partial[2 * q]) AFFINITY(z->x[r0:len])
        {
            for (long i = r0; i < r1; i++) {
                z->x[i] = z->x[i] + sc[ALPHA] * z->p[i] + sc[OMEGA] * z->s[i];
                z->r[i] = z->s[i] - sc[OMEGA] * z->t[i];
            }
            z->partial[2 * q] = dot(z->rhat, z->r, r0, r1), z->partial[2 * q + 1] = dot(z->r, z->r, r0, r1);
        }
    }
#pragma omp task depend(iterator(j = 0 : z->parts), in: z->partial[2 * j]) depend(inout: sc[0])
    {
        double s[2];
        combine(z, s);
        sc[RR] = s[1];
        sc[BETA] = beta(s[0], sc[RHO], sc[ALPHA], sc[OMEGA]);
        sc[RHO] = s[0];
    }
    for (long q = 0; q < z->parts; q++) {
        long r0 = z->start[q], r1 = z->start[q + 1];
        long len __attribute__((unused)) = LEN(q); /* for AFFINITY */
#pragma omp task depend(in: sc[0], z->r[r0], z->v[r0]) depend(inout: z->p[r0]) AFFINITY(z->p[r0:len])
        for (long i = r0; i < r1; i++) z->p[i] = z->r[i] + sc[BETA] * (z->p[i] - sc[OMEGA] * z->v[i]);
    }
    (void)hint;
}

int main(int argc, char **argv) {
    long mesh = 128, parts = 16, digits = 8, max_it = 2000;
    enum mode mode = MODE_STRICT;
    if (argc != 1 && argc != 5 && argc != 6) goto usage;
    if (argc >= 5 && (!(mesh = positive(argv[1])) || !(parts = positive(argv[2])) || !(digits = positive(argv[3])) ||
                      !(max_it = positive(argv[4]))))
        goto usage;
    if (argc == 6 && !parse_mode(argv[5], &mode)) goto usage;
    if (mesh > 65535 || parts > mesh * mesh || digits > 300) goto usage;

    struct csr a = laplacian(mesh);
    long n = a.rows;
    double tol = pow(10.0, -(double)digits);
    struct state st = {&a, partition_by_nnz(&a, parts), parts};
    struct state *z = &st;
    double **vecs[] = {&st.b, &st.x, &st.r, &st.rhat, &st.p, &st.v, &st.s, &st.t};
    for (int k = 0; k < 8; k++) *vecs[k] = malloc(n * sizeof(double));
    st.partial = malloc(2 * parts * sizeof(double));
    long *first = malloc(parts * sizeof(long)), *last = malloc(parts * sizeof(long));
    for (long q = 0; q < parts; q++) halo(z, q, &first[q], &last[q]);
    long iterations = 0;

    double t0 = omp_get_wtime();
#pragma omp parallel
    {
        /* The initialisation: b = A x*, x = 0, r = r^ = p = b, v = s = t = 0, (b, b). */
#define INIT(q)                                                                                           \
    do {                                                                                                  \
        long r0 = z->start[q], r1 = z->start[q + 1];                                                      \
        for (long i = r0; i < r1; i++) {                                                                  \
            double sum = 0.0;                                                                             \
            for (long k = a.row_ptr[i]; k < a.row_ptr[i + 1]; k++) sum += a.val[k] * initial(a.col[k]);   \
            z->b[i] = sum, z->x[i] = 0.0, z->r[i] = z->rhat[i] = z->p[i] = sum;                           \
            z->v[i] = z->s[i] = z->t[i] = 0.0;                                                            \
        }                                                                                                 \
        z->partial[2 * q] = z->partial[2 * q + 1] = dot(z->b, z->b, r0, r1);                              \
    } while (0)
        if (mode == MODE_NONE) {
#pragma omp single
            for (long q = 0; q < parts; q++) {
#pragma omp task firstprivate(q)
                INIT(q);
            }
        } else {
#pragma omp for schedule(static)
            for (long q = 0; q < parts; q++) INIT(q);
        }
#pragma omp single
        {
            double s[2];
            combine(z, s);
            memset(st.sc, 0, sizeof st.sc);
            st.sc[RHO] = st.sc[RR] = st.sc[BB] = s[0];
            while (!(st.sc[RR] <= tol * tol * st.sc[BB]) && iterations < max_it) {
                iteration(z, mode, first, last);
#pragma omp taskwait
                iterations++;
            }
        }
    }
    double wall = omp_get_wtime() - t0;
    double reached = st.sc[BB] == 0.0 ? sqrt(st.sc[RR]) : sqrt(st.sc[RR] / st.sc[BB]);

    /* The sequential reference: the same operations over the whole vectors. */
    double *w[8];
    for (int k = 0; k < 8; k++) w[k] = calloc(n, sizeof(double));
    double *b = w[0], *x = w[1], *r = w[2], *rhat = w[3], *p = w[4], *v = w[5], *s = w[6], *t = w[7];
    for (long i = 0; i < n; i++) {
        double sum = 0.0;
        for (long k = a.row_ptr[i]; k < a.row_ptr[i + 1]; k++) sum += a.val[k] * initial(a.col[k]);
        b[i] = r[i] = rhat[i] = p[i] = sum;
    }
#define DOT(u, q) ({ double tot = 0.0; for (long h = 0; h < parts; h++) tot += dot(u, q, st.start[h], st.start[h + 1]); tot; })
    double sc[SCALARS] = {0};
    sc[RHO] = sc[RR] = sc[BB] = DOT(b, b);
    long want_it = 0;
    while (!(sc[RR] <= tol * tol * sc[BB]) && want_it < max_it) {
        product_rows(&a, 0, n, p, v);
        sc[ALPHA] = sc[RHO] / DOT(rhat, v);
        for (long i = 0; i < n; i++) s[i] = r[i] - sc[ALPHA] * v[i];
        product_rows(&a, 0, n, s, t);
        sc[OMEGA] = omega(DOT(t, s), DOT(t, t));
        for (long i = 0; i < n; i++) {
            x[i] = x[i] + sc[ALPHA] * p[i] + sc[OMEGA] * s[i];
            r[i] = s[i] - sc[OMEGA] * t[i];
        }
        double rho = DOT(rhat, r);
        sc[RR] = DOT(r, r);
        sc[BETA] = beta(rho, sc[RHO], sc[ALPHA], sc[OMEGA]);
        sc[RHO] = rho;
        for (long i = 0; i < n; i++) p[i] = r[i] + sc[BETA] * (p[i] - sc[OMEGA] * v[i]);
        want_it++;
    }
    /* The true residual of the solution. */
    double rr = 0.0, bb = 0.0;
    for (long i = 0; i < n; i++) {
        double ax = 0.0;
        for (long k = a.row_ptr[i]; k < a.row_ptr[i + 1]; k++) ax += a.val[k] * st.x[a.col[k]];
        rr += (b[i] - ax) * (b[i] - ax), bb += b[i] * b[i];
    }
    double residual = bb == 0.0 ? sqrt(rr) : sqrt(rr / bb);
    int ok = want_it == iterations && memcmp(x, st.x, n * sizeof(double)) == 0 &&
             residual <= 10.0 * (reached > tol ? reached : tol);
    long tasks = iterations * (7 * parts + 3);
    printf("{\"peer\": \"" PEER "\", \"bench\": \"bicgstab\", \"threads\": %d, \"tasks\": %ld, "
           "\"wall_s\": %.6f, \"ns_per_task\": %.1f, \"verified\": %s, \"iterations\": %ld, "
           "\"true_residual\": %.3e, \"params\": {\"mesh\": %ld, \"partitions\": %ld, "
           "\"tolerance_digits\": %ld, \"max_iterations\": %ld, \"affinity\": \"%s\"}}\n",
           omp_get_max_threads(), tasks, wall, tasks ? wall * 1e9 / tasks : 0.0, ok ? "true" : "false", iterations,
           residual, mesh, parts, digits, max_it, mode_names[mode]);
    return ok ? 0 : 1;
usage:
    fprintf(stderr, "usage: bicgstab [MESH PARTITIONS DIGITS MAX_ITERATIONS [none|init|strict|non-strict]] (MESH <= 65535, PARTITIONS <= MESH^2, DIGITS <= 300)\n");
    return 2;
}
