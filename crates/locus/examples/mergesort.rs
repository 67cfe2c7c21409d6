//! Recursive merge sort with nested tasks that join: a task sorting a range of the keys
//! spawns two children into its scope, each sorting one half into a datum created
//! there, waits for them (`TaskCtx::fetch`) and merges the halves into its own output.
//! Verified against the standard library's sort.
//!
//! ```sh
//! cargo run --release -p locus --example mergesort [LEN]
//! ```

use std::time::Instant;

use locus::{Data, Runtime, TaskCtx};

/// Below this many keys a task sorts its range itself.
const CUTOFF: usize = 2048;

/// Sorts `keys`, which are `src[lo..hi]`, into `out`.
fn sort_task(ctx: &TaskCtx, src: &Data<u64>, lo: usize, hi: usize, keys: &[u64], out: &mut [u64]) {
    if hi - lo <= CUTOFF {
        out.copy_from_slice(keys);
        out.sort_unstable();
        return;
    }
    let mid = lo + (hi - lo) / 2;
    let left = ctx.scope().data::<u64>("left", mid - lo);
    let right = ctx.scope().data::<u64>("right", hi - mid);
    for (half, a, b) in [(&left, lo, mid), (&right, mid, hi)] {
        let src2 = src.clone();
        ctx.scope()
            .spawn(
                "sort",
                (src.read_range(a..b), half.write()),
                move |ctx, (keys, out)| sort_task(ctx, &src2, a, b, keys, out),
            )
            .expect("spawn");
    }
    let (l, r) = (
        ctx.fetch(&left).expect("left"),
        ctx.fetch(&right).expect("right"),
    );
    merge(&l, &r, out);
}

/// Merges two sorted slices into `out`.
fn merge(l: &[u64], r: &[u64], out: &mut [u64]) {
    let (mut i, mut j) = (0, 0);
    for o in out.iter_mut() {
        if j == r.len() || (i < l.len() && l[i] <= r[j]) {
            *o = l[i];
            i += 1;
        } else {
            *o = r[j];
            j += 1;
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let len: usize = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|_| format!("LEN must be a non-negative integer, got `{arg}`"))?,
        None => 1 << 20,
    };
    run(len)
}

/// Sorts `len` pseudo-random keys, verifies and prints.
fn run(len: usize) -> Result<(), Box<dyn std::error::Error>> {
    // A fixed pseudo-random sequence (xorshift64*).
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let keys: Vec<u64> = (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_F491_4F6C_DD1D)
        })
        .collect();
    let mut want = keys.clone();
    want.sort_unstable();

    let rt = Runtime::builder().build()?;
    let src = rt.data_from("keys", &keys)?;
    let sorted = rt.data::<u64>("sorted", len);
    let start = Instant::now();
    let finished = rt.run(|s| {
        let src2 = src.clone();
        s.spawn(
            "sort",
            (src.read(), sorted.write()),
            move |ctx, (keys, out)| sort_task(ctx, &src2, 0, len, keys, out),
        )
    })?;
    finished.value?;
    let secs = start.elapsed().as_secs_f64();
    let verified = rt.fetch(&sorted)? == want;
    println!(
        "merge sort of {len} keys on {} workers: {}, {} tasks in {secs:.3} s",
        rt.workers(),
        if verified { "verified" } else { "WRONG" },
        finished.report.tasks
    );
    if !verified {
        return Err("the sorted keys do not match the standard library's sort".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn merge_sort_verifies() {
        for len in [0, 1, 2047, 2049, 20_000] {
            super::run(len).unwrap();
        }
    }
}
