"""TetriSched's solver time per cycle by pending jobs and cluster size: cold, greedy start, and the
default (LP rounding) (a benchmark, not a test; the machine is shared: compare the columns of one run):

    python -m aviary.benchmarks.central_policies tetrisched
    python -m aviary.benchmarks.central_policies tetrisched --pending 50 --nodes 100 --seeds 0 1 2 3 4

A cell: ``pending`` GS_HET-like jobs (``gshet_jobs(seed, pending, load=None)``: every job waiting at
time 0) on ``nodes`` one-slot nodes in racks of 10, a quarter GPU-labelled (the 256-node cell is the
paper's RC256 size). Cycle 1 plans at 0 and launches the jobs planned to start now; cycle 2, at 4 s,
plans the rest. Each cycle is solved from the same state three ways: without a MIP start (cold), with
the greedy start alone (``lp_rounds=0``: the previous cycle's plan completed greedily; in cycle 1 the
greedy plan alone), and with the defaults (the LP relaxation, LP-guided greedy passes, branch and bound
only when no plan is within the gap). Reported: MILP columns and rows, HiGHS seconds, the whole cycle's
seconds (STRL, build, solve, launch) and the objective of each, and how the default solved the cycle.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from aviary.central.packing import PackingCore
from aviary.central.tetrisched import TetriSched
from aviary.common.frontend import submit_message
from aviary.common.gshet import gshet_attributes, gshet_jobs
from aviary.common.resources import Resources


def timed(core: PackingCore, now: float) -> dict[str, Any]:
    started = time.perf_counter()
    core.on_timer(now, "cycle")
    wall = time.perf_counter() - started
    r = core.policy.records[-1]  # type: ignore[attr-defined]
    return {"pending": r.pending, "cols": r.cols, "rows": r.rows, "highs": r.seconds, "cycle": wall,
            "objective": r.objective, "status": ", ".join(r.status)}  # fmt: skip


def built(pending: int, nodes: int, seed: int) -> PackingCore:
    """A TetriSched core with ``pending`` GS_HET-like jobs submitted at time 0, none planned yet."""
    specs = [(f"n{i}", Resources(1, 4, 1, 1), a) for i, a in enumerate(gshet_attributes(nodes))]
    core = PackingCore("central", specs, TetriSched(), seed=seed)
    for job in gshet_jobs(seed, pending, load=None, nodes=nodes):
        assert core.state.submit(0.0, "fe", submit_message(job)) is None
    return core


def cell(pending: int, nodes: int, seed: int = 0) -> list[tuple[str, list[dict[str, Any]]]]:
    """Cycle 1 (every job waiting) and cycle 2 (at 4 s, after cycle 1's launches), each solved cold, from
    the greedy start and by default, from the same state: a core built afresh (cycles are deterministic:
    HiGHS with a node limit) and brought to the cycle by the default's earlier cycles. Not a deepcopy of
    one core, which the compiled build cannot copy."""
    cycles = (("1", 0.0), ("2", 4.0))
    rows = []
    for k, (label, now) in enumerate(cycles):
        runs = []
        for setting, value in (("warm_start", "off"), ("lp_rounds", 0), (None, None)):
            core = built(pending, nodes, seed)
            for _, earlier in cycles[:k]:
                timed(core, earlier)
            if setting is not None:
                setattr(core.policy, setting, value)
            runs.append(timed(core, now))
        rows.append((label, runs))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pending", nargs="+", type=int, default=[20, 50, 100])
    p.add_argument("--nodes", nargs="+", type=int, default=[80, 100, 256])
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    args = p.parse_args(argv)
    print("| nodes | jobs at 0 | seed | cycle | waiting | MILP cols x rows | cold: HiGHS s / cycle s "
          "| greedy start: HiGHS s / cycle s | default: HiGHS s / cycle s "
          "| objective cold / greedy / default | default solved by |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for nodes in args.nodes:
        for pending in args.pending:
            for seed in args.seeds:
                for label, runs in cell(pending, nodes, seed):
                    default = runs[-1]
                    times = " | ".join(f"{r['highs']:.2f} / {r['cycle']:.2f}" for r in runs)
                    objectives = " / ".join(f"{r['objective']:,.0f}" for r in runs)
                    how = "LP rounding" if default["status"].startswith("Rounded") else "branch and bound"
                    print(
                        f"| {nodes} | {pending} | {seed} | {label} | {default['pending']:.0f} "
                        f"| {default['cols']:,.0f} x {default['rows']:,.0f} | {times} | {objectives} "
                        f"| {how if default['status'] else '-'} |",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
