//! Recursive Fibonacci with nested tasks that join: each task spawns two children into
//! its scope, each writing a datum created there, waits for them and adds their
//! results (`TaskCtx::fetch`). Verified against the sequential recursion, with one
//! worker and with two, and timed: tasks per second.
//!
//! ```sh
//! cargo run --release -p locus --example fib [N]
//! ```

use std::time::Instant;

use locus::{Runtime, TaskCtx, Topology};

fn fib_task(ctx: &TaskCtx, n: u64, out: &mut [u64]) {
    if n < 2 {
        out[0] = n;
        return;
    }
    let a = ctx.scope().data::<u64>("fib(n-1)", 1);
    let b = ctx.scope().data::<u64>("fib(n-2)", 1);
    ctx.scope()
        .spawn("fib", a.write(), move |ctx, a| fib_task(ctx, n - 1, a))
        .expect("spawn");
    ctx.scope()
        .spawn("fib", b.write(), move |ctx, b| fib_task(ctx, n - 2, b))
        .expect("spawn");
    out[0] = ctx.fetch(&a).expect("fib(n-1)")[0] + ctx.fetch(&b).expect("fib(n-2)")[0];
}

fn fib_seq(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|_| format!("N must be a non-negative integer, got `{arg}`"))?,
        None => 22,
    };
    run(n)
}

/// Computes fib(`n`) with one worker and with two, verifies and prints.
fn run(n: u64) -> Result<(), Box<dyn std::error::Error>> {
    if n > 40 {
        return Err(format!(
            "N = {n} would spawn {} tasks; use N <= 40",
            2 * fib_seq(n + 1)
        )
        .into());
    }
    let want = fib_seq(n);
    let cpus = Topology::host()?.num_cpus();
    let mut failed = false;
    for threads in [1, 2.min(cpus)] {
        let rt = Runtime::builder().threads(threads).build()?;
        let out = rt.data::<u64>("fib(n)", 1);
        let start = Instant::now();
        let finished =
            rt.run(|s| s.spawn("fib", out.write(), move |ctx, o| fib_task(ctx, n, o)))?;
        finished.value?;
        let secs = start.elapsed().as_secs_f64();
        let got = rt.fetch(&out)?[0];
        let tasks = finished.report.tasks;
        let verified = got == want;
        failed |= !verified;
        println!(
            "fib({n}) = {got} on {threads} worker{}: {}, {tasks} tasks in {secs:.3} s, {:.0} tasks/s",
            if threads == 1 { "" } else { "s" },
            if verified { "verified" } else { "WRONG" },
            tasks as f64 / secs
        );
    }
    if failed {
        return Err(format!("fib({n}) does not match the sequential value {want}").into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn fib_verifies_on_one_and_two_workers() {
        super::run(12).unwrap();
    }
}
