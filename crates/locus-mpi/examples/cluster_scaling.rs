//! Strong and weak scaling of the distributed `jacobi-2d`, and strong scaling of
//! `cholesky`, on a simulated cluster of 1 to 64 `opteron-64` machines (module
//! `locus_mpi::sim`), over InfiniBand EDR and 10 Gigabit Ethernet:
//! `cargo run --release -p locus-mpi --example cluster_scaling`.

use locus_bench::jacobi_2d::Params;
use locus_mpi::sim::{cholesky, jacobi_2d, Cluster, Network};
use locus_mpi::ProcessGrid;

fn row(label: &str, ranks: usize, p: &Params, base: Option<f64>, weak: bool) -> f64 {
    let g = ProcessGrid::squarest(ranks);
    let mut cells = Vec::new();
    let mut first = 0.0;
    for (i, net) in [Network::INFINIBAND_EDR, Network::ETHERNET_10G]
        .into_iter()
        .enumerate()
    {
        let c = Cluster::of_preset("opteron-64", ranks, net).expect("a preset");
        let r = c.predict(&jacobi_2d(p, ranks)).expect("a valid program");
        let b = base.unwrap_or(r.makespan_s);
        if i == 0 {
            first = r.makespan_s;
            cells.push(format!("{:.4}", r.makespan_s));
            cells.push(if weak {
                format!("{:.2}", b / r.makespan_s)
            } else {
                format!("{:.1}", b / r.makespan_s)
            });
            cells.push(format!("{}", r.messages));
            cells.push(format!("{:.1}", r.bytes as f64 / 1e6));
        } else {
            cells.push(format!("{:.4}", r.makespan_s));
        }
    }
    println!(
        "| {label} | {ranks} ({}x{}) | {} x {} | {} |",
        g.p,
        g.q,
        p.rows,
        p.cols,
        cells.join(" | ")
    );
    first
}

fn main() {
    let header = |gain: &str| {
        format!("| scaling | machines (grid) | array | time IB (s) | {gain} IB | messages | MB sent | time 10GbE (s) |")
    };
    let rule = "|---|---|---|---|---|---|---|---|";
    println!("Strong scaling: 16384 x 16384 in 256 x 256 blocks, 10 iterations\n");
    println!("{}\n{rule}", header("speedup"));
    let strong = Params {
        rows: 16384,
        cols: 16384,
        block_rows: 256,
        block_cols: 256,
        iterations: 10,
        ..Params::default()
    };
    let mut base = None;
    for ranks in [1, 2, 4, 8, 16, 32, 64] {
        let t = row("strong", ranks, &strong, base, false);
        base.get_or_insert(t);
    }
    println!("\nWeak scaling: 8192 x 8192 per machine in 256 x 256 blocks, 10 iterations\n");
    println!("{}\n{rule}", header("efficiency"));
    let mut base = None;
    for ranks in [1, 2, 4, 8, 16, 32, 64] {
        let g = ProcessGrid::squarest(ranks);
        let weak = Params {
            rows: 8192 * g.p,
            cols: 8192 * g.q,
            ..strong.clone()
        };
        let t = row("weak", ranks, &weak, base, true);
        base.get_or_insert(t);
    }
    println!("\nCholesky, strong scaling: 16384 x 16384 in 512 x 512 tiles\n");
    println!(
        "| machines (grid) | time IB (s) | speedup IB | messages | MB sent | time 10GbE (s) |"
    );
    println!("|---|---|---|---|---|---|");
    let mut base = None;
    for ranks in [1, 2, 4, 8, 16, 32, 64] {
        let g = ProcessGrid::squarest(ranks);
        let program = cholesky(16384, 512, ranks);
        let [ib, eth] = [Network::INFINIBAND_EDR, Network::ETHERNET_10G].map(|net| {
            Cluster::of_preset("opteron-64", ranks, net)
                .expect("a preset")
                .predict(&program)
                .expect("a valid program")
        });
        let b = *base.get_or_insert(ib.makespan_s);
        println!(
            "| {ranks} ({}x{}) | {:.3} | {:.1} | {} | {:.1} | {:.3} |",
            g.p,
            g.q,
            ib.makespan_s,
            b / ib.makespan_s,
            ib.messages,
            ib.bytes as f64 / 1e6,
            eth.makespan_s
        );
    }
}
