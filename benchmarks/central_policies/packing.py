"""Central decision cost per placed task of the multi-resource policies, and simulator speed on DAG
workloads (a benchmark, not a test: ratios in one run on a shared machine):

    python -m aviary.benchmarks.central_policies packing  # TPC-H at 100 and 1,000 nodes, Alibaba at 100
    python -m aviary.benchmarks.central_policies packing --graphene-offline  # Graphene's offline time per DAG
    python -m aviary.benchmarks.central_policies packing --nodes 100 --policies drf cs sjf tetris
    python -m aviary.benchmarks.central_policies packing --workloads tpch tpcds --nodes 100 --jobs 30 \
        --policies tetris carbyne --rounds 2          # Carbyne's cost per placed task / Tetris'
    python -m aviary.benchmarks.central_policies packing --workloads tpch --nodes 100 \
        --policies cs drf sjf cp tetris --rounds 2    # the YARN-like baselines' whole simulation / Tetris'

Each cell is one simulated replay at offered load 0.9 (seed 0); the central scheduler's
``on_message`` is timed around every call (``time.perf_counter``), so the cost per placed task includes
the bookkeeping of submissions and finishes; the rest of the wall time is the node cores, the frontend
and the simulator's event loop. ``x ref`` is a policy's cost per placed task over the reference policy's
(``--ref``, default ``tetris``) in the same cell and round: with ``--rounds`` R the policies of a cell
run interleaved R times and the column is the median of the per-round ratios (this machine is shared:
ratios measured in one run, not bare times). ``sim CPU x ref`` is the same ratio for the CPU time
(``time.process_time``) of the whole simulated replay, central, node cores and event loop: the baselines
over-allocate cores, so their nodes hold many stretched tasks, and this is what the fluid model costs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from aviary.common.frontend import FrontendCore
from aviary.common.resources import vector_sum
from aviary.launch.drivers.sim import Simulator
from aviary.launch.flags.parser import build_parser
from aviary.launch.policies.registry import build_core, get_policy
from aviary.launch.replay.resolve import setup_replay

CELLS = (("tpch", 100, 300), ("tpch", 1000, 3000), ("alibaba", 100, 1000), ("tpcds", 100, 300))


def bench(
    workload: str, policy: str, nodes: int, jobs: int, extra: list[str] | None = None
) -> dict[str, Any]:
    flags = ["replay", "--runtime", "sim", "--workload", workload, "--policy", policy, "--nodes", str(nodes),
             "--jobs", str(jobs), "--load", "0.9", "--seed", "0", "--quiet", *(extra or [])]  # fmt: skip
    setup = setup_replay(build_parser().parse_args(flags))
    cluster = setup.cluster
    cores = [build_core(p, cluster) for p in cluster.processes if p.role != "frontend"]
    central = next(c for c in cores if c.role == "central")
    spent = [0.0]
    inner = central.on_message

    def timed(now: float, sender: str, msg: Any) -> Any:
        t = time.perf_counter()
        out = inner(now, sender, msg)
        spent[0] += time.perf_counter() - t
        return out

    central.on_message = timed  # type: ignore[method-assign]
    fe = FrontendCore(cluster.frontend.name, setup.jobs, get_policy(cluster.policy).route(cluster))
    sim = Simulator([*cores, fe])
    started, cpu = time.perf_counter(), time.process_time()
    sim.run(frontend=fe)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    placed = central.counters["tasks_placed"]
    assert fe.done and placed == sum(j.tasks for j in setup.jobs)
    capacity = vector_sum(n.resources for n in cluster.nodes)
    return {
        "tasks": placed,
        "us_per_task": 1e6 * spent[0] / placed,
        "central_share": spent[0] / wall,
        "events_per_s": sim.events / wall,
        "wall": wall,
        "cpu": cpu,
        "cores": capacity.cores,
    }


SIZES = ((1, 100), (100, 300), (300, 1000), (1000, 3000), (3000, 10**9))
"""Task-count buckets of the offline-construction table."""


def graphene_offline(nodes: int = 100, jobs: int = 200) -> None:
    """Graphene's offline schedule construction time per DAG by DAG size: TPC-H and TPC-DS-like jobs as a
    replay builds them (no task merging), each planned on the virtual space of a ``nodes`` cluster."""
    from aviary.central.graphene import Graphene
    from aviary.central.graphene_schedule import DagStage, build_schedule, virtual_machines
    from aviary.common.dags import build_dag_workload
    from aviary.common.resources import DEFAULT_MACHINE

    space = virtual_machines([DEFAULT_MACHINE] * nodes, Graphene().share)
    print(
        f"| workload | tasks per DAG | DAGs | stages (median) | ms per DAG p50 | p90 | max |  # {nodes} nodes"
    )
    print("|---|---|---|---|---|---|---|")
    for kind in ("tpch", "tpcds"):
        specs = build_dag_workload(kind, jobs=jobs, batch=True)  # type: ignore[arg-type]
        timed: list[tuple[int, int, float]] = []
        for spec in specs:
            stages = [DagStage(s.tasks, s.estimate, s.demand, s.parents) for s in spec.stages]
            t = time.perf_counter()
            build_schedule(stages, space)
            timed.append((spec.tasks, len(stages), 1e3 * (time.perf_counter() - t)))
        for lo, hi in SIZES:
            cell = sorted(ms for n, _, ms in timed if lo <= n < hi)
            if not cell:
                continue
            stages_n = sorted(k for n, k, _ in timed if lo <= n < hi)
            p50, p90 = (cell[min(len(cell) - 1, int(f * len(cell)))] for f in (0.5, 0.9))
            size = f"{lo:,}-{hi - 1:,}" if hi < 10**9 else f">= {lo:,}"
            print(f"| {kind} | {size} | {len(cell)} | {stages_n[len(stages_n) // 2]} | {p50:.1f} "
                  f"| {p90:.1f} | {cell[-1]:.1f} |", flush=True)  # fmt: skip


def _ratio(runs: list[dict[str, Any]], refs: list[dict[str, Any]] | None, key: str) -> str:
    """The median over rounds of ``key``'s ratio to the reference policy's, with its range."""
    if refs is None:
        return "—"
    ratios = sorted(x[key] / y[key] for x, y in zip(runs, refs, strict=True))
    spread = f" [{ratios[0]:.2f}, {ratios[-1]:.2f}]" if len(ratios) > 1 else ""
    return f"{statistics.median(ratios):.2f}{spread} ({len(ratios)})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graphene-offline", action="store_true", help="instead: Graphene's offline time per DAG")
    p.add_argument("--policies", nargs="+", default=["drf", "tetris", "carbyne", "graphene"])
    p.add_argument("--workloads", nargs="+", help="only the cells of these workloads")
    p.add_argument("--nodes", nargs="+", type=int, help="only the cells of these cluster sizes")
    p.add_argument("--jobs", type=int, help="jobs per cell instead of the cell's own count")
    p.add_argument("--ref", default="tetris", help="the policy the x ref column divides by")
    p.add_argument("--rounds", type=int, default=1, help="interleaved runs of each cell's policies")
    p.add_argument("--flags", default="", help="extra replay flags, e.g. '--contention off'")
    args = p.parse_args(argv)
    if args.graphene_offline:
        graphene_offline()
        return 0
    extra = args.flags.split()
    chosen = [
        (w, n, j)
        for w, n, j in CELLS
        if (not args.nodes or n in args.nodes) and (not args.workloads or w in args.workloads)
    ]
    if not chosen:
        shown = ", ".join(f"{w} at {n:,}" for w, n, _ in CELLS)
        p.error(f"--workloads / --nodes: no cell matches (the cells: {shown} nodes)")
    print("| workload | nodes | jobs | tasks | policy | central µs / placed task | x ref (rounds) "
          "| central share of wall | events/s | wall (s) | sim CPU (s) | sim CPU x ref |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for workload, nodes, jobs in chosen:
        n = args.jobs or jobs
        runs: dict[str, list[dict[str, Any]]] = {policy: [] for policy in args.policies}
        for _ in range(args.rounds):
            for policy in args.policies:
                runs[policy].append(bench(workload, policy, nodes, n, extra))
        for policy in args.policies:
            r = runs[policy][-1]
            ref, cpu_ref = (_ratio(runs[policy], runs.get(args.ref), key) for key in ("us_per_task", "cpu"))
            share = f"{100 * r['central_share']:.0f} %"
            cells = [
                workload,
                f"{nodes:,}",
                f"{n:,}",
                f"{r['tasks']:,}",
                policy,
                f"{r['us_per_task']:,.0f}",
                ref,
            ]
            cells += [share, f"{r['events_per_s']:,.0f}", f"{r['wall']:.1f}", f"{r['cpu']:.1f}", cpu_ref]
            print("| " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
