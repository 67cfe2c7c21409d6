//! Tiled Cholesky factorisation (potrf, trsm, syrk, gemm) of one partitioned matrix:
//! the matrix is one datum, cut into tiles by `Runtime::partition`; tasks declare
//! tiles, `data_from` and `fetch` take and return the whole matrix. Prints GFLOP/s and
//! `r_loc_rt`, and verifies the factor against the same algorithm run sequentially
//! (bitwise: every tile sees its updates in the same order) and by sampled entries of
//! L·Lᵀ against the matrix.
//!
//! `--handles` runs the same factorisation written with one handle per tile instead
//! (the way it had to be written before partitions), for comparison.
//!
//! ```sh
//! cargo run --release -p locus --example cholesky -- --topology 4x1 --n 1024 --tile 128
//! cargo run --release -p locus --example cholesky -- --handles
//! ```
//!
//! Options: `--topology SPEC` (default `2x1`, or the `LOCUS_TOPOLOGY` environment
//! variable), `--config NAME` (default `dsa-opt`), `--n N` (default 512), `--tile B`
//! (default 64, must divide N), `--handles`.

use std::time::Instant;

use locus::{Config, Data, Partition, Report, Runtime, Topology};

/// What to run.
#[derive(Clone, Debug)]
struct Options {
    topology: String,
    config: Config,
    n: usize,
    tile: usize,
    handles: bool,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        topology: std::env::var("LOCUS_TOPOLOGY").unwrap_or_else(|_| "2x1".into()),
        config: Config::DsaOpt,
        n: 512,
        tile: 64,
        handles: false,
    };
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--topology" => o.topology = value()?,
            "--config" => o.config = value()?.parse().map_err(|e| format!("--config: {e}"))?,
            "--n" => o.n = value()?.parse().map_err(|e| format!("--n: {e}"))?,
            "--tile" => o.tile = value()?.parse().map_err(|e| format!("--tile: {e}"))?,
            "--handles" => o.handles = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if o.tile == 0 || o.n == 0 || o.n % o.tile != 0 {
        return Err(format!(
            "--tile {} must divide --n {} (both positive)",
            o.tile, o.n
        ));
    }
    Ok(o)
}

// The tile kernels, on b x b tiles stored row after row (lower triangular factors).

fn potrf(a: &mut [f64], b: usize) {
    for j in 0..b {
        let d = a[j * b + j] - (0..j).map(|k| a[j * b + k] * a[j * b + k]).sum::<f64>();
        let d = d.sqrt();
        a[j * b + j] = d;
        for i in j + 1..b {
            let s = (0..j).map(|k| a[i * b + k] * a[j * b + k]).sum::<f64>();
            a[i * b + j] = (a[i * b + j] - s) / d;
            a[j * b + i] = 0.0;
        }
    }
}

/// `x <- x * l^-T` for the lower factor `l`.
fn trsm(l: &[f64], x: &mut [f64], b: usize) {
    for r in 0..b {
        for j in 0..b {
            let s = (0..j).map(|k| x[r * b + k] * l[j * b + k]).sum::<f64>();
            x[r * b + j] = (x[r * b + j] - s) / l[j * b + j];
        }
    }
}

/// `c <- c - a * bᵀ` (syrk when `a` and `b` are the same tile).
fn gemm(a: &[f64], bt: &[f64], c: &mut [f64], b: usize) {
    for i in 0..b {
        for j in 0..b {
            let s = (0..b).map(|k| a[i * b + k] * bt[j * b + k]).sum::<f64>();
            c[i * b + j] -= s;
        }
    }
}

/// A symmetric, diagonally dominant (so positive definite) matrix, row-major.
fn matrix(n: usize) -> Vec<f64> {
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] = 1.0 / (1.0 + i.abs_diff(j) as f64) + if i == j { n as f64 } else { 0.0 };
        }
    }
    a
}

/// Tile `(i, j)` of a row-major `n x n` matrix, row after row.
fn tile_of(a: &[f64], n: usize, b: usize, i: usize, j: usize) -> Vec<f64> {
    (0..b)
        .flat_map(|r| a[(i * b + r) * n + j * b..][..b].iter().copied())
        .collect()
}

/// Writes tile `(i, j)` back into a row-major matrix.
fn put_tile(a: &mut [f64], n: usize, b: usize, i: usize, j: usize, t: &[f64]) {
    for r in 0..b {
        a[(i * b + r) * n + j * b..][..b].copy_from_slice(&t[r * b..][..b]);
    }
}

/// The tiled algorithm run sequentially, the reference: tiles updated in the order the
/// task graph orders them. The strict upper triangle of the result is zero.
fn sequential(a: &[f64], n: usize, b: usize) -> Vec<f64> {
    let t = n / b;
    let mut tiles: Vec<Vec<f64>> = (0..t * t).map(|k| tile_of(a, n, b, k / t, k % t)).collect();
    for k in 0..t {
        potrf(&mut tiles[k * t + k], b);
        for i in k + 1..t {
            let l = tiles[k * t + k].clone();
            trsm(&l, &mut tiles[i * t + k], b);
        }
        for i in k + 1..t {
            let aik = tiles[i * t + k].clone();
            gemm(&aik, &aik, &mut tiles[i * t + i], b);
            for j in k + 1..i {
                let ajk = tiles[j * t + k].clone();
                gemm(&aik, &ajk, &mut tiles[i * t + j], b);
            }
        }
    }
    let mut out = vec![0.0; n * n];
    for i in 0..t {
        for j in 0..=i {
            put_tile(&mut out, n, b, i, j, &tiles[i * t + j]);
        }
    }
    out
}

/// What a factorisation returns: the factor (lower, row-major) and the run's report.
struct Factored {
    l: Vec<f64>,
    report: Report,
}

// The factorisation with one partitioned matrix.
fn factor_partitioned(
    rt: &Runtime,
    a: &[f64],
    n: usize,
    b: usize,
) -> Result<Factored, locus::RunError> {
    let t = n / b;
    let m = rt.data_from("A", a)?;
    let tiles = rt.partition(&m, Partition::tiles(n, n, b, b))?;
    let tile = |i: usize, j: usize| tiles.tile(i, j).expect("in the grid");
    let finished = rt.try_run(|s| {
        for k in 0..t {
            s.spawn("potrf", tile(k, k).read_write(), move |_, a| potrf(a, b))?;
            for i in k + 1..t {
                s.spawn(
                    "trsm",
                    (tile(k, k).read(), tile(i, k).read_write()),
                    move |_, (l, x)| trsm(l, x, b),
                )?;
            }
            for i in k + 1..t {
                s.spawn(
                    "syrk",
                    (tile(i, k).read(), tile(i, i).read_write()),
                    move |_, (a, c)| gemm(a, a, c, b),
                )?;
                for j in k + 1..i {
                    let access = (
                        tile(i, k).read(),
                        tile(j, k).read(),
                        tile(i, j).read_write(),
                    );
                    s.spawn("gemm", access, move |_, (x, y, c)| gemm(x, y, c, b))?;
                }
            }
        }
        Ok(())
    })?;
    let mut l = rt.fetch(&m)?;
    for i in 0..n {
        l[i * n + i + 1..(i + 1) * n].fill(0.0); // the upper tiles were not factored
    }
    Ok(Factored {
        l,
        report: finished.report,
    })
}
// End of the factorisation with one partitioned matrix.

// The factorisation with one handle per tile.
fn factor_handles(
    rt: &Runtime,
    a: &[f64],
    n: usize,
    b: usize,
) -> Result<Factored, locus::RunError> {
    let t = n / b;
    let mut tiles: Vec<Data<f64>> = Vec::with_capacity(t * t);
    for i in 0..t {
        for j in 0..t {
            tiles.push(rt.data_from(format!("A[{i},{j}]"), &tile_of(a, n, b, i, j))?);
        }
    }
    let tile = |i: usize, j: usize| &tiles[i * t + j];
    let finished = rt.try_run(|s| {
        for k in 0..t {
            s.spawn("potrf", tile(k, k).read_write(), move |_, a| potrf(a, b))?;
            for i in k + 1..t {
                s.spawn(
                    "trsm",
                    (tile(k, k).read(), tile(i, k).read_write()),
                    move |_, (l, x)| trsm(l, x, b),
                )?;
            }
            for i in k + 1..t {
                s.spawn(
                    "syrk",
                    (tile(i, k).read(), tile(i, i).read_write()),
                    move |_, (a, c)| gemm(a, a, c, b),
                )?;
                for j in k + 1..i {
                    let access = (
                        tile(i, k).read(),
                        tile(j, k).read(),
                        tile(i, j).read_write(),
                    );
                    s.spawn("gemm", access, move |_, (x, y, c)| gemm(x, y, c, b))?;
                }
            }
        }
        Ok(())
    })?;
    let mut l = vec![0.0; n * n];
    for i in 0..t {
        for j in 0..=i {
            put_tile(&mut l, n, b, i, j, &rt.fetch(tile(i, j))?);
        }
    }
    Ok(Factored {
        l,
        report: finished.report,
    })
}
// End of the factorisation with one handle per tile.

/// Runs one factorisation and verifies it; returns a line to print.
fn run(o: &Options) -> Result<String, Box<dyn std::error::Error>> {
    let rt = Runtime::builder()
        .topology(Topology::from_spec(&o.topology)?)
        .config(o.config)
        .build()?;
    let (n, b) = (o.n, o.tile);
    let a = matrix(n);
    let start = Instant::now();
    let f = if o.handles {
        factor_handles(&rt, &a, n, b)?
    } else {
        factor_partitioned(&rt, &a, n, b)?
    };
    let seconds = start.elapsed().as_secs_f64();
    if f.l != sequential(&a, n, b) {
        return Err("the factor differs from the sequential tiled factorisation".into());
    }
    // Sampled entries of L·Lᵀ against A.
    let mut worst = 0.0f64;
    for s in 0..64 {
        let (i, j) = ((s * 7919) % n, (s * 104_729 + 3) % n);
        let llt: f64 = (0..n).map(|k| f.l[i * n + k] * f.l[j * n + k]).sum();
        worst = worst.max((llt - a[i * n + j]).abs() / a[i * n + i].abs());
    }
    if worst > 1e-10 {
        return Err(format!("L·Lᵀ differs from A by {worst:e} (relative)").into());
    }
    let gflops = (n as f64).powi(3) / 3.0 / f.report.wall_s / 1e9;
    Ok(format!(
        "cholesky ({}) n = {n}, tile = {b}, {} on {}: verified, {:.3} s run ({:.3} s with \
         data_from and fetch), {gflops:.2} GFLOP/s, r_loc_rt = {:.3}, peak {} KiB",
        if o.handles {
            "one handle per tile"
        } else {
            "one partitioned matrix"
        },
        o.config,
        o.topology,
        f.report.wall_s,
        seconds,
        f.report.locality.r_loc_rt,
        f.report.memory.peak_bytes / 1024,
    ))
}

fn main() {
    let options = match parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cholesky: {e}");
            std::process::exit(2);
        }
    };
    match run(&options) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("cholesky: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_versions_verify_on_two_and_four_nodes() {
        for topology in ["2x1", "4x1"] {
            for handles in [false, true] {
                for config in [Config::DsaOpt, Config::DsaBase, Config::ShmBase] {
                    let o = Options {
                        topology: topology.into(),
                        config,
                        n: 96,
                        tile: 24,
                        handles,
                    };
                    run(&o).unwrap_or_else(|e| panic!("{o:?}: {e}"));
                }
            }
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        let parse = |a: &[&str]| parse(a.iter().map(|s| s.to_string()));
        assert!(parse(&["--n", "100", "--tile", "33"])
            .unwrap_err()
            .contains("divide"));
        assert!(parse(&["--tile", "0"]).is_err());
        assert!(parse(&["--what"]).unwrap_err().contains("unknown"));
        assert!(parse(&["--n"]).unwrap_err().contains("needs a value"));
        assert_eq!(
            parse(&["--handles", "--n", "64", "--tile", "16"])
                .unwrap()
                .n,
            64
        );
    }
}
