/*
 * populate DIR MIB: what the kernel charges for a ring's reservation (issue 26), the floor for the
 * shim's first recorded call. In DIR, a fresh file of MIB MiB, mapped shared, made writable page by
 * page in each way the shim could: posix_fallocate then MADV_POPULATE_WRITE (what the shim does),
 * MADV_POPULATE_WRITE alone, and a write to each page (what kernels before 5.14 get); and an
 * anonymous private mapping populated the same way, for comparison. Prints "<way> <ms>" lines.
 *     gcc -O2 -o populate bench/populate.c && ./populate /tmp 64
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One way on a fresh file: fallocate first or not, then populate by madvise or by touching. */
static void file_way(const char *dir, size_t len, int falloc, int touch, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/populate-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
        perror(path);
        exit(1);
    }
    double t0 = now_ms();
    if (falloc && posix_fallocate(fd, 0, (off_t)len) != 0) {
        perror("posix_fallocate");
        exit(1);
    }
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    if (touch) {
        for (size_t o = 0; o < len; o += 4096)
            ((volatile char *)p)[o] = 0;
    } else if (madvise(p, len, MADV_POPULATE_WRITE) != 0) {
        perror("madvise");
        exit(1);
    }
    printf("%s %.2f\n", name, now_ms() - t0);
    munmap(p, len);
    close(fd);
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: populate DIR MIB\n");
        return 2;
    }
    size_t len = (size_t)atol(argv[2]) << 20;
    file_way(argv[1], len, 1, 0, "fallocate+populate");
    file_way(argv[1], len, 0, 0, "populate");
    file_way(argv[1], len, 1, 1, "fallocate+touch");
    double t0 = now_ms();
    char *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED || madvise(a, len, MADV_POPULATE_WRITE) != 0) {
        perror("anonymous");
        return 1;
    }
    printf("anonymous+populate %.2f\n", now_ms() - t0);
    return 0;
}
