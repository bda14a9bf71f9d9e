//! The analyses shown to people: as text tables for the terminal ([`text`]) and as one
//! self-contained HTML page ([`html`]). Strings from the traced program are escaped for each.

pub mod html;
pub mod text;
pub mod why;
