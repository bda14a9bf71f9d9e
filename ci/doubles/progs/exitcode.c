/*
 * exitcode K
 *
 * Launches one kernel ("sleep_100us", legacy stream) and, without
 * synchronizing, prints the counters and exits with status K (via exit(), so
 * atexit handlers run while the kernel may still be in flight).
 */
#include "cw_prog.h"
#include "cw_kernels.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        CW_DIE("usage: exitcode K");
    long k = cw_arg(argc, argv, 1, 0);
    if (k > 255)
        CW_DIE("K must be 0..255");
    CHECK(cw_launch(CW_KERNEL(sleep_100us), NULL));
    printf("launches=1\n");
    printf("exit=%ld\n", k);
    cw_dump_counters();
    exit((int)k);
}
