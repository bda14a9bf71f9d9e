//! Work tokens: the tiny C ABI a program calls to say which unit of its own work (a request, a
//! step, a batch) the calls on a thread belong to, and where that work moves between threads
//! (`include/causeway.h` declares it; `docs/format.md`, "Work tokens", says what is written). A token
//! is 128 bits and a generation, all chosen by the program. Each function writes one complete entry
//! (`record::token`) at every capture level, and nothing at all when the shim is not active. They
//! run on the program's hot path: no allocation, no lock, no system call beyond a thread's first
//! entry (`gettid`), no panic.

use crate::hot::record;
use causeway_ring::Kind;

/// Calls this thread makes from now on belong to token (`hi`, `lo`, `generation`), until
/// `causeway_token_end` of the same token on this thread.
#[no_mangle]
pub extern "C" fn causeway_token_begin(hi: u64, lo: u64, generation: u32) {
    record::token(Kind::TokenBegin, hi, lo, generation, 0);
}

/// The token ends on this thread (the innermost open span of it here).
#[no_mangle]
pub extern "C" fn causeway_token_end(hi: u64, lo: u64, generation: u32) {
    record::token(Kind::TokenEnd, hi, lo, generation, 0);
}

/// This thread hands the token to `to`: the receiving thread's kernel id (`gettid`) or any other
/// nonzero id the program gives a queue; 0 = not said. The receiver declares it takes the token over
/// with `causeway_token_accept`; the pair is an observed edge between the two threads.
#[no_mangle]
pub extern "C" fn causeway_token_handoff(hi: u64, lo: u64, generation: u32, to: u64) {
    record::token(Kind::TokenHandoff, hi, lo, generation, to);
}

/// This thread takes over a token handed off to it: the token continues here until
/// `causeway_token_end` on this thread.
#[no_mangle]
pub extern "C" fn causeway_token_accept(hi: u64, lo: u64, generation: u32) {
    record::token(Kind::TokenAccept, hi, lo, generation, 0);
}
