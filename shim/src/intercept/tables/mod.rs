//! The hook tables: one declarative line per hooked entry point — exported name, capture level,
//! class, C signature, and which arguments go into the entry's a0/a1/a2 — expanded by
//! `hooks::hook_table!`. Tables only list; what a hook does is the machinery's (`hooks.rs`), and a
//! table names nothing else but what runs after a successful call: graph walking (`graph::nodes`)
//! and the events a Level Zero or Unified Runtime call names (`links`).

pub mod driver;
pub mod level_zero;
pub mod runtime;
pub mod unified_runtime;
