#!/usr/bin/env python3
"""The simulator's runtime costs per task (crates/locus-sim/src/costs.rs), from this host.

Usage:
    cargo build --release -p locus-cli
    scripts/sim-task-costs.py [--runs N] [--locus PATH]

Runs the overhead graph (`locus run overhead --topology 1x1 --config C --json`, 50,000
tasks of one-word data on one worker) N times (default 7) under `dsa-base` and
`dsa-opt`, alternating, and takes the median wall time per task of each. One worker
pays every runtime cost of a task and nothing else (the bodies add one word), so that
time is the sum the simulator's per-task constants stand for. It is split in the
proportions callgrind gives a chain task of `crates/locus/benches/tasks.rs` (one worker,
`dsa-opt`, inclusive costs of `LOCUS_TASKS_ONCE=chain:20000`, docs/performance.md, "The
simulator's costs per task"):

- submission (`task_create_ns`): 38% (`Scope::spawn` less the `help_while` in it);
- taking the task and preparing it (`task_start_ns`): 38% (`exec::start`);
- finishing it, releasing its versions and activating its successor (`activate_ns`,
  which the simulator charges where a finishing task makes another ready): 24%
  (`exec::finish`).

A task that declares nothing takes the lean path (no binding, no registration, no
release): `LEAN_RATIO` of a chain task's instructions (920 against 2,959, the `empty` and
`chain` graphs under `scripts/task-cost.py`), which `lean_task_percent` carries.

A replayed task (a recorded graph's, `Runtime::replay`) analyses no dependence and
allocates nothing: `REPLAY_RATIO` of a chain task's instructions (213 for `replay-chain`
against 2,521 for `chain`, the same commit; `replay-empty` costs the same 213), which
`replay_task_percent` carries, whatever the task declares.

Prints the medians, the constants rounded to 10 ns, the lean and replayed shares, and
the simulator's own time per task for the same run (`locus sim overhead --topology 1x1
--config dsa-base`).
"""

import json
import statistics
import subprocess
import sys

SPLIT = {"task_create_ns": 0.38, "task_start_ns": 0.38, "activate_ns": 0.24}
# Instructions per task, one worker, `dsa-opt`: `empty` over `chain` (scripts/task-cost.py).
LEAN_RATIO = 920 / 2959
# Instructions per replayed task over a dynamic chain task's, one worker, `dsa-opt`, the
# same commit (`6c2d4d8`): `replay-chain` over `chain` (scripts/task-cost.py).
REPLAY_RATIO = 213 / 2521


def per_task_ns(locus, config, command="run"):
    out = subprocess.run(
        [locus, command, "overhead", "--topology", "1x1", "--config", config, "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    r = json.loads(out)
    if (command == "run" and not r.get("verified")) or r["tasks"] == 0:
        sys.exit(f"sim-task-costs: the overhead run under {config} did not verify")
    return r["wall_s"] * 1e9 / r["tasks"]


def main():
    args = sys.argv[1:]
    runs, locus = 7, "target/release/locus"
    while args:
        if args[0] == "--runs" and len(args) > 1:
            runs = int(args[1])
            args = args[2:]
        elif args[0] == "--locus" and len(args) > 1:
            locus = args[1]
            args = args[2:]
        else:
            sys.exit(f"sim-task-costs: unknown argument {args[0]}")
    if runs < 1:
        sys.exit("sim-task-costs: --runs must be at least 1")
    times = {"dsa-base": [], "dsa-opt": []}
    for _ in range(runs):
        for config, ts in times.items():
            ts.append(per_task_ns(locus, config))
    for config, ts in times.items():
        print(
            f"{config}: median {statistics.median(ts):.0f} ns per task "
            f"(min {min(ts):.0f}, max {max(ts):.0f}, {runs} runs)"
        )
    total = statistics.median(times["dsa-base"])
    print(f"split of the dsa-base median, {total:.0f} ns:")
    for name, share in SPLIT.items():
        print(f"  {name}: {round(total * share, -1):.0f}")
    print(f"  lean_task_percent: {round(LEAN_RATIO * 100):.0f}")
    print(f"  replay_task_percent: {round(REPLAY_RATIO * 100):.0f}")
    # The simulator's own figure for the same run, with the constants it was built with:
    # their sum, plus `alloc_ns` where a task allocates its output's buffer at start and
    # the few bytes each task moves (408 ns against 370 on 2026-11-29). One worker pays
    # every cost in turn: a task it helps with while the window is full starts once its
    # submissions are paid (`catch_up` in crates/locus-sim/src/engine.rs).
    simulated = per_task_ns(locus, "dsa-base", "sim")
    print(f"simulated (locus sim, dsa-base): {simulated:.0f} ns per task")


if __name__ == "__main__":
    main()
