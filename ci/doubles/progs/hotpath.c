/*
 * hotpath N REPS
 *
 * The hot-path benchmark's workload: REPS times, N calls of cuStreamQuery on an idle stream through the
 * driver double (a cheap call, as on a real GPU), each rep timed with CLOCK_MONOTONIC. Prints one
 * "ns_per_call=<float>" line per rep. ci/bench-hotpath.sh runs it bare and under the shim, interleaved,
 * and reports the added nanoseconds per call.
 */
#include "cw_prog.h"
#include "cw_cuda.h"

int main(int argc, char **argv)
{
    long n = cw_arg(argc, argv, 1, 1000000);
    long reps = cw_arg(argc, argv, 2, 7);
    if (cuInit(0) != CUDA_SUCCESS)
        CW_DIE("cuInit failed");
    CUstream s;
    if (cuStreamCreate(&s, 0) != CUDA_SUCCESS)
        CW_DIE("cuStreamCreate failed");
    /* Warm up: first calls resolve symbols and touch the ring's pages. */
    for (long i = 0; i < n / 10; i++)
        (void)cuStreamQuery(s);
    for (long r = 0; r < reps; r++) {
        double t0 = cw_now_ns();
        for (long i = 0; i < n; i++)
            if (cuStreamQuery(s) != CUDA_SUCCESS)
                CW_DIE("cuStreamQuery failed");
        double t1 = cw_now_ns();
        printf("ns_per_call=%.2f\n", (t1 - t0) / n);
    }
    return 0;
}
