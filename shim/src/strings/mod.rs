//! Strings into the ring, each interned once and named by a small id in entries: NVTX texts (`text`:
//! messages, domains, registered strings) and kernel names (`names`: looked up once per function
//! handle). Both keep a fixed, lock-free table of what they have seen, so that the hot path pays one
//! probe and never allocates.

pub mod names;
pub mod text;
