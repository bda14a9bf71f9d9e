/* phase_probe: the state of a machine's CPU and memory at one moment, for reading scanner timings
 * taken around it (control-experiments/device/phase.sh).
 *   spin:  ns per step of a fixed dependent integer loop (xorshift): the core's clock alone (one
 *          chain keeps few of the core's units busy, so a busy SMT sibling barely slows it).
 *   wide:  ns per step of eight independent chains: the core's full issue width, which a busy
 *          sibling hyperthread on the host takes half of.
 *   touch: ms per MiB to fault in fresh anonymous memory, 4 KiB pages and then advised huge pages,
 *          each three times in one process (the first time pays for finding the memory; later
 *          ones reuse what was just unmapped).
 *   read:  GB/s summing a 512 MiB buffer already faulted in, three passes: memory bandwidth, which
 *          other tenants of the host share (the spin loop does not touch memory).
 * usage: phase_probe MIB [read]   (read: the read passes only) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void touch(size_t mib, int huge) {
    size_t n = mib << 20;
    for (int it = 0; it < 3; it++) {
        char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            perror("mmap");
            exit(1);
        }
        if (huge) madvise(p, n, MADV_HUGEPAGE);
        double t0 = now();
        for (size_t i = 0; i < n; i += 4096) p[i] = 1;
        double ms = (now() - t0) * 1e3;
        printf("touch %s pages, pass %d: %.3f ms/MiB\n", huge ? "huge" : "4k", it + 1, ms / mib);
        munmap(p, n);
    }
}

static void wide(void) {
    uint64_t c[8], steps = 100000000ULL, sum = 0;
    for (int k = 0; k < 8; k++) c[k] = 0x9e3779b97f4a7c15ULL * (k + 1);
    double t0 = now();
    for (uint64_t i = 0; i < steps; i++)
        for (int k = 0; k < 8; k++) {
            c[k] ^= c[k] << 13;
            c[k] ^= c[k] >> 7;
            c[k] ^= c[k] << 17;
        }
    double s = now() - t0;
    for (int k = 0; k < 8; k++) sum += c[k];
    printf("wide: %.3f ns/step of 8 chains (%llx)\n", s * 1e9 / steps, (unsigned long long)(sum & 0xff));
}

static void stream(void) {
    size_t n = (size_t)512 << 20, words = n / 8;
    uint64_t *p = malloc(n), sum = 0;
    if (!p) {
        perror("malloc");
        exit(1);
    }
    for (size_t i = 0; i < words; i++) p[i] = i;
    for (int it = 0; it < 3; it++) {
        double t0 = now();
        for (size_t i = 0; i < words; i++) sum += p[i];
        double s = now() - t0;
        printf("read pass %d: %.2f GB/s (%llx)\n", it + 1, n / s / 1e9, (unsigned long long)(sum & 0xff));
    }
    free(p);
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], 0, 10) : 128;
    if (argc > 2 && argv[2][0] == 'r') {
        wide();
        stream();
        return 0;
    }
    uint64_t x = 0x2545f4914f6cdd1dULL, steps = 200000000ULL;
    double t0 = now();
    for (uint64_t i = 0; i < steps; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    double s = now() - t0;
    printf("spin: %.3f ns/step (%llx)\n", s * 1e9 / steps, (unsigned long long)(x & 0xff));
    wide();
    touch(mib, 0);
    touch(mib, 1);
    stream();
    return 0;
}
