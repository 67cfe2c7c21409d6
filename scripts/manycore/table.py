#!/usr/bin/env python3
"""Tables and the scaling picture of a many-core measurement (scripts/manycore/run.sh).

Usage: table.py RUNS.jsonl [--sim SIM.jsonl] [--svg FILE]

Reads run.sh's runs.jsonl (one line per run: label KERNEL:RUNTIME, threads, exit status,
the program's own JSON line) and prints Markdown: the side-by-side table at the largest
thread count (median, minimum and maximum of each runtime's own `wall_s`, the timed
parallel part, and each peer's time over Locus's), the scaling table, and the NUMA
configurations. A run that did not exit 0 or did not verify is counted apart and never
enters a median. `--sim` adds the simulator's prediction (lines of `locus sim --json`,
labelled the same way) beside Locus's measured times. `--svg` writes the scaling picture.
"""

import json
import math
import statistics
import sys
from collections import defaultdict

PEERS = ["openmp-gcc", "openmp-clang", "tbb", "starpu", "rayon"]
LOCUS = ["locus-dsa-opt", "locus-shm-base"]


def load(path):
    runs = defaultdict(list)  # (kernel, runtime, threads) -> [wall_s]
    failed = defaultdict(int)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            kernel, runtime = r["label"].split(":", 1)
            key = (kernel, runtime, r["threads"])
            j = r.get("json")
            ok = r.get("rc") == 0 and isinstance(j, dict) and j.get("verified") is True
            if ok:
                runs[key].append(float(j["wall_s"]))
            else:
                failed[key] += 1
    return runs, failed


def fmt_s(x):
    if x is None:
        return "–"
    if x >= 1:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.1f} ms"
    return f"{x * 1e6:.0f} µs"


def tick(v):
    """A compact axis label: 5 ms, 200 ms, 2 s."""
    if v >= 1:
        return f"{v:g} s"
    if v >= 1e-3:
        return f"{v * 1e3:g} ms"
    return f"{v * 1e6:g} µs"


def med(runs, key):
    v = runs.get(key)
    return statistics.median(v) if v else None


def cell(runs, failed, key):
    v = runs.get(key)
    if not v:
        return "failed" if failed.get(key) else "–"
    m = statistics.median(v)
    s = fmt_s(m)
    if len(v) > 1:
        s += f" ({fmt_s(min(v))}–{fmt_s(max(v))}, n={len(v)})"
    if failed.get(key):
        s += f", {failed[key]} failed"
    return s


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"


def side_table(runs, failed, threads, sim):
    kernels = []
    for k, _, t in runs:
        if t == threads and k not in kernels and not k.startswith("jacobi_2d:"):
            kernels.append(k)
    order = ["overhead", "jacobi_2d", "seidel_2d", "kmeans", "bitonic", "cholesky",
             "sparselu", "spmv", "bicgstab"]
    kernels = [k for k in order if k in kernels]
    out = [f"Median of each runtime's own `wall_s` (the timed parallel part) at {threads} "
           "threads, with the range over the repetitions; a run that failed or did not "
           "verify is counted apart.\n"]
    head = ["kernel"] + LOCUS + PEERS
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for k in kernels:
        row = [k.replace("_", "-")] + [cell(runs, failed, (k, r, threads)) for r in LOCUS + PEERS]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append("Each peer's median time over Locus's (above 1: Locus is faster), and the "
               "geometric mean over the kernels each peer has:\n")
    for lc in LOCUS:
        head = ["kernel", f"{lc}: time"] + PEERS
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        logs = defaultdict(list)
        for k in kernels:
            lt = med(runs, (k, lc, threads))
            row = [k.replace("_", "-"), fmt_s(lt)]
            for p in PEERS:
                pt = med(runs, (k, p, threads))
                row.append(ratio(pt, lt))
                if pt and lt:
                    logs[p].append(math.log(pt / lt))
            out.append("| " + " | ".join(row) + " |")
        gm = ["geometric mean", ""]
        for p in PEERS:
            gm.append(f"{math.exp(statistics.mean(logs[p])):.2f} ({len(logs[p])})" if logs[p] else "–")
        out.append("| " + " | ".join(gm) + " |")
        out.append("")
    if sim:
        out.append("The simulator's prediction (`locus sim`, same sizes, a model of this "
                   "machine) beside Locus's measured median:\n")
        out.append("| kernel | configuration | measured | simulated | simulated / measured |")
        out.append("|---|---|---|---|---|")
        for k in kernels:
            for lc in LOCUS:
                m = med(runs, (k, lc, threads))
                s = sim.get((k, lc, threads))
                out.append(f"| {k.replace('_', '-')} | {lc[6:]} | {fmt_s(m)} | {fmt_s(s)} | "
                           f"{ratio(s, m)} |")
        out.append("")
    return "\n".join(out)


def scaling_table(runs, failed, sim):
    out = []
    for k in ["overhead", "jacobi_2d"]:
        ts = sorted({t for kk, r, t in runs if kk == k})
        rts = [r for r in ["locus-dsa-opt"] + PEERS if any((k, r, t) in runs for t in ts)]
        out.append(f"**{k.replace('_', '-')}**: median time (speed-up over the same "
                   "runtime on 1 thread)\n")
        head = ["threads"] + rts + (["locus-dsa-opt simulated"] if sim else [])
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for t in ts:
            row = [str(t)]
            for r in rts:
                m, one = med(runs, (k, r, t)), med(runs, (k, r, 1))
                row.append(f"{fmt_s(m)} ({one / m:.1f}x)" if m and one else fmt_s(m))
            if sim:
                row.append(fmt_s(sim.get((k, "locus-dsa-opt", t))))
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    return "\n".join(out)


def numa_table(runs, failed):
    rows = sorted(k for k in runs if k[0] == "jacobi_2d" and
                  (k[1].startswith("vnuma") or k[1].startswith("host-")))
    if not rows:
        return ""
    out = ["| topology and configuration | median time |", "|---|---|"]
    for key in rows:
        out.append(f"| {key[1]} | {cell(runs, failed, key)} |")
    return "\n".join(out) + "\n"


COLOURS = {"locus-dsa-opt": "#1b6ac9", "openmp-gcc": "#d1495b", "openmp-clang": "#edae49",
           "tbb": "#00798c", "starpu": "#6a4c93", "rayon": "#5c5c5c",
           "locus-dsa-opt simulated": "#1b6ac9"}
MARKERS = {"locus-dsa-opt": "circle", "openmp-gcc": "square", "openmp-clang": "diamond",
           "tbb": "triangle", "starpu": "cross", "rayon": "plus",
           "locus-dsa-opt simulated": "circle"}


def marker(kind, x, y, colour):
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="{colour}"/>'
    if kind == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{colour}"/>'
    if kind == "diamond":
        return (f'<polygon points="{x},{y - 5.5} {x + 5.5},{y} {x},{y + 5.5} {x - 5.5},{y}" '
                f'fill="{colour}"/>')
    if kind == "triangle":
        return (f'<polygon points="{x},{y - 5.5} {x + 5},{y + 4} {x - 5},{y + 4}" '
                f'fill="{colour}"/>')
    if kind == "cross":
        return (f'<path d="M{x - 4},{y - 4}L{x + 4},{y + 4}M{x - 4},{y + 4}L{x + 4},{y - 4}" '
                f'stroke="{colour}" stroke-width="2.5"/>')
    return (f'<path d="M{x - 5},{y}L{x + 5},{y}M{x},{y - 5}L{x},{y + 5}" '
            f'stroke="{colour}" stroke-width="2.5"/>')


def svg(runs, sim, path, title):
    """Two panels (overhead, jacobi-2d): median time against threads, both axes
    logarithmic, with Locus's ideal line (its 1-thread time over the thread count)."""
    panel_w, panel_h, left, top, gap = 430, 330, 90, 60, 90
    width = left + 2 * panel_w + gap + 20
    legend_h = 70
    height = top + panel_h + 50 + legend_h
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, sans-serif" '
             'font-size="13">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="16">{title}</text>']
    series_seen = []
    for i, k in enumerate(["overhead", "jacobi_2d"]):
        x0 = left + i * (panel_w + gap)
        ts = sorted({t for kk, r, t in runs if kk == k})
        if not ts:
            continue
        tmax = max(ts)
        series = [(r, False) for r in ["locus-dsa-opt"] + PEERS]
        if sim:
            series.append(("locus-dsa-opt simulated", True))

        def value(name, simulated, t):
            if simulated:
                return sim.get((k, "locus-dsa-opt", t))
            return med(runs, (k, name, t))

        values = [v for n, s_ in series for t in ts if (v := value(n, s_, t))]
        one = med(runs, (k, "locus-dsa-opt", 1))
        if one:
            values.append(one / tmax)
        lo = 10 ** math.floor(math.log10(min(values)))
        hi = 10 ** math.ceil(math.log10(max(values)))

        def px(t):
            return x0 + (math.log2(t) / math.log2(tmax)) * panel_w if tmax > 1 else x0

        def py(v):
            return top + panel_h - (math.log10(v / lo) / math.log10(hi / lo)) * panel_h

        parts.append(f'<text x="{x0 + panel_w / 2}" y="{top - 12}" text-anchor="middle" '
                     f'font-size="14">{k.replace("_", "-")}</text>')
        parts.append(f'<rect x="{x0}" y="{top}" width="{panel_w}" height="{panel_h}" '
                     'fill="none" stroke="#999"/>')
        decade = lo
        while decade <= hi * 1.0001:
            for m in (1, 2, 5):
                v = decade * m
                if v > hi * 1.0001:
                    break
                y = py(v)
                parts.append(f'<line x1="{x0}" x2="{x0 + panel_w}" y1="{y:.1f}" y2="{y:.1f}" '
                             f'stroke="{"#d8d8d8" if m == 1 else "#efefef"}"/>')
                parts.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">'
                             f'{tick(v)}</text>')
            decade *= 10
        for t in ts:
            x = px(t)
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + panel_h}" '
                         'stroke="#e4e4e4"/>')
            parts.append(f'<text x="{x:.1f}" y="{top + panel_h + 18}" '
                         f'text-anchor="middle">{t}</text>')
        parts.append(f'<text x="{x0 + panel_w / 2}" y="{top + panel_h + 38}" '
                     'text-anchor="middle">threads</text>')
        if i == 0:
            parts.append(f'<text transform="translate(18,{top + panel_h / 2}) rotate(-90)" '
                         'text-anchor="middle">median time (log)</text>')
        if one:
            parts.append(f'<line x1="{px(1):.1f}" y1="{py(one):.1f}" x2="{px(tmax):.1f}" '
                         f'y2="{py(one / tmax):.1f}" stroke="#888" stroke-dasharray="5,4"/>')
        for name, simulated in series:
            pts = [(px(t), py(v)) for t in ts if (v := value(name, simulated, t))]
            if len(pts) < 2:
                continue
            if name not in series_seen:
                series_seen.append(name)
            c = COLOURS[name]
            dash = ' stroke-dasharray="2,3"' if simulated else ""
            parts.append('<polyline fill="none" stroke-width="2" stroke="' + c + '"' + dash +
                         ' points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
            for x, y in pts:
                if simulated:
                    parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="white" '
                                 f'stroke="{c}" stroke-width="2"/>')
                else:
                    parts.append(marker(MARKERS[name], x, y, c))
    # Legend below the panels, in two rows.
    ly = top + panel_h + 62
    per_row = 4
    for j, name in enumerate(series_seen + ["ideal"]):
        x = left + (j % per_row) * 200
        y = ly + (j // per_row) * 22
        if name == "ideal":
            parts.append(f'<line x1="{x}" x2="{x + 24}" y1="{y}" y2="{y}" stroke="#888" '
                         'stroke-dasharray="5,4"/>')
        else:
            c = COLOURS[name]
            dash = ' stroke-dasharray="2,3"' if "simulated" in name else ""
            parts.append(f'<line x1="{x}" x2="{x + 24}" y1="{y}" y2="{y}" stroke="{c}" '
                         f'stroke-width="2"{dash}/>')
            if "simulated" in name:
                parts.append(f'<circle cx="{x + 12}" cy="{y}" r="4.5" fill="white" '
                             f'stroke="{c}" stroke-width="2"/>')
            else:
                parts.append(marker(MARKERS[name], x + 12, y, c))
        label = "ideal (Locus's 1-thread time / threads)" if name == "ideal" else name
        parts.append(f'<text x="{x + 32}" y="{y + 4}">{label}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    runs, failed = load(argv[1])
    sim, svg_path, title = {}, None, "Scaling on the 16-core machine"
    i = 2
    while i < len(argv):
        if argv[i] == "--sim":
            s, _ = load(argv[i + 1])
            sim = {k: statistics.median(v) for k, v in s.items()}
            i += 2
        elif argv[i] == "--svg":
            svg_path = argv[i + 1]
            i += 2
        elif argv[i] == "--title":
            title = argv[i + 1]
            i += 2
        else:
            sys.exit(f"table.py: unknown argument {argv[i]!r}")
    threads = max(t for _, _, t in runs)
    print(side_table(runs, failed, threads, sim))
    print(scaling_table(runs, failed, sim))
    print(numa_table(runs, failed))
    total = sum(len(v) for v in runs.values())
    bad = sum(failed.values())
    print(f"{total} verified runs, {bad} failed or unverified.")
    if svg_path:
        svg(runs, sim, svg_path, title)


if __name__ == "__main__":
    main(sys.argv)
