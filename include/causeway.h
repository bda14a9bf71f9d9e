/*
 * causeway.h - work tokens: tell causeway which unit of your work (a request, a step, a batch)
 * the calls on a thread belong to, and where that work moves between threads.
 *
 * A token is 128 bits (hi, lo) and a 32-bit generation, all chosen by the program (reuse an id
 * with a new generation for a new life of the same object). The functions are exported by
 * libcauseway.so, the LD_PRELOAD shim, and declared here as weak symbols: a program that is not
 * run under the shim links and runs unchanged, and the *_if_traced wrappers below do nothing.
 * Under the shim each call writes one entry into the capture at every level (no allocation, no
 * lock, no system call); docs/format.md, "Work tokens", says what is written.
 *
 *   causeway_token_begin_if_traced(hi, lo, gen);   // thread A: calls from here belong to the token
 *   ...launches...
 *   causeway_token_handoff_if_traced(hi, lo, gen, tid_of_b);   // the work moves to thread B
 *   causeway_token_end_if_traced(hi, lo, gen);      // A is done with it
 *
 *   causeway_token_accept_if_traced(hi, lo, gen);  // thread B: the token continues here
 *   ...launches...
 *   causeway_token_end_if_traced(hi, lo, gen);
 *
 * A handoff's `to` is the receiving thread's kernel id (gettid()) or any nonzero id the program
 * gives a queue; 0 means "not said". A handoff is paired with the next accept of the same token
 * (one whose thread is `to`, if there is one): the pair is an observed edge between the threads.
 *
 * Programs that only speak NVTX can do the same with NVTX in the domain "causeway.token": a push
 * range (or start/end range) whose event attributes carry the token's low 64 bits as an integer
 * payload (hi = 0) and its generation as the category is the token's extent on that thread; a mark
 * with message "handoff" (or "handoff <to>", `to` in decimal) or "accept" and the same payload and
 * category is a handoff or an accept.
 *
 * The weak declarations rely on the dynamic linker resolving an undefined weak symbol to the
 * preloaded definition (glibc does, for position-independent executables and shared objects).
 */
#ifndef CAUSEWAY_H
#define CAUSEWAY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CAUSEWAY_TOKEN_DOMAIN "causeway.token"

void causeway_token_begin(uint64_t hi, uint64_t lo, uint32_t generation) __attribute__((weak));
void causeway_token_end(uint64_t hi, uint64_t lo, uint32_t generation) __attribute__((weak));
void causeway_token_handoff(uint64_t hi, uint64_t lo, uint32_t generation, uint64_t to)
    __attribute__((weak));
void causeway_token_accept(uint64_t hi, uint64_t lo, uint32_t generation) __attribute__((weak));

/* Whether the shim is loaded (the token functions are there to call). */
static inline int causeway_traced(void)
{
    return causeway_token_begin != 0;
}

static inline void causeway_token_begin_if_traced(uint64_t hi, uint64_t lo, uint32_t generation)
{
    if (causeway_token_begin)
        causeway_token_begin(hi, lo, generation);
}

static inline void causeway_token_end_if_traced(uint64_t hi, uint64_t lo, uint32_t generation)
{
    if (causeway_token_end)
        causeway_token_end(hi, lo, generation);
}

static inline void causeway_token_handoff_if_traced(uint64_t hi, uint64_t lo, uint32_t generation,
                                                    uint64_t to)
{
    if (causeway_token_handoff)
        causeway_token_handoff(hi, lo, generation, to);
}

static inline void causeway_token_accept_if_traced(uint64_t hi, uint64_t lo, uint32_t generation)
{
    if (causeway_token_accept)
        causeway_token_accept(hi, lo, generation);
}

#ifdef __cplusplus
}
#endif

#endif /* CAUSEWAY_H */
