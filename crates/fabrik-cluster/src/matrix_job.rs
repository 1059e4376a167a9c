//! One `cluster matrix` job on this rank, end to end: the transport every rank agrees on, the
//! matrix on each rail, each rail's pass line (from the expectations, the link rate given, or
//! the rate most ranks' inventories give their data NIC) and the links judged against it.

use fabrik_doctor::passline::{self, LinksJudgement, Verdict, WithLinksPassLine};
use fabrik_doctor::Expectations;
use fabrik_model::PairMatrix;
use serde::Serialize;

use crate::matrix::{self, MatrixConfig, RunHooks};
use crate::matrix_options::MatrixOptions;
use crate::rendezvous::Group;
use crate::transport::{self, RdmaSettings, Transport, TransportChoice};
use crate::ClusterError;

/// What a job is asked to do, read and checked before any rank starts ([`MatrixJob::new`]).
pub struct MatrixJob<'a> {
    options: &'a MatrixOptions,
    rdma: &'a RdmaSettings,
    expect: Option<&'a Expectations>,
    link_gbps: Option<f64>,
    cfg: MatrixConfig,
    choice: TransportChoice,
}

/// How far the run is, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// A matrix starts (`matrix`, or `matrix rail 2` in a per-rail run) of `rounds` rounds.
    Matrix {
        /// Which matrix, in words.
        what: &'a str,
        /// Its rounds.
        rounds: u64,
    },
    /// This many rounds of the current matrix are done.
    Rounds(u64),
}

/// Rank 0's result: every rail's matrix with its links judged.
#[derive(Debug)]
pub struct JudgedMatrices {
    /// One matrix per rail (one in all without `--per-rail`).
    pub matrices: Vec<PairMatrix>,
    /// Each matrix's links judged, where a line was known.
    pub judged: Vec<Option<LinksJudgement>>,
    /// Whether the run was per rail (its JSON lists the rails).
    pub per_rail: bool,
    /// The transport, in words, where it has some to say (the RDMA device).
    pub transport: Option<String>,
}

impl JudgedMatrices {
    /// A link below its line, or a culprit named (the exit status).
    pub fn failed(&self) -> bool {
        let below = self
            .judged
            .iter()
            .flatten()
            .any(|j| j.verdict == Verdict::Fail);
        below || self.matrices.iter().any(matrix::flagged)
    }
}

/// The JSON of `cluster matrix`: the matrix with its judgement, or `{"rails": [...]}`.
impl Serialize for JudgedMatrices {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let each: Vec<_> = self
            .matrices
            .iter()
            .zip(&self.judged)
            .map(|(m, j)| WithLinksPassLine {
                report: m,
                pass_line: j.clone(),
            })
            .collect();
        match (self.per_rail, each.first()) {
            (false, Some(one)) => one.serialize(s),
            _ => {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("rails", &each)?;
                map.end()
            }
        }
    }
}

impl<'a> MatrixJob<'a> {
    /// Reads and checks the options, so that a bad value is said before any rank starts.
    pub fn new(
        options: &'a MatrixOptions,
        rdma: &'a RdmaSettings,
        expect: Option<&'a Expectations>,
        link_gbps: Option<f64>,
    ) -> Result<Self, ClusterError> {
        let (cfg, choice) = options.plan()?;
        Ok(Self {
            options,
            rdma,
            expect,
            link_gbps,
            cfg,
            choice,
        })
    }

    /// Runs the job on this rank (every rank calls it). Rank 0 returns the judged matrices;
    /// `on_rows` sees each matrix so far as rows arrive (the partial one too when the run
    /// fails) and `progress` each step.
    pub fn run(
        &self,
        group: &mut Group,
        progress: &mut dyn FnMut(Step<'_>),
        on_rows: &mut dyn FnMut(&PairMatrix),
    ) -> Result<Option<JudgedMatrices>, ClusterError> {
        let transport = transport::agree(group, self.choice, self.rdma)?;
        let rails = self.options.rails(group)?;
        let probe = self.expect.is_none() && self.link_gbps.is_none();
        let node = if probe {
            fabrik_probe::live_nics().ok()
        } else {
            None
        };
        let rates = matrix::gather_rail_rates(group, rails, |ip| {
            fabrik_parse::check::address_gbps(node?, ip)
        })?;
        let rounds = crate::pairs::round_robin(group.size()).len() as u64;
        let mut counters = rdma_counters(&*transport);
        let mut current = None;
        let result = matrix::run(
            group,
            &self.cfg,
            self.options.per_rail,
            &*transport,
            &mut RunHooks {
                on_round: &mut |rail, k, _| {
                    if current != Some(rail) {
                        current = Some(rail);
                        let what = match rail {
                            Some(r) => format!("matrix rail {r}"),
                            None => "matrix".into(),
                        };
                        progress(Step::Matrix {
                            what: &what,
                            rounds,
                        });
                    }
                    if k > 0 {
                        progress(Step::Rounds(u64::from(k)));
                    }
                },
                on_rows,
                counters: &mut counters,
            },
        );
        let matrices =
            result.map_err(|e| e.context(format!("rank {} in the pair matrix", group.rank())))?;
        if current.is_some() {
            progress(Step::Rounds(rounds));
        }
        if matrices.is_empty() {
            return Ok(None);
        }
        let judged = matrices
            .iter()
            .enumerate()
            .map(|(rail, m)| {
                let rates = rates.get(rail).map(Vec::as_slice).unwrap_or_default();
                passline::judge_matrix(m, self.expect, self.link_gbps, rates)
            })
            .collect();
        Ok(Some(JudgedMatrices {
            matrices,
            judged,
            per_rail: self.options.per_rail,
            transport: transport.describe(),
        }))
    }
}

/// Over RDMA, the device port's retransmission and sequence-error counters (read from the live
/// sysfs, as `fabrik top` reads them); nothing over TCP.
fn rdma_counters(
    transport: &dyn Transport,
) -> impl FnMut() -> Option<std::collections::BTreeMap<String, u64>> {
    let mut counters = transport.counter_port().map(|(device, port)| {
        fabrik_monitor::read::PortCounters::new(std::path::Path::new("/"), &device, port)
    });
    move || counters.as_mut()?.read()
}
