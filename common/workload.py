"""Scaled replay workloads from trace jobs (DESIGN §4).

:func:`build_workload` follows the thesis' 100-node experiments: "we scale down task duration by 1000x
... We also scale down the number of tasks per job by keeping constant the ratio between the cluster
size and the largest number of tasks in a job. When we scale down the number of tasks in a job, we
compensate by proportionally increasing the duration of the remaining tasks in order to keep the same
task-seconds". The steps, in order:

1. **Sample** K jobs: ``"consecutive"`` takes K jobs in a row from ``start`` (default: a seeded random
   start), ``"random"`` a seeded random subset kept in trace order.
2. **Classify** each job by its *original* trace mean task duration: ``long = mean >= cutoff``
   (trace seconds, before any scaling or task merging), so classes match the trace's reference.
3. **Merge tasks**: with factor ``f`` (``task_scale``, or ``nodes*slots/reference_nodes``), a job of
   ``n`` tasks keeps ``m = min(n, max(1, round(n*f)))`` tasks. The original tasks, in trace order, are
   split into ``m`` contiguous groups as even as possible (group ``i`` holds tasks
   ``[i*n//m, (i+1)*n//m)``) and each new task runs for the *sum* of its group's durations. Each job's
   task-seconds are thus kept exactly (up to float rounding; exactly for integer durations), while
   the longer tasks keep the trace's spread of durations instead of all becoming the mean.
4. **Time scale**: every duration is divided by ``time_scale`` (1000: trace seconds -> milliseconds).
5. **Estimate**: the job's trace mean task duration divided by ``time_scale`` (not the mean of the
   merged tasks: merging makes a job's tasks fewer and longer, it does not make the job long; with
   merged estimates a job of many short tasks would be scheduled as long, against the thesis' §2.4.10
   split of jobs between the distributed and the central scheduler), optionally multiplied by a seeded
   uniform factor in ``[lo, hi]`` per job (mis-estimation, thesis §2.4.8).
6. **Arrivals**: either the trace's submit times shifted so the first sampled job is at 0 and divided
   by ``time_scale``, or Poisson arrivals at offered load ``rho``: exponential gaps of mean
   ``(mean task-seconds per sampled job, after scaling) / (rho * nodes * slots)``, first job at 0.

Job ids are 0..K-1 in submit order; ``JobSpec.line`` is the trace line; ``JobSpec.gang`` the trace's
``gang=1`` (an SWF job: its tasks, merged or not, start together where a policy honours gangs).
Randomness comes from ``random.Random(seed)``, split into independent streams for sampling, arrivals
and mis-estimation, so changing the load does not change which jobs are sampled or how they are
mis-estimated.
"""

from __future__ import annotations

import math
import os
import random
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, cast

from .model import GOOGLE_CUTOFF, JobSpec
from .trace import MAX_JOBS, MAX_TASKS, MAX_TIME, TraceError, TraceJob, iter_trace

__all__ = [
    "JobStream",
    "WorkloadError",
    "build_workload",
    "check_counts",
    "check_scaled",
    "merge_tasks",
    "poisson_single_task_jobs",
    "stream_workload",
    "task_count",
]


class WorkloadError(ValueError):
    """Impossible workload parameters; the message is one line."""


def task_count(n: int, factor: float) -> int:
    """Tasks a job of ``n`` tasks keeps at task-scale ``factor``: ``min(n, max(1, round(n*factor)))``."""
    return min(n, max(1, round(n * factor)))


def check_counts(jobs: int, tasks: int, *, at_least: bool = False) -> None:
    """Raise :class:`WorkloadError` (one line, naming the limit) if a workload of ``jobs`` jobs and
    ``tasks`` tasks in all (``at_least``: a lower bound of them) is above
    :data:`~aviary.common.trace.MAX_JOBS` or :data:`~aviary.common.trace.MAX_TASKS`: called before the
    jobs are built."""
    if jobs > MAX_JOBS:
        raise WorkloadError(f"jobs: {jobs:,} is above the limit of {MAX_JOBS:,} jobs a workload")
    if tasks > MAX_TASKS:
        raise WorkloadError(
            f"jobs: {jobs:,} jobs would have {'at least ' if at_least else ''}{tasks:,} tasks, above the "
            f"limit of {MAX_TASKS:,} tasks a workload (fewer jobs, or a smaller task scale)"
        )


def check_scaled(specs: Sequence[JobSpec]) -> None:
    """Raise :class:`WorkloadError` (one line, naming the job, its trace line and the limit) if a submit
    time or a task duration of the built replay, scaled and merged, is above
    :data:`~aviary.common.trace.MAX_TIME` (a tiny time scale or load)."""
    for spec in specs:
        longest = max(spec.durations, default=0.0)
        for what, value in (("submit time", spec.submit), ("task duration", longest)):
            if not value <= MAX_TIME:
                raise WorkloadError(
                    f"job {spec.job_id} (line {spec.line}): a {what} of {value:g} s once scaled is above "
                    f"the limit of {MAX_TIME:g} s (a larger time scale, load or task scale)"
                )


def merge_tasks(durations: Sequence[float], m: int) -> list[float]:
    """Split ``durations`` into ``m`` contiguous, near-equal groups; return each group's sum.

    Group ``i`` holds indices ``[i*n//m, (i+1)*n//m)``; the total is preserved (sums use ``math.fsum``).
    """
    n = len(durations)
    if not 1 <= m <= n:
        raise WorkloadError(f"cannot merge {n} tasks into {m}")
    if m == n:
        return list(durations)
    return [math.fsum(durations[i * n // m : (i + 1) * n // m]) for i in range(m)]


def _sample(
    trace_jobs: Sequence[TraceJob], jobs: int | None, sample: str, start: int | None, rng: random.Random
) -> list[TraceJob]:
    total = len(trace_jobs)
    if total == 0:
        raise WorkloadError("the trace has no jobs")
    if sample not in ("consecutive", "random"):
        raise WorkloadError(f"sample must be 'consecutive' or 'random', got {sample!r}")
    if start is not None and not 0 <= start < total:
        raise WorkloadError(f"start {start} is outside the trace (0..{total - 1})")
    if jobs is None:
        jobs = total - (start or 0)
    if jobs < 1:
        raise WorkloadError(f"jobs must be at least 1, got {jobs}")
    if jobs > total:
        raise WorkloadError(f"asked for {jobs} jobs but the trace has only {total}")
    if sample == "random":
        if start is not None:
            raise WorkloadError("start applies only to sample='consecutive'")
        return [trace_jobs[i] for i in sorted(rng.sample(range(total), jobs))]
    if start is None:
        start = rng.randrange(total - jobs + 1)
    elif start + jobs > total:
        raise WorkloadError(f"{jobs} jobs from start {start} run past the end of the trace ({total} jobs)")
    return list(trace_jobs[start : start + jobs])


def _check_parameters(
    time_scale: float,
    nodes: int,
    slots: int,
    reference_nodes: int,
    task_scale: float | None,
    keep_arrivals: bool,
    load: float | None,
    misestimate: tuple[float, float] | None,
    cutoff: float,
) -> None:
    """:func:`build_workload`'s and :func:`stream_workload`'s checks of their parameters (one-line
    :class:`WorkloadError`)."""
    if not (time_scale > 0 and math.isfinite(time_scale)):
        raise WorkloadError(f"time_scale must be a positive number, got {time_scale}")
    if nodes < 1 or slots < 1:
        raise WorkloadError(f"nodes and slots must be at least 1, got nodes={nodes} slots={slots}")
    if reference_nodes < 1:
        raise WorkloadError(f"reference_nodes must be at least 1, got {reference_nodes}")
    if task_scale is not None and not (task_scale > 0 and math.isfinite(task_scale)):
        raise WorkloadError(f"task_scale must be a positive number, got {task_scale}")
    if keep_arrivals and load is not None:
        raise WorkloadError("choose either load (Poisson arrivals) or keep_arrivals, not both")
    if not keep_arrivals:
        if load is None:
            raise WorkloadError("choose an arrival process: load=RHO (Poisson) or keep_arrivals=True")
        if not (load > 0 and math.isfinite(load)):
            raise WorkloadError(f"load must be a positive number, got {load}")
    if misestimate is not None:
        lo, hi = misestimate
        if not (0 < lo <= hi and math.isfinite(hi)):
            raise WorkloadError(f"misestimate range must satisfy 0 < lo <= hi, got [{lo}, {hi}]")
    if not (cutoff >= 0 and math.isfinite(cutoff)):
        raise WorkloadError(f"cutoff must be a non-negative number, got {cutoff}")


def build_workload(
    trace_jobs: Sequence[TraceJob],
    *,
    jobs: int | None = None,
    sample: Literal["consecutive", "random"] = "consecutive",
    start: int | None = None,
    seed: int = 0,
    time_scale: float = 1.0,
    task_scale: float | None = None,
    scale_tasks: bool = True,
    nodes: int = 1,
    slots: int = 1,
    reference_nodes: int = 10000,
    load: float | None = None,
    keep_arrivals: bool = False,
    cutoff: float = GOOGLE_CUTOFF,
    misestimate: tuple[float, float] | None = None,
) -> list[JobSpec]:
    """Turn trace jobs (sorted by submit, as :func:`~aviary.common.trace.read_trace` returns them) into
    a scaled replay (see the module docstring for each step).

    ``jobs=None`` takes every job (from ``start``, if given). Task merging uses ``task_scale`` when
    given, else ``nodes*slots/reference_nodes`` when ``scale_tasks``, else no merging. Exactly one of
    ``load`` (Poisson arrivals at that offered load) and ``keep_arrivals`` must be chosen.
    Raises :class:`WorkloadError` on impossible parameters.
    """
    _check_parameters(
        time_scale, nodes, slots, reference_nodes, task_scale, keep_arrivals, load, misestimate, cutoff
    )

    root = random.Random(seed)
    sample_rng, arrival_rng, estimate_rng = (random.Random(root.getrandbits(64)) for _ in range(3))
    chosen = _sample(trace_jobs, jobs, sample, start, sample_rng)
    chosen.sort(key=lambda tj: tj.submit)  # a no-op for read_trace's output; ids follow submit order

    if task_scale is not None:
        factor = task_scale
    elif scale_tasks:
        factor = nodes * slots / reference_nodes
    else:
        factor = 1.0

    check_counts(len(chosen), sum(task_count(tj.tasks, factor) for tj in chosen))
    durations_per_job: list[list[float]] = []
    for tj in chosen:
        merged = merge_tasks(tj.durations, task_count(tj.tasks, factor))
        durations_per_job.append([d / time_scale for d in merged] if time_scale != 1.0 else merged)

    if keep_arrivals:
        first = chosen[0].submit
        submits = [(tj.submit - first) / time_scale for tj in chosen]
    else:
        assert load is not None
        mean_work = math.fsum(math.fsum(ds) for ds in durations_per_job) / len(chosen)
        mean_gap = mean_work / (load * nodes * slots)
        submits = [0.0]
        for _ in range(len(chosen) - 1):
            gap = arrival_rng.expovariate(1.0 / mean_gap) if mean_gap > 0 else 0.0
            submits.append(submits[-1] + gap)

    specs: list[JobSpec] = []
    named: dict[str, int] = {}  # a job's source id (job=) -> its id here, for the after= of later jobs
    for job_id, (tj, durations, submit) in enumerate(zip(chosen, durations_per_job, submits, strict=True)):
        estimate = math.fsum(d / time_scale for d in tj.durations) / tj.tasks  # step 5
        if misestimate is not None:
            estimate *= estimate_rng.uniform(*misestimate)
        specs.append(
            JobSpec(
                job_id=job_id,
                submit=submit,
                durations=durations,
                estimate=estimate,
                long=tj.mean >= cutoff,
                line=tj.line,
                gang=tj.gang,
                after=tuple(named[n] for n in tj.after if n in named),
            )
        )
        if tj.name is not None:
            named[tj.name] = job_id
    check_scaled(specs)
    return specs


def poisson_single_task_jobs(
    n: int, load: float, mean_duration: float, seed: int, slots: int = 1
) -> list[JobSpec]:
    """``n`` single-task jobs with exponential durations and Poisson arrivals (an M/M/c workload).

    Arrival rate ``load * slots / mean_duration`` for ``slots`` servers in all, so the offered load is
    ``load``; the first job arrives at 0; each estimate is the task's own duration; all jobs are short.
    """
    if n < 1:
        raise WorkloadError(f"n must be at least 1, got {n}")
    check_counts(n, n)
    if not (load > 0 and math.isfinite(load)):
        raise WorkloadError(f"load must be a positive number, got {load}")
    if not (mean_duration > 0 and math.isfinite(mean_duration)):
        raise WorkloadError(f"mean_duration must be a positive number, got {mean_duration}")
    if slots < 1:
        raise WorkloadError(f"slots must be at least 1, got {slots}")
    rng = random.Random(seed)
    rate = load * slots / mean_duration
    specs: list[JobSpec] = []
    t = 0.0
    for job_id in range(n):
        if job_id:
            t += rng.expovariate(rate)
        d = rng.expovariate(1.0 / mean_duration)
        specs.append(JobSpec(job_id=job_id, submit=t, durations=[d], estimate=d, long=False))
    check_scaled(specs)
    return specs


@dataclass(frozen=True)
class JobStream:
    """A replay's jobs as a stream (issue 49): what :func:`build_workload` would build, made one job at a
    time as the replay pulls them (each iteration reads the trace file again), with what a replay needs
    to know before it starts."""

    count: int
    """How many jobs it yields."""
    tasks: int
    """Their tasks in all (after merging)."""
    work: float
    """Their task-seconds in all (``math.fsum`` of each job's ``math.fsum`` of durations, scaled), as a
    replay of the list computes it."""
    last_submit: float
    """The last job's submit time (replay seconds)."""
    make: Callable[[], Iterator[JobSpec]]
    longest: float = 0.0
    """The longest task (replay seconds, after merging)."""

    def __iter__(self) -> Iterator[JobSpec]:
        return self.make()

    def __len__(self) -> int:
        return self.count


def stream_workload(
    path: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    sample: Literal["consecutive", "random"] = "consecutive",
    start: int | None = None,
    seed: int = 0,
    time_scale: float = 1.0,
    task_scale: float | None = None,
    scale_tasks: bool = True,
    nodes: int = 1,
    slots: int = 1,
    reference_nodes: int = 10000,
    load: float | None = None,
    keep_arrivals: bool = False,
    cutoff: float = GOOGLE_CUTOFF,
    misestimate: tuple[float, float] | None = None,
) -> JobStream:
    """:func:`build_workload` of the trace file at ``path`` (the same arguments, the same jobs, bit for
    bit) as a :class:`JobStream`: jobs made as they are pulled, so that a trace of a whole month (25
    million tasks) is never held whole. One pass over the file first (what :func:`build_workload` needs
    before the first job: how many jobs there are, for the sample, and their task-seconds, for the
    Poisson arrivals; 32 bytes a job are kept for it); each iteration reads it again.

    The file must be in submit order (as :func:`~aviary.common.trace.read_trace` would sort it; a
    :class:`WorkloadError` names the first line out of order). Raises what :func:`build_workload` and
    :func:`~aviary.common.trace.read_trace` raise, but :data:`~aviary.common.trace.MAX_TASKS` applies to
    the replay's tasks, not to the file's."""
    _check_parameters(
        time_scale, nodes, slots, reference_nodes, task_scale, keep_arrivals, load, misestimate, cutoff
    )
    if task_scale is not None:
        factor = task_scale
    elif scale_tasks:
        factor = nodes * slots / reference_nodes
    else:
        factor = 1.0
    name = os.fspath(path)

    def scaled(tj: TraceJob) -> list[float]:
        merged = merge_tasks(tj.durations, task_count(tj.tasks, factor))
        return [d / time_scale for d in merged] if time_scale != 1.0 else merged

    # The one pass: per job of the file, its tasks, task-seconds, longest task (merged and scaled),
    # submit time and line.
    counts = array("q")
    sums = array("d")
    longest = array("d")
    submits = array("d")
    lines = array("q")
    previous = -math.inf
    for tj in iter_trace(name):
        if len(counts) == MAX_JOBS:
            raise TraceError(
                f"{name}:{tj.line}: field 'submit_time': more than the limit of {MAX_JOBS:,} jobs"
            )
        if tj.submit < previous:
            raise WorkloadError(
                f"{name}:{tj.line}: a streamed replay needs the trace in submit order "
                f"(submit time {tj.submit:g} after {previous:g}; sort it, or replay it whole)"
            )
        previous = tj.submit
        ds = scaled(tj)
        counts.append(len(ds))
        sums.append(math.fsum(ds))
        longest.append(max(ds, default=0.0))
        submits.append(tj.submit)
        lines.append(tj.line)

    root = random.Random(seed)
    sample_rng, arrival_rng, estimate_rng = (random.Random(root.getrandbits(64)) for _ in range(3))
    # _sample of the jobs' indices (a range reads as a sequence of them): the same draws, the same errors
    picked = cast(
        list[int], _sample(cast(Sequence[TraceJob], range(len(counts))), jobs, sample, start, sample_rng)
    )
    chosen: Sequence[int] = picked
    if sample == "consecutive":
        chosen = range(picked[0], picked[0] + len(picked))  # no list of indices kept
    del picked
    tasks = sum(counts[i] for i in chosen)
    check_counts(len(chosen), tasks)
    work = math.fsum(sums[i] for i in chosen)
    first = submits[chosen[0]]
    mean_gap = work / len(chosen) / (load * nodes * slots) if load is not None else 0.0
    arrivals = random.Random()
    arrivals.setstate(arrival_rng.getstate())

    def arrival_times() -> Iterator[float]:
        """The jobs' submit times, in order (the arrivals' own stream of draws, each time from its start)."""
        rng = random.Random()
        rng.setstate(arrivals.getstate())
        t = 0.0
        for k, i in enumerate(chosen):
            if keep_arrivals:
                yield (submits[i] - first) / time_scale
            else:
                if k:
                    t += rng.expovariate(1.0 / mean_gap) if mean_gap > 0 else 0.0
                yield t

    last = 0.0
    for i, submit in zip(chosen, arrival_times(), strict=True):  # check_scaled, before any job is made
        for what, value in (("submit time", submit), ("task duration", longest[i])):
            if not value <= MAX_TIME:
                raise WorkloadError(
                    f"job {chosen.index(i)} (line {lines[i]}): a {what} of {value:g} s once scaled is "
                    f"above the limit of {MAX_TIME:g} s (a larger time scale, load or task scale)"
                )
        last = submit
    estimates = random.Random()
    estimates.setstate(estimate_rng.getstate())

    def make() -> Iterator[JobSpec]:
        picks = iter(chosen)
        times = arrival_times()
        rng = random.Random()
        rng.setstate(estimates.getstate())
        want = next(picks, None)
        job_id = 0
        for index, tj in enumerate(iter_trace(name)):
            if index != want:
                continue
            estimate = math.fsum(d / time_scale for d in tj.durations) / tj.tasks
            if misestimate is not None:
                estimate *= rng.uniform(*misestimate)
            yield JobSpec(
                job_id=job_id,
                submit=next(times),
                durations=scaled(tj),
                estimate=estimate,
                long=tj.mean >= cutoff,
                line=tj.line,
                gang=tj.gang,
            )
            job_id += 1
            want = next(picks, None)
            if want is None:
                return

    return JobStream(len(chosen), tasks, work, last, make, max((longest[i] for i in chosen), default=0.0))
