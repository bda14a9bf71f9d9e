/*
 * cw_prog.h - helpers shared by the causeway CI test programs.
 *
 * Programs print results on stdout, one "key=value" fact per line, so a test
 * can diff a run with and without the shim.  They end by printing the call
 * counters of whichever doubles are loaded in the process, looked up with
 * dlopen(RTLD_NOLOAD) + dlsym so that the programs do not link against the
 * counter API (and still work when a double was loaded RTLD_LOCAL, or when a
 * real library was loaded instead).
 */
#ifndef CW_PROG_H
#define CW_PROG_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Print an error on stderr and exit non-zero. */
#define CW_DIE(...)                                                            \
    do {                                                                       \
        fprintf(stderr, __VA_ARGS__);                                          \
        fputc('\n', stderr);                                                   \
        exit(1);                                                               \
    } while (0)

static inline void cw_dump_one(const char *title, const char *lib, const char *fn)
{
    printf("--- %s counters (%s) ---\n", title, lib);
    void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) {
        printf("(not loaded)\n");
        return;
    }
    void (*dump)(FILE *) = (void (*)(FILE *))dlsym(h, fn);
    if (dump)
        dump(stdout);
    else
        printf("(no %s: not a causeway double)\n", fn);
    dlclose(h);
}

/* Print driver (cwd_dump) and runtime (cwr_dump) counters. */
static inline void cw_dump_counters(void)
{
    fflush(stdout);
    cw_dump_one("driver", "libcuda.so.1", "cwd_dump");
    cw_dump_one("runtime", "libcudart.so.13", "cwr_dump");
    printf("--- end counters ---\n");
    fflush(stdout);
}

static inline long cw_arg(int argc, char **argv, int i, long dflt)
{
    if (argc <= i)
        return dflt;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*argv[i] == '\0' || *end != '\0' || v < 0)
        CW_DIE("bad argument '%s' (want a non-negative integer)", argv[i]);
    return v;
}

/* CLOCK_MONOTONIC in nanoseconds, for the programs that time their own calls. */
static inline double cw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#endif /* CW_PROG_H */
