/*
 * first_call N
 *
 * Times a process's first calls apart from its steady state (issue 26), each with CLOCK_MONOTONIC:
 * cuInit (the first hooked call; under the shim at level 4 the first recorded one, which reserves
 * and pre-faults the ring), cuStreamCreate, the first two cuStreamQuery calls and the mean of the
 * next N. Prints "init_ns=", "create_ns=", "first_ns=", "second_ns=" and "steady_ns=" lines.
 */
#include "cw_prog.h"
#include "cw_cuda.h"

int main(int argc, char **argv)
{
    long n = cw_arg(argc, argv, 1, 100000);
    double ta = cw_now_ns();
    if (cuInit(0) != CUDA_SUCCESS)
        CW_DIE("cuInit failed");
    double tb = cw_now_ns();
    CUstream s;
    if (cuStreamCreate(&s, 0) != CUDA_SUCCESS)
        CW_DIE("cuStreamCreate failed");
    double t0 = cw_now_ns();
    (void)cuStreamQuery(s);
    double t1 = cw_now_ns();
    (void)cuStreamQuery(s);
    double t2 = cw_now_ns();
    for (long i = 0; i < n; i++)
        (void)cuStreamQuery(s);
    double t3 = cw_now_ns();
    printf("init_ns=%.0f\ncreate_ns=%.0f\n", tb - ta, t0 - tb);
    printf("first_ns=%.0f\nsecond_ns=%.0f\nsteady_ns=%.2f\n", t1 - t0, t2 - t1, (t3 - t2) / n);
    return 0;
}
