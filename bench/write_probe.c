// Write-rate probe: how fast can one process put N bytes into a file and sync it, by one thread's
// write(2), by several threads' pwrite(2) at disjoint offsets, or by several threads copying into a
// shared mapping of the file? Decides whether a large export can be written faster than one stream.
//   gcc -O2 -pthread bench/write_probe.c -o write_probe && ./write_probe PATH BYTES MODE THREADS
// MODE: write | pwrite | mmap (the file grown with ftruncate) | fmmap (its blocks reserved with
// fallocate first, as `causeway export` does with CAUSEWAY_EXPORT_WRITE=mapped).
// Prints: mode threads bytes write_s sync_s total_s GB/s
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)
static int fd;
static size_t total;
static char *map;
static const char *mode;
static int threads;
static size_t next_chunk;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
    char *buf = malloc(CHUNK);
    memset(buf, 'a' + (int)(intptr_t)arg, CHUNK);
    for (;;) {
        size_t c = __atomic_fetch_add(&next_chunk, 1, __ATOMIC_RELAXED);
        size_t off = c * (size_t)CHUNK;
        if (off >= total) break;
        size_t n = total - off < CHUNK ? total - off : CHUNK;
        buf[0] = (char)c; // the bytes differ from chunk to chunk, as formatted text does
        if (mode[0] == 'p') {
            if (pwrite(fd, buf, n, off) != (ssize_t)n) { perror("pwrite"); exit(1); }
        } else {
            memcpy(map + off, buf, n);
        }
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: %s PATH BYTES write|pwrite|mmap|fmmap THREADS\n", argv[0]); return 2; }
    total = strtoull(argv[2], 0, 10);
    mode = argv[3];
    threads = atoi(argv[4]);
    unlink(argv[1]);
    fd = open(argv[1], O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) { perror("open"); return 1; }
    double t0 = now();
    if (strcmp(mode, "write") == 0) {
        char *buf = malloc(CHUNK);
        memset(buf, 'a', CHUNK);
        size_t started = 0;
        for (size_t off = 0; off < total; off += CHUNK) {
            size_t n = total - off < CHUNK ? total - off : CHUNK;
            buf[0] = (char)(off >> 20);
            if (write(fd, buf, n) != (ssize_t)n) { perror("write"); return 1; }
            if (off + n - started >= (16u << 20)) { // as the export's Writeback does
                sync_file_range(fd, started, off + n - started, SYNC_FILE_RANGE_WRITE);
                started = off + n;
            }
        }
    } else {
        if (mode[0] == 'm' || mode[0] == 'f') {
            if (mode[0] == 'f' ? fallocate(fd, 0, 0, total) : ftruncate(fd, total)) { perror("grow"); return 1; }
            map = mmap(0, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (map == MAP_FAILED) { perror("mmap"); return 1; }
        }
        pthread_t t[256];
        for (int i = 0; i < threads; i++) pthread_create(&t[i], 0, worker, (void *)(intptr_t)i);
        for (int i = 0; i < threads; i++) pthread_join(t[i], 0);
        if (map) munmap(map, total);
    }
    double t1 = now();
    if (fsync(fd)) { perror("fsync"); return 1; }
    double t2 = now();
    close(fd);
    unlink(argv[1]);
    printf("%-6s %2d %zu %.3f %.3f %.3f %.2f\n", mode, threads, total, t1 - t0, t2 - t1, t2 - t0,
           total / (t2 - t0) / 1e9);
    return 0;
}
