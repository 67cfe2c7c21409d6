#!/usr/bin/env python3
"""The overhead graph replayed against its dynamic run and against oneTBB's flow graph.

Usage:
    cargo build --release -p locus-cli
    g++ -O2 -Wall -ffp-contract=off -falign-loops=64 -std=c++17 \\
        -o /tmp/tbb-overhead peers/tbb/overhead.cpp -ltbb
    scripts/replay-overhead.py target/release/locus /tmp/tbb-overhead [--repeat N] [--threads T]

Runs, in turn and REPEAT times each (default 5), on T workers (default 2) and the
overhead graph's default shape (16 chains of 2000 tasks, 1000 rounds of 16):

- `locus run overhead` (the dynamic run),
- `locus run overhead --replay` (recorded once, replayed one round per iteration),
- the oneTBB peer (`peers/tbb/overhead.cpp`: builds its flow graph and runs it),

and prints the median of each one's own `wall_s` (Locus's report: the run, or the
replay without its recording; the peer's: its graph's construction and run, as
`locus bench --peers` times it) with the ratios oneTBB / replay and dynamic / replay.
Every run must verify. Alternating runs keep a drifting machine from favouring one.
"""

import json
import os
import statistics
import subprocess
import sys

SHAPE = {"chains": 16, "length": 2000, "rounds": 1000, "fan": 16}


def run(cmd, env=None):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=dict(os.environ, **(env or {})))
    o = json.loads(out.stdout)
    if o.get("verified") is not True:
        sys.exit(f"not verified: {' '.join(cmd)}")
    return o["wall_s"]


def main(argv):
    args = [a for a in argv[1:]]
    repeat, threads = 5, 2
    for name in ("--repeat", "--threads"):
        if name in args:
            i = args.index(name)
            value = int(args[i + 1])
            del args[i:i + 2]
            if name == "--repeat":
                repeat = value
            else:
                threads = value
    if len(args) != 2:
        sys.exit(__doc__)
    locus, tbb = args
    params = [a for k, v in SHAPE.items() for a in ("--param", f"{k}={v}")]
    base = [locus, "run", "overhead", "--threads", str(threads), "--json"] + params
    commands = {
        "locus dynamic": (base, None),
        "locus replay": (base + ["--replay"], None),
        "oneTBB flow graph": ([tbb] + [str(v) for v in SHAPE.values()],
                              {"TBB_NUM_THREADS": str(threads)}),
    }
    times = {k: [] for k in commands}
    for _ in range(repeat):
        for name, (cmd, env) in commands.items():
            times[name].append(run(cmd, env))
    tasks = SHAPE["chains"] * SHAPE["length"] + SHAPE["rounds"] * (SHAPE["fan"] + 2)
    print(f"overhead graph, {tasks} tasks, {threads} workers, median of {repeat} alternating runs")
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, m in med.items():
        lo, hi = min(times[name]), max(times[name])
        print(f"  {name:20} {m * 1e3:9.2f} ms  ({m * 1e9 / tasks:7.1f} ns/task; "
              f"min {lo * 1e3:.2f}, max {hi * 1e3:.2f})")
    print(f"  oneTBB / replay:  {med['oneTBB flow graph'] / med['locus replay']:.2f}")
    print(f"  dynamic / replay: {med['locus dynamic'] / med['locus replay']:.2f}")


if __name__ == "__main__":
    main(sys.argv)
