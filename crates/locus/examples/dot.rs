//! A dot product as a reduction: two vectors, each one datum cut into blocks by
//! `Runtime::partition`; one task per block multiplies its two parts and adds the
//! result into one scalar with `Data::reduce`. The reducing tasks never wait for each
//! other: each adds into a private copy on its own node, and the copies are combined,
//! node by node, then across nodes, when the result is read. Verifies against a
//! sequential sum (within 1e-12, relative: the order of the additions differs) and
//! prints the run's locality.
//!
//! ```sh
//! cargo run --release -p locus --example dot -- 4x1
//! ```
//!
//! The optional argument is the topology (default `2x1`).

use locus::{Config, Partition, Runtime, Topology};

const LEN: usize = 1 << 20;
const BLOCK: usize = 1 << 14;

fn add(a: &mut f64, b: &f64) {
    *a += b;
}

fn run(topology: &str, config: Config) -> Result<String, Box<dyn std::error::Error>> {
    let rt = Runtime::builder()
        .topology(Topology::from_spec(topology)?)
        .config(config)
        .build()?;
    let xs: Vec<f64> = (0..LEN).map(|i| 1.0 / (1.0 + i as f64)).collect();
    let ys: Vec<f64> = (0..LEN).map(|i| (i % 7) as f64 - 3.0).collect();
    let x = rt.data_from("x", &xs)?;
    let y = rt.data_from("y", &ys)?;
    let (px, py) = (
        rt.partition(&x, Partition::blocks(BLOCK))?,
        rt.partition(&y, Partition::blocks(BLOCK))?,
    );
    let dot = rt.data::<f64>("dot", 1);
    let finished = rt.try_run(|s| {
        for (a, b) in px.iter().zip(&py) {
            s.spawn(
                "dot",
                (a.read(), b.read(), dot.reduce(0.0, add)),
                |_, (a, b, d)| {
                    d[0] += a.iter().zip(b).map(|(a, b)| a * b).sum::<f64>();
                },
            )?;
        }
        Ok(())
    })?;
    let got = rt.fetch(&dot)?[0];
    let want: f64 = xs.iter().zip(&ys).map(|(a, b)| a * b).sum();
    if ((got - want) / want).abs() > 1e-12 {
        return Err(format!("dot = {got}, sequentially {want}").into());
    }
    let loc = &finished.report.locality;
    Ok(format!(
        "dot of {LEN} elements in {} blocks, {config} on {topology}: verified ({got:.6}), \
         r_loc_rt = {:.3}, {} tasks",
        px.len(),
        loc.r_loc_rt,
        finished.report.tasks
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
    fn dot_verifies_on_one_two_and_four_nodes() {
        for topology in ["1x1", "2x1", "4x1"] {
            for config in [
                locus::Config::DsaOpt,
                locus::Config::Dfa,
                locus::Config::ShmBase,
            ] {
                super::run(topology, config).unwrap();
            }
        }
    }
}
