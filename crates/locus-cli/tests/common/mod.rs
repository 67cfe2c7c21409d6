//! What the command-line tests share: running the `locus` binary as a user would.

// Each test file uses some of these.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};

/// Runs `locus ARGS` with no standard input.
pub fn locus(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the locus binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}
