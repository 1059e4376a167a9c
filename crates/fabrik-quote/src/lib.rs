//! Generated text is data, never code.
//!
//! Every value fabrik writes into a script or a manifest lands in one of a few places, and each
//! place has exactly one function here that makes the value safe there:
//!
//! | where the value lands | function |
//! | --- | --- |
//! | a shell word (an argument, the value of an assignment) | [`sh::word`] |
//! | a shell variable's name (`export NAME=...`) | [`sh::var_name`] |
//! | a shell comment (`# ...`) | [`sh::comment`] |
//! | a here-document's body | [`sh::heredoc`] |
//! | an `#SBATCH` option's value | [`sbatch::value`] |
//! | a dotenv value (`NAME=...`) | [`dotenv::value`] |
//! | a YAML scalar, or a whole YAML document | [`yaml::scalar`], [`yaml::to_string`] |
//! | a YAML comment | [`yaml::comment`] |
//! | a Kubernetes `command`, `args` or `env` value (the kubelet expands `$(VAR)` there) | [`kube::literal`] |
//!
//! Quoting carries any text a language can carry. What it cannot carry, and names that can never
//! be valid (a host name with a newline, a job name with `;`, an interface name with a control
//! character) are refused by [`name`] before anything is rendered, with a message that says
//! which character and what the name may hold.
//!
//! The crate is pure: functions of strings, no I/O.
#![warn(missing_docs)]

pub mod dotenv;
pub mod kube;
pub mod name;
pub mod sbatch;
pub mod sh;
pub mod yaml;

mod chars;

/// A value refused: it cannot be written where it was asked to go, or it is not a valid name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} {reason}")]
pub struct Refused {
    /// The value, as given.
    pub value: String,
    /// Why, as the rest of a sentence that begins with the value ("is not a host name: ...").
    pub reason: String,
}

impl Refused {
    pub(crate) fn new(value: &str, reason: impl Into<String>) -> Refused {
        Refused {
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}
