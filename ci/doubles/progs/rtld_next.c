/*
 * rtld_next
 *
 * Linked against libnext_a.so then libnext_b.so (in that order).  Both
 * define cw_probe(); libnext_a's next_probe() looks cw_probe up with
 * dlsym(RTLD_NEXT, ...), which must find the definition after the CALLER
 * (libnext_a), i.e. libnext_b's, so the correct output is next_probe=2.
 * An interposer that implements RTLD_NEXT relative to itself gets this wrong.
 */
#include "cw_prog.h"

int cw_probe(void);
int next_probe(void);

int main(void)
{
    int direct = cw_probe(), next = next_probe();
    printf("cw_probe=%d\n", direct);
    printf("next_probe=%d\n", next);
    cw_dump_counters();
    if (direct != 1 || next != 2)
        CW_DIE("expected cw_probe=1 next_probe=2");
    return 0;
}
