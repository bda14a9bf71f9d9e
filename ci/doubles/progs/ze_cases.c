/*
 * ze_cases.c - Level Zero timing cases run through the real loader on the
 * driver double (libze_double.so), each a situation the level-3 backend must
 * get right:
 *
 *     ZE_ENABLE_ALT_DRIVERS=$PWD/ci/build/libze_double.so ci/build/ze_cases
 *
 *   1. a kernel (sleep_3000us) on an asynchronous immediate list signalling
 *      the program's event E from a KERNEL_TIMESTAMP pool, then a fill on a
 *      synchronous immediate list (its own sync), then a host sync on E: the
 *      kernel must still be timed (an unrelated sync must not drop it);
 *   2. a kernel (sleep_200us) signalling the program's event P from a pool
 *      WITHOUT timestamps, synced: it may not be asked for kernel timestamps
 *      (its interval is written untimed);
 *   3. the context destroyed with everything of the program's released first:
 *      it must succeed (the backend's own pool is gone by then).
 * Prints key=value lines, then result=ok; exits non-zero on the first error.
 */
#include "cw_prog.h"

#include <level_zero/ze_api.h>

#include <string.h>

#define CHECK(call)                                                            \
    do {                                                                       \
        ze_result_t r_ = (call);                                               \
        if (r_ != ZE_RESULT_SUCCESS)                                           \
            CW_DIE("ze_cases:%d: %s = 0x%x", __LINE__, #call, (unsigned)r_);   \
    } while (0)

static ze_kernel_handle_t kernel(ze_module_handle_t mod, const char *name)
{
    ze_kernel_desc_t kd = { .stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = name };
    ze_kernel_handle_t k;
    CHECK(zeKernelCreate(mod, &kd, &k));
    CHECK(zeKernelSetGroupSize(k, 1, 1, 1));
    return k;
}

static ze_event_handle_t event(ze_context_handle_t ctx, ze_device_handle_t dev, int timestamps,
                               ze_event_pool_handle_t *pool)
{
    ze_event_pool_desc_t pd = { .stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                                .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
                                         (timestamps ? ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP : 0),
                                .count = 1 };
    CHECK(zeEventPoolCreate(ctx, &pd, 1, &dev, pool));
    ze_event_desc_t ed = { .stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = 0,
                           .signal = ZE_EVENT_SCOPE_FLAG_HOST, .wait = ZE_EVENT_SCOPE_FLAG_HOST };
    ze_event_handle_t e;
    CHECK(zeEventCreate(*pool, &ed, &e));
    return e;
}

int main(void)
{
    CHECK(zeInit(0));
    uint32_t n = 1;
    ze_driver_handle_t drv;
    CHECK(zeDriverGet(&n, &drv));
    n = 1;
    ze_device_handle_t dev;
    CHECK(zeDeviceGet(drv, &n, &dev));
    ze_context_desc_t cd = { .stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC };
    ze_context_handle_t ctx;
    CHECK(zeContextCreate(drv, &cd, &ctx));
    static const uint8_t il[] = { 3, 2, 0x23, 7, 0, 0, 1, 0 };
    ze_module_desc_t md = { .stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                            .format = ZE_MODULE_FORMAT_IL_SPIRV,
                            .inputSize = sizeof il, .pInputModule = il };
    ze_module_handle_t mod;
    CHECK(zeModuleCreate(ctx, dev, &md, &mod, NULL));
    ze_kernel_handle_t slow = kernel(mod, "sleep_3000us"), short_ = kernel(mod, "sleep_200us");
    ze_event_pool_handle_t tsp, plp;
    ze_event_handle_t e = event(ctx, dev, 1, &tsp), p = event(ctx, dev, 0, &plp);
    ze_command_queue_desc_t qa = { .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                   .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS };
    ze_command_queue_desc_t qs = qa;
    qs.mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
    qs.index = 1;
    ze_command_list_handle_t async, sync;
    CHECK(zeCommandListCreateImmediate(ctx, dev, &qa, &async));
    CHECK(zeCommandListCreateImmediate(ctx, dev, &qs, &sync));
    ze_host_mem_alloc_desc_t hd = { .stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC };
    void *buf;
    CHECK(zeMemAllocHost(ctx, &hd, 4096, 64, &buf));
    ze_group_count_t g = { 1, 1, 1 };
    int pattern = 7;

    /* 1 */
    CHECK(zeCommandListAppendLaunchKernel(async, slow, &g, e, 0, NULL));
    CHECK(zeCommandListAppendMemoryFill(sync, buf, &pattern, sizeof pattern, 4096, NULL, 0, NULL));
    CHECK(zeEventHostSynchronize(e, UINT64_MAX));
    printf("case1=ok\n");
    /* 2 */
    CHECK(zeCommandListAppendLaunchKernel(async, short_, &g, p, 0, NULL));
    CHECK(zeEventHostSynchronize(p, UINT64_MAX));
    printf("case2=ok\n");
    /* 3 */
    CHECK(zeEventDestroy(e));
    CHECK(zeEventDestroy(p));
    CHECK(zeEventPoolDestroy(tsp));
    CHECK(zeEventPoolDestroy(plp));
    CHECK(zeCommandListDestroy(async));
    CHECK(zeCommandListDestroy(sync));
    CHECK(zeMemFree(ctx, buf));
    CHECK(zeKernelDestroy(slow));
    CHECK(zeKernelDestroy(short_));
    CHECK(zeModuleDestroy(mod));
    CHECK(zeContextDestroy(ctx));
    printf("case3=ok\nresult=ok\n");
    return 0;
}
