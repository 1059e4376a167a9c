//! Progress of a long run on rank 0's stderr (stdout carries the table or JSON).

use std::time::Duration;

/// Progress of a long run, on rank 0's stderr only (stdout carries the table or JSON): a bar on
/// a terminal, and on anything else (logs, CI, tests) one stable plain line per step:
/// `# progress: all_reduce 3/10 sizes done (4096 B)`, `# progress: matrix 2/7 rounds done`.
pub struct Progress {
    kind: ProgressKind,
    what: String,
    unit: &'static str,
    total: u64,
}

enum ProgressKind {
    Off,
    Lines,
    Bar(indicatif::ProgressBar),
}

impl Progress {
    /// `show` is false on every rank but 0.
    pub fn new(show: bool, what: &str, unit: &'static str, total: u64) -> Self {
        use std::io::IsTerminal;
        let kind = if !show {
            ProgressKind::Off
        } else if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total),
                indicatif::ProgressDrawTarget::stderr(),
            );
            let template =
                format!("{what} {{bar:30}} {{pos}}/{{len}} {unit} [{{elapsed}}] {{msg}}");
            if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(250));
            ProgressKind::Bar(bar)
        } else {
            ProgressKind::Lines
        };
        Self {
            kind,
            what: what.to_string(),
            unit,
            total,
        }
    }

    /// `done` steps of `total` are finished; `detail` (may be empty) says which was last.
    pub fn done(&self, done: u64, detail: &str) {
        match &self.kind {
            ProgressKind::Off => {}
            ProgressKind::Lines => {
                let tail = if detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({detail})")
                };
                eprintln!(
                    "# progress: {} {done}/{} {} done{tail}",
                    self.what, self.total, self.unit
                );
            }
            ProgressKind::Bar(bar) => {
                bar.set_position(done);
                bar.set_message(detail.to_string());
            }
        }
    }

    /// Runs `f` (which prints to stdout) with the bar hidden, so a table row shared with the
    /// same terminal is not torn by a redraw.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.kind {
            ProgressKind::Bar(bar) => bar.suspend(f),
            _ => f(),
        }
    }

    /// Removes the bar (plain lines stay as written).
    pub fn finish(&self) {
        if let ProgressKind::Bar(bar) = &self.kind {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
