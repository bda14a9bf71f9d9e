/*
 * probe_default NAME...
 *
 * How a program finds out whether a runtime is there without linking it: dlsym(RTLD_DEFAULT, NAME)
 * for each NAME, printed as "NAME=found" or "NAME=absent". Linked against nothing but libc (and libdl):
 * bare, every runtime name is absent; a preloaded tracer must not make one appear.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        printf("%s=%s\n", argv[i], dlsym(RTLD_DEFAULT, argv[i]) ? "found" : "absent");
    return 0;
}
