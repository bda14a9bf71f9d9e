/*
 * spin [M]
 *
 * Launches "sleep_0us" kernels on the legacy default stream in a loop:
 * forever if M is 0 or absent, else M times.  Every 10000 launches it
 * synchronizes and prints "progress <launches>" (flushed) - a target for
 * SIGKILL tests.  When M > 0 it ends with "launches=M" and the counters.
 */
#include "cw_prog.h"
#include "cw_kernels.h"

int main(int argc, char **argv)
{
    long m = cw_arg(argc, argv, 1, 0);
    long i;
    for (i = 1; m == 0 || i <= m; i++) {
        CHECK(cw_launch(CW_KERNEL(sleep_0us), NULL));
        if (i % 10000 == 0) {
            CHECK(cudaStreamSynchronize(NULL));
            printf("progress %ld\n", i);
            fflush(stdout);
        }
    }
    CHECK(cudaDeviceSynchronize());
    printf("launches=%ld\n", i - 1);
    cw_dump_counters();
    return 0;
}
