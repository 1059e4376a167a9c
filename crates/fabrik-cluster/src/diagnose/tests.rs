//! Tests of the verdict.
use super::*;
