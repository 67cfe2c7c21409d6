//! Helpers shared by the test files (each includes it with `mod common;`).

use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on another thread and fails the test if it has not returned after
/// `seconds` (a deadlock or livelock must fail, not hang the suite).
pub fn within<T: Send + 'static>(seconds: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(seconds)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("did not finish within {seconds} s: a deadlock or a livelock")
        }
        // `f` panicked: that is the failure to report.
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread sent nothing and did not panic"),
        },
    }
}
