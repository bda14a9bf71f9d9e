/* amb_doubles.c: the ambiguity benchmark's workload (scenarios.h) against the CI doubles, whose
 * simulated device runs each stream's work in order on a thread of its own, for as long as a
 * kernel's name says. Built by `make -C ci` into ci/build/amb_doubles. */
#include "cw_prog.h"
#include "kernels.h"
#define CW_KERNEL_LIST AMB_KERNELS
#include "cw_kernels.h"

#define AMB_STUB(id, name) CW_KERNEL(id),
static const void *const amb_stubs[] = { AMB_KERNELS(AMB_STUB) };
#undef AMB_STUB

static void amb_launch(int k, cudaStream_t s);
#include "scenarios.h"

static void amb_launch(int k, cudaStream_t s)
{
    AMB_CK(cw_launch(amb_stubs[k], s));
}

int main(int argc, char **argv)
{
    return amb_main(argc, argv);
}
