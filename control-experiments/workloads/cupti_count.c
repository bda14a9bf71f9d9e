/*
 * cupti_count.c: the CUPTI reference for causeway's kernel launch counts.
 *
 * A CUPTI injection library: the CUDA driver loads it into any program
 * (torch or nvcc-built) when CUDA_INJECTION64_PATH names it, and calls
 * InitializeInjection() from cuInit. It enables the activity kind
 * CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (one record per kernel execution,
 * graph kernel nodes included), counts records per kernel name (record->name,
 * the mangled name, the same string cuFuncGetName returns) and at process exit
 * writes
 *     {"kernels": {"<name>": <count>, ...}, "dropped": N, "records": N, ...}
 * to the path in the environment variable CUPTI_COUNT_OUT (stderr if unset).
 *
 * Build (control-experiments/device/spine.sh does this):
 *   gcc -O2 -shared -fPIC -o cupti_count.so cupti_count.c \
 *       -I$CUDA/include -I$CUDA/extras/CUPTI/include \
 *       -L<dir of libcupti.so> -lcupti -Wl,-rpath,<that dir> -lpthread
 * -DCUPTI_KERNEL_RECORD=CUpti_ActivityKernelN overrides the record struct.
 */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel record struct changes name between CUDA releases (9 was dropped
 * in 13.0, 10 in 13.2). Only `kind` and `name` are read here, and `name` sits
 * at the same offset in 9, 10 and 11, but use the toolkit's own newest one. */
#ifndef CUPTI_KERNEL_RECORD
#if CUPTI_API_VERSION >= 130200
#define CUPTI_KERNEL_RECORD CUpti_ActivityKernel11
#elif CUPTI_API_VERSION >= 130000
#define CUPTI_KERNEL_RECORD CUpti_ActivityKernel10
#else
#define CUPTI_KERNEL_RECORD CUpti_ActivityKernel9
#endif
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

#define BUF_SIZE (8u << 20)
#define BUF_ALIGN 8
#define TABLE_SLOTS (1u << 14) /* distinct kernel names; plenty for a control run */

struct slot {
  char *name;
  uint64_t count;
};

static struct slot table[TABLE_SLOTS];
static uint64_t n_records;  /* kernel records counted */
static uint64_t n_overflow; /* names that did not fit in the table */
static uint64_t n_dropped;  /* cuptiActivityGetNumDroppedRecords, summed */
static uint64_t n_buffers;
static int n_errors;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;

static void report_error(const char *what, CUptiResult r) {
  const char *s = NULL;
  cuptiGetResultString(r, &s);
  fprintf(stderr, "cupti_count: %s failed: %s (%d)\n", what, s ? s : "?", (int)r);
  __atomic_add_fetch(&n_errors, 1, __ATOMIC_RELAXED);
}

#define CUPTI_CALL(call)                                                       \
  do {                                                                         \
    CUptiResult r_ = (call);                                                   \
    if (r_ != CUPTI_SUCCESS) report_error(#call, r_);                          \
  } while (0)

static uint64_t hash_name(const char *s) { /* FNV-1a */
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Called with `lock` held. */
static void count_name(const char *name) {
  if (!name) name = "<null>";
  uint64_t h = hash_name(name);
  for (uint32_t i = 0; i < TABLE_SLOTS; i++) {
    struct slot *s = &table[(h + i) & (TABLE_SLOTS - 1)];
    if (!s->name) {
      s->name = strdup(name);
      if (!s->name) break;
      s->count = 1;
      return;
    }
    if (strcmp(s->name, name) == 0) {
      s->count++;
      return;
    }
  }
  n_overflow++;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  void *p = NULL;
  if (posix_memalign(&p, BUF_ALIGN, BUF_SIZE) != 0) p = NULL;
  *buffer = (uint8_t *)p;
  *size = p ? BUF_SIZE : 0;
  *max_records = 0; /* as many as fit */
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                      size_t size, size_t valid) {
  (void)size;
  pthread_mutex_lock(&lock);
  n_buffers++;
  CUpti_Activity *rec = NULL;
  for (;;) {
    CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break; /* end of buffer */
    if (r != CUPTI_SUCCESS) {
      report_error("cuptiActivityGetNextRecord", r);
      break;
    }
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const CUPTI_KERNEL_RECORD *k = (const CUPTI_KERNEL_RECORD *)rec;
      count_name(k->name);
      n_records++;
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
    n_dropped += dropped;
  pthread_mutex_unlock(&lock);
  free(buffer);
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void write_json(void) {
  const char *path = getenv("CUPTI_COUNT_OUT");
  FILE *f = (path && *path) ? fopen(path, "w") : stderr;
  if (!f) {
    fprintf(stderr, "cupti_count: cannot open %s for writing\n", path);
    f = stderr;
  }
  pthread_mutex_lock(&lock);
  fprintf(f, "{\"tool\": \"cupti_count\", \"record_struct\": \"%s\", \"cupti_api_version\": %d,\n",
          STR(CUPTI_KERNEL_RECORD), (int)CUPTI_API_VERSION);
  fprintf(f, " \"records\": %llu, \"buffers\": %llu, \"dropped\": %llu, \"overflow\": %llu, "
             "\"errors\": %d,\n \"kernels\": {",
          (unsigned long long)n_records, (unsigned long long)n_buffers,
          (unsigned long long)n_dropped, (unsigned long long)n_overflow, n_errors);
  int first = 1;
  for (uint32_t i = 0; i < TABLE_SLOTS; i++) {
    if (!table[i].name) continue;
    fputs(first ? "\n  " : ",\n  ", f);
    first = 0;
    json_string(f, table[i].name);
    fprintf(f, ": %llu", (unsigned long long)table[i].count);
  }
  fputs(first ? "}}\n" : "\n }}\n", f);
  pthread_mutex_unlock(&lock);
  if (f != stderr) fclose(f);
}

static void at_exit(void) {
  /* Force out every buffer, including partially filled ones. */
  CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS) {
    pthread_mutex_lock(&lock);
    n_dropped += dropped;
    pthread_mutex_unlock(&lock);
  }
  write_json();
}

/* Entry point the CUDA driver calls for CUDA_INJECTION64_PATH. */
__attribute__((visibility("default"))) int InitializeInjection(void) {
  if (__atomic_exchange_n(&initialized, 1, __ATOMIC_SEQ_CST)) return 1;
  CUPTI_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  /* Registered last so it runs before any exit handler CUPTI set up above. */
  atexit(at_exit);
  return 1;
}
