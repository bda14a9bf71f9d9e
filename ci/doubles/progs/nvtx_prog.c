/*
 * nvtx_prog
 *
 * Exercises the header-only NVTX v3 C API (nvtx3/nvToolsExt.h): 5 "step"
 * iterations, each with push/pop ranges nested 3 deep and a kernel launch in
 * the innermost range; a mark; a start/end range around a launch; a domain
 * "cw_domain" with a registered string, a domain push/pop using the
 * registered string around a domain push/pop using an ASCII message (with a
 * launch inside), and a domain mark.  Without an NVTX tool attached every
 * call is a no-op; the program prints how many of each call it issued.
 */
#include "cw_prog.h"
#include "cw_kernels.h"

#include <nvtx3/nvToolsExt.h>

static long n_push, n_pop, n_mark, n_start, n_end, n_dom_create, n_dom_str,
    n_dom_push, n_dom_pop, n_dom_mark, n_dom_destroy, n_launch;

static void launch(void)
{
    CHECK(cw_launch(CW_KERNEL(sleep_1us), NULL));
    n_launch++;
}

int main(void)
{
    static const char *const names[3] = { "step", "forward", "kernel" };
    for (int step = 0; step < 5; step++) {
        for (int d = 0; d < 3; d++) {
            nvtxRangePushA(names[d]);
            n_push++;
        }
        launch();
        for (int d = 0; d < 3; d++) {
            nvtxRangePop();
            n_pop++;
        }
    }

    nvtxMarkA("checkpoint");
    n_mark++;

    nvtxRangeId_t id = nvtxRangeStartA("io");
    n_start++;
    launch();
    nvtxRangeEnd(id);
    n_end++;

    nvtxDomainHandle_t dom = nvtxDomainCreateA("cw_domain");
    n_dom_create++;
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "cw_registered_range");
    n_dom_str++;

    nvtxEventAttributes_t outer = { 0 };
    outer.version = NVTX_VERSION;
    outer.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    outer.colorType = NVTX_COLOR_ARGB;
    outer.color = 0xff00aa00u;
    outer.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    outer.message.registered = reg;
    nvtxDomainRangePushEx(dom, &outer);
    n_dom_push++;

    nvtxEventAttributes_t inner = { 0 };
    inner.version = NVTX_VERSION;
    inner.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    inner.messageType = NVTX_MESSAGE_TYPE_ASCII;
    inner.message.ascii = "cw_ascii_range";
    nvtxDomainRangePushEx(dom, &inner);
    n_dom_push++;
    launch();
    nvtxDomainRangePop(dom);
    n_dom_pop++;
    nvtxDomainRangePop(dom);
    n_dom_pop++;

    nvtxEventAttributes_t mark = { 0 };
    mark.version = NVTX_VERSION;
    mark.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    mark.messageType = NVTX_MESSAGE_TYPE_ASCII;
    mark.message.ascii = "cw_domain_mark";
    nvtxDomainMarkEx(dom, &mark);
    n_dom_mark++;

    CHECK(cudaDeviceSynchronize());
    nvtxDomainDestroy(dom);
    n_dom_destroy++;

    printf("nvtxRangePushA=%ld\n", n_push);
    printf("nvtxRangePop=%ld\n", n_pop);
    printf("nvtxMarkA=%ld\n", n_mark);
    printf("nvtxRangeStartA=%ld\n", n_start);
    printf("nvtxRangeEnd=%ld\n", n_end);
    printf("nvtxDomainCreateA=%ld\n", n_dom_create);
    printf("nvtxDomainRegisterStringA=%ld\n", n_dom_str);
    printf("nvtxDomainRangePushEx=%ld\n", n_dom_push);
    printf("nvtxDomainRangePop=%ld\n", n_dom_pop);
    printf("nvtxDomainMarkEx=%ld\n", n_dom_mark);
    printf("nvtxDomainDestroy=%ld\n", n_dom_destroy);
    printf("kernel_launches=%ld\n", n_launch);
    cw_dump_counters();
    return 0;
}
