//! libcauseway.so — the LD_PRELOAD shim. It interposes on CUDA runtime and driver entry points (by
//! symbol, through `dlsym`, and through `cuGetProcAddress`) and acts as an NVTX injection library,
//! writing one fixed-size entry per call into a file-backed ring (see the `causeway-ring` crate).
//! It never changes what the traced program computes: on any internal failure it disables itself and
//! passes every call through.

// Unit tests link the crate without its load-time constructor, which leaves start-up code unused.
#![cfg_attr(test, allow(dead_code))]

mod hot;
mod intercept;
mod lifecycle;
mod nvtx;
mod resolve;
mod strings;
mod timing;
