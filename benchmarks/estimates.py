"""How right a replay's first estimate of its wall time is: typical runs, each estimate over the actual.

    python -m aviary.benchmarks.estimates              # the whole set (~10 min), table and JSON
    python -m aviary.benchmarks.estimates --only sim   # the simulated runs alone
    python -m aviary.benchmarks.estimates --list       # the runs, none made

Each run is one ``aviary replay`` command in a child process, as a user types it (:data:`RUNS`: the
README's commands, every workload family and policy family, simulated at 100 to 12,500 nodes, real at
the sizes this machine runs). Read from its output: the first line starting ``estimate: about`` (a
simulated replay prints it after its first seconds, a real one before it starts, from its prediction);
measured: the whole command's wall time, from its start to its exit (imports, set-up, the replay and its
results). Reported per run: estimate, actual, and their ratio; the goal is a ratio in [1/1.5, 1.5] for
every run. The table goes to stdout and ``experiments/results/estimates/estimates.md`` (with the JSON
beside it, ``--out`` elsewhere). Ratios of one run on a shared machine: each estimate is made in the
conditions its own run meets.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "experiments"
RESULTS = ROOT / "results" / "estimates"

SIM = ["--runtime", "sim"]
TPCH, ALIBABA, REAL = ["--workload", "tpch"], ["--workload", "alibaba"], ["--runtime", "real"]
RUNS: list[tuple[str, list[str]]] = [
    ("sparrow, whole sample, 5,000 nodes", [*SIM, "--policy", "sparrow", "--nodes", "5000"]),
    ("eagle, whole sample, 5,000 nodes", [*SIM, "--policy", "eagle", "--nodes", "5000"]),
    ("hawk, whole sample, 12,500 nodes", [*SIM, "--policy", "hawk", "--nodes", "12500"]),
    ("sparrow, 2,000 jobs, 100 nodes", [*SIM, "--policy", "sparrow", "--nodes", "100", "--jobs", "2000"]),
    ("kairos, 2,000 jobs, 100 nodes", [*SIM, "--policy", "kairos", "--nodes", "100", "--jobs", "2000"]),
    ("tetris, TPC-H 300 jobs, 100 nodes", [*SIM, *TPCH, "--policy", "tetris", "--jobs", "300"]),
    ("drf, TPC-H 300 jobs, 100 nodes", [*SIM, *TPCH, "--policy", "drf", "--jobs", "300"]),
    ("carbyne, Alibaba 300 jobs, 100 nodes", [*SIM, *ALIBABA, "--policy", "carbyne", "--jobs", "300"]),
    ("graphene, TPC-H 100 jobs, 100 nodes", [*SIM, *TPCH, "--policy", "graphene", "--jobs", "100"]),
    ("sparrow, whole sample, 12,500 nodes", [*SIM, "--policy", "sparrow", "--nodes", "12500"]),
    ("kairos, whole sample, 1,000 nodes", [*SIM, "--policy", "kairos", "--nodes", "1000"]),
    ("carbyne, Alibaba 1,000 jobs, 100 nodes", [*SIM, *ALIBABA, "--policy", "carbyne", "--jobs", "1000"]),
    ("real sparrow, 300 jobs, 10 nodes (README)", [*REAL, "--policy", "sparrow"]),
    ("real eagle, 300 jobs, 10 nodes", [*REAL, "--policy", "eagle"]),
    ("real tetris, TPC-H 40 jobs, 10 nodes", [*REAL, *TPCH, "--policy", "tetris", "--jobs", "40"]),
]
"""(name, ``aviary replay`` flags): ``--nodes`` defaults to 100 where not given (the TPC-H and Alibaba
runs: the packing pages' size), the real runs to 10 nodes and a one-minute replay."""

ESTIMATE = re.compile(r"^estimate: about ([\d.]+) (ms|s|min|h)\b")
UNIT = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}


def first_estimate(text: str) -> float | None:
    """The seconds of the first ``estimate: about ...`` line of a replay's output, None without one."""
    for line in text.splitlines():
        if m := ESTIMATE.match(line.strip()):
            return float(m.group(1)) * UNIT[m.group(2)]
    return None


def measure(flags: list[str], root: Path) -> dict[str, Any]:
    """One run: its first estimate and its whole wall time."""
    nodes = [] if "--nodes" in flags or "real" in flags else ["--nodes", "100"]
    out = Path(tempfile.mkdtemp(dir=root))
    command = [
        sys.executable,
        "-m",
        "aviary.launch.cli",
        "replay",
        *flags,
        *nodes,
        "--out",
        str(out),
        "--force",
    ]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    actual = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(flags)}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    estimate = first_estimate(done.stderr + done.stdout)
    ratio = None if estimate is None else round(estimate / actual, 3)
    return {"estimate_s": estimate, "actual_s": round(actual, 2), "ratio": ratio}


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| run | first estimate (s) | actual (s) | estimate / actual |", "|---|---|---|---|"]
    for r in rows:
        est = "none" if r["estimate_s"] is None else f"{r['estimate_s']:.1f}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}"
        lines.append(f"| {r['run']} | {est} | {r['actual_s']:.1f} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("sim", "real"), default=None, help="one runtime's runs (default both)")
    ap.add_argument("--list", action="store_true", help="print the runs, make none")
    ap.add_argument("--match", default=None, help="only the runs whose name holds this text (default all)")
    ap.add_argument(
        "--out", type=Path, default=RESULTS, help="where the table and JSON go (default %(default)s)"
    )
    args = ap.parse_args(argv)
    runs = [(n, f) for n, f in RUNS if args.only is None or (args.only == "real") == ("real" in f)]
    runs = [(n, f) for n, f in runs if args.match is None or args.match in n]
    if args.list:
        for name, flags in runs:
            print(f"{name}: aviary replay {' '.join(flags)}")
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="aviary-estimates-") as tmp:
        for name, flags in runs:
            row = {"run": name, "flags": flags, **measure(flags, Path(tmp))}
            rows.append(row)
            print(
                f"{name}: estimate {row['estimate_s']} s, actual {row['actual_s']} s, ratio {row['ratio']}",
                flush=True,
            )
    text = table(rows)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d")
    (args.out / "estimates.md").write_text(
        f"Measured {stamp} by `python -m aviary.benchmarks.estimates`.\n\n{text}\n"
    )
    (args.out / "estimates.json").write_text(json.dumps({"date": stamp, "runs": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
