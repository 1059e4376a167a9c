//! NCCL knowledge: the environment NCCL needs on a given fabric or platform.
#![warn(missing_docs)]

pub mod env;
pub mod gid;
pub mod yaml;

pub use env::{
    generate, Env, EnvError, EnvVar, Note, NoteLevel, Profile, Request, Runtime, Transport,
};
