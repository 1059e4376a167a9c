//! fabrik's control channel.
//!
//! Benchmarks, RDMA connection set-up and the cluster rendezvous all talk over one kind of
//! connection: length-prefixed frames, each bounded in size, each message under one deadline
//! (however slowly its bytes come), and a mutual challenge-response on a shared token before any
//! message is accepted; [`Pending`] bounds the connections still in their handshake. A peer that dies, stalls, sends garbage or does not know the token becomes a typed error that
//! names it, never a hang or an unbounded allocation.
#![warn(missing_docs)]

mod channel;
mod error;
mod frame;
mod pending;
mod token;

pub use channel::{ByteCount, Channel, Role, DEFAULT_MAX_FRAME, DEFAULT_TIMEOUT};
pub use error::{with_causes, WireError};
pub use frame::{read_frame, write_frame};
pub use pending::{Pending, Stall, Ticket};
pub use token::Token;
