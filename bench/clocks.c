/* The hot path's floor: nanoseconds per rdtsc, per clock_gettime(CLOCK_MONOTONIC) (vDSO) and per
 * uncontended atomic fetch-add on this machine. Three rounds of 1e7 each. Build: gcc -O2 bench/clocks.c */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}
static _Atomic unsigned long ctr;
int main(void)
{
    unsigned long s = 0;
    const int n = 10000000;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        for (int i = 0; i < n; i++)
            s += __rdtsc();
        double t1 = now();
        for (int i = 0; i < n; i++)
            s += atomic_fetch_add_explicit(&ctr, 1, memory_order_relaxed);
        double t2 = now();
        for (int i = 0; i < n; i++) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            s += t.tv_nsec;
        }
        double t3 = now();
        printf("rdtsc %.1f ns  fetch_add %.1f ns  clock_gettime %.1f ns\n", (t1 - t0) / n, (t2 - t1) / n,
               (t3 - t2) / n);
    }
    return (int)(s & 1);
}
