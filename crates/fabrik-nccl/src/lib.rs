//! NCCL knowledge: the environment NCCL needs on a given fabric or platform, and the variables
//! NCCL and its plugins read.
#![warn(missing_docs)]

pub mod env;
pub mod gid;
pub mod vars;
pub mod yaml;

pub use env::{
    generate, Env, EnvError, EnvVar, Note, NoteLevel, Profile, Request, Runtime, Transport,
};
