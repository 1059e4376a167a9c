//! `fabrik fix`'s flags: which roots and rules to plan for, in what form, and whether to apply
//! or undo.

use std::path::PathBuf;

use fabrik_doctor::expect::ExpectOptions;
use fabrik_doctor::Expectations;

use crate::run::ApplyOptions;

/// The forms a plan is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FixFormat {
    /// The plan for people.
    Text,
    /// The plan (or the apply/undo result) as JSON.
    Json,
    /// An idempotent bash script.
    Script,
    /// An Ansible playbook.
    Ansible,
}

/// What `fabrik fix` is asked to do.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct FixOptions {
    /// Root to plan for: `/` for this machine, or a snapshot directory or .tar.gz. Give it
    /// several times for several nodes; cross-node findings converge them. With --apply, `/`
    /// is the node changed and the others are its peers.
    #[cfg_attr(feature = "clap", arg(long, default_value = "/"))]
    pub root: Vec<PathBuf>,
    /// Only the findings of this rule (repeatable).
    #[cfg_attr(feature = "clap", arg(long = "rule", value_name = "ID"))]
    pub rules: Vec<String>,
    /// The plan's form.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value = "text"))]
    pub format: FixFormat,
    /// Make the changes on this machine (the root `/`), then run the checks again.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "undo"))]
    pub apply: bool,
    /// With --apply: also make the changes that need a drained node (MTU, PFC, ACS, firmware).
    #[cfg_attr(feature = "clap", arg(long, requires = "apply"))]
    pub drained: bool,
    /// Where --apply writes its undo record (default /var/lib/fabrik/fix/undo-<time>.json).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH", requires = "apply"))]
    pub record: Option<PathBuf>,
    /// Put back the values an --apply run recorded.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RECORD"))]
    pub undo: Option<PathBuf>,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[allow(missing_docs)]
    pub expect: ExpectOptions,
}

impl FixOptions {
    /// How `--apply` applies the plan made with `expect`.
    pub fn apply_options<'a>(&'a self, expect: Option<&'a Expectations>) -> ApplyOptions<'a> {
        ApplyOptions {
            roots: &self.root,
            expect,
            drained: self.drained,
            record: self.record.clone(),
        }
    }
}
