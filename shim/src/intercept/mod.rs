//! Interception: how calls into CUDA reach the shim, and the tables of what is hooked.
//!
//! A program reaches CUDA by symbol (the hooks the tables export, ahead of the real libraries in
//! `LD_PRELOAD` order), through `dlsym` (`dlsym.rs`: a trampoline that keeps `RTLD_NEXT` relative to
//! its caller) and through `cuGetProcAddress` (`procaddr.rs`: the hook of the ABI variant the driver
//! answered with). The tables (`tables/`) are declarative lists; the machinery is `hooks.rs` (the
//! `hook_table!` macro and what a hook does) and `registry.rs` (finding hooks by name or address).
//! Real functions are found by `crate::resolve`, below this layer, which the timing backends and
//! kernel-name lookups use too.

pub mod dlsym;
pub mod graph;
pub mod hooks;
pub mod links;
pub mod procaddr;
pub mod registry;
pub mod tables;
