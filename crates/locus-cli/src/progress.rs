//! Progress of a long command (`locus bench` and its suites): a bar on a terminal, and
//! without one a line on stderr every 10 s, so that a batch job's log shows life.
//!
//! indicatif hides its bar when stderr is not a terminal (a pipe, a file, a batch
//! system's log); there a ticker thread prints
//!
//! ```text
//! locus: progress: 12/45 done, 1m40s elapsed, about 4m35s left (now: stream dsa-opt #3)
//! ```
//!
//! every [`EVERY`] until the command finishes: the runs done and to do, the time since
//! the start and an estimate of the time left (the mean time per run done so far, times
//! the runs left; `time left unknown` before the first one ends). The interval can be
//! shortened for tests by the environment variable [`EVERY_MS_VAR`], in milliseconds.

use std::io::IsTerminal;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// How often a line is printed when stderr is not a terminal.
pub const EVERY: Duration = Duration::from_secs(10);

/// The environment variable that replaces [`EVERY`] (milliseconds, above 0), for tests
/// that should not wait 10 s.
pub const EVERY_MS_VAR: &str = "LOCUS_PROGRESS_EVERY_MS";

/// The progress of `total` steps: a bar on a terminal, periodic lines elsewhere.
pub struct Progress {
    bar: ProgressBar,
    /// Without a terminal: the ticker that prints the lines, and its stop signal.
    ticker: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl Progress {
    /// Starts the progress of `total` steps: the bar, and without a terminal the
    /// ticker.
    pub fn new(total: usize) -> Progress {
        let bar = ProgressBar::new(total as u64);
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .expect("the template is valid")
                .progress_chars("=> "),
        );
        let ticker = (!std::io::stderr().is_terminal()).then(|| {
            let every = std::env::var(EVERY_MS_VAR)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|&ms| ms > 0)
                .map_or(EVERY, Duration::from_millis);
            let (stop, stopped) = mpsc::channel::<()>();
            // The bar counts and keeps the message even when it is hidden.
            let seen = bar.clone();
            let thread = std::thread::Builder::new()
                .name("locus-progress".into())
                .spawn(move || {
                    // Ends when told to stop, or when the sender is dropped.
                    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                        eprintln!("{}", line(&seen));
                    }
                })
                .expect("a thread for the progress lines can be started");
            (stop, thread)
        });
        Progress { bar, ticker }
    }

    /// Says what runs now (shown on the bar and in the next line).
    pub fn set_message(&self, message: String) {
        self.bar.set_message(message);
    }

    /// What [`Progress::set_message`] last said.
    pub fn message(&self) -> String {
        self.bar.message().to_string()
    }

    /// Counts `steps` more steps done.
    pub fn inc(&self, steps: u64) {
        self.bar.inc(steps);
    }

    /// Runs `f` (which prints to stderr) with the bar out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Clears the bar and stops the lines.
    pub fn finish_and_clear(mut self) {
        self.bar.finish_and_clear();
        self.stop();
    }

    fn stop(&mut self) {
        if let Some((stop, thread)) = self.ticker.take() {
            // The ticker may already have ended; then there is nobody to tell.
            let _ = stop.send(());
            let _ = thread.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The line printed without a terminal (see the module docs).
fn line(bar: &ProgressBar) -> String {
    let done = bar.position();
    let total = bar.length().unwrap_or(done);
    let elapsed = bar.elapsed();
    let left = match done {
        0 => "time left unknown".to_string(),
        _ => {
            let per_step = elapsed.as_secs_f64() / done as f64;
            let left = per_step * total.saturating_sub(done) as f64;
            format!(
                "about {} left",
                crate::render::clock(Duration::from_secs_f64(left))
            )
        }
    };
    let message = bar.message();
    let now = if message.is_empty() {
        String::new()
    } else {
        format!(" (now: {message})")
    };
    format!(
        "locus: progress: {done}/{total} done, {} elapsed, {left}{now}",
        crate::render::clock(elapsed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_done_total_elapsed_and_what_is_left() {
        let bar = ProgressBar::hidden();
        bar.set_length(4);
        assert!(
            line(&bar).starts_with("locus: progress: 0/4 done, 0m00s elapsed, time left unknown"),
            "{}",
            line(&bar)
        );
        bar.inc(2);
        bar.set_message("stream dsa-opt #1");
        let l = line(&bar);
        assert!(l.starts_with("locus: progress: 2/4 done, "), "{l}");
        assert!(l.contains(" left (now: stream dsa-opt #1)"), "{l}");
        assert!(l.contains("about 0m00s left"), "{l}");
    }
}
