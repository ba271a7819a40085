"""Simulator speed, interleaved: whole-sample replays of this tree against a baseline build and/or another
simulator, in one run, a pair at a time (docs/measurements.md, "The simulator's speed").

Each cell (policy:nodes) replays the whole bundled Google sample at its own arrival times, seed 0, as
`aviary replay --runtime sim --keep-arrivals --nodes N --policy P`; every run is its own process and its
CPU (user + sys) and peak RSS come from `wait4`. Rounds go cell by cell, the variants of a cell back to
back, so that a pair sees the same machine: on a shared machine a single run varies by tens of per cent,
the ratio within a pair much less. The table gives the median CPU of each variant and the median of the
per-round ratios.

    python -m aviary.benchmarks.simulator_speed compare --rounds 4 \\
        [--baseline /tmp/base]                     # a folder holding another aviary/ (git archive + build)
        [--other 'bash run.sh {policy} {nodes}']   # another simulator, run in a fresh folder per run

`--baseline` must be compiled the same way (`scripts/build_speedups.py` run in its copy); its `jobs.csv`
and `tasks.csv` must equal this tree's byte for byte, or the script says so and exits 1. The runs of this
tree must use the compiled build (`aviary.speedups.ACTIVE`) unless `--pure` is given. `--no-task-table`
leaves `tasks.csv` out of Aviary's runs: the fair cell against a simulator that writes a line per job.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CELLS = ("sparrow:5000", "hawk:5000", "eagle:5000", "sparrow:12500", "hawk:12500", "eagle:12500")
CHILD = (
    "import runpy, sys, aviary.speedups as s; print('aviary build:', s.ACTIVE, file=sys.stderr, flush=True); "
    "runpy.run_module('aviary.launch.cli', run_name='__main__', alter_sys=True)"
)
"""A child's ``aviary`` command: ``aviary.launch.cli`` runs as ``python -m`` runs it, whether it is a
module (a baseline from before launch/ was grouped) or a package."""


@dataclass
class Runs:
    cpu: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    digests: set[str] = field(default_factory=set)


def run(cmd: list[str] | str, cwd: Path, env: dict[str, str], log: Path) -> tuple[float, float, int]:
    """CPU seconds, peak RSS (MB) and exit status of one child process."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, shell=isinstance(cmd, str)
        )
        _, status, usage = os.wait4(proc.pid, 0)  # its own rusage: CPU and peak RSS of this child only
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen does not wait again
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", nargs="+", default=list(CELLS), metavar="POLICY:NODES")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="a folder with another aviary package in it")
    ap.add_argument("--other", help="another simulator's command; {policy} and {nodes} are filled in")
    ap.add_argument("--jobs", type=int, help="the first N jobs only (default: the whole sample)")
    ap.add_argument("--pure", action="store_true", help="allow this tree's pure-Python build")
    ap.add_argument(
        "--no-task-table",
        action="store_true",
        help="Aviary's runs without tasks.csv (the other simulator writes a line per job only)",
    )
    ap.add_argument("--out", type=Path, help="also write the table here (markdown)")
    args = ap.parse_args(argv)
    cells = []
    for c in args.cells:
        policy, _, nodes = c.partition(":")
        if not nodes.isdigit():
            print(f"simulator_speed compare: --cells: {c!r} is not POLICY:NODES", file=sys.stderr)
            return 2
        cells.append((policy, int(nodes)))
    if args.baseline is not None and not (args.baseline / "aviary" / "__init__.py").is_file():
        print(
            f"simulator_speed compare: --baseline {args.baseline}: no aviary/__init__.py in it",
            file=sys.stderr,
        )
        return 2
    variants = ["this"] + (["baseline"] if args.baseline else []) + (["other"] if args.other else [])
    runs = {(v, c): Runs() for v in variants for c in cells}
    total, done, t0 = args.rounds * len(cells) * len(variants), 0, time.monotonic()
    with tempfile.TemporaryDirectory(prefix="simulator_speed_compare_") as tmp:
        for r in range(args.rounds):
            for policy, nodes in cells:
                for v in variants:
                    folder = Path(tmp) / f"{v}-{policy}-{nodes}-{r}"
                    folder.mkdir()
                    env = dict(os.environ)
                    if v == "other":
                        cmd: list[str] | str = args.other.format(policy=policy, nodes=nodes)
                    else:
                        env["PYTHONPATH"] = str(args.baseline) if v == "baseline" else ""
                        cmd = [sys.executable, "-c", CHILD, "replay", "--runtime", "sim", "--keep-arrivals"]
                        cmd += ["--nodes", str(nodes), "--policy", policy, "--seed", "0", "--quiet"]
                        cmd += ["--out", str(folder / "run")]
                        if args.jobs:
                            cmd += ["--jobs", str(args.jobs)]
                        if args.no_task_table:
                            cmd.append("--no-task-table")
                    log = folder / "log.txt"
                    cpu, rss, status = run(cmd, folder, env, log)
                    text = log.read_text(errors="replace")
                    if status != 0:
                        print(
                            f"simulator_speed compare: {v} {policy}:{nodes} exited with {status}; "
                            f"see:\n{text[-2000:]}"
                        )
                        return 1
                    if v == "this" and not args.pure and "aviary build: compiled" not in text:
                        print(
                            "simulator_speed compare: this tree runs pure Python "
                            "(scripts/setup.sh builds it; or --pure)"
                        )
                        return 1
                    cell = runs[v, (policy, nodes)]
                    cell.cpu.append(cpu)
                    cell.rss_mb.append(rss)
                    if v != "other":
                        digest = hashlib.sha256()
                        for result in ("jobs.csv", "tasks.csv"):
                            if (folder / "run" / result).is_file():
                                digest.update((folder / "run" / result).read_bytes())
                        cell.digests.add(digest.hexdigest())
                    done += 1
                    eta = (time.monotonic() - t0) / done * (total - done)
                    print(f"[{done}/{total}, ETA {eta / 60:.0f} min] round {r + 1} {v} {policy}:{nodes}: "
                          f"{cpu:.2f} s CPU, {rss:.0f} MB", flush=True)  # fmt: skip
    table = report(runs, variants, cells)
    print(table)
    if args.out:
        args.out.write_text(table)
    base = "baseline" if args.baseline else "this"
    if any(
        len(runs["this", c].digests) != 1 or runs[base, c].digests != runs["this", c].digests for c in cells
    ):
        print("simulator_speed compare: jobs.csv or tasks.csv differs between runs or from the baseline's")
        return 1
    return 0


def report(
    runs: dict[tuple[str, tuple[str, int]], Runs], variants: list[str], cells: list[tuple[str, int]]
) -> str:
    def cpu(r: Runs) -> str:
        return f"{statistics.median(r.cpu):.1f} s ({min(r.cpu):.1f}-{max(r.cpu):.1f})"

    others = [v for v in variants if v != "this"]
    head = ["policy", "nodes", *(f"{v} CPU" for v in variants), *(f"{v} RSS" for v in variants)]
    head += [f"this / {v} (median of rounds)" for v in others]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        row = [c[0], f"{c[1]:,}", *(cpu(runs[v, c]) for v in variants)]
        row += [f"{max(runs[v, c].rss_mb):.0f} MB" for v in variants]
        for v in others:
            ratios = [a / b for a, b in zip(runs["this", c].cpu, runs[v, c].cpu, strict=True)]
            row.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
