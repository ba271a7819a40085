"""The simulator's speed per family, compiled and pure: events and tasks per second of CPU for one policy
of every family, each replay run twice in a fresh process, on the compiled build and on the pure-Python
sources, back to back (docs/measurements.md, "The simulator's speed per family").

Each cell is ``aviary replay --runtime sim --policy P --nodes N --jobs J --seed 0 --quiet`` (every other
flag its default: offered load 0.8, gshet's 1) on the workload the family is evaluated with: the bundled
Google sample for the probe-based and central slot schedulers, TPC-H query DAGs for the multi-resource
DAG policies, and TetriSched's GS_HET-like SLO mix for TetriSched (one MILP a cycle over every pending
job: its sizes stay near its paper's 80-node cluster). :data:`SIZES` gives jobs and nodes per workload;
``small`` is what CI runs (a few seconds a family), ``medium`` and ``large`` about 10x and 100x its tasks.

A child's CPU (user + sys) comes from ``wait4``, as ``compare`` takes it; the child also times, with
``time.process_time``, its call of the simulator (``simulate``: the event loop, every core, the task
table's recorder), and the rates are over that time, since at the small size the interpreter's start and
the imports would be most of the whole. The speed-up is the pure run's simulation CPU over the compiled
run's, per round (the two runs back to back, on the same machine), median over rounds. The two builds
must write the same ``jobs.csv``, byte for byte, in every round: a difference is reported in the table and
makes the command exit 1.

    python -m aviary.benchmarks.simulator_speed families [--size small|medium|large ...]
        [--families sparrow eagle ...] [--rounds 1] [--out FILE.md] [--allow-pure]

``--out`` writes the table there and the runs as JSON beside it (``FILE.json``); without it the table
goes to stdout and no JSON is written. The compiled children must run the compiled build (``bash
scripts/setup.sh`` builds it); ``--allow-pure`` lets them fall back to the pure sources (both columns then
measure the same build, which only the results check is worth).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aviary.benchmarks.simulator_speed.compare import run
from aviary.speedups import ENV_PURE

FAMILIES: dict[str, str] = {
    "sparrow": "google",
    "hawk": "google",
    "eagle": "google",
    "dlwl": "google",
    "kairos": "google",
    "fifo": "google",
    "tetris": "tpch",
    "drf": "tpch",
    "carbyne": "tpch",
    "graphene": "tpch",
    "tetrisched": "gshet",
}
"""A policy of every family, and the workload it is replayed on."""

SIZES: dict[str, dict[str, tuple[int, int]]] = {
    "small": {"google": (50, 50), "tpch": (5, 50), "gshet": (20, 50)},
    "medium": {"google": (500, 500), "tpch": (50, 100), "gshet": (60, 80)},
    "large": {"google": (5000, 5000), "tpch": (500, 200), "gshet": (120, 80)},
}
"""(jobs, nodes) per size and workload. Google and TPC-H grow about tenfold in tasks a size (TPC-H's
nodes less, since a packing policy scans the nodes for every task it places); GS_HET's jobs stay few,
since TetriSched's MILP grows with the jobs pending at once."""

BUILDS = ("compiled", "pure")
PROG = "python -m aviary.benchmarks.simulator_speed families"
MARK = "aviary-families:"
CHILD = f"""\
import json, runpy, sys, time
import aviary.speedups as speedups
import aviary.launch.replay.run as replay_run

simulate = replay_run.simulate
spent = []

def timed(*args, **kwargs):
    cpu = time.process_time()
    try:
        return simulate(*args, **kwargs)
    finally:
        spent.append(time.process_time() - cpu)

replay_run.simulate = timed
try:
    runpy.run_module("aviary.launch.cli", run_name="__main__", alter_sys=True)
finally:
    line = {{"build": speedups.ACTIVE, "why": speedups.REASON, "simulate_cpu": sum(spent),
            "calls": len(spent)}}
    print({MARK!r}, json.dumps(line), file=sys.stderr, flush=True)
"""
"""A child's ``aviary`` command, with its call of the simulator timed in CPU seconds and the build it
ran reported on its last line."""


@dataclass
class Cell:
    """One family at one size: every round's runs of each build."""

    policy: str
    workload: str
    size: str
    jobs: int
    nodes: int
    tasks: int = 0
    events: int = 0
    finished: int = 0
    cpu: dict[str, list[float]] = field(default_factory=lambda: {b: [] for b in BUILDS})
    sim_cpu: dict[str, list[float]] = field(default_factory=lambda: {b: [] for b in BUILDS})
    digests: set[str] = field(default_factory=set)
    ran: set[str] = field(default_factory=set)

    def rate(self, build: str, count: int) -> float:
        """``count`` per second of the median simulation CPU of ``build``."""
        return count / max(statistics.median(self.sim_cpu[build]), 1e-9)

    def speedup(self) -> float:
        pairs = zip(self.sim_cpu["compiled"], self.sim_cpu["pure"], strict=True)
        ratios = [p / max(c, 1e-9) for c, p in pairs]
        return statistics.median(ratios)

    def same(self) -> bool:
        return len(self.digests) == 1

    def record(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "workload": self.workload,
            "size": self.size,
            "jobs": self.jobs,
            "nodes": self.nodes,
            "finished": self.finished,
            "tasks": self.tasks,
            "events": self.events,
            "cpu_s": {b: [round(x, 3) for x in self.cpu[b]] for b in BUILDS},
            "simulate_cpu_s": {b: [round(x, 3) for x in self.sim_cpu[b]] for b in BUILDS},
            "events_per_s": {b: round(self.rate(b, self.events)) for b in BUILDS},
            "tasks_per_s": {b: round(self.rate(b, self.tasks)) for b in BUILDS},
            "speedup": round(self.speedup(), 3),
            "builds_ran": sorted(self.ran),
            "same_jobs_csv": self.same(),
            "jobs_csv_sha256": sorted(self.digests),
        }


def command(cell: Cell, out: Path) -> list[str]:
    cmd = [sys.executable, "-c", CHILD, "replay", "--runtime", "sim", "--workload", cell.workload]
    cmd += ["--policy", cell.policy, "--nodes", str(cell.nodes), "--jobs", str(cell.jobs)]
    return [*cmd, "--seed", "0", "--quiet", "--out", str(out)]


def child_line(text: str) -> dict[str, Any] | None:
    """The child's last report (the build it ran, its simulation CPU), None if it printed none."""
    for line in reversed(text.splitlines()):
        if line.startswith(MARK):
            got: dict[str, Any] = json.loads(line[len(MARK) :])
            return got
    return None


class Failed(Exception):
    """A child that failed or ran another build than asked: the benchmark stops (exit 1)."""


def measure(cell: Cell, build: str, folder: Path, allow_pure: bool) -> float:
    """One run of ``cell`` on ``build`` in ``folder``; adds it to the cell, returns its CPU seconds."""
    folder.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != ENV_PURE}
    if build == "pure":
        env[ENV_PURE] = "1"
    log = folder / "log.txt"
    cpu, _, status = run(command(cell, folder / "run"), folder, env, log)
    text = log.read_text(errors="replace")
    line = child_line(text)
    name = f"{cell.policy} ({cell.size}, {build})"
    if status != 0 or line is None or line["calls"] != 1:
        raise Failed(f"{name} exited with {status}; see:\n{text[-2000:]}")
    if line["build"] != build and not (build == "compiled" and allow_pure):
        raise Failed(
            f"{name} ran the {line['build']} build ({line['why']}): bash scripts/setup.sh builds it, "
            "or --allow-pure"
        )
    summary = json.loads((folder / "run" / "summary.json").read_text())
    cell.tasks, cell.events, cell.finished = summary["tasks"], summary["extra"]["events"], summary["finished"]
    cell.cpu[build].append(cpu)
    cell.sim_cpu[build].append(line["simulate_cpu"])
    cell.ran.add(line["build"])
    cell.digests.add(hashlib.sha256((folder / "run" / "jobs.csv").read_bytes()).hexdigest())
    return cpu


HEAD = [
    "size",
    "policy",
    "workload",
    "jobs",
    "nodes",
    "tasks",
    "events",
    "CPU s compiled (sim)",
    "CPU s pure (sim)",
    "events/s compiled",
    "events/s pure",
    "tasks/s compiled",
    "tasks/s pure",
    "speed-up",
    "jobs.csv",
]


def table(cells: list[Cell]) -> str:
    """The Markdown table, a row a cell."""

    def cpu(c: Cell, build: str) -> str:
        return f"{statistics.median(c.cpu[build]):.2f} ({statistics.median(c.sim_cpu[build]):.2f})"

    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for c in cells:
        row = [c.size, c.policy, c.workload, f"{c.finished:,}/{c.jobs:,}", f"{c.nodes:,}", f"{c.tasks:,}"]
        row += [f"{c.events:,}", cpu(c, "compiled"), cpu(c, "pure")]
        row += [f"{c.rate(b, c.events):,.0f}" for b in BUILDS]
        row += [f"{c.rate(b, c.tasks):,.0f}" for b in BUILDS]
        row += [f"{c.speedup():.2f}x", "same" if c.same() else "DIFFERS"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", nargs="+", choices=list(SIZES), default=["small"], help="default small")
    ap.add_argument(
        "--families",
        nargs="+",
        choices=list(FAMILIES),
        default=list(FAMILIES),
        metavar="POLICY",
        help=f"one policy per family (default all: {' '.join(FAMILIES)})",
    )
    ap.add_argument("--rounds", type=int, default=1, help="runs of each build per cell (default 1)")
    ap.add_argument("--out", type=Path, help="the table here (markdown), the runs beside it (.json)")
    ap.add_argument("--allow-pure", action="store_true", help="let the compiled runs fall back to pure")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds: at least 1")
    cells = [
        Cell(p, FAMILIES[p], size, *SIZES[size][FAMILIES[p]])
        for size in dict.fromkeys(args.size)
        for p in dict.fromkeys(args.families)
    ]
    total, done, t0 = args.rounds * len(cells) * len(BUILDS), 0, time.monotonic()
    with tempfile.TemporaryDirectory(prefix="simulator_speed_families_") as tmp:
        for r in range(args.rounds):
            for c in cells:
                for build in BUILDS:  # the pair back to back: the same machine for both
                    folder = Path(tmp) / f"{c.size}-{c.policy}-{build}-{r}"
                    try:
                        cpu = measure(c, build, folder, args.allow_pure)
                    except Failed as exc:
                        print(f"simulator_speed families: {exc}", file=sys.stderr)
                        return 1
                    done += 1
                    if not args.quiet:
                        eta = (time.monotonic() - t0) / done * (total - done)
                        print(
                            f"[{done}/{total}, ETA {eta / 60:.1f} min] round {r + 1} {c.size} {c.policy} "
                            f"{build}: {cpu:.2f} s CPU ({c.sim_cpu[build][-1]:.2f} s simulating)",
                            file=sys.stderr,
                            flush=True,
                        )
    text = table(cells)
    if args.out:
        args.out.write_text(text)
        record = {
            "command": f"{PROG} " + " ".join(sys.argv[1:] if argv is None else argv),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "rounds": args.rounds,
            "sizes": {s: SIZES[s] for s in dict.fromkeys(args.size)},
            "cells": [c.record() for c in cells],
        }
        args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    else:
        print(text, end="")
    differ = [f"{c.policy} ({c.size})" for c in cells if not c.same()]
    if differ:
        print(
            "simulator_speed families: jobs.csv differs between the compiled and pure builds: "
            + ", ".join(differ),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
