/*
 * secure_prog: prints "euid=N secure=S" (its effective uid and getauxval(AT_SECURE)) and exits 0.
 * No CUDA: the shim's start-up is what the secure-execution test watches, and a setuid program
 * ignores LD_LIBRARY_PATH, so this one needs no library but libc.
 */
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(void)
{
    printf("euid=%d secure=%lu\n", (int)geteuid(), getauxval(AT_SECURE));
    return 0;
}
