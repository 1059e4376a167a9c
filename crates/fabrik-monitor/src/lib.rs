//! Port and netdev counters over time: a lean sampler, rates between samples, counter findings
//! and a Prometheus exporter (`fabrik-render` prints a comparison as text).
//!
//! Pure core, I/O at the edges: [`read`], [`server`] and [`keys`] touch the system; everything
//! else is a function of [`Sample`]s.
#![warn(missing_docs)]

pub mod checkup;
pub mod delta;
pub mod diff;
pub mod ethtool;
pub mod keys;
pub mod metrics;
pub mod options;
pub mod read;
pub mod rules;
/// The sample types, which live in the model ([`fabrik_model::counters`]).
pub use fabrik_model::counters as sample;
pub mod server;
pub mod top;
pub mod width;

pub use delta::{compare, interval_between, Change, CounterChange, Report};
pub use read::{
    ethtool_on_path, is_live, sample, sample_with, EthtoolMode, SampleOptions, Sampler,
};
pub use rules::{counter_findings, report_findings, Thresholds};
pub use sample::{NetdevSample, PortSample, Reading, Sample, Source};

/// Samples `root` twice, `interval` apart, and returns the comparison and its counter findings:
/// what `fabrik doctor --watch 10s` adds to the doctor's static rules.
pub fn watch(
    root: &std::path::Path,
    interval: std::time::Duration,
    thresholds: &Thresholds,
) -> (Report, Vec<fabrik_model::Finding>) {
    let mut sampler = Sampler::new(root, SampleOptions::for_root(root));
    let before = sampler.sample();
    let t0 = std::time::Instant::now();
    std::thread::sleep(interval);
    let after = sampler.sample();
    let report = compare(&before, &after, Some(t0.elapsed()));
    let findings = report_findings(&report, thresholds);
    (report, findings)
}

/// What `doctor --watch` saw on one root.
#[derive(Debug, Clone, PartialEq)]
pub enum Watched {
    /// The counter findings over the interval.
    Findings(Vec<fabrik_model::Finding>),
    /// A snapshot archive, whose counters cannot move: not watched.
    Frozen,
}

/// Runs `work` (probing the roots, say) while every root's counters are watched over
/// `interval` on threads of their own, so the interval is spent once, not per root; returns
/// what `work` gave and what each root's watch saw (none without an interval).
pub fn while_watching<T>(
    roots: &[std::path::PathBuf],
    interval: Option<std::time::Duration>,
    thresholds: &Thresholds,
    work: impl FnOnce() -> T,
) -> (T, Vec<Watched>) {
    std::thread::scope(|scope| {
        let watchers: Vec<_> = match interval {
            Some(interval) => roots
                .iter()
                .map(|root| {
                    scope.spawn(move || {
                        if fabrik_probe::snapshot::is_snapshot_tarball(root) {
                            return Watched::Frozen;
                        }
                        Watched::Findings(watch(root, interval, thresholds).1)
                    })
                })
                .collect(),
            None => vec![],
        };
        let done = work();
        let watched = watchers
            .into_iter()
            .map(|w| w.join().unwrap_or(Watched::Findings(vec![])))
            .collect();
        (done, watched)
    })
}
