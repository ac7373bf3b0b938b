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
        // The label comes last and is cut to the width the rest leaves, so
        // the line never wraps, however long the label or narrow the terminal.
        let style = ProgressStyle::with_template(
            "[{elapsed_precise}] {bar:24} {human_pos}/{human_len} rows ({eta}) {wide_msg}",
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

    /// A terminal of a given width that keeps what is written to it.
    #[derive(Debug)]
    struct Screen {
        width: u16,
        text: std::sync::Arc<std::sync::Mutex<String>>,
    }

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            self.width
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(&format!("{s}\n"))
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.text.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.write_str("\n")
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_long_label_is_cut_to_the_terminal_width() {
        let label = "checking model.language_model.embed_tokens.weight, model.language_model.lm_head.weight";
        for width in [80u16, 200] {
            let text = std::sync::Arc::default();
            let screen = Screen {
                width,
                text: std::sync::Arc::clone(&text),
            };
            let p = Progress::new(true, 256_512, label);
            p.bar
                .set_draw_target(ProgressDrawTarget::term_like(Box::new(screen)));
            p.bar.set_position(128_256);
            p.bar.tick();
            let text = text.lock().unwrap().clone();
            let line = text.lines().find(|l| l.contains("rows")).expect("drawn");
            assert!(
                line.chars().count() <= usize::from(width),
                "{width}: {line:?}"
            );
            assert!(line.contains("128,256/256,512 rows"), "{line:?}");
            assert!(line.starts_with("[00:00:"), "{line:?}");
            let shown = line
                .split("rows (0s) ")
                .nth(1)
                .expect("label after the counts")
                .trim_end();
            match width {
                80 => assert_eq!(shown, "checking model.lan"),
                _ => assert_eq!(shown, label),
            }
        }
    }
}
