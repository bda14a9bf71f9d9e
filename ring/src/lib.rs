//! causeway-ring: the capture format, defined once. `layout` is the byte layout, `writer` the
//! no-allocation appender the shim uses on the hot path, `reader` the validating reader the scanner uses,
//! `private` how the CLI creates the files and directories around them, `settings` the capture settings
//! (levels, backends, policies, `CAUSEWAY_*` variables) the CLI writes and the shim reads.
//! `docs/format.md` describes the same bytes in prose for readers in other languages.

pub mod clock;
pub mod layout;
pub mod private;
pub mod reader;
pub mod settings;
pub mod writer;

pub use layout::*;
pub use reader::{Entry, FormatError, Header, RingView, Slot, StrRecord};
pub use writer::{Fields, Params, Writer};
