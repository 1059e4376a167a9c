//! Parsers for the text users already have: NCCL_DEBUG=INFO logs ([`nccl_log`]), nccl-tests
//! tables and JSON ([`nccl_tests`]), perftest reports ([`perftest`]), and the checks fabrik runs
//! on them ([`check`]). Pure functions of their input; I/O is limited to reading it.
#![warn(missing_docs)]

pub mod catalog;
pub mod check;
pub mod commands;
pub mod error;
pub mod input;
pub mod inspector;
pub mod nccl_log;
pub mod nccl_tests;
pub mod perftest;
pub mod perftest_failures;
pub mod ras;
mod text;

pub use error::ParseError;
