//! The expectations a command is given: a cluster file and the flags that override it
//! (`doctor`, `check` and `fix` share them), and their findings added to a report.

use std::path::PathBuf;

use super::file::{ExpectError, Expectations, GpuExpect, RdmaExpect};
use crate::waive::{apply_waivers, utc_date, Waiver, WaiverError};
use crate::{NamedNode, PlannedEnv, Report};

/// The expectation flags: a file and the overrides given beside it.
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[derive(Debug, Clone, Default)]
pub struct ExpectOptions {
    /// A cluster file (TOML) saying what the node must have; every difference is a finding
    /// (FAB-EXP-*), and its `[[waive]]` tables waive findings. See docs/operations.md.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub expect: Option<PathBuf>,
    /// Exactly this many GPUs (overrides the file's `gpus.count`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub expect_gpus: Option<usize>,
    /// At least this many ACTIVE RDMA ports (overrides the file's `rdma.active_ports`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub expect_rdma_ports: Option<usize>,
    /// Every ACTIVE RDMA port at this rate in Gb/s (overrides the file's `rdma.rate_gbps`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "GBPS"))]
    pub expect_rate: Option<f64>,
    /// Waive a rule, on every subject or those matching a glob: `RULE[:SUBJECT]=REASON`. The
    /// reason is required and the report lists it. Repeatable.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RULE[:SUBJECT]=REASON"))]
    pub ignore: Vec<String>,
}

/// Why the expectation flags do not make expectations.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// The file is not a valid expectations file.
    #[error(transparent)]
    File(#[from] ExpectError),
    /// An `--ignore` flag is not a waiver.
    #[error(transparent)]
    Waiver(#[from] WaiverError),
}

impl ExpectOptions {
    /// The expectations the flags give over `file` (the `--expect` file's name and text, read
    /// by the caller), or `None` when none was asked for.
    pub fn resolve(
        &self,
        file: Option<(&str, &str)>,
    ) -> Result<Option<Expectations>, OptionsError> {
        let mut e = match file {
            Some((name, text)) => Expectations::parse(name, text)?,
            None => Expectations::default(),
        };
        if let Some(n) = self.expect_gpus {
            e.gpus.get_or_insert_with(GpuExpect::default).count = Some(n);
        }
        if let Some(n) = self.expect_rdma_ports {
            e.rdma.get_or_insert_with(RdmaExpect::default).active_ports = Some(n);
        }
        if let Some(g) = self.expect_rate {
            e.rdma.get_or_insert_with(RdmaExpect::default).rate_gbps = Some(g);
        }
        for flag in &self.ignore {
            e.waive.push(Waiver::parse_flag(flag)?);
        }
        Ok((e != Expectations::default()).then_some(e))
    }
}

/// Adds the expectation findings to a report, then applies the waivers as of `now_unix`'s
/// date in UTC.
pub fn apply(
    report: &mut Report,
    nodes: &[NamedNode],
    expect: &Expectations,
    env: Option<&PlannedEnv>,
    now_unix: u64,
) {
    crate::add_expectations(report, nodes, expect, env);
    apply_waivers(report, &expect.waive, &utc_date(now_unix));
}
