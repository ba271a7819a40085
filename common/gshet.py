"""A GS_HET-like workload for TetriSched's evaluation (Tumanov et al., EuroSys'16 §6.2, Table 1; spec
§1.12 [D] recipe) and the node attributes of its cluster.

:func:`gshet_jobs` draws ``count`` gang jobs of one stage each, every task one *slot*
(``Resources(cores=1)``: a cluster of one-core nodes is the paper's one-container-per-node RC80):

- **Mix**: a job is SLO with probability ``slo_share`` (0.75), else best effort (BE). An SLO job is a
  GPU job (``preference="gpu"``) with probability ``gpu_share`` (0.5), else an MPI job
  (``preference="rack"``: all its tasks in one rack). BE jobs are unconstrained (no preference).
- **Sizes**: SLO jobs k ~ U{2..10} tasks of one preferred duration d ~ U[20, 120] s; BE jobs
  k ~ U{1..4}, d ~ U[10, 60] s. Every task of a job runs d (``durations = [d] * k``); ``gang=True``;
  jobs with a preference get ``slowdown`` (1.5: the runtime when the preference is unmet is d x 1.5,
  applied by the central layer, :func:`~aviary.common.model.placement_slowdown`).
- **Deadlines** (SLO only): ``deadline = d * (1 + U[0.5, 2.0])`` **seconds after the job's submit**,
  the meaning of :attr:`JobSpec.deadline <aviary.common.model.JobSpec>` (the central cores compare
  ``arrival + deadline``), i.e. an absolute deadline of arrival + d (1 + U[0.5, 2.0]) as the recipe says.
- **Estimates**: the scheduler-visible estimate is d (exact), or d x a seeded factor per job drawn
  uniformly in ``misestimate = (lo, hi)`` (spec §1.13: the paper's axis is one global error X, i.e.
  ``lo = hi = 1 + X``). Durations stay true.
- **Arrivals**: Poisson at offered ``load`` in preferred-runtime slot-seconds: exponential gaps of mean
  ``(mean k x d of the drawn jobs) / (load x nodes x slots)``, the first job at 0 (as
  :func:`~aviary.common.workload.build_workload` does); ``load=None``: every job at 0 (a batch).
- **SLO class** (:data:`~aviary.common.model.SLO_CLASSES`): which SLO jobs hold a reservation is the
  workload's business (both the TetriSched and the Rayon/CS policies read ``JobSpec.slo``), decided here
  by the admission shared by all stacks (spec §1.11 step 1 [D]): jobs in submit order, a scalar
  capacity plan of ``nodes x slots`` slots on quanta of ``quantum`` seconds, each SLO job booked at the
  *latest* start s in [submit, submit + deadline - estimate] where k more slots fit for
  ceil(estimate / quantum) quanta (the estimate, so mis-estimates change admission). Booked:
  ``slo="accepted"``, else ``"noreserve"``; BE jobs ``slo="be"``. ``admission="all"`` accepts every
  SLO job, ``"none"`` none (all ``"noreserve"``).
- **Time scale**: durations, deadlines, gaps and the quantum are divided by ``time_scale``.

Randomness: ``random.Random(seed)`` split into independent streams for the jobs, the arrivals and the
mis-estimates, so changing the load does not change the jobs, nor a mis-estimate their durations. Job
ids are 0..count-1 in submit order; every job is reported as class ``short`` (``long=False``).

:func:`gshet_attributes` labels the nodes: racks of ``rack_size`` (10) consecutive nodes named
``r0, r1, ...`` (the last rack holds the remainder when ``nodes`` is not a multiple), the first
``max(1, round(racks x gpu_racks))`` racks (a quarter: racks 0-1 of the 8 of 80 nodes; Python's
``round``, half to even; ``gpu_racks=0``: none) ``gpu: true``, every other node ``gpu: false``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Literal

from .model import JobSpec, Stage
from .reservations import CapacityPlan
from .resources import Resources
from .workload import WorkloadError

__all__ = [
    "ADMISSIONS",
    "GSHET_QUANTUM",
    "SLOT",
    "gshet_attributes",
    "gshet_jobs",
    "rayon_admission",
]

SLOT = Resources(cores=1.0)
"""Every task's demand: one slot (a node of ``slots`` slots has ``slots`` cores)."""

GSHET_QUANTUM = 4.0
"""Admission quantum in trace seconds: TetriSched's cycle and quantum (spec §1.5, §1.13)."""

ADMISSIONS = ("rayon", "all", "none")

Admission = Literal["rayon", "all", "none"]


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not (
        isinstance(value, (int, float)) and value > 0 and math.isfinite(value)
    ):
        raise WorkloadError(f"{name} must be a positive number, got {value!r}")


def _share(name: str, value: float) -> None:
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise WorkloadError(f"{name} must be a share in [0, 1], got {value!r}")


def _int_range(name: str, value: Sequence[int], low: int = 1) -> tuple[int, int]:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise WorkloadError(f"{name} must be a pair (lo, hi), got {value!r}") from None
    if not (isinstance(lo, int) and isinstance(hi, int)) or isinstance(lo, bool) or isinstance(hi, bool):
        raise WorkloadError(f"{name} must be whole numbers, got {value!r}")
    if not low <= lo <= hi:
        raise WorkloadError(f"{name} must satisfy {low} <= lo <= hi, got [{lo}, {hi}]")
    return lo, hi


def _float_range(name: str, value: Sequence[float], *, positive: bool = True) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in value)
    except (TypeError, ValueError):
        raise WorkloadError(f"{name} must be a pair of numbers (lo, hi), got {value!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and (lo > 0 if positive else lo >= 0) and lo <= hi):
        bound = "0 < lo" if positive else "0 <= lo"
        raise WorkloadError(f"{name} must satisfy {bound} <= hi (finite), got [{lo:g}, {hi:g}]")
    return lo, hi


def gshet_attributes(
    nodes: int = 80, *, rack_size: int = 10, gpu_racks: float = 0.25
) -> list[dict[str, Any]]:
    """Per node (in node order): ``{"rack": "r<i>", "gpu": bool}`` (module docstring: racks of
    ``rack_size`` consecutive nodes, the first ``max(1, round(racks * gpu_racks))`` racks GPU-labelled).
    Raises :class:`WorkloadError` (one line) on impossible parameters."""
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise WorkloadError(f"nodes must be a whole number >= 1, got {nodes!r}")
    if isinstance(rack_size, bool) or not isinstance(rack_size, int) or rack_size < 1:
        raise WorkloadError(f"rack_size must be a whole number >= 1, got {rack_size!r}")
    _share("gpu_racks", gpu_racks)
    racks = -(-nodes // rack_size)
    gpu = max(1, round(racks * gpu_racks)) if gpu_racks > 0 else 0
    return [{"rack": f"r{i // rack_size}", "gpu": i // rack_size < gpu} for i in range(nodes)]


def rayon_admission(jobs: Sequence[JobSpec], capacity: int, quantum: float) -> list[bool]:
    """Whether each SLO job of ``jobs`` (in submit order; others: False) gets a reservation (module
    docstring; spec §1.11 step 1): the latest quantum start in [submit, submit + deadline - estimate]
    where the job's k slots fit ``capacity`` for ceil(estimate / quantum) quanta; booked if found."""
    plan = CapacityPlan(capacity, quantum)
    return [
        job.slo in ("accepted", "noreserve")
        and job.deadline is not None
        and plan.book_latest(job.submit, job.submit + job.deadline, job.estimate, job.tasks) is not None
        for job in jobs
    ]


def gshet_jobs(
    seed: int,
    count: int,
    *,
    slo_share: float = 0.75,
    gpu_share: float = 0.5,
    load: float | None = 1.0,
    nodes: int = 80,
    slots: int = 1,
    slo_tasks: tuple[int, int] = (2, 10),
    slo_duration: tuple[float, float] = (20.0, 120.0),
    slack: tuple[float, float] = (0.5, 2.0),
    be_tasks: tuple[int, int] = (1, 4),
    be_duration: tuple[float, float] = (10.0, 60.0),
    slowdown: float = 1.5,
    misestimate: tuple[float, float] | None = None,
    admission: Admission = "rayon",
    quantum: float = GSHET_QUANTUM,
    time_scale: float = 1.0,
) -> list[JobSpec]:
    """``count`` GS_HET-like jobs (module docstring), ``seed`` for every random choice. Sizes are
    inclusive task-count ranges and uniform duration ranges in trace seconds; ``slack`` is the range
    of U in ``deadline = d (1 + U)``; ``quantum`` (trace seconds) is the admission plan's.
    Raises :class:`WorkloadError` (one line) on impossible parameters."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise WorkloadError(f"seed must be a whole number, got {seed!r}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise WorkloadError(f"count must be a whole number >= 1, got {count!r}")
    _share("slo_share", slo_share)
    _share("gpu_share", gpu_share)
    if load is not None:
        _positive("load", load)
    for name, value in (("nodes", nodes), ("slots", slots)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise WorkloadError(f"{name} must be a whole number >= 1, got {value!r}")
    slo_k = _int_range("slo_tasks", slo_tasks)
    be_k = _int_range("be_tasks", be_tasks)
    slo_d = _float_range("slo_duration", slo_duration)
    be_d = _float_range("be_duration", be_duration)
    slack_u = _float_range("slack", slack, positive=False)
    if isinstance(slowdown, bool) or not (isinstance(slowdown, (int, float)) and 1.0 <= slowdown < math.inf):
        raise WorkloadError(f"slowdown must be a number >= 1, got {slowdown!r}")
    if misestimate is not None:
        misestimate = _float_range("misestimate", misestimate)
    if admission not in ADMISSIONS:
        raise WorkloadError(f"admission must be one of {', '.join(ADMISSIONS)}, got {admission!r}")
    _positive("quantum", quantum)
    _positive("time_scale", time_scale)
    capacity = nodes * slots
    widest = max(slo_k[1] if slo_share > 0 else 0, be_k[1] if slo_share < 1 else 0)
    if widest > capacity:
        raise WorkloadError(
            f"jobs of up to {widest} tasks cannot run as gangs on a cluster of {capacity} slots"
        )

    root = random.Random(seed)
    job_rng, arrival_rng, estimate_rng = (random.Random(root.getrandbits(64)) for _ in range(3))
    drawn: list[tuple[int, float, float | None, str | None]] = []  # k, d, deadline, preference
    for _ in range(count):
        if job_rng.random() < slo_share:
            kind = "gpu" if job_rng.random() < gpu_share else "rack"
            k = job_rng.randint(*slo_k)
            d = job_rng.uniform(*slo_d) / time_scale
            drawn.append((k, d, d * (1.0 + job_rng.uniform(*slack_u)), kind))
        else:
            k = job_rng.randint(*be_k)
            drawn.append((k, job_rng.uniform(*be_d) / time_scale, None, None))

    submits = [0.0] * count
    if load is not None:
        mean_gap = math.fsum(k * d for k, d, _, _ in drawn) / count / (load * capacity)
        for i in range(1, count):
            submits[i] = submits[i - 1] + arrival_rng.expovariate(1.0 / mean_gap)

    jobs: list[JobSpec] = []
    for job_id, ((k, d, deadline, preference), submit) in enumerate(zip(drawn, submits, strict=True)):
        estimate = d * estimate_rng.uniform(*misestimate) if misestimate is not None else d
        slo = "be" if deadline is None else ("noreserve" if admission == "none" else "accepted")
        jobs.append(
            JobSpec(
                job_id=job_id,
                submit=submit,
                durations=[d] * k,
                estimate=estimate,
                long=False,
                stages=[Stage(k, estimate, SLOT)],
                deadline=deadline,
                slo=slo,
                gang=True,
                preference=preference,
                slowdown=float(slowdown) if preference is not None else 1.0,
            )
        )
    if admission == "rayon":
        for job, booked in zip(jobs, rayon_admission(jobs, capacity, quantum / time_scale), strict=True):
            if job.slo == "accepted" and not booked:
                job.slo = "noreserve"
    return jobs
