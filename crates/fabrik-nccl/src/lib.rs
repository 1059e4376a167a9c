//! NCCL knowledge: the environment NCCL needs on a given fabric or platform, and the variables
//! NCCL and its plugins read.
#![warn(missing_docs)]

pub mod env;
/// The RoCE GID policy, which lives in the model beside the GID it chooses.
pub use fabrik_model::gid::policy as gid;
pub mod vars;
pub mod yaml;

pub use env::{
    generate, Env, EnvError, EnvVar, Note, NoteLevel, Profile, Request, Runtime, Transport,
};
