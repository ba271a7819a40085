"""TetriSched's solver time per cycle by pending jobs and cluster size, cold vs warm start (a benchmark,
not a test; the machine is shared: compare the columns of one run):

    python -m aviary.experiments.bench_tetrisched
    python -m aviary.experiments.bench_tetrisched --pending 20 50 --nodes 80

A cell: ``pending`` GS_HET-like jobs (``gshet_jobs(seed, pending, load=None)``: every job waiting at
time 0) on ``nodes`` one-slot nodes in racks of 10, a quarter GPU-labelled (the 256-node cell is the
paper's RC256 size). Cycle 1 plans at 0 and launches the jobs planned to start now; cycle 2, at 4 s,
plans the rest. Each cycle is solved from the same state twice: without a MIP start (cold) and with the
default start (warm: the previous cycle's plan completed greedily; in cycle 1 there is none, so the
greedy plan alone). Reported: MILP columns and rows, HiGHS
seconds and the whole cycle's seconds (STRL, build, solve, launch), and whether HiGHS accepted the start.
"""

from __future__ import annotations

import argparse
import copy
import time

from aviary.central.packing import PackingCore
from aviary.central.tetrisched import TetriSched
from aviary.common.frontend import submit_message
from aviary.common.gshet import gshet_attributes, gshet_jobs
from aviary.common.resources import Resources


def timed(core: PackingCore, now: float) -> dict[str, float]:
    started = time.perf_counter()
    core.on_timer(now, "cycle")
    wall = time.perf_counter() - started
    r = core.policy.records[-1]  # type: ignore[attr-defined]
    return {"pending": r.pending, "cols": r.cols, "rows": r.rows, "highs": r.seconds, "cycle": wall,
            "accepted": r.warm_accepted}  # fmt: skip


def cell(pending: int, nodes: int, seed: int = 0) -> list[tuple[str, dict[str, float], dict[str, float]]]:
    """Cycle 1 (every job waiting) and cycle 2 (at 4 s, after cycle 1's launches), each solved cold and
    warm from the same state."""
    specs = [(f"n{i}", Resources(1, 4, 1, 1), a) for i, a in enumerate(gshet_attributes(nodes))]
    core = PackingCore("central", specs, TetriSched(), seed=seed)
    for job in gshet_jobs(seed, pending, load=None, nodes=nodes):
        assert core.state.submit(0.0, "fe", submit_message(job)) is None
    rows = []
    for label, now in (("1", 0.0), ("2", 4.0)):
        cold = copy.deepcopy(core)
        cold.policy.warm_start = "off"  # type: ignore[attr-defined]
        rows.append((label, timed(cold, now), timed(core, now)))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pending", nargs="+", type=int, default=[20, 50, 100])
    p.add_argument("--nodes", nargs="+", type=int, default=[80, 256])
    args = p.parse_args(argv)
    print("| nodes | jobs at 0 | cycle | waiting | MILP cols x rows | cold: HiGHS s | cold: cycle s "
          "| warm: HiGHS s | warm: cycle s | start accepted |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for nodes in args.nodes:
        for pending in args.pending:
            for label, cold, warm in cell(pending, nodes):
                print(
                    f"| {nodes} | {pending} | {label} | {warm['pending']:.0f} "
                    f"| {warm['cols']:,.0f} x {warm['rows']:,.0f} "
                    f"| {cold['highs']:.2f} | {cold['cycle']:.2f} "
                    f"| {warm['highs']:.2f} | {warm['cycle']:.2f} | {'yes' if warm['accepted'] else 'no'} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
