/*
 * pressure THREADS CALLS_PER_THREAD
 *
 * Ring under pressure: THREADS threads each make CALLS_PER_THREAD cuStreamQuery calls on their own idle
 * stream through the driver double, all starting together (a barrier), as fast as they can. Under the
 * shim at level 4 every call is one ring entry, so this measures how fast many threads can reserve
 * and fill slots. Prints "pressure: threads=T calls=N seconds=S calls_per_s=R", S from the first
 * thread's start to the last thread's end (each thread reads the clock itself: the main thread may
 * be scheduled late).
 */
#include "cw_prog.h"
#include "cw_cuda.h"
#include <pthread.h>
#include <time.h>

static long per_thread;
static pthread_barrier_t start;
static double t_start[1024], t_end[1024];

static CUstream streams[1024];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
    long t = (long)arg;
    CUstream s = streams[t];
    pthread_barrier_wait(&start);
    t_start[t] = now_s();
    for (long i = 0; i < per_thread; i++)
        if (cuStreamQuery(s) != CUDA_SUCCESS)
            CW_DIE("cuStreamQuery failed");
    t_end[t] = now_s();
    return NULL;
}

int main(int argc, char **argv)
{
    long threads = cw_arg(argc, argv, 1, 16);
    per_thread = cw_arg(argc, argv, 2, 100000);
    if (threads < 1 || threads > 1024 || per_thread < 1)
        CW_DIE("usage: pressure THREADS(1..1024) CALLS_PER_THREAD(>0)");
    if (cuInit(0) != CUDA_SUCCESS)
        CW_DIE("cuInit failed");
    pthread_t tid[1024];
    for (long t = 0; t < threads; t++)
        if (cuStreamCreate(&streams[t], 0) != CUDA_SUCCESS)
            CW_DIE("cuStreamCreate failed");
    if (pthread_barrier_init(&start, NULL, (unsigned)threads + 1) != 0)
        CW_DIE("pthread_barrier_init failed");
    for (long t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, worker, (void *)t) != 0)
            CW_DIE("pthread_create failed");
    pthread_barrier_wait(&start);
    for (long t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    double t0 = t_start[0], t1 = t_end[0];
    for (long t = 1; t < threads; t++) {
        t0 = t_start[t] < t0 ? t_start[t] : t0;
        t1 = t_end[t] > t1 ? t_end[t] : t1;
    }
    double dt = t1 - t0;
    long calls = threads * per_thread;
    printf("pressure: threads=%ld calls=%ld seconds=%.6f calls_per_s=%.0f\n", threads, calls, dt,
           calls / dt);
    return 0;
}
