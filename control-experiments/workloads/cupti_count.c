/*
 * cupti_count.c: the CUPTI reference for causeway's kernel launch counts and
 * device durations.
 *
 * A CUPTI injection library: the CUDA driver loads it into any program
 * (torch or nvcc-built) when CUDA_INJECTION64_PATH names it, and calls
 * InitializeInjection() from cuInit. It enables the activity kind
 * CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (one record per kernel execution,
 * graph kernel nodes included), counts records per kernel name (record->name,
 * the mangled name, the same string cuFuncGetName returns), keeps each
 * record's device duration (end - start, ns) and at process exit writes
 *     {"kernels": {"<name>": <count>, ...}, "dropped": N, "records": N, ...,
 *      "durations": {"<name>": {"count": n, "p50_ns": x, "mean_ns": x,
 *                               "min_ns": x, "max_ns": x}, ...},
 *      "memcpy": N, "memset": N, "copies": 0|1, "bad_times": N}
 * to the path in the environment variable CUPTI_COUNT_OUT (stderr if unset).
 * p50_ns is the lower median (sorted[(n-1)/2]); records whose end is not after
 * their start are counted in "kernels" but left out of "durations" (and
 * counted in "bad_times").
 * With CUPTI_COUNT_COPIES=1 it also enables CUPTI_ACTIVITY_KIND_MEMCPY and
 * CUPTI_ACTIVITY_KIND_MEMSET and counts their records ("memcpy", "memset";
 * both 0 and "copies": 0 otherwise).
 *
 * Build (control-experiments/device/spine.sh and level3.sh do this):
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
 * in 13.0, 10 in 13.2). Only `kind`, `start`, `end` and `name` are read here,
 * and they sit at the same offsets in 9, 10 and 11, but use the toolkit's own
 * newest one. */
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
  uint64_t *durs; /* device durations (ns) of the records with end > start */
  size_t n_durs, cap_durs;
};

static struct slot table[TABLE_SLOTS];
static uint64_t n_records;  /* kernel records counted */
static uint64_t n_overflow; /* names that did not fit in the table */
static uint64_t n_dropped;  /* cuptiActivityGetNumDroppedRecords, summed */
static uint64_t n_buffers;
static int n_errors;
static uint64_t n_memcpy, n_memset; /* records, with CUPTI_COUNT_COPIES=1 */
static uint64_t n_bad_times;        /* kernel records with end <= start */
static int copies_enabled;
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

static void add_duration(struct slot *s, uint64_t start, uint64_t end) {
  if (end <= start) {
    n_bad_times++;
    return;
  }
  if (s->n_durs == s->cap_durs) {
    size_t cap = s->cap_durs ? 2 * s->cap_durs : 64;
    uint64_t *p = (uint64_t *)realloc(s->durs, cap * sizeof *p);
    if (!p) {
      n_bad_times++;
      return;
    }
    s->durs = p;
    s->cap_durs = cap;
  }
  s->durs[s->n_durs++] = end - start;
}

/* One kernel execution. Called with `lock` held. */
static void count_kernel(const char *name, uint64_t start, uint64_t end) {
  if (!name) name = "<null>";
  uint64_t h = hash_name(name);
  for (uint32_t i = 0; i < TABLE_SLOTS; i++) {
    struct slot *s = &table[(h + i) & (TABLE_SLOTS - 1)];
    if (!s->name) {
      s->name = strdup(name);
      if (!s->name) break;
      s->count = 1;
      add_duration(s, start, end);
      return;
    }
    if (strcmp(s->name, name) == 0) {
      s->count++;
      add_duration(s, start, end);
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
      count_kernel(k->name, (uint64_t)k->start, (uint64_t)k->end);
      n_records++;
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      n_memcpy++;
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      n_memset++;
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

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* ,\n "durations": {name: {count, p50_ns, mean_ns, min_ns, max_ns}, ...}
 * Called with `lock` held; sorts each slot's durations in place. */
static void write_durations(FILE *f) {
  fputs(",\n \"durations\": {", f);
  int first = 1;
  for (uint32_t i = 0; i < TABLE_SLOTS; i++) {
    struct slot *s = &table[i];
    if (!s->name || !s->n_durs) continue;
    qsort(s->durs, s->n_durs, sizeof *s->durs, cmp_u64);
    long double sum = 0;
    for (size_t j = 0; j < s->n_durs; j++) sum += (long double)s->durs[j];
    fputs(first ? "\n  " : ",\n  ", f);
    first = 0;
    json_string(f, s->name);
    fprintf(f, ": {\"count\": %zu, \"p50_ns\": %llu, \"mean_ns\": %.1f, \"min_ns\": %llu, "
               "\"max_ns\": %llu}",
            s->n_durs, (unsigned long long)s->durs[(s->n_durs - 1) / 2],
            (double)(sum / (long double)s->n_durs), (unsigned long long)s->durs[0],
            (unsigned long long)s->durs[s->n_durs - 1]);
  }
  fputs(first ? "}" : "\n }", f);
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
  fputs(first ? "}" : "\n }", f);
  fprintf(f, ",\n \"memcpy\": %llu, \"memset\": %llu, \"copies\": %d, \"bad_times\": %llu",
          (unsigned long long)n_memcpy, (unsigned long long)n_memset, copies_enabled,
          (unsigned long long)n_bad_times);
  write_durations(f);
  fputs("}\n", f);
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
  const char *copies = getenv("CUPTI_COUNT_COPIES");
  if (copies && *copies && strcmp(copies, "0") != 0) {
    copies_enabled = 1;
    CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  }
  /* Registered last so it runs before any exit handler CUPTI set up above. */
  atexit(at_exit);
  return 1;
}
