//! Every kernel, under both control programs, finishes and verifies under windows of 1
//! to 64 tasks: a bounded window never deadlocks with nested submitters (creators).

use std::sync::mpsc;
use std::time::Duration;

use locus::{Config, Runtime, Topology};
use locus_bench::{run_kernel, Control, Size, KERNELS};

#[test]
fn every_kernel_finishes_under_every_window() {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        for config in [Config::DsaOpt, Config::DsaBase, Config::ShmBase] {
            for window in [1, 2, 4, 16, 64] {
                let rt = Runtime::builder()
                    .topology(Topology::from_spec("2x1").unwrap())
                    .config(config)
                    .window(window)
                    .build()
                    .unwrap();
                for &name in KERNELS {
                    for control in Control::ALL {
                        let out = run_kernel(name, &rt, Size::Tiny, control).unwrap_or_else(|e| {
                            panic!("{name} ({control}) under {config}, window {window}: {e}")
                        });
                        assert!(
                            out.verified,
                            "{name} ({control}) under {config}, window {window}"
                        );
                    }
                }
            }
        }
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(300)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("the kernels did not finish within 300 s under small windows: a deadlock")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(handle.join().expect_err("the thread panicked"))
        }
    }
}
