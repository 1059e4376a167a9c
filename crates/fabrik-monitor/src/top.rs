//! `fabrik top`'s loop: samples a root on a fixed schedule and hands each interval's
//! comparison, with its counter findings, to the caller.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fabrik_model::counters::Frame;
use fabrik_model::SCHEMA_VERSION;

use crate::{compare, report_findings, SampleOptions, Sampler, Thresholds};

/// How `top` samples: every `interval`, for `limit` intervals (`None`: until told to stop).
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Time between samples.
    pub interval: Duration,
    /// Stop after this many intervals.
    pub limit: Option<u64>,
}

/// Samples `root` every `schedule.interval` and calls `frame` with each interval's comparison
/// and findings. Between samples `wait(left)` spends the time left (sleeping, or reading keys);
/// when it returns true the loop ends. An error from `frame` ends the loop and is returned.
pub fn run<E>(
    root: &Path,
    options: SampleOptions,
    schedule: &Schedule,
    thresholds: &Thresholds,
    wait: &mut dyn FnMut(Duration) -> bool,
    frame: &mut dyn FnMut(&Frame) -> Result<(), E>,
) -> Result<(), E> {
    let mut sampler = Sampler::new(root, options);
    let mut prev = sampler.sample();
    let mut prev_at = Instant::now();
    let mut next = prev_at + schedule.interval;
    let mut done = 0u64;
    loop {
        // Sleep to a fixed schedule so the interval does not drift by the sampling time.
        let now = Instant::now();
        if next > now && wait(next - now) {
            break;
        }
        next += schedule.interval;
        let cur = sampler.sample();
        let at = Instant::now();
        let report = compare(&prev, &cur, Some(at.duration_since(prev_at)));
        let findings = report_findings(&report, thresholds);
        frame(&Frame {
            schema_version: SCHEMA_VERSION,
            time_unix_s: unix_now(),
            report,
            findings,
        })?;
        prev = cur;
        prev_at = at;
        done += 1;
        if schedule.limit.is_some_and(|n| done >= n) {
            break;
        }
    }
    Ok(())
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
