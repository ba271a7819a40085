"""Real runtime vs simulator on the same scaled Google sample (thesis Fig. 2.13).

    python -m aviary.benchmarks.agreement [--loads 0.5 0.8] [--out experiments/results/agreement]

Runs Sparrow on 20 single-slot nodes with 2 schedulers, on 300 consecutive jobs of the bundled
sample from the 8,000th, durations divided by 3,000 and task counts multiplied by 0.02 (task-seconds
kept), once on real processes and once on the simulator, and writes a markdown table of short and
long job completion time percentiles side by side (``agreement.md``).

Why this scale: the real run must take at most about a minute, and the tasks must stay long
against the runtime's own overhead (about a millisecond per task hand-out on loopback): the median
short task is then ~110 ms and the longest ~18 s; a real run takes ~50 s.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aviary.common.results import percentile, read_jobs
from aviary.launch.cli.main import main as aviary

PERCENTILES = {"p10": 0.10, "p50": 0.50, "p90": 0.90, "p99": 0.99}

SAMPLE = ["--jobs", "300", "--start", "8000", "--nodes", "20", "--schedulers", "2", "--time-scale", "3000",
          "--task-scale", "0.02", "--seed", "5", "--quiet"]  # fmt: skip


def class_percentiles(folder: Path) -> dict[str, dict[str, float]]:
    """p10/p50/p90/p99 of job completion times per class, from ``jobs.csv``."""
    records = read_jobs(folder)
    out = {}
    for cls in ("short", "long"):
        jcts = sorted(r.jct for r in records if r.cls == cls and r.jct is not None)
        out[cls] = {name: percentile(jcts, q) for name, q in PERCENTILES.items()} if jcts else {}
    return out


def run(out: Path, load: float) -> dict[str, dict]:
    runs = {}
    for runtime in ("real", "sim"):
        folder = out / f"load{load}-{runtime}"
        flags = ["--load", str(load), "--runtime", runtime, "--force", "--out", str(folder)]
        code = aviary(["replay", *SAMPLE, *flags])
        if code != 0:
            raise SystemExit(f"the {runtime} replay at load {load} failed (exit {code})")
        runs[runtime] = class_percentiles(folder)
    return runs


def table(results: dict[float, dict[str, dict]]) -> str:
    lines = [
        "| load | class | pct | real (s) | sim (s) | real / sim |",
        "|---|---|---|---|---|---|",
    ]
    for load, runs in results.items():
        for cls in ("short", "long"):
            for pct in ("p10", "p50", "p90", "p99"):
                real, sim = (runs[r][cls].get(pct) for r in ("real", "sim"))
                if real is None or sim is None:
                    continue
                lines.append(f"| {load} | {cls} | {pct} | {real:.3f} | {sim:.3f} | {real / sim:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.8])
    ap.add_argument("--out", type=Path, default=Path("experiments/results/agreement"))
    args = ap.parse_args(argv)
    results = {load: run(args.out, load) for load in args.loads}
    text = table(results)
    (args.out / "agreement.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
