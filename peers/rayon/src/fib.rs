//! Recursive Fibonacci with `rayon::join`, the fork-join counterpart of Locus's `fib`
//! example (nested tasks that join): every call above the leaves joins two calls.

use crate::{numbers, timed, Outcome};

/// Calls made (each call is one closure run by rayon).
fn fib(n: u64) -> (u64, u64) {
    if n < 2 {
        return (n, 1);
    }
    let ((a, ta), (b, tb)) = rayon::join(|| fib(n - 1), || fib(n - 2));
    (a + b, ta + tb + 1)
}

fn fib_seq(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// `fib [N]`: N = 22 by default, as Locus's example.
pub fn run(args: &[String]) -> Result<Outcome, String> {
    let [n] = numbers(args, [22])?;
    if n > 40 {
        return Err(format!("N = {n} is too large; use N <= 40"));
    }
    let n = n as u64;
    let ((value, calls), wall_s) = timed(|| fib(n));
    Ok(Outcome {
        tasks: calls as usize,
        wall_s,
        verified: value == fib_seq(n),
        params: format!("{{\"n\": {n}}}"),
    })
}
