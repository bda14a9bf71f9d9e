//! The hash map and set the scanner's per-entry passes use: std's map with aHash instead of SipHash (SipHash
//! was a tenth of a large report), still seeded at random so a hostile capture cannot pick colliding
//! keys.

pub type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;
pub type HashSet<T> = std::collections::HashSet<T, ahash::RandomState>;
