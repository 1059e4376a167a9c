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
        (us > 100.0 && t > 0.0).then(|| t / us)
    }
}

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
