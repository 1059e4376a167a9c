//! Cheap timestamps for latency loops. perftest reads the TSC (`rdtsc`); fabrik does the same on
//! x86_64, because `clock_gettime` can be a system call plus an emulated device read (a qemu
//! guest on the `hpet` clocksource), which would land inside every measured round trip. Ticks
//! are converted with a rate measured against `Instant` over the run itself.

use std::time::Instant;

/// A tick counter with its own calibration.
pub struct Ticker {
    i0: Instant,
    c0: u64,
}

impl Ticker {
    /// Starts counting; the rate is calibrated from here.
    pub fn start() -> Self {
        Ticker {
            i0: Instant::now(),
            c0: ticks(),
        }
    }

    /// The current tick count.
    pub fn now(&self) -> u64 {
        ticks()
    }

    /// Ticks per microsecond over the time since `start`; `None` if too little time passed or
    /// the counter did not move forward.
    pub fn ticks_per_us(&self) -> Option<f64> {
        let us = self.i0.elapsed().as_secs_f64() * 1e6;
        let t = ticks().checked_sub(self.c0)? as f64;
        (us > CALIBRATION_US && t > 0.0).then(|| t / us)
    }

    /// The rate, after the measured work: a run shorter than the calibration span (a few round
    /// trips on real hardware) first sleeps the rest of it, outside the timed region. `None` only
    /// when the counter does not move forward.
    pub fn rate(&self) -> Option<f64> {
        let span = std::time::Duration::from_secs_f64(2.0 * CALIBRATION_US / 1e6);
        if let Some(rest) = span.checked_sub(self.i0.elapsed()) {
            std::thread::sleep(rest);
        }
        self.ticks_per_us()
    }
}

/// The shortest span (µs) the rate is measured over; two clock reads bound it, and below this
/// their own cost would show in the rate.
const CALIBRATION_US: f64 = 100.0;

#[cfg(target_arch = "x86_64")]
fn ticks() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86_64 (every x86_64 CPU has it).
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn ticks() -> u64 {
    use std::sync::OnceLock;
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_run_shorter_than_the_calibration_still_gets_its_rate() {
        let t = Ticker::start();
        let rate = t.rate().unwrap();
        // Whatever the counter's frequency, one tick per µs to 10 GHz brackets it.
        assert!((1.0..10_000.0).contains(&rate), "{rate} ticks/µs");
    }

    #[test]
    fn calibrated_ticks_measure_a_sleep() {
        let t = Ticker::start();
        let a = t.now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = t.now();
        let rate = t.ticks_per_us().unwrap();
        let us = (b - a) as f64 / rate;
        assert!((15_000.0..200_000.0).contains(&us), "{us} µs");
    }
}
