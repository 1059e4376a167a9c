//! The tool outputs `fabrik parse` reads: one line per tool in [`tools!`], which names the
//! module that reads it. Everything else about a tool (its name, help, what its text looks
//! like, the facts it gives) lives in that module's [`Paste`] implementation.

use fabrik_model::{FactTable, Node};
use serde::Serialize;

use super::{Format, Paste};

/// A text that holds nothing of the tool it was given as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no {tool} output found: expected {expected}")]
pub struct NotRecognised {
    /// The tool's name.
    pub tool: &'static str,
    /// What its output looks like.
    pub expected: &'static str,
}

/// What a pasted tool output said.
#[derive(Debug, Clone)]
pub struct Pasted {
    /// The tool's name (`ibstat`).
    pub tool: &'static str,
    /// The facts read, as the tool's module types serialize them.
    pub facts: serde_json::Value,
    /// The facts laid out for people.
    pub table: FactTable,
    /// The facts as a partial node, for the doctor's rules.
    pub node: Node,
}

fn read<P: Paste>(text: &str) -> Result<Pasted, NotRecognised> {
    let facts = P::parse(text).ok_or(NotRecognised {
        tool: P::NAME,
        expected: P::EXPECTED,
    })?;
    Ok(Pasted {
        tool: P::NAME,
        // The facts types are plain structs with string keys: serializing them cannot fail.
        facts: serde_json::to_value(&facts).unwrap_or_default(),
        table: P::table(&facts),
        node: P::node(&facts),
    })
}

macro_rules! tools {
    ($($(#[$doc:meta])* $variant:ident => $ty:ty,)*) => {
        /// A tool whose output `fabrik parse` reads.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Tool {
            $($(#[$doc])* $variant,)*
        }

        impl Tool {
            /// Every tool, in the order `fabrik parse --help` lists them.
            pub const ALL: &'static [Tool] = &[$(Tool::$variant,)*];

            /// The tool's name as fabrik reports it (`ibv_devinfo`).
            pub fn name(self) -> &'static str {
                match self { $(Tool::$variant => <$ty as Paste>::NAME,)* }
            }

            /// The `fabrik parse` subcommand (`ibv-devinfo`).
            pub fn command(self) -> &'static str {
                match self { $(Tool::$variant => <$ty as Paste>::COMMAND,)* }
            }

            /// Other names the subcommand answers to.
            pub fn aliases(self) -> &'static [&'static str] {
                match self { $(Tool::$variant => <$ty as Paste>::ALIASES,)* }
            }

            /// One line of help.
            pub fn about(self) -> &'static str {
                match self { $(Tool::$variant => <$ty as Paste>::ABOUT,)* }
            }

            /// What the tool's output looks like.
            pub fn expected(self) -> &'static str {
                match self { $(Tool::$variant => <$ty as Format>::EXPECTED,)* }
            }

            /// Reads `text` as this tool's output.
            pub fn read(self, text: &str) -> Result<Pasted, NotRecognised> {
                match self { $(Tool::$variant => read::<$ty>(text),)* }
            }
        }
    };
}

tools! {
    /// `nvidia-smi topo -m`.
    Topo => super::nvidia_smi_topo::NvidiaSmiTopo,
    /// `ibstat`.
    Ibstat => super::ibstat::Ibstat,
    /// `ibstatus`.
    Ibstatus => super::ibstatus::Ibstatus,
    /// `ibv_devinfo [-v]`.
    IbvDevinfo => super::ibv_devinfo::IbvDevinfo,
    /// `show_gids`.
    ShowGids => super::show_gids::ShowGids,
    /// `ibdev2netdev [-v]`.
    Ibdev2netdev => super::ibdev2netdev::Ibdev2netdev,
    /// `mlnx_qos -i IF`.
    MlnxQos => super::mlnx_qos::MlnxQos,
    /// `lspci -vvv`.
    Lspci => super::lspci::Lspci,
    /// `mstconfig q` / `mlxconfig q`.
    Mstconfig => super::mstconfig::Mstconfig,
    /// `mstlink` / `mlxlink`.
    Mstlink => super::mstlink::Mstlink,
    /// `ethtool IF`.
    Ethtool => super::ethtool::Ethtool,
    /// `ethtool -S IF`.
    EthtoolStats => super::ethtool::EthtoolStats,
    /// `ethtool -m IF`.
    EthtoolModule => super::ethtool_module::EthtoolModule,
    /// The kernel log.
    Dmesg => super::dmesg::Dmesg,
    /// `nvidia-smi nvlink -s`.
    Nvlink => super::nvlink::NvlinkStatus,
    /// `mst status [-v]`.
    MstStatus => super::mst_status::MstStatus,
    /// `ibdiagnet`.
    Ibdiagnet => super::ibdiagnet::Ibdiagnet,
    /// `iblinkinfo`.
    Iblinkinfo => super::iblinkinfo::Iblinkinfo,
    /// `rocm-smi --showtopo`.
    RocmTopo => super::rocm_topo::RocmTopo,
}

impl Tool {
    /// The tool whose command or alias is `name`.
    pub fn from_command(name: &str) -> Option<Tool> {
        Tool::ALL
            .iter()
            .copied()
            .find(|t| t.command() == name || t.name() == name || t.aliases().contains(&name))
    }
}

impl Serialize for Pasted {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Pasted", 2)?;
        st.serialize_field("tool", self.tool)?;
        st.serialize_field("facts", &self.facts)?;
        st.end()
    }
}

/// `fabrik parse <TOOL> ...`: one subcommand per tool in [`Tool::ALL`], named, described and
/// aliased by the tool's parser, each taking the arguments `A`.
#[cfg(feature = "clap")]
pub struct ToolCommand<A> {
    /// The tool named.
    pub tool: Tool,
    /// Its arguments.
    pub args: A,
}

#[cfg(feature = "clap")]
impl<A: clap::FromArgMatches> clap::FromArgMatches for ToolCommand<A> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = m.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        let tool = Tool::from_command(name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        Ok(ToolCommand {
            tool,
            args: A::from_arg_matches(sub)?,
        })
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

#[cfg(feature = "clap")]
impl<A: clap::Args> clap::Subcommand for ToolCommand<A> {
    fn augment_subcommands(mut cmd: clap::Command) -> clap::Command {
        for t in Tool::ALL {
            let sub = clap::Command::new(t.command())
                .about(t.about())
                .aliases(t.aliases().iter().copied().filter(|a| *a != t.command()));
            cmd = cmd.subcommand(A::augment_args(sub));
        }
        cmd
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        Tool::from_command(name).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let mut seen = std::collections::BTreeSet::new();
        for t in Tool::ALL {
            for n in std::iter::once(t.command()).chain(t.aliases().iter().copied()) {
                assert!(seen.insert(n), "{n} names two tools");
                assert_eq!(Tool::from_command(n), Some(*t));
            }
            assert!(!t.about().is_empty() && !t.expected().is_empty());
        }
        assert_eq!(Tool::from_command("nothing"), None);
    }

    #[test]
    fn unrecognised_text_says_what_was_expected() {
        for t in Tool::ALL {
            let e = t.read("hello\nworld\n").err();
            assert_eq!(
                e.map(|e| e.to_string()),
                Some(format!(
                    "no {} output found: expected {}",
                    t.name(),
                    t.expected()
                )),
                "{t:?}"
            );
        }
    }
}
