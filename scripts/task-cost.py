#!/usr/bin/env python3
"""Instructions and atomic read-modify-writes per task, on one worker, under callgrind.

Usage:
    cargo bench -p locus --bench tasks --no-run      # prints the benchmark's path
    scripts/task-cost.py BINARY [BENCH[:CONFIG] ...] [--tasks N]

BINARY is the `tasks` benchmark of crates/locus/benches/tasks.rs. For each BENCH
(default: empty chain fan churn nested, and
replay-empty replay-chain replay-fan: the first three recorded once and replayed) it runs `LOCUS_TASKS_ONCE=BENCH:N[:CONFIG]` and
`LOCUS_TASKS_ONCE=BENCH:2N[:CONFIG]` under `valgrind --tool=callgrind --dump-instr=yes`
and divides the difference of the two runs by N, which cancels the runtime's start and
end. Two figures per task:

- instructions: callgrind's `Ir`;
- atomic read-modify-writes: the executions of every `lock`-prefixed instruction and of
  every `xchg` with a memory operand (implicitly locked on x86), in every object the
  process ran. Callgrind's per-instruction output gives each instruction's count, at its
  address inside its object; `objdump -d` of the object says which addresses hold such
  instructions.

Callgrind counts instructions, not time: the figures repeat exactly for the same binary
and inputs, whatever else the machine is doing.
"""

import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

DEFAULT_BENCHES = ["empty", "chain", "fan", "churn", "nested",
                  "replay-empty", "replay-chain", "replay-fan"]
# A lock prefix, or an xchg with a memory operand (xchg between registers, such as the
# two-byte no-op `xchg %ax,%ax`, is not atomic).
ATOMIC = re.compile(r"^lock\b|^xchg\w*\s.*\(")


def callgrind(binary, spec, out):
    """Runs the benchmark once under callgrind; returns the per-instruction file."""
    env = dict(os.environ, LOCUS_TASKS_ONCE=spec)
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={out}",
         binary],
        env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def self_costs(path):
    """Self `Ir` per (object, address) from a callgrind file with --dump-instr=yes."""
    objects = {}
    costs = defaultdict(int)
    ob = None
    last = 0
    skip_next = False
    with open(path) as f:
        for line in f:
            if line.startswith("ob="):
                ob = parse_name(line[3:], objects)
                continue
            if line.startswith("cob="):
                parse_name(line[4:], objects)  # names an object for later references
                continue
            if line.startswith("calls="):
                skip_next = True  # the next position line is the call's inclusive cost
                continue
            c = line[0]
            if not (c.isdigit() or c in "+-*"):
                continue
            fields = line.split()
            a = fields[0]
            if a == "*":
                addr = last
            elif a[0] in "+-":
                addr = last + int(a, 0)
            else:
                addr = int(a, 0)
            last = addr
            if skip_next:
                skip_next = False
                continue
            if len(fields) >= 3:
                costs[(ob, addr)] += int(fields[2])
    return costs, objects


def parse_name(text, table):
    """`(id) name` defines an id, `(id)` refers to it."""
    text = text.strip()
    m = re.match(r"\((\d+)\)\s*(.*)", text)
    if not m:
        return text
    key, name = m.group(1), m.group(2)
    if name:
        table[key] = name
    return key


def atomic_addresses(obj, cache={}):
    """Addresses of locked read-modify-writes in an object, from objdump."""
    if obj in cache:
        return cache[obj]
    found = set()
    try:
        text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj],
                              capture_output=True, text=True, check=True).stdout
    except (subprocess.CalledProcessError, FileNotFoundError):
        text = ""
    for line in text.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(.*)", line)
        if m and ATOMIC.search(m.group(2)):
            found.add(int(m.group(1), 16))
    cache[obj] = found
    return found


def totals(path):
    costs, objects = self_costs(path)
    ir = sum(costs.values())
    atomics = 0
    for (ob, addr), n in costs.items():
        obj = objects.get(ob)
        if obj and os.path.exists(obj) and addr in atomic_addresses(obj):
            atomics += n
    return ir, atomics


def main(argv):
    args = argv[1:]
    tasks = 2000
    if "--tasks" in args:
        i = args.index("--tasks")
        tasks = int(args[i + 1])
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    binary, benches = args[0], args[1:] or DEFAULT_BENCHES
    print(f"{'bench':<20} {'instructions/task':>18} {'atomic RMW/task':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in benches:
            name, _, config = spec.partition(":")
            suffix = f":{config}" if config else ""
            one = totals(callgrind(binary, f"{name}:{tasks}{suffix}", f"{tmp}/a"))
            two = totals(callgrind(binary, f"{name}:{2 * tasks}{suffix}", f"{tmp}/b"))
            ir = (two[0] - one[0]) / tasks
            rmw = (two[1] - one[1]) / tasks
            print(f"{spec:<20} {ir:>18,.0f} {rmw:>16.1f}")


if __name__ == "__main__":
    main(sys.argv)
