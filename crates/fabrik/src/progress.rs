//! Progress of a long run on rank 0's stderr: a bar on a terminal, else one plain line per step
//! ([`fabrik_render::progress`] lays both out).

use std::time::Duration;

use fabrik_render::progress::{bar_template, line};

pub struct Progress {
    kind: Kind,
    what: String,
    unit: &'static str,
    total: u64,
}

enum Kind {
    Off,
    Lines,
    Bar(indicatif::ProgressBar),
}

impl Progress {
    /// `show` is false on every rank but 0.
    pub fn new(show: bool, what: &str, unit: &'static str, total: u64) -> Self {
        use std::io::IsTerminal;
        let kind = if !show {
            Kind::Off
        } else if std::io::stderr().is_terminal() {
            let target = indicatif::ProgressDrawTarget::stderr();
            let bar = indicatif::ProgressBar::with_draw_target(Some(total), target);
            if let Ok(style) = indicatif::ProgressStyle::with_template(&bar_template(what, unit)) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(250));
            Kind::Bar(bar)
        } else {
            Kind::Lines
        };
        let what = what.to_string();
        Self {
            kind,
            what,
            unit,
            total,
        }
    }

    /// `done` steps of `total` are finished; `detail` (may be empty) says which was last.
    pub fn done(&self, done: u64, detail: &str) {
        match &self.kind {
            Kind::Off => {}
            Kind::Lines => eprint!("{}", line(&self.what, done, self.total, self.unit, detail)),
            Kind::Bar(bar) => {
                bar.set_position(done);
                bar.set_message(detail.to_string());
            }
        }
    }

    /// Runs `f` (which prints to stdout) with the bar hidden, so a table row shared with the
    /// same terminal is not torn by a redraw.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.kind {
            Kind::Bar(bar) => bar.suspend(f),
            _ => f(),
        }
    }
}

/// Removes the bar (plain lines stay as written).
impl Drop for Progress {
    fn drop(&mut self) {
        if let Kind::Bar(bar) = &self.kind {
            bar.finish_and_clear();
        }
    }
}
