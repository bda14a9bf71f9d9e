// write_paths.c: how fast this machine takes a large output file written three ways — one thread's
// write() calls in order (what the exports do), T threads' pwrite() at their own offsets, and T threads
// copying into a shared mapping of the file grown with ftruncate — each then synced (fdatasync).
// Decides whether an export whose encoding runs on every thread can also write on every thread.
//     gcc -O2 -pthread bench/write_paths.c -o write_paths && ./write_paths DIR MIB THREADS
// Prints one line per way: seconds to write, seconds to sync, GB/s.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

enum { CHUNK = 8 << 20 };
static char *src;
static size_t total;
static int threads, fd;
static char *map;

static void *by_pwrite(void *arg) {
  long k = (long)arg;
  for (size_t off = (size_t)k * CHUNK; off < total; off += (size_t)threads * CHUNK) {
    size_t n = total - off < CHUNK ? total - off : CHUNK;
    if (pwrite(fd, src, n, (off_t)off) != (ssize_t)n) { perror("pwrite"); exit(1); }
  }
  return NULL;
}

static void *by_copy(void *arg) {
  long k = (long)arg;
  for (size_t off = (size_t)k * CHUNK; off < total; off += (size_t)threads * CHUNK) {
    size_t n = total - off < CHUNK ? total - off : CHUNK;
    memcpy(map + off, src, n);
  }
  return NULL;
}

static void run(const char *dir, const char *way) {
  char path[4096];
  snprintf(path, sizeof path, "%s/write_paths.%d.tmp", dir, getpid());
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) { perror(path); exit(1); }
  double t0 = now();
  if (!strcmp(way, "write")) {
    for (size_t off = 0; off < total; off += CHUNK) {
      size_t n = total - off < CHUNK ? total - off : CHUNK;
      if (write(fd, src, n) != (ssize_t)n) { perror("write"); exit(1); }
    }
  } else {
    void *(*f)(void *) = !strcmp(way, "pwrite") ? by_pwrite : by_copy;
    if (f == by_copy) {
      if (ftruncate(fd, (off_t)total)) { perror("ftruncate"); exit(1); }
      map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) { perror("mmap"); exit(1); }
    }
    pthread_t t[256];
    for (long k = 0; k < threads; k++) pthread_create(&t[k], NULL, f, (void *)k);
    for (long k = 0; k < threads; k++) pthread_join(t[k], NULL);
    if (f == by_copy) munmap(map, total);
  }
  double t1 = now();
  fdatasync(fd);
  double t2 = now();
  close(fd);
  unlink(path);
  printf("%-7s threads %2d  %6zu MiB  write %.3f s  sync %.3f s  %.2f GB/s\n", way,
         strcmp(way, "write") ? threads : 1, total >> 20, t1 - t0, t2 - t1, total / (t1 - t0) / 1e9);
}

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: %s DIR MIB THREADS\n", argv[0]); return 2; }
  total = (size_t)atol(argv[2]) << 20;
  threads = atoi(argv[3]);
  if (threads < 1 || threads > 256) { fprintf(stderr, "THREADS: 1..256\n"); return 2; }
  src = malloc(CHUNK);
  for (size_t i = 0; i < CHUNK; i++) src[i] = (char)('a' + i % 26);
  const char *ways[] = {"write", "pwrite", "mmap"};
  for (int r = 0; r < 2; r++)
    for (int w = 0; w < 3; w++) run(argv[1], ways[w]);
  return 0;
}
