#!/usr/bin/env python3
"""Plots for docs/PERFORMANCE.md from `finality bench --json FILE`.

    pip install matplotlib
    python3 scripts/plot_bench.py docs/perf/bench.json docs/perf

Writes throughput.svg (executions/s against workers, median with min–max
bars, the pgbench ceilings as lines) and lateness.svg (the lateness
distribution of each lateness run, as a CDF).
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def throughput(data, out):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = {}
    for row in data.get("throughput", []):
        key = (row["store"], row["processes"])
        series.setdefault(key, []).append(row)
    for (store, procs), rows in sorted(series.items()):
        rows.sort(key=lambda r: r["workers"])
        x = [r["workers"] for r in rows]
        m = [r["executions_per_s"]["median"] for r in rows]
        lo = [r["executions_per_s"]["median"] - r["executions_per_s"]["min"] for r in rows]
        hi = [r["executions_per_s"]["max"] - r["executions_per_s"]["median"] for r in rows]
        label = f"{store}, {procs} process{'es' if procs > 1 else ''}"
        ax.errorbar(x, m, yerr=[lo, hi], marker="o", capsize=3, label=label)
    ceiling = data.get("ceiling", {})
    for name, style in (("update_tps", "--"), ("insert_tps", ":")):
        if name in ceiling:
            v = ceiling[name]["median"]
            ax.axhline(v, linestyle=style, color="grey")
            ax.annotate(f"pgbench {name.split('_')[0].upper()} {v:,.0f} tps", (1, v),
                        textcoords="offset points", xytext=(2, 3), fontsize=8, color="grey")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers (per process)")
    ax.set_ylabel("poll executions / s")
    ax.set_title("finality: claim → provider → complete, K = 3 (median, min–max)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "throughput.svg")


def lateness(data, out):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for row in data.get("lateness", []):
        cdf = row["cdf_ms"]
        label = (f"{row['store']}, {row['rate']:,}/s, timer {'on' if row['timer'] else 'off'}"
                 f" (p99 {row['p99_ms']['median']:.1f} ms)")
        ax.plot([max(p[0], 0.01) for p in cdf], [p[1] for p in cdf], label=label)
    ax.set_xscale("log")
    ax.set_xlabel("lateness, ms (provider call start − next_poll_at)")
    ax.set_ylabel("fraction of polls")
    ax.axvline(10, linestyle="--", color="grey")
    ax.set_title("finality: lateness of polls scheduled ahead (run with the median p99)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "lateness.svg")


def main():
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/perf/bench.json")
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "docs/perf")
    data = json.loads(src.read_text())
    out.mkdir(parents=True, exist_ok=True)
    throughput(data, out)
    lateness(data, out)
    print(f"wrote {out / 'throughput.svg'} and {out / 'lateness.svg'}")


if __name__ == "__main__":
    main()
