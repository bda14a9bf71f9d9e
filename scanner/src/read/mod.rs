//! Reading a capture: its ring files found and mapped, guarded against files that change under the
//! reader ([`capture`]); each ring's slots checked and decoded into entries ([`decode`]);
//! each thread's calls nested ([`pair`]); the names a ring's string area gives its entries
//! ([`names`]). Nothing here interprets what the entries mean together.

pub mod capture;
pub mod decode;
pub(crate) mod names;
/// The model's names: interned texts (see [`names::Name`]); tests and the Python module make them too.
pub use names::{intern, longest_text, Name, LONG_TEXT};
pub mod pair;
