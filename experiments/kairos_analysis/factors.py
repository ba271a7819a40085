"""Kairos as its testbed ran it: which factor moves Kairos / FIFO toward the thesis' 0.30 (p50) and 0.70
(p99), one factor at a time, then all together (issue: "Kairos as its testbed ran it").

    python -m aviary.experiments.kairos_analysis.factors [--seeds 1 2 3] [--published FILE]
        [--out experiments/results/kairos_real]

The simulator, the same cores as ``kairos_real.py`` (30 nodes x 4 slots, Q = 4, W = 50 s, trace seconds),
Table 4.1's categories drawn per seed (100 jobs, Poisson gaps of 60 s) and, with ``--published``, the job
sequence of the authors' workload file (``extra-files/workloads/generated_workload_kairos``, ~2 min each).
Each factor is an option of the cores (``docs/kairos.md``, "The testbed as the authors' code ran it"),
with its value from the authors' code or configuration; nothing is tuned. Writes ``DIR/factors.md``.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aviary.experiments.kairos_analysis.staged import (
    NODES,
    SLOTS,
    Q,
    SimJob,
    offered_load,
    pcts,
    published_jobs,
    simulate,
    workload,
)
from aviary.experiments.kairos_workload import JOB_OVERHEAD

THESIS_P50, THESIS_P99 = 241.0 / 808.0, 1452.0 / 2061.0  # Fig. 4.4a: 0.30, 0.70

SWAP = {"swap_margin": 0.5}  # ContainerManagerImpl.java:1574
CODE_GUARD = {"starvation": "code"}  # ContainerManagerImpl.java:1186-1222, 1459-1461, 1571-1594
NO_GUARD = {"starvation": "off"}
SHARE = {"suspended_share": 0.1, "launch_core": "on"}  # yarn-site.xml:55; CoresManagerImpl.java:39-42
AM = {"am_tasks": "on", "launch_core": "on"}  # ContainerManagerImpl.java:829; LeafQueue.java:1680


@dataclass(frozen=True)
class Factor:
    name: str
    source: str
    kairos: dict[str, Any] = field(default_factory=dict)
    fifo: str = "fifo"
    fifo_params: dict[str, Any] = field(default_factory=dict)
    overhead: float = 0.0
    spread: float = 0.0  # task durations +- this within a job (controls only)
    q: int = Q


def _all(guard: dict[str, Any]) -> dict[str, Any]:
    return {**SWAP, **guard, **SHARE, **AM}


FACTORS = (
    Factor("baseline: Alg. 2 + Alg. 3, Aviary's guard (text)", "thesis"),
    Factor("swap only if older by >= W / 2", "CMI:1574", SWAP),
    Factor("starvation guard as the code behaves", "CMI:1186-1222, 1571-1594", CODE_GUARD),
    Factor("no starvation guard", "Alg. 2 alone", NO_GUARD),
    Factor("suspended tasks keep 0.1 of a core (launching core)", "yarn-site.xml:55, CMI:1783-1790", SHARE),
    Factor(
        "application masters: a slot under FIFO, outside LAS under Kairos",
        "CMI:829, LeafQueue.java:1680",
        AM,
        "yarn-fifo",
        {"am_tasks": "on"},
    ),
    Factor(
        f"per-job overhead ({JOB_OVERHEAD:.0f} s) out of the tasks", "JOB_OVERHEAD", overhead=JOB_OVERHEAD
    ),
    Factor(
        "all together (the code's guard)",
        "all",
        _all(CODE_GUARD),
        "yarn-fifo",
        {"am_tasks": "on"},
        JOB_OVERHEAD,
    ),
    Factor(
        "control: all together, no guard",
        "all",
        _all(NO_GUARD),
        "yarn-fifo",
        {"am_tasks": "on"},
        JOB_OVERHEAD,
    ),
    Factor(
        "control: all together, Aviary's guard",
        "all",
        _all({"starvation": "text"}),
        "yarn-fifo",
        {"am_tasks": "on"},
        JOB_OVERHEAD,
    ),
    Factor(
        "control: all together + task durations +-90 % within a job",
        "WordCount tasks are unequal",
        _all(CODE_GUARD),
        "yarn-fifo",
        {"am_tasks": "on"},
        JOB_OVERHEAD,
        spread=0.9,
    ),
    Factor(
        "control: all together, Q = infinity (no central queue)",
        "mechanism of §4.5.3",
        _all(CODE_GUARD),
        "yarn-fifo",
        {"am_tasks": "on"},
        JOB_OVERHEAD,
        q=10_000,
    ),
)


@dataclass
class Cell:
    """One factor on one workload: FIFO and Kairos p50 / p99, the load, Kairos' central queue."""

    fifo: dict[str, float]
    kairos: dict[str, float]
    load: float
    busy: float  # share of the time Kairos' central queue is not empty
    backlog: float  # its time-average length (tasks)
    fifo_busy: float

    @property
    def p50(self) -> float:
        return self.kairos["p50"] / self.fifo["p50"]

    @property
    def p99(self) -> float:
        return self.kairos["p99"] / self.fifo["p99"]


def run_cell(factor: Factor, jobs: list[SimJob], mean_gap: float) -> Cell:
    """FIFO and Kairos on ``jobs`` (built with ``factor.overhead`` taken out), the overhead added back to
    every job's completion time (a constant delay at each job's start changes no schedule)."""
    o = factor.overhead
    f = simulate(jobs, factor.fifo, extra=factor.fifo_params)
    k = simulate(jobs, "kairos", q=factor.q, extra=factor.kairos)
    fp = pcts([x + o for x in f.jct])
    kp = pcts([x + o for x in k.jct])
    return Cell(fp, kp, offered_load(jobs, mean_gap), k.busy_queue, k.backlog, f.busy_queue)


def measure(seeds: Sequence[int], published: Path | None = None) -> dict[str, tuple[list[Cell], Cell | None]]:
    out: dict[str, tuple[list[Cell], Cell | None]] = {}
    for factor in FACTORS:
        cells = [
            run_cell(factor, workload(s, overhead=factor.overhead, spread=factor.spread), 60.0) for s in seeds
        ]
        pub = None
        if published is not None and not factor.spread:
            jobs, gap = published_jobs(published, overhead=factor.overhead)
            pub = run_cell(factor, jobs, gap)
        out[factor.name] = (cells, pub)
    return out


def _mm(xs: Sequence[float], fmt: str = "{:.2f}") -> str:
    return f"**{fmt.format(statistics.median(xs))}** [{fmt.format(min(xs))}, {fmt.format(max(xs))}]"


def report(seeds: Sequence[int], published: Path | None = None) -> str:
    res = measure(seeds, published)
    seed_list = ", ".join(map(str, seeds))
    lines = [
        f"# Kairos as its testbed ran it: one factor at a time ({NODES} x {SLOTS}, Q = 4, W = 50 s)",
        "",
        "Regenerate: `python -m aviary.experiments.kairos_analysis.factors --published "
        "../shared/anchors/kairos-yarn/extra-files/workloads/generated_workload_kairos` (simulator only). "
        f"Table 4.1 categories, 100 jobs, Poisson gaps of 60 s, seeds {seed_list}: median [min, max] of the "
        "within-seed ratios; the published sequence is one run. Thesis (Fig. 4.4a): Kairos / FIFO "
        f"{THESIS_P50:.2f} at p50, {THESIS_P99:.2f} at p99. Load: offered task-seconds over 120 slots x "
        "the span of arrivals; queue: share of the time Kairos' central queue is not empty (FIFO's in "
        "brackets) and its mean length. Options and their sources: `docs/kairos.md`.",
        "",
        "| factor | source | p50 Kairos / FIFO | p99 Kairos / FIFO | FIFO p50, p99 (s) | Kairos p50, p99 (s) "
        "| load | Kairos queue busy (FIFO) | mean queue | published: p50, p99 ratio | published load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for factor in FACTORS:
        cells, pub = res[factor.name]
        med = statistics.median
        pubs = f"{pub.p50:.2f}, {pub.p99:.2f}" if pub else "-"
        pub_load = f"{pub.load:.2f}" if pub else "-"
        lines.append(
            f"| {factor.name} | {factor.source} | {_mm([c.p50 for c in cells])} | "
            f"{_mm([c.p99 for c in cells])} | "
            f"{med([c.fifo['p50'] for c in cells]):.0f}, {med([c.fifo['p99'] for c in cells]):.0f} | "
            f"{med([c.kairos['p50'] for c in cells]):.0f}, {med([c.kairos['p99'] for c in cells]):.0f} | "
            f"{_mm([c.load for c in cells])} | {med([c.busy for c in cells]):.0%} "
            f"({med([c.fifo_busy for c in cells]):.0%}) | {med([c.backlog for c in cells]):.0f} | "
            f"{pubs} | {pub_load} |"
        )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("experiments/results/kairos_real"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--published", type=Path, help="the authors' workload file (generated_workload_kairos)")
    args = ap.parse_args(argv)
    text = report(args.seeds, args.published)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "factors.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
