//! Heat diffusion on a square plate: a 5-point Jacobi stencil on a 2-D grid that is
//! one datum per time level, cut into strips of rows by `Runtime::partition`. Each task
//! updates one strip, reading its own strip and, when they exist, the last row of the
//! strip above and the first row of the strip below: `Option` accesses, so the edge
//! strips declare no dummy neighbour. Verifies against a sequential stencil (bitwise)
//! and prints the run's locality.
//!
//! ```sh
//! cargo run --release -p locus --example heat -- 4x1
//! ```
//!
//! The optional argument is the topology (default `2x1`).

use locus::{Config, Data, Parts, Runtime, Topology};

/// Grid extent (rows and columns), strips, time steps.
const N: usize = 256;
const STRIPS: usize = 8;
const STEPS: usize = 20;

/// One step of the stencil on the rows of one strip: `above` and `below` are the rows
/// just outside it (zero temperature beyond the plate's edges).
fn step(src: &[f64], above: Option<&[f64]>, below: Option<&[f64]>, dst: &mut [f64]) {
    let rows = src.len() / N;
    for r in 0..rows {
        let up = if r == 0 {
            above
        } else {
            Some(&src[(r - 1) * N..r * N])
        };
        let down = if r + 1 == rows {
            below
        } else {
            Some(&src[(r + 1) * N..(r + 2) * N])
        };
        for c in 0..N {
            let at = |row: Option<&[f64]>| row.map_or(0.0, |row| row[c]);
            let left = if c == 0 { 0.0 } else { src[r * N + c - 1] };
            let right = if c + 1 == N { 0.0 } else { src[r * N + c + 1] };
            dst[r * N + c] = 0.5 * src[r * N + c] + 0.125 * (at(up) + at(down) + left + right);
        }
    }
}

fn initial() -> Vec<f64> {
    // A hot square in the middle of the plate.
    (0..N * N)
        .map(|i| {
            let (r, c) = (i / N, i % N);
            if (N / 4..3 * N / 4).contains(&r) && (N / 4..3 * N / 4).contains(&c) {
                100.0
            } else {
                0.0
            }
        })
        .collect()
}

fn sequential() -> Vec<f64> {
    let (mut a, mut b) = (initial(), vec![0.0; N * N]);
    for _ in 0..STEPS {
        step(&a, None, None, &mut b);
        std::mem::swap(&mut a, &mut b);
    }
    a
}

/// Spawns one time step from `src` into `dst`, strip by strip.
fn spawn_step(s: &locus::Scope, src: &Parts<f64>, dst: &Parts<f64>) -> Result<(), locus::Error> {
    let last_row = (N * N / STRIPS - N)..N * N / STRIPS;
    for k in 0..STRIPS {
        let above = k
            .checked_sub(1)
            .map(|a| src[a].read_range(last_row.clone()));
        let below = src.get(k + 1).map(|b| b.read_range(0..N));
        s.spawn(
            "stencil",
            (src[k].read(), above, below, dst[k].write()),
            |_, (mid, above, below, out)| step(mid, above, below, out),
        )?;
    }
    Ok(())
}

fn run(topology: &str, config: Config) -> Result<String, Box<dyn std::error::Error>> {
    let rt = Runtime::builder()
        .topology(Topology::from_spec(topology)?)
        .config(config)
        .build()?;
    let a: Data<f64> = rt.data_from("a", &initial())?;
    let b: Data<f64> = rt.data("b", N * N);
    let strips = locus::Partition::blocks(N * N / STRIPS);
    let (pa, pb) = (rt.partition(&a, strips.clone())?, rt.partition(&b, strips)?);
    let finished = rt.try_run(|s| {
        for t in 0..STEPS {
            if t % 2 == 0 {
                spawn_step(s, &pa, &pb)?;
            } else {
                spawn_step(s, &pb, &pa)?;
            }
        }
        Ok(())
    })?;
    let result = rt.fetch(if STEPS % 2 == 0 { &a } else { &b })?;
    if result != sequential() {
        return Err("the plate differs from the sequential stencil".into());
    }
    let heat: f64 = result.iter().sum();
    let loc = &finished.report.locality;
    Ok(format!(
        "heat {N} x {N}, {STRIPS} strips, {STEPS} steps, {config} on {topology}: verified, \
         total heat {heat:.1}, {} tasks, r_loc_rt = {:.3}, {} KiB read",
        finished.report.tasks,
        loc.r_loc_rt,
        (loc.read_local_bytes + loc.read_remote_bytes) / 1024
    ))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let topology = std::env::args().nth(1).unwrap_or_else(|| "2x1".into());
    println!("{}", run(&topology, Config::DsaOpt)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn heat_verifies_under_several_configurations() {
        for topology in ["1x1", "2x1", "4x1"] {
            for config in [
                locus::Config::DsaOpt,
                locus::Config::Ws,
                locus::Config::ShmBase,
            ] {
                super::run(topology, config).unwrap();
            }
        }
    }
}
