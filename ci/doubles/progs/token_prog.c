/*
 * token_prog [abi|nvtx]   (default abi)
 *
 * One unit of work crosses two threads. Thread A begins a work token, launches a kernel, hands
 * the token off to thread B (to = B's kernel thread id) and ends it; thread B then accepts it,
 * launches a kernel and ends it. With `abi` the tokens go through include/causeway.h (weak
 * symbols: run without the shim, the calls do nothing); with `nvtx` through NVTX alone, in the
 * domain "causeway.token": a push range whose payload is the token's low 64 bits and whose
 * category is its generation, and marks "handoff <to>" and "accept" with the same payload.
 * Token: hi 0x1111 (abi; 0 for nvtx), lo 0x2222, generation 3.
 * Prints tid_a, tid_b, launches, traced (whether the token functions were found).
 */
#include "cw_prog.h"
#include "cw_kernels.h"
#include "causeway.h"

#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HI 0x1111ULL
#define LO 0x2222ULL
#define GEN 3u

static int use_nvtx;
static nvtxDomainHandle_t dom;
static sem_t b_ready, handed;
static unsigned long tid_b;
static long launches;

static nvtxEventAttributes_t attrs(const char *msg)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = GEN;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = LO;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = msg;
    return a;
}

static void launch(cudaStream_t s)
{
    CHECK(cw_launch(CW_KERNEL(sleep_0us), s));
    __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
}

static void *thread_b(void *arg)
{
    (void)arg;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    tid_b = (unsigned long)syscall(SYS_gettid);
    sem_post(&b_ready);
    sem_wait(&handed);
    if (use_nvtx) {
        nvtxEventAttributes_t r = attrs("request"), m = attrs("accept");
        nvtxDomainRangePushEx(dom, &r);
        nvtxDomainMarkEx(dom, &m);
        launch(s);
        nvtxDomainRangePop(dom);
    } else {
        causeway_token_accept_if_traced(HI, LO, GEN);
        launch(s);
        causeway_token_end_if_traced(HI, LO, GEN);
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "abi") && strcmp(argv[1], "nvtx")))
        CW_DIE("usage: token_prog [abi|nvtx]");
    use_nvtx = argc == 2 && !strcmp(argv[1], "nvtx");
    sem_init(&b_ready, 0, 0);
    sem_init(&handed, 0, 0);
    pthread_t b;
    if (pthread_create(&b, NULL, thread_b, NULL) != 0)
        CW_DIE("pthread_create failed");
    sem_wait(&b_ready);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    if (use_nvtx) {
        dom = nvtxDomainCreateA(CAUSEWAY_TOKEN_DOMAIN);
        char msg[64];
        snprintf(msg, sizeof msg, "handoff %lu", tid_b);
        nvtxEventAttributes_t r = attrs("request"), m = attrs(msg);
        nvtxDomainRangePushEx(dom, &r);
        launch(s);
        nvtxDomainMarkEx(dom, &m);
        nvtxDomainRangePop(dom);
    } else {
        causeway_token_begin_if_traced(HI, LO, GEN);
        launch(s);
        causeway_token_handoff_if_traced(HI, LO, GEN, tid_b);
        causeway_token_end_if_traced(HI, LO, GEN);
    }
    sem_post(&handed);
    pthread_join(b, NULL);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    printf("tid_a=%lu\n", (unsigned long)syscall(SYS_gettid));
    printf("tid_b=%lu\n", tid_b);
    printf("launches=%ld\n", launches);
    printf("traced=%d\n", causeway_traced());
    cw_dump_counters();
    return 0;
}
