//! A progress bar for long scans, drawn on stderr only when it helps.
//!
//! The bar starts hidden and appears only when progress was asked for,
//! stderr is a terminal and the scan has already lasted about half a second,
//! so quick commands and piped output never show it. Workers call
//! [`Progress::inc`] once per block of rows; the call is cheap and
//! thread-safe.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a scan runs before its bar is drawn.
const DELAY: Duration = Duration::from_millis(500);

/// Progress over the rows of one scan.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    /// True while the bar may still be switched to stderr.
    pending: AtomicBool,
    /// Set by [`Progress::cancel`]: the work counted here is no longer wanted.
    cancelled: AtomicBool,
}

impl Progress {
    /// A bar over `total_rows` labelled `label`; drawn only if `enabled`
    /// and stderr is a terminal, and then only after about half a second.
    pub fn new(enabled: bool, total_rows: u64, label: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total_rows), ProgressDrawTarget::hidden());
        // The label takes the width the rest leaves and is cut to it, so the
        // line never wraps, however long the label or narrow the terminal.
        let style = ProgressStyle::with_template(
            "{wide_msg} [{elapsed_precise}] {bar:20} {human_pos}/{human_len} rows ({eta})",
        )
        .expect("valid template");
        bar.set_style(style);
        bar.set_message(label.to_string());
        Progress {
            bar,
            start: Instant::now(),
            pending: AtomicBool::new(enabled && std::io::stderr().is_terminal()),
            cancelled: AtomicBool::new(false),
        }
    }

    /// A progress that never draws.
    pub fn hidden() -> Self {
        Progress::new(false, 0, "")
    }

    /// Records `rows` more rows done; call once per block, from any thread.
    pub fn inc(&self, rows: u64) {
        self.bar.inc(rows);
        if self.pending.load(Ordering::Relaxed)
            && self.start.elapsed() >= DELAY
            && self.pending.swap(false, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Tells the workers counting here that their result is no longer
    /// wanted (another part of the command failed): scans check it between
    /// blocks and stop early.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether [`Progress::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Hides the bar while `f` runs (say, to print to the same terminal),
    /// then draws it again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Clears the bar, if it was drawn.
    pub fn finish(&self) {
        self.pending.store(false, Ordering::Relaxed);
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_without_drawing() {
        let p = Progress::new(true, 1000, "test");
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..25).for_each(|_| p.inc(10)));
            }
        });
        assert_eq!(p.bar.position(), 1000);
        assert!(p.bar.is_hidden());
        p.finish();
        Progress::hidden().inc(1);
    }
}
