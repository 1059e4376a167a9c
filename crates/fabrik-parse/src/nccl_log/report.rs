//! The report `fabrik logs` writes is a model type (`fabrik_model::logs`): every renderer reads it.

pub use fabrik_model::logs::*;
