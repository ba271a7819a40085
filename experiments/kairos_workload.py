"""The heavy-tailed workload of the Kairos testbed evaluation (thesis §4.5.2, Table 4.1).

Five categories of Hadoop WordCount jobs; the thesis gives, per category, the numbers of map and
reduce tasks, the job's makespan when it runs alone on the 120-core testbed, and its probability:

    category        maps  reduces  alone (s)  probability
    1 small           15       15        85         0.32
    2 medium small    15       15       201         0.31
    3 medium          30       30       239         0.31
    4 medium long    112       60       308         0.04
    5 long           224       60      1175         0.02

Aviary's jobs are bags of independent tasks (no map -> reduce barrier), so a job of category c becomes
``maps + reduces`` tasks of one duration ``d = alone / (ceil(maps / 120) + ceil(reduces / 120))``: the
job's map waves and reduce wave on 120 slots, each wave as long as a task. This keeps each job's
task-seconds as in the thesis' testbed (the offered load of 100 jobs with Poisson arrivals of mean 60
s is then ~0.95 of 120 slots, matching "the resulting workload takes roughly 2 hours to run"); a job
alone on 120 slots then takes ``ceil(tasks / 120) * d`` (42.5, 100.5, 119.5, 308 and 1175 s): that is
the reference of its slowdown.

:func:`table41_jobs` draws jobs (seeded), :func:`write_trace` writes them in the Hawk/Eagle trace
format so that ``aviary replay FILE --keep-arrivals --task-scale 1 --time-scale S`` replays them,
and :func:`categories_of` recovers each job's category from a trace it wrote.

Variants for the analysis of why our numbers differ from the thesis (``experiments/kairos_analysis/``):
``table41_jobs(..., arrivals="uniform")`` draws gaps uniformly in ``[0.7, 1.3] x mean_gap`` (the
workload file published with the thesis' YARN code has gaps of 43-79 s, not exponential ones), and
:func:`job_stages` splits a job into a map stage and a reduce stage that starts only when every map has
finished (the published runs set ``mapreduce.job.reduce.slowstart.completedmaps=1``), and/or spreads
the durations of a job's tasks around their mean (same task-seconds).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "CATEGORIES",
    "JOB_OVERHEAD",
    "LONG_CUTOFF",
    "Category",
    "GeneratedJob",
    "alone_time",
    "categories_of",
    "job_stages",
    "table41_jobs",
    "task_duration",
    "write_trace",
]

TESTBED_SLOTS = 120
"""30 nodes x 4 cores: the thesis testbed the Table 4.1 makespans were measured on."""


@dataclass(frozen=True, slots=True)
class Category:
    number: int
    name: str
    maps: int
    reduces: int
    alone: float  # makespan alone on the 120-core testbed (s), Table 4.1
    probability: float

    @property
    def tasks(self) -> int:
        return self.maps + self.reduces

    @property
    def waves(self) -> int:
        return math.ceil(self.maps / TESTBED_SLOTS) + math.ceil(self.reduces / TESTBED_SLOTS)

    @property
    def task_duration(self) -> float:
        return self.alone / self.waves


CATEGORIES: tuple[Category, ...] = (
    Category(1, "small", 15, 15, 85.0, 0.32),
    Category(2, "medium small", 15, 15, 201.0, 0.31),
    Category(3, "medium", 30, 30, 239.0, 0.31),
    Category(4, "medium long", 112, 60, 308.0, 0.04),
    Category(5, "long", 224, 60, 1175.0, 0.02),
)

LONG_CUTOFF = 150.0
"""Task duration (trace s) separating Big-C's "long" categories 4-5 from 1-3 (for reporting only)."""


@dataclass(frozen=True, slots=True)
class GeneratedJob:
    submit: float
    category: Category

    @property
    def durations(self) -> list[float]:
        return [self.category.task_duration] * self.category.tasks


def table41_jobs(
    n: int = 100,
    *,
    seed: int = 0,
    mean_gap: float = 60.0,
    uniform: bool = False,
    arrivals: Literal["poisson", "uniform"] = "poisson",
) -> list[GeneratedJob]:
    """``n`` jobs drawn from Table 4.1 with Poisson arrivals of mean ``mean_gap`` s (first at 0).

    ``uniform`` gives the thesis' "uniform" workload instead (categories 1-3 with 0.35/0.35/0.3).
    ``arrivals="uniform"`` draws each gap uniformly in ``[0.7, 1.3] x mean_gap`` instead of
    exponentially (same seed, same categories)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not mean_gap > 0:
        raise ValueError(f"mean_gap must be > 0, got {mean_gap}")
    if arrivals not in ("poisson", "uniform"):
        raise ValueError(f"arrivals must be 'poisson' or 'uniform', got {arrivals!r}")
    rng = random.Random(seed)
    cats: Sequence[Category] = CATEGORIES[:3] if uniform else CATEGORIES
    weights = [0.35, 0.35, 0.3] if uniform else [c.probability for c in CATEGORIES]
    jobs, t = [], 0.0
    for i in range(n):
        if i:
            t += (
                rng.expovariate(1.0 / mean_gap) if arrivals == "poisson" else mean_gap * rng.uniform(0.7, 1.3)
            )
        jobs.append(GeneratedJob(t, rng.choices(cats, weights)[0]))
    return jobs


JOB_OVERHEAD = 20.0
"""Seconds of a Table 4.1 makespan that are the job's own fixed cost, not its tasks' (``job_stages``'s
``overhead``): YARN's per-job start-up (the ApplicationMaster's container and JVM, the job's set-up, its
first task containers) and its end (commit). Not given by the thesis; the value is from measurements of
Hadoop MapReduce: 10 s from submission to the first map task and 25 s until every node runs the job on
100 nodes (Pavlo et al., SIGMOD 2009, §5.1.2), and ~18 of a 1-map Hive job's 23.8 s on YARN spent in
initialization and container allocation (an uberized-task example). 20 s is in that range; it is a
reconstruction, and docs/kairos.md says how the comparison moves with it."""


def task_duration(category: Category, overhead: float = 0.0) -> float:
    """A task's duration in our model: the category's makespan alone, less ``overhead``, per wave."""
    if not 0.0 <= overhead < category.alone:
        raise ValueError(f"overhead must be in [0, {category.alone}), got {overhead}")
    return (category.alone - overhead) / category.waves


def job_stages(
    job: GeneratedJob,
    *,
    barrier: bool = False,
    spread: float = 0.0,
    rng: random.Random | None = None,
    overhead: float = 0.0,
) -> list[list[float]]:
    """A job's task durations as stages: one bag of ``maps + reduces`` tasks, or with ``barrier`` a
    map stage and a reduce stage (to be submitted when the map stage is done).

    ``spread`` in ``[0, 1)`` multiplies each task's duration by ``1 + spread * U(-1, 1)`` (from ``rng``),
    then rescales the job's tasks so that their task-seconds stay ``tasks x task_duration``.
    ``overhead`` (s): the job's fixed cost taken out of its tasks (:data:`JOB_OVERHEAD`, 0: the model
    above, which puts it inside the tasks' time); the caller adds it to the job's completion time."""
    if not 0.0 <= spread < 1.0:
        raise ValueError(f"spread must be in [0, 1), got {spread}")
    c = job.category
    n, d = c.tasks, task_duration(c, overhead)
    ds = [d] * n
    if spread > 0:
        if rng is None:
            raise ValueError("spread > 0 needs an rng")
        f = [1.0 + spread * rng.uniform(-1.0, 1.0) for _ in range(n)]
        norm = n / math.fsum(f)
        ds = [d * x * norm for x in f]
    return [ds[: c.maps], ds[c.maps :]] if barrier else [ds]


def alone_time(durations: Sequence[float], slots: int) -> float:
    """A job's makespan alone on ``slots`` slots: waves of its (equal) tasks."""
    return math.ceil(len(durations) / slots) * max(durations)


def write_trace(jobs: Sequence[GeneratedJob], path: Path | str) -> Path:
    """Write ``jobs`` in the Hawk/Eagle format (``submit num_tasks mean d_1 .. d_n``), one per line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# Kairos Table 4.1 workload (aviary.experiments.kairos_workload); category in the comment"]
    for job in jobs:
        ds = job.durations
        lines.append(f"# category {job.category.number}")
        mean = math.fsum(ds) / len(ds)
        lines.append(f"{job.submit:.6f} {len(ds)} {mean:.6f} " + " ".join(f"{d:.6f}" for d in ds))
    path.write_text("\n".join(lines) + "\n")
    return path


def categories_of(path: Path | str) -> list[int]:
    """The category of each job of a trace written by :func:`write_trace`, in file order."""
    out = []
    for line in Path(path).read_text().splitlines():
        if line.startswith("# category "):
            out.append(int(line.split()[2]))
    return out
