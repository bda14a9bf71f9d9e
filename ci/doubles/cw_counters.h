/*
 * cw_counters.h - per-symbol call counters shared by the two doubles.
 *
 * Each double keeps a static table of exported symbol names (an X-macro list)
 * and one atomic counter per name.  Every exported entry point bumps its own
 * counter first thing, so a test can tell exactly which exported variant ran
 * (e.g. cuLaunchKernel_ptsz vs cuLaunchKernel), including when it was reached
 * through a function pointer from cuGetProcAddress rather than by symbol.
 */
#ifndef CW_COUNTERS_H
#define CW_COUNTERS_H

/* needs _GNU_SOURCE (qsort_r) defined before the first system header */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long cwc_count(const char *const *names, atomic_long *counts, size_t n,
                      const char *symbol)
{
    if (!symbol)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], symbol) == 0)
            return atomic_load_explicit(&counts[i], memory_order_relaxed);
    return -1;
}

static void cwc_reset(atomic_long *counts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&counts[i], 0, memory_order_relaxed);
}

/* qsort_r comparator: a and b index into the name table passed as arg. */
static int cwc_cmp(const void *a, const void *b, void *arg)
{
    const char *const *names = arg;
    return strcmp(names[*(const size_t *)a], names[*(const size_t *)b]);
}

/* Print "name=count" for every nonzero counter, sorted by name (bytewise). */
static void cwc_dump(const char *const *names, atomic_long *counts, size_t n,
                     FILE *out)
{
    size_t idx[n];
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    qsort_r(idx, n, sizeof idx[0], cwc_cmp, (void *)names);
    for (size_t i = 0; i < n; i++) {
        long c = atomic_load_explicit(&counts[idx[i]], memory_order_relaxed);
        if (c)
            fprintf(out, "%s=%ld\n", names[idx[i]], c);
    }
    fflush(out);
}

#endif /* CW_COUNTERS_H */
