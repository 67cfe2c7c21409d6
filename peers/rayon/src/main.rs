//! `locus-peer-rayon KERNEL [SIZE...]`: Locus's benchmark kernels written as rayon
//! fork-join programs, the `rayon` peer of `locus bench --peers` (see `peers/README.md`).
//!
//! Each kernel builds the same data as the Locus kernel of the same name, runs it in
//! parallel on rayon's global pool (`RAYON_NUM_THREADS` threads, one per CPU when unset),
//! times the parallel part, checks the result against its own sequential reference and
//! prints one JSON line: `peer`, `bench`, `threads`, `tasks`, `wall_s`, `ns_per_task`,
//! `verified`, `params`. Exit status 0 when verified, 1 when not, 2 on bad arguments.

mod bitonic;
mod fib;
mod jacobi_2d;
mod kmeans;
mod overhead;
mod seidel_2d;
mod stencil;

use std::process::ExitCode;
use std::time::Instant;

/// What a kernel reports after its run.
pub struct Outcome {
    /// Tasks (closures handed to rayon), counted as the other peers count theirs.
    pub tasks: usize,
    /// Seconds of the parallel part.
    pub wall_s: f64,
    /// Whether the result equals the sequential reference.
    pub verified: bool,
    /// The sizes, as a JSON object.
    pub params: String,
}

/// The kernels, their argument names and their defaults (Locus's small sizes).
const KERNELS: &[(&str, &str)] = &[
    ("jacobi-2d", "[ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS]"),
    ("seidel-2d", "[ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS]"),
    ("kmeans", "[POINTS DIMS CLUSTERS BLOCK_POINTS ITERATIONS]"),
    ("bitonic", "[LEN BLOCK_LEN]"),
    ("overhead", "CHAINS LENGTH ROUNDS FAN"),
    ("fib", "[N]"),
];

/// Parses every argument as an unsigned integer, `count` of them or none (then
/// `defaults`).
pub fn numbers<const N: usize>(
    args: &[String],
    defaults: [usize; N],
) -> Result<[usize; N], String> {
    if args.is_empty() {
        return Ok(defaults);
    }
    if args.len() != N {
        return Err(format!("expected {N} numbers, got {}", args.len()));
    }
    let mut out = defaults;
    for (slot, arg) in out.iter_mut().zip(args) {
        *slot = arg
            .parse()
            .map_err(|_| format!("`{arg}` is not a non-negative integer"))?;
    }
    Ok(out)
}

/// Runs `body` and gives its result with the seconds it took.
pub fn timed<T>(body: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = body();
    (out, start.elapsed().as_secs_f64())
}

fn usage() -> String {
    let mut s =
        String::from("usage: locus-peer-rayon KERNEL [SIZE...], where KERNEL SIZE is one of:");
    for (name, args) in KERNELS {
        s.push_str(&format!("\n  {name} {args}"));
    }
    s
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(kernel) = args.first() else {
        eprintln!("{}", usage());
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    let outcome = match kernel.as_str() {
        "jacobi-2d" => jacobi_2d::run(rest),
        "seidel-2d" => seidel_2d::run(rest),
        "kmeans" => kmeans::run(rest),
        "bitonic" => bitonic::run(rest),
        "overhead" => overhead::run(rest),
        "fib" => fib::run(rest),
        _ => Err(format!("unknown kernel `{kernel}`")),
    };
    match outcome {
        Ok(o) => {
            println!(
                "{{\"peer\": \"rayon\", \"bench\": \"{kernel}\", \"threads\": {}, \"tasks\": {}, \"wall_s\": {:.6}, \"ns_per_task\": {:.1}, \"verified\": {}, \"params\": {}}}",
                rayon::current_num_threads(),
                o.tasks,
                o.wall_s,
                if o.tasks > 0 { o.wall_s * 1e9 / o.tasks as f64 } else { 0.0 },
                o.verified,
                o.params
            );
            if o.verified {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("locus-peer-rayon {kernel}: {e}\n{}", usage());
            ExitCode::from(2)
        }
    }
}
