//! Port and netdev counters over time: a lean sampler, rates between samples, counter findings,
//! `top` rendering and a Prometheus exporter.
//!
//! Pure core, I/O at the edges: [`read`] and [`server`] touch the system; everything else is a
//! function of [`Sample`]s.

pub mod delta;
pub mod ethtool;
pub mod metrics;
pub mod read;
pub mod render;
pub mod rules;
pub mod sample;
pub mod server;
pub mod width;

pub use delta::{compare, interval_between, Change, CounterChange, Report};
pub use read::{sample, sample_with, EthtoolMode, SampleOptions};
pub use rules::{counter_findings, report_findings, Thresholds};
pub use sample::{NetdevSample, PortSample, Reading, Sample, Source};
