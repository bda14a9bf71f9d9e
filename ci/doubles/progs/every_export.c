/*
 * every_export LIBPATH NAMES_FILE
 *
 * dlopen()s LIBPATH (RTLD_NOW | RTLD_LOCAL) and calls every function named in
 * NAMES_FILE (one name per line) once, through dlsym, with every argument zero:
 * twelve zero integer arguments, so any parameter a function has, in a
 * register or on the stack, reads as 0 or NULL.  Meant for the real
 * libcudart.so.13 without a driver (almost every entry point returns 35 before
 * it reads an argument) and for a stub driver.  The calls run in a child
 * process, in file order; a function that dereferences its NULL argument kills
 * the child, and a new child goes on with the next name (so a traced run has a
 * ring per child: one, plus one per crash).  Prints, per name in file order,
 * "NAME=CODE" (the return value's low 32 bits as a signed int, when in
 * -100000..100000), "NAME=value" (any other value: a pointer, a struct),
 * "NAME crashed=SIG" or "NAME missing".
 */
#include "cw_prog.h"
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef long (*call12)(long, long, long, long, long, long, long, long, long, long, long, long);

#define MAX_NAMES 4096

static char *names[MAX_NAMES];
static int count;

/* In the child: calls names[from..] in order, one "NAME=..." line each on fd, then exits 0. */
static void call_from(void *h, int from, int fd)
{
    for (int i = from; i < count; i++) {
        char line[300];
        int n;
        void *f = dlsym(h, names[i]);
        if (!f) {
            n = snprintf(line, sizeof line, "%s missing\n", names[i]);
        } else {
            long r = ((call12)f)(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
            int code = (int)r;
            if (code > -100000 && code < 100000 && ((long)code == r || (r >> 32) == 0))
                n = snprintf(line, sizeof line, "%s=%d\n", names[i], code);
            else
                n = snprintf(line, sizeof line, "%s=value\n", names[i]);
        }
        if (write(fd, line, (size_t)n) != n)
            _exit(2);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        CW_DIE("usage: every_export LIBPATH NAMES_FILE");
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        CW_DIE("dlopen(%s) failed: %s", argv[1], dlerror());
    FILE *in = fopen(argv[2], "r");
    if (!in)
        CW_DIE("cannot open %s", argv[2]);
    char name[256];
    while (count < MAX_NAMES && fgets(name, sizeof name, in)) {
        name[strcspn(name, "\r\n")] = 0;
        if (name[0])
            names[count++] = strdup(name);
    }
    fclose(in);
    int next = 0;
    while (next < count) {
        fflush(stdout);
        int fds[2];
        if (pipe(fds) != 0)
            CW_DIE("pipe failed");
        pid_t pid = fork();
        if (pid < 0)
            CW_DIE("fork failed");
        if (pid == 0) {
            close(fds[0]);
            call_from(h, next, fds[1]);
        }
        close(fds[1]);
        FILE *lines = fdopen(fds[0], "r");
        char line[300];
        while (fgets(line, sizeof line, lines)) {
            fputs(line, stdout);
            next++;
        }
        fclose(lines);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status) && next < count) {
            printf("%s crashed=%d\n", names[next], WTERMSIG(status));
            next++;
        } else if (next < count) {
            CW_DIE("child exited %d before %s", WEXITSTATUS(status), names[next]);
        }
    }
    return 0;
}
