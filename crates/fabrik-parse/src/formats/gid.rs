//! GIDs as sysfs writes them (`ports/N/gids/I`, eight groups of four hex digits); the text helpers
//! live in `fabrik_model::gid`, re-exported here under the probe's names.

pub use fabrik_model::gid::{ipv4_of_text as gid_ipv4, is_zero_text as gid_is_zero};
