//! fabrik's control channel.
//!
//! Benchmarks, RDMA connection set-up and the cluster rendezvous all talk over one kind of
//! connection: length-prefixed frames, each bounded in size, every read and write under a
//! timeout, and a mutual challenge-response on a shared token before any message is accepted.
//! A peer that dies, stalls, sends garbage or does not know the token becomes a typed error that
//! names it, never a hang or an unbounded allocation.

mod channel;
mod error;
mod frame;
mod token;

pub use channel::{Channel, Role, DEFAULT_MAX_FRAME, DEFAULT_TIMEOUT};
pub use error::WireError;
pub use frame::{read_frame, write_frame};
pub use token::Token;
