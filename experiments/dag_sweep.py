"""The harness of the simulated DAG-policy comparisons (``packing_sim``, ``carbyne_sim``, ...): a sweep is
a :class:`Sweep` (workloads x arrival settings x policy variants, the fixed replay flags, the baseline);
each cell is one ``aviary replay --runtime sim`` whose results stay under ``results/<name>/<cell>/``
(re-used unless ``--force``), and the report is a Markdown table per workload and load with makespan,
mean and median JCT, the per-job factor of improvement over the baseline (as ``aviary compare``), Jain's
index and per-resource utilization."""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aviary.experiments.runs import read_summary, sim_wall, timed_replay
from aviary.experiments.sweep_cells import from_sweep_flag
from aviary.experiments.tables import num, ratio
from aviary.launch.compare import FactorStats, load_comparison

RESULTS = Path(__file__).resolve().parent / "results"

Cell = tuple[str, str, str]
"""(workload, load or "batch", policy variant such as ``carbyne:altruism=0.5``)."""


@dataclass
class Sweep:
    name: str
    title: str
    intro: str
    workloads: tuple[str, ...]
    loads: tuple[str, ...]
    policies: tuple[str, ...]
    baseline: str
    flags: list[str] = field(default_factory=list)
    """Replay flags every cell shares besides workload, policy, nodes, load, jobs and seed."""
    jobs: int = 300
    nodes: int = 100
    from_sweep: tuple[str, Path] | None = None
    """Read the cells from ``aviary sweep`` runs instead: (the spec's name in experiments/sweeps/, the
    folder holding its folder: ``results/sweeps``); None: the script's own runs under :attr:`out`."""

    @property
    def out(self) -> Path:
        return RESULTS / self.name

    def folder(self, cell: Cell) -> Path | None:
        """Where the results of ``cell`` are (None: no finished sweep cell has it)."""
        workload, load, policy = cell
        if self.from_sweep is None:
            return self.out / f"{workload}-{load}-{policy}"
        from aviary.experiments.sweep_cells import find

        spec, root = self.from_sweep
        return find([spec], root, workload=workload, load=load, policy=policy)


def arrivals(load: str) -> list[str]:
    return ["--batch"] if load == "batch" else ["--load", load]


def variant(policy: str) -> list[str]:
    """``tetris:fair_fraction=0.25`` -> the policy and its parameter flags."""
    name, _, settings = policy.partition(":")
    flags = ["--policy", name]
    for item in filter(None, settings.split(",")):
        key, value = item.split("=")
        flags += ["--" + key.replace("_", "-"), value]
    return flags


def run_one(sweep: Sweep, cell: Cell, force: bool) -> dict[str, Any]:
    workload, load, policy = cell
    out = sweep.out / f"{workload}-{load}-{policy}"
    if (out / "summary.json").exists() and (out / "jobs.csv").exists() and not force:
        return json.loads((out / "summary.json").read_text())
    flags = ["--runtime", "sim", "--workload", workload, *variant(policy), "--nodes", str(sweep.nodes),
             *arrivals(load), "--jobs", str(sweep.jobs), "--seed", "0", *sweep.flags]  # fmt: skip
    return timed_replay(flags, out)


def factors(sweep: Sweep, workload: str, load: str, policy: str) -> FactorStats:
    """The per-job factors of improvement over the baseline, as ``aviary compare`` reports them."""
    base, run = sweep.folder((workload, load, sweep.baseline)), sweep.folder((workload, load, policy))
    assert base is not None and run is not None, "a report is made of cells that were found"
    comp = load_comparison([base, run])
    return comp.foi[comp.labels[1]]


def rel(s: dict[str, Any], base: dict[str, Any] | None, key: str) -> str:
    r = None if base is None else ratio(s.get(key), base.get(key))
    return "n/a" if r is None else f"{r:.2f}"


def report(sweep: Sweep, cells: dict[Cell, dict[str, Any]]) -> str:
    b = sweep.baseline
    lines = [f"# {sweep.title}", "", sweep.intro, ""]
    policies = list(dict.fromkeys(pol for _, _, pol in cells))
    for workload, load in sorted({(w, ld) for w, ld, _ in cells}):
        base = cells.get((workload, load, b))
        lines += [
            f"## {workload}, load {load}",
            "",
            f"| policy | finished | makespan (s) | / {b} | mean JCT (s) | / {b} | median JCT (s) | / {b} "
            "| FoI p10 / p50 / p90 (mean) | Jain mean [min, max] | util cores / mem / disk / net "
            "| sim wall (s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for policy in policies:
            s = cells.get((workload, load, policy))
            if s is None:
                continue
            util = s.get("resource_utilization", {})
            fair = s.get("fairness", {})
            foi = factors(sweep, workload, load, policy) if policy != b and base is not None else None
            shown = "—"
            if foi and foi.count:
                shown = " / ".join(f"{foi.get(q):.2f}" for q in ("p10", "p50", "p90"))
                shown += f" ({foi.get('mean'):.2f})"
            median = {"p50": s["jct"]["all"].get("p50")}
            base_median = None if base is None else {"p50": base["jct"]["all"].get("p50")}
            lines.append(
                f"| {policy} | {s['finished']}/{s['jobs']} | {num(s.get('makespan'))} "
                f"| {rel(s, base, 'makespan')} | {num(s.get('mean_jct'), 1)} | {rel(s, base, 'mean_jct')} "
                f"| {num(median['p50'], 1)} | {rel(median, base_median, 'p50')} "
                f"| {shown} "
                f"| {fair.get('mean', 0):.2f} [{fair.get('min', 0):.2f}, {fair.get('max', 0):.2f}] "
                f"| {' / '.join(f'{100 * util.get(r, 0):.0f}%' for r in ('cores', 'mem', 'disk', 'net'))} "
                f"| {sim_wall(s) or 'n/a'} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(sweep: Sweep, argv: list[str] | None = None, *, report_name: str | None = None) -> int:
    """Parse the sweep's command line (subsets of its grid, --jobs, --nodes, --workers, --force), run the
    cells in parallel and write ``results/<report_name or name>.md``."""
    p = argparse.ArgumentParser(description=sweep.title)
    p.add_argument("--workloads", nargs="+", default=list(sweep.workloads))
    p.add_argument("--loads", nargs="+", default=list(sweep.loads), help="offered loads, or batch")
    p.add_argument("--policies", nargs="+", default=list(sweep.policies))
    p.add_argument("--jobs", type=int, default=sweep.jobs)
    p.add_argument("--nodes", type=int, default=sweep.nodes)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--force", action="store_true", help="re-run cells whose results exist")
    from_sweep_flag(p, report_name or sweep.name)
    p.add_argument("--results", type=Path, default=RESULTS, help="where the report goes")
    args = p.parse_args(argv)
    sweep.jobs, sweep.nodes = args.jobs, args.nodes
    policies = list(args.policies)
    if sweep.baseline not in policies:
        policies.insert(0, sweep.baseline)
    grid = [(w, ld, pol) for w in args.workloads for ld in args.loads for pol in policies]
    if args.from_sweep is not None:
        sweep.from_sweep = (report_name or sweep.name, args.from_sweep.resolve())
        found = {cell: read_summary(sweep.folder(cell)) for cell in grid}
        cells = {c: s for c, s in found.items() if s is not None}
        if not cells:
            print(f"no finished cell of {sweep.from_sweep[0]} under {args.from_sweep}", file=sys.stderr)
            return 2
        return write_report(sweep, cells, args.results / f"{report_name or sweep.name}.md")
    with ProcessPoolExecutor(args.workers) as pool:
        futures = {cell: pool.submit(run_one, sweep, cell, args.force) for cell in grid}
        cells = {}
        for cell, fut in futures.items():
            cells[cell] = s = fut.result()
            print(
                f"{cell}: makespan {num(s.get('makespan'))}, mean JCT {num(s.get('mean_jct'), 1)}", flush=True
            )
    return write_report(sweep, cells, args.results / f"{report_name or sweep.name}.md")


def write_report(sweep: Sweep, cells: dict[Cell, dict[str, Any]], path: Path) -> int:
    text = report(sweep, cells)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    print(text)
    return 0
