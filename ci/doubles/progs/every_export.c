/*
 * every_export LIBPATH NAMES_FILE
 *
 * dlopen()s LIBPATH (RTLD_NOW | RTLD_LOCAL) and calls every function named in
 * NAMES_FILE (one name per line) once, through dlsym, with every argument zero:
 * twelve zero integer arguments, so any parameter a function has, in a
 * register or on the stack, reads as 0 or NULL.  Meant for the real
 * libcudart.so.13 without a driver (almost every entry point returns 35 before
 * it reads an argument) and for a stub driver.  Each call runs in a child of
 * its own, so a function that dereferences its NULL argument kills only that
 * child.  Prints, per name in file order, "NAME=CODE" (the return value's low
 * 32 bits as a signed int, when in -100000..100000), "NAME=value" (any other
 * value: a pointer, a struct), "NAME crashed=SIG" or "NAME missing".
 */
#include "cw_prog.h"
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef long (*call12)(long, long, long, long, long, long, long, long, long, long, long, long);

int main(int argc, char **argv)
{
    if (argc != 3)
        CW_DIE("usage: every_export LIBPATH NAMES_FILE");
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        CW_DIE("dlopen(%s) failed: %s", argv[1], dlerror());
    FILE *names = fopen(argv[2], "r");
    if (!names)
        CW_DIE("cannot open %s", argv[2]);
    char name[256];
    while (fgets(name, sizeof name, names)) {
        name[strcspn(name, "\r\n")] = 0;
        if (!name[0])
            continue;
        void *f = dlsym(h, name);
        if (!f) {
            printf("%s missing\n", name);
            continue;
        }
        fflush(stdout);
        int fds[2];
        if (pipe(fds) != 0)
            CW_DIE("pipe failed");
        pid_t pid = fork();
        if (pid < 0)
            CW_DIE("fork failed");
        if (pid == 0) {
            close(fds[0]);
            long r = ((call12)f)(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
            int code = (int)r;
            char line[300];
            int n;
            if (code > -100000 && code < 100000 && (long)code == r)
                n = snprintf(line, sizeof line, "%s=%d\n", name, code);
            else if (code > -100000 && code < 100000 && (r >> 32) == 0)
                n = snprintf(line, sizeof line, "%s=%d\n", name, code);
            else
                n = snprintf(line, sizeof line, "%s=value\n", name);
            if (write(fds[1], line, (size_t)n) != n)
                _exit(2);
            _exit(0);
        }
        close(fds[1]);
        char buf[300];
        ssize_t got = read(fds[0], buf, sizeof buf - 1);
        close(fds[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status))
            printf("%s crashed=%d\n", name, WTERMSIG(status));
        else if (got > 0) {
            buf[got] = 0;
            fputs(buf, stdout);
        } else
            printf("%s exited=%d\n", name, WEXITSTATUS(status));
    }
    fclose(names);
    return 0;
}
