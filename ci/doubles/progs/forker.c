/*
 * forker N
 *
 * Parent launches N kernels ("sleep_1us", legacy default stream) and
 * synchronizes, then fork()s.  The child launches N more, synchronizes,
 * prints its line and counters (which include the parent's pre-fork counts,
 * as memory is copied) and exits 0.  The parent waits for the child, then
 * launches N more.  Lines are tagged with the role and pid.
 */
#include "cw_prog.h"
#include "cw_kernels.h"

#include <sys/wait.h>
#include <unistd.h>

static long launch_n(long n)
{
    for (long i = 0; i < n; i++)
        CHECK(cw_launch(CW_KERNEL(sleep_1us), NULL));
    CHECK(cudaDeviceSynchronize());
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        CW_DIE("usage: forker N");
    long n = cw_arg(argc, argv, 1, 0);
    long before = launch_n(n);
    printf("parent pid=%d launches_before_fork=%ld\n", (int)getpid(), before);
    fflush(stdout); /* or the child would print the buffered lines again */

    pid_t pid = fork();
    if (pid < 0)
        CW_DIE("fork failed");
    if (pid == 0) {
        long c = launch_n(n);
        printf("child pid=%d launches=%ld\n", (int)getpid(), c);
        cw_dump_counters();
        exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        CW_DIE("waitpid failed");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        CW_DIE("child failed (status 0x%x)", status);
    printf("parent pid=%d child_exit=0\n", (int)getpid());
    long after = launch_n(n);
    printf("parent pid=%d launches_after_fork=%ld\n", (int)getpid(), after);
    printf("parent pid=%d launches_total=%ld\n", (int)getpid(), before + after);
    cw_dump_counters();
    return 0;
}
