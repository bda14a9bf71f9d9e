/* What a program may do to the descriptors around the shim (itests/tests/hardening.rs):
 *
 *   fd_hostile reuse FILE   closes every descriptor from 3 up (as daemons do), opens FILE (it gets the
 *                           lowest numbers, the ring's among them), writes "hello\n", then makes its
 *                           first recorded call (a work token: the shim reserves its ring then) and
 *                           prints FILE's size, which must still be 6.
 *   fd_hostile fork USEC    one thread makes the first recorded call (the shim reserves the ring, which
 *                           takes milliseconds) while the main thread forks after USEC microseconds;
 *                           the child makes a recorded call of its own and exits. Must not hang.
 *
 * libc and include/causeway.h only (weak symbols: without the shim the calls are skipped). */
#define _GNU_SOURCE
#include <causeway.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void *first(void *a) {
    causeway_token_begin_if_traced(0, 1, 1);
    return a;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "reuse") == 0) {
        for (int fd = 3; fd < 1024; fd++) close(fd);
        int null = open("/dev/null", O_RDONLY);
        int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (null < 0 || fd < 0 || write(fd, "hello\n", 6) != 6) return 10;
        causeway_token_begin_if_traced(0, 1, 1);
        struct stat st;
        if (fstat(fd, &st) != 0) return 11;
        printf("fds %d %d, size %lld\n", null, fd, (long long)st.st_size);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "fork") == 0) {
        pthread_t t;
        if (pthread_create(&t, 0, first, 0) != 0) return 10;
        usleep(atoi(argv[2]));
        pid_t p = fork();
        if (p == 0) {
            causeway_token_begin_if_traced(0, 2, 1);
            _exit(0);
        }
        pthread_join(t, 0);
        int st = 0;
        if (p < 0 || waitpid(p, &st, 0) != p) return 11;
        printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        return 0;
    }
    fprintf(stderr, "usage: fd_hostile reuse FILE | fork USEC\n");
    return 2;
}
