/*
 * mt_launch THREADS N
 *
 * Each of THREADS threads creates its own stream and launches N kernels with
 * cudaLaunchKernel (kernel "sleep_0us", registered at startup like nvcc
 * does); after every 10th launch it issues one cudaMemcpyAsync (host to
 * device, 64 bytes) and one cudaEventRecord on its stream.  Then it
 * synchronizes the stream and the event.  Prints totals and the counters.
 */
#include "cw_prog.h"
#include "cw_kernels.h"

#include <pthread.h>

typedef struct {
    long n;
    long launches, copies, records;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    cudaStream_t s;
    cudaEvent_t ev;
    void *dev;
    static const char host[64] = "causeway";
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaEventCreate(&ev));
    CHECK(cudaMalloc(&dev, sizeof host));
    for (long i = 0; i < j->n; i++) {
        CHECK(cw_launch(CW_KERNEL(sleep_0us), s));
        j->launches++;
        if ((i + 1) % 10 == 0) {
            CHECK(cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, s));
            j->copies++;
            CHECK(cudaEventRecord(ev, s));
            j->records++;
        }
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaEventSynchronize(ev));
    CHECK(cudaEventQuery(ev));
    CHECK(cudaStreamQuery(s));
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaFree(dev));
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        CW_DIE("usage: mt_launch THREADS N");
    long threads = cw_arg(argc, argv, 1, 0), n = cw_arg(argc, argv, 2, 0);
    if (threads < 1 || threads > 1024)
        CW_DIE("THREADS must be 1..1024");
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    job *jobs = calloc((size_t)threads, sizeof *jobs);
    if (!tids || !jobs)
        CW_DIE("out of memory");
    for (long t = 0; t < threads; t++) {
        jobs[t].n = n;
        if (pthread_create(&tids[t], NULL, worker, &jobs[t]) != 0)
            CW_DIE("pthread_create failed");
    }
    long launches = 0, copies = 0, records = 0;
    for (long t = 0; t < threads; t++) {
        pthread_join(tids[t], NULL);
        launches += jobs[t].launches;
        copies += jobs[t].copies;
        records += jobs[t].records;
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    printf("threads=%ld\n", threads);
    printf("launches_per_thread=%ld\n", n);
    printf("total_launches=%ld\n", launches);
    printf("total_memcpy_async=%ld\n", copies);
    printf("total_event_records=%ld\n", records);
    cw_dump_counters();
    free(tids);
    free(jobs);
    return 0;
}
