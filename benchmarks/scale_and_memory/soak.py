"""Soak benchmark: a long real replay on 100 node monitors with failures injected, every
process's memory sampled; writes ``experiments/results/soak/`` (``rss.csv``, ``soak.md``).

    python -m aviary.benchmarks.scale_and_memory soak  # 30 minutes of replay, 100 nodes, Sparrow
    python -m aviary.benchmarks.scale_and_memory soak --minutes 5          # a shorter one

It runs ``aviary replay`` (its own local testbed) with ``--fail`` killing nodes and one of the
schedulers at fixed replay times, samples the resident memory (RSS) of every process of the testbed
every ``--every`` seconds with psutil, and reports per process its RSS after the first sample period and
at the end: flat memory means no growth beyond a few MB, and the replay must finish every job.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

OUT = Path(__file__).resolve().parents[2] / "experiments" / "results" / "soak"


def failures(minutes: float, nodes: int) -> str:
    """Three nodes (at 7, 42 and 77 % of the nodes: node-7, node-42, node-77 of 100) and one of four
    schedulers killed at 1/6, 2/6, 3/6 and 4/6 of the run."""
    at = [minutes * 60 * k / 6 for k in (1, 2, 3, 4)]
    names = [f"node-{nodes * 7 // 100}", f"node-{nodes * 42 // 100}", "sched-1", f"node-{nodes * 77 // 100}"]
    return ",".join(f"{n}@{t:.0f}s" for n, t in zip(names, at, strict=True))


def testbed_processes(root: psutil.Process) -> dict[str, psutil.Process]:
    """The replay's testbed children by process name
    (``python -m aviary.launch.drivers.process FILE NAME``)."""
    out = {}
    for p in root.children(recursive=True):
        try:
            cmd = p.cmdline()
        except psutil.Error:
            continue
        if "aviary.launch.drivers.process" in cmd:
            out[cmd[-1]] = p
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="replay length (default %(default)s)")
    ap.add_argument("--nodes", type=int, default=100, help="node monitors, at least 3 (default %(default)s)")
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples (default %(default)s)")
    ap.add_argument("--out", type=Path, default=OUT, help="results folder (default %(default)s)")
    args = ap.parse_args(argv)
    if args.nodes < 3:
        ap.error(f"--nodes: at least 3 (three of them are killed), got {args.nodes}")
    args.out.mkdir(parents=True, exist_ok=True)
    fail = failures(args.minutes, args.nodes)
    cmd = [
        sys.executable, "-m", "aviary.launch.cli", "replay", "--nodes", str(args.nodes), "--slots", "2",
        "--schedulers", "4", "--jobs", "6000", "--start", "2000", "--load", "0.8", "--seed", "1",
        "--duration", f"{args.minutes}m", "--max-wall", f"{args.minutes * 2}m", "--yes", "--quiet",
        "--fail", fail, "--stall-timeout", "600", "--force", "--out", str(args.out / "run"),
    ]  # fmt: skip
    print(" ".join(cmd[2:]), flush=True)
    started = time.monotonic()
    log = args.out / "replay.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
    root = psutil.Process(proc.pid)
    rows: list[tuple[float, str, float]] = []
    while proc.poll() is None:
        t = time.monotonic() - started
        for name, p in testbed_processes(root).items():
            with contextlib.suppress(psutil.Error):
                rows.append((t, name, p.memory_info().rss / 2**20))
        time.sleep(args.every)
    output = log.read_text(errors="replace")
    wall = time.monotonic() - started
    with open(args.out / "rss.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["seconds", "process", "rss_mib"])
        w.writerows((f"{t:.1f}", n, f"{r:.2f}") for t, n, r in rows)
    written = args.out / "run" / "summary.json"
    if not written.exists():  # the replay refused or crashed: its own last line, and its status
        last = output.strip().splitlines()[-1:] or ["no output"]
        print(f"soak: the replay exited with {proc.returncode} and wrote no results: {last[0]} (see {log})")
        return proc.returncode or 1
    summary = json.loads(written.read_text())
    report(args, fail, wall, rows, summary, proc.returncode, output)
    return 0 if proc.returncode == 0 else 1


def report(
    args: argparse.Namespace,
    fail: str,
    wall: float,
    rows: list[tuple[float, str, float]],
    summary: dict,
    code: int,
    output: str,
) -> None:
    by: dict[str, list[tuple[float, float]]] = {}
    for t, n, r in rows:
        by.setdefault(n, []).append((t, r))
    growth = []
    for samples in by.values():
        if len(samples) >= 3:
            first = samples[1][1]  # after the first period (imports and start-up done)
            growth.append(samples[-1][1] - first)
    c = summary["counters"]
    lines = [
        "# Soak: a long real replay with failures injected",
        "",
        "Command: `python -m aviary.benchmarks.scale_and_memory soak "
        f"--minutes {args.minutes:g} --nodes {args.nodes}` "
        f"({time.strftime('%Y-%m-%d')}); exit status {code}, {wall / 60:.1f} min of wall time.",
        "",
        f"- replay: {summary['finished']}/{summary['jobs']} jobs finished, {summary['tasks']} tasks, "
        f"makespan {summary['makespan']:.0f} replay s, utilization {summary['utilization']:.0%}",
        f"- failures injected: `{fail}`; declared dead {c.get('processes_declared_dead')}, tasks re-run "
        f"{c.get('tasks_rerun')}, jobs resubmitted {c.get('jobs_resubmitted')}, late results ignored "
        f"{c.get('late_results_ignored')}",
        f"- memory: {len(by)} processes sampled every {args.every:g} s; RSS growth from the second sample to "
        f"the last: median {statistics.median(growth):+.2f} MiB, max {max(growth):+.2f} MiB"
        if growth
        else "- memory: too few samples",
        "",
        "Last lines of the replay's output:",
        "",
        "```",
        *output.strip().splitlines()[-8:],
        "```",
    ]
    (args.out / "soak.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
