//! The flags of `fabrik top` and `fabrik exporter`, checked and read into what the sampler,
//! [`crate::top::run`] and the [`crate::server::Exporter`] take.

use std::path::PathBuf;
use std::time::Duration;

use crate::server::Sampling;
use crate::top::Schedule;
use crate::{SampleOptions, Thresholds};

/// Why the options cannot run.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// The root is not there or not a directory.
    #[error(transparent)]
    Root(#[from] fabrik_probe::root::RootError),
    /// A time between samples of zero.
    #[error("--interval must be more than zero")]
    ZeroInterval,
    /// A sampling period of zero, or a rate window shorter than it.
    #[error("--sample-every must be more than zero and --rate-window at least as long")]
    Window,
}

/// What to sample: a root, and which of its netdevs and counters.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SourceOptions {
    /// Root to read (`/` for this machine, or a snapshot directory).
    #[cfg_attr(feature = "clap", arg(long, default_value = "/"))]
    pub root: PathBuf,
    /// Every netdev except lo, not only RDMA-backed and physical ones.
    #[cfg_attr(feature = "clap", arg(long))]
    pub all_netdevs: bool,
    /// Do not run `ethtool -S` (per-priority pause and phy discard counters) on a live root.
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_ethtool: bool,
}

/// The sampler's options for a root that exists, and whether ethtool is missing on a live
/// root (its per-priority pause and phy discard counters are then left out).
#[derive(Debug, Clone)]
pub struct Source {
    /// How to sample.
    pub options: SampleOptions,
    /// A live root with no `ethtool` on the PATH.
    pub ethtool_missing: bool,
}

impl SourceOptions {
    /// Checks the root and reads the sampler's options: every netdev or only RDMA-backed and
    /// physical ones, and `ethtool -S` unless `no_ethtool`.
    pub fn source(&self) -> Result<Source, OptionsError> {
        fabrik_probe::open::check_root(&self.root)?;
        let mut options = SampleOptions::for_root(&self.root);
        options.all_netdevs = self.all_netdevs;
        if self.no_ethtool {
            options.ethtool = crate::EthtoolMode::Off;
        }
        Ok(Source {
            options,
            ethtool_missing: !self.no_ethtool
                && crate::is_live(&self.root)
                && !crate::ethtool_on_path(),
        })
    }
}

/// `fabrik top`'s flags.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct TopOptions {
    #[cfg_attr(feature = "clap", command(flatten))]
    #[allow(missing_docs)]
    pub source: SourceOptions,
    /// Time between samples (`1s`, `500ms`, `10s`).
    #[cfg_attr(feature = "clap", arg(long, default_value = "1s", value_parser = humantime::parse_duration))]
    pub interval: Duration,
    /// Print one interval and exit.
    #[cfg_attr(feature = "clap", arg(long))]
    pub once: bool,
    /// Stop after this many intervals.
    #[cfg_attr(feature = "clap", arg(long))]
    pub count: Option<u64>,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[allow(missing_docs)]
    pub thresholds: Thresholds,
}

impl TopOptions {
    /// When to sample and when to stop.
    pub fn schedule(&self) -> Result<Schedule, OptionsError> {
        if self.interval.is_zero() {
            return Err(OptionsError::ZeroInterval);
        }
        Ok(Schedule {
            interval: self.interval,
            limit: if self.once { Some(1) } else { self.count },
        })
    }
}

/// `fabrik exporter`'s flags.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ExporterOptions {
    /// Address to serve /metrics and /healthz on; loopback unless you mean otherwise.
    #[cfg_attr(feature = "clap", arg(long, default_value = "127.0.0.1:9879"))]
    pub listen: String,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[allow(missing_docs)]
    pub source: SourceOptions,
    /// How often to re-run the doctor's node rules for `fabrik_findings` (a full probe, so not
    /// on every scrape); `0s` leaves them out.
    #[cfg_attr(feature = "clap", arg(long, default_value = "60s", value_parser = humantime::parse_duration))]
    pub doctor_every: Duration,
    #[cfg_attr(feature = "clap", command(flatten))]
    #[allow(missing_docs)]
    pub thresholds: Thresholds,
    /// How often the exporter samples the counters; every scrape is answered from the latest
    /// sample, so all scrapers see the same values and findings.
    #[cfg_attr(feature = "clap", arg(long, default_value = "15s", value_parser = humantime::parse_duration))]
    pub sample_every: Duration,
    /// The counter rules judge rates over this window of the exporter's own samples; a finding
    /// stays exported about this long, so every scraper sees it.
    #[cfg_attr(feature = "clap", arg(long, default_value = "60s", value_parser = humantime::parse_duration))]
    pub rate_window: Duration,
}

impl ExporterOptions {
    /// How the exporter samples.
    pub fn sampling(&self) -> Result<Sampling, OptionsError> {
        if self.sample_every.is_zero() || self.rate_window < self.sample_every {
            return Err(OptionsError::Window);
        }
        Ok(Sampling {
            every: self.sample_every,
            window: self.rate_window,
        })
    }

    /// How often the doctor's node rules run, or `None` when they are left out.
    pub fn doctor_every(&self) -> Option<Duration> {
        (!self.doctor_every.is_zero()).then_some(self.doctor_every)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn exporter(sample_every: u64, rate_window: u64) -> ExporterOptions {
        ExporterOptions {
            listen: "127.0.0.1:0".into(),
            source: SourceOptions {
                root: "/".into(),
                all_netdevs: false,
                no_ethtool: true,
            },
            doctor_every: Duration::ZERO,
            thresholds: Thresholds::default(),
            sample_every: Duration::from_secs(sample_every),
            rate_window: Duration::from_secs(rate_window),
        }
    }

    #[test]
    fn a_rate_window_shorter_than_the_sampling_period_is_refused() {
        assert!(matches!(
            exporter(15, 10).sampling(),
            Err(OptionsError::Window)
        ));
        assert!(matches!(
            exporter(0, 10).sampling(),
            Err(OptionsError::Window)
        ));
        let s = exporter(15, 60).sampling().unwrap();
        assert_eq!((s.every.as_secs(), s.window.as_secs()), (15, 60));
        assert_eq!(exporter(15, 60).doctor_every(), None);
    }

    #[test]
    fn once_is_one_interval_and_a_zero_interval_is_refused() {
        let mut top = TopOptions {
            source: exporter(1, 1).source,
            interval: Duration::from_secs(1),
            once: true,
            count: Some(5),
            thresholds: Thresholds::default(),
        };
        assert_eq!(top.schedule().unwrap().limit, Some(1));
        top.once = false;
        assert_eq!(top.schedule().unwrap().limit, Some(5));
        top.interval = Duration::ZERO;
        assert!(matches!(top.schedule(), Err(OptionsError::ZeroInterval)));
    }

    #[test]
    fn a_missing_root_is_refused_before_sampling() {
        let mut s = exporter(1, 1).source;
        s.root = "/nonexistent/fabrik-root".into();
        assert!(matches!(s.source(), Err(OptionsError::Root(_))));
    }
}
