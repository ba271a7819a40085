"""The harness of the simulated DAG-policy comparisons (``packing_sim``, ``carbyne_sim``, ...): a sweep is
a :class:`Sweep` (workloads x arrival settings x policy variants x seeds, the fixed replay flags, the
baseline); each cell is one ``aviary replay --runtime sim`` whose results stay under
``results/<name>/<cell>/`` (re-used unless ``--force``), and the report is a Markdown table per workload
and load with makespan, mean and median JCT, each as the median over the seeds and as the median of the
per-seed ratios to the baseline with their range (the papers report medians of several runs), the per-job
factor of improvement over the baseline (as ``aviary compare``), Jain's index and per-resource
utilization (what each resource delivered)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aviary.experiments.runs import read_summary, sim_wall, timed_replay
from aviary.experiments.sweep_cells import from_sweep_flag
from aviary.experiments.tables import num, ratio, spread
from aviary.launch.results.compare import FactorStats, load_comparison

RESULTS = Path(__file__).resolve().parent / "results"

Cell = tuple[str, str, str, int]
"""(workload, load or "batch", policy variant such as ``carbyne:altruism=0.5``, seed)."""


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
    seeds: tuple[int, ...] = (0, 1, 2)
    from_sweep: tuple[str, Path] | None = None
    """Read the cells from ``aviary sweep`` runs instead: (the spec's name in experiments/sweeps/, the
    folder holding its folder: ``results/sweeps``); None: the script's own runs under :attr:`out`."""
    runs: Path = RESULTS
    """The folder of the script's own runs' folder (``--runs``; its cells under ``runs/<name>/``)."""

    @property
    def out(self) -> Path:
        return self.runs / self.name

    def folder(self, cell: Cell) -> Path | None:
        """Where the results of ``cell`` are (None: no finished sweep cell has it)."""
        workload, load, policy, seed = cell
        if self.from_sweep is None:
            return self.out / f"{workload}-{load}-{policy}-seed{seed}"
        from aviary.experiments.sweep_cells import find

        spec, root = self.from_sweep
        return find([spec], root, workload=workload, load=load, policy=policy, seed=seed)


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
    workload, load, policy, seed = cell
    out = sweep.folder(cell)
    assert out is not None
    if (out / "summary.json").exists() and (out / "jobs.csv").exists() and not force:
        return json.loads((out / "summary.json").read_text())
    flags = ["--runtime", "sim", "--workload", workload, *variant(policy), "--nodes", str(sweep.nodes),
             *arrivals(load), "--jobs", str(sweep.jobs), "--seed", str(seed), *sweep.flags]  # fmt: skip
    return timed_replay(flags, out)


def factors(sweep: Sweep, cell: Cell) -> FactorStats:
    """The per-job factors of improvement over the baseline (same workload, load and seed), as ``aviary
    compare`` reports them."""
    workload, load, _, seed = cell
    base, run = sweep.folder((workload, load, sweep.baseline, seed)), sweep.folder(cell)
    assert base is not None and run is not None, "a report is made of cells that were found"
    comp = load_comparison([base, run])
    return comp.foi[comp.labels[1]]


def p50(s: dict[str, Any]) -> float | None:
    value = s["jct"]["all"].get("p50")
    return None if value is None else float(value)


def metric(s: dict[str, Any], key: str) -> float | None:
    return p50(s) if key == "p50" else s.get(key)


def ratios(runs: list[tuple[dict[str, Any], dict[str, Any] | None]], key: str) -> str:
    """The per-seed ratios of a metric to the baseline's, as :func:`spread`."""
    got = [ratio(metric(s, key), None if b is None else metric(b, key)) for s, b in runs]
    return spread([r for r in got if r is not None])


def report(sweep: Sweep, cells: dict[Cell, dict[str, Any]]) -> str:
    b = sweep.baseline
    seeds = sorted({seed for *_, seed in cells})
    note = "medians, [min, max] over the seeds; a ratio is taken per seed (same jobs), then its median."
    lines = [f"# {sweep.title}", "", sweep.intro, "", f"Seeds {', '.join(map(str, seeds))}: {note}", ""]
    policies = list(dict.fromkeys(pol for _, _, pol, _ in cells))
    for workload, load in sorted({(w, ld) for w, ld, _, _ in cells}):
        lines += [
            f"## {workload}, load {load}",
            "",
            f"| policy | finished | makespan (s) | / {b} | mean JCT (s) | / {b} | median JCT (s) | / {b} "
            "| FoI p50 | Jain mean | util cores / mem / disk / net | sim wall (s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for policy in policies:
            have = [(c, s) for c, s in cells.items() if c[:3] == (workload, load, policy)]
            if not have:
                continue
            runs = [(s, cells.get((workload, load, b, c[3]))) for c, s in have]
            foi = [factors(sweep, c) for c, _ in have] if policy != b else []
            fois = [f.get("p50") for f in foi if f.count]
            util = [s.get("resource_utilization", {}) for s, _ in runs]
            med = {r: statistics.median(u.get(r) or 0 for u in util) for r in ("cores", "mem", "disk", "net")}

            def values(key: str, runs: list[tuple[dict[str, Any], Any]] = runs) -> list[float]:
                return [float(v) for s, _ in runs if (v := metric(s, key)) is not None]

            finished = sum(s["finished"] for s, _ in runs)
            jobs = sum(s["jobs"] for s, _ in runs)
            walls = [w for s, _ in runs if (w := sim_wall(s)) is not None]
            lines.append(
                f"| {policy} | {finished}/{jobs} "
                f"| {spread(values('makespan'), '{:,.0f}')} | {ratios(runs, 'makespan')} "
                f"| {spread(values('mean_jct'), '{:,.1f}')} | {ratios(runs, 'mean_jct')} "
                f"| {spread(values('p50'), '{:,.1f}')} | {ratios(runs, 'p50')} "
                f"| {spread([float(x) for x in fois if x is not None]) if fois else '—'} "
                f"| {spread([float(s.get('fairness', {}).get('mean') or 0) for s, _ in runs])} "
                f"| {' / '.join(f'{100 * med[r]:.0f}%' for r in ('cores', 'mem', 'disk', 'net'))} "
                f"| {num(sum(walls), 1) if walls else 'n/a'} |"
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
    p.add_argument("--seeds", nargs="+", type=int, default=list(sweep.seeds), help="seeds of every cell")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--force", action="store_true", help="re-run cells whose results exist")
    from_sweep_flag(p, report_name or sweep.name)
    p.add_argument("--results", type=Path, default=RESULTS, help="where the report goes")
    p.add_argument("--runs", type=Path, default=RESULTS, help="where the runs go: RUNS/<name>/<cell>/")
    args = p.parse_args(argv)
    sweep.jobs, sweep.nodes, sweep.runs = args.jobs, args.nodes, args.runs
    policies = list(args.policies)
    if sweep.baseline not in policies:
        policies.insert(0, sweep.baseline)
    grid = [
        (w, ld, pol, s) for w in args.workloads for ld in args.loads for pol in policies for s in args.seeds
    ]
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
