/* libnext_a.so: defines cw_probe() = 1 and next_probe(), which returns what
 * the NEXT definition of cw_probe after this library (caller-relative
 * dlsym(RTLD_NEXT)) returns, or -1 if there is none. */
#define _GNU_SOURCE
#include <dlfcn.h>

int cw_probe(void) { return 1; }

int next_probe(void)
{
    int (*f)(void) = (int (*)(void))dlsym(RTLD_NEXT, "cw_probe");
    return f ? f() : -1;
}
