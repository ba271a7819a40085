"""Results files of a replay (DESIGN §7): ``jobs.csv`` and ``summary.json``.

``jobs.csv`` has one row per job (``job_id,class,tasks,submit_replay_s,first_start_replay_s,finish_replay_s,
jct_replay_s,policy``); times are seconds on the replay clock (trace seconds divided by the replay's time
scale, ``summary.json``'s ``workload.time_scale``) written as ``%.6f``, and empty for a job that did not
start or finish. :func:`read_jobs` and :func:`jobs_rows` also read the header written before the units
were named (:data:`OLD_JOBS_HEADER`).
``summary.json`` holds the job completion time percentiles per class, ``makespan`` and ``mean_jct``
(replay seconds), utilization, message counts and counters, and, for runs that log their tasks' resource
demands, per-resource utilization and Jain's fairness index over windows (:mod:`aviary.common.usage`),
for workloads with SLO jobs ``slo_attainment`` and ``be_mean_latency`` (:func:`slo_metrics`), and, for a
replay, ``workload``: what was replayed, exactly (:mod:`aviary.launch.replay.provenance`). Both
files are written atomically (a temporary file renamed into place), ``jobs.csv`` first, so a folder
with a ``summary.json`` always has a complete ``jobs.csv``. Identical inputs give byte-identical files.

Percentiles use linear interpolation between closest ranks, numpy's default (``method="linear"``,
Hyndman & Fan type 7): for sorted values ``x[0..n-1]`` and ``q`` in [0, 1], ``h = (n-1)*q`` and the
percentile is ``x[floor(h)] + (h - floor(h)) * (x[floor(h)+1] - x[floor(h)])``.
"""

from __future__ import annotations

import contextlib
import csv
import heapq
import io
import json
import math
import os
import re
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .frontend import FrontendCore, JobTimes
from .journal import JOURNAL, JournalError, JournalRecords, read_journal
from .model import JobSpec
from .resources import RESOURCES, Resources
from .usage import (
    DEFAULT_FAIRNESS_WINDOW,
    TaskRecord,
    fairness_over_windows,
    utilization_by_resource,
    utilization_over_time,
)

__all__ = [
    "CLASSES",
    "JOBS_CSV",
    "JOBS_HEADER",
    "OLD_JOBS_HEADER",
    "SUMMARY_JSON",
    "JobRecord",
    "Metric",
    "ResultsError",
    "StreamedResults",
    "TaskRecord",
    "atomic_write",
    "family",
    "family_metrics",
    "format_summary_table",
    "jct_stats",
    "job_classes",
    "jobs_rows",
    "journal_records",
    "journal_summary",
    "partial_note",
    "percentile",
    "read_jobs",
    "read_summary",
    "rebuild_results",
    "slo_metrics",
    "summarize",
    "time_scale_of",
    "units_note",
    "write_results",
]

JOBS_CSV = "jobs.csv"
SUMMARY_JSON = "summary.json"
JOBS_HEADER = (
    "job_id",
    "class",
    "tasks",
    "submit_replay_s",
    "first_start_replay_s",
    "finish_replay_s",
    "jct_replay_s",
    "policy",
)
"""``jobs.csv``'s header: the times' unit is seconds of the replay clock."""
OLD_JOBS_HEADER = ("job_id", "class", "tasks", "submit", "first_start", "finish", "jct", "policy")
"""The header of ``jobs.csv`` files written before it named the unit (same columns, same unit)."""
CLASSES = ("short", "long", "all")
UNFINISHED_LISTED = 100
"""At most this many unfinished job ids are listed in the summary (``unfinished_count`` has them all)."""
SLO_TYPES = {"accepted": "accepted", "noreserve": "no_reservation"}
"""The SLO classes of :data:`~aviary.common.model.SLO_CLASSES` that have a deadline to meet, by their
name in ``slo_attainment``."""
DEADLINE_SLACK = 1e-6
"""A job meets its deadline when ``finish - submit <= deadline + DEADLINE_SLACK`` (seconds): the times of
``jobs.csv`` are rounded to the microsecond."""


class ResultsError(ValueError):
    """A results folder or file that cannot be read; the message is one line naming the file."""


@dataclass(slots=True)
class JobRecord:
    """What happened to one job, in seconds of the replay clock."""

    job_id: int
    cls: str
    """``"short"`` or ``"long"``, by the trace's reference cutoff."""
    tasks: int
    submit: float
    first_start: float | None = None
    finish: float | None = None
    policy: str = ""

    def __post_init__(self) -> None:
        if self.cls not in ("short", "long"):
            raise ValueError(f"job {self.job_id}: class must be 'short' or 'long', got {self.cls!r}")

    @property
    def jct(self) -> float | None:
        """Job completion time ``finish - submit``, or None if the job did not finish."""
        return None if self.finish is None else self.finish - self.submit


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (``q`` in [0, 1]) of already sorted values, by linear interpolation."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {q}")
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    if lo + 1 >= len(sorted_values):
        return float(sorted_values[-1])
    a, b = sorted_values[lo], sorted_values[lo + 1]
    return float(a + (h - lo) * (b - a))


def jct_stats(values: Iterable[float]) -> dict[str, float | int | None]:
    """``p50``/``p90``/``p99``/``mean``/``count`` of completion times (None when there are none)."""
    xs = sorted(values)
    if not xs:
        return {"p50": None, "p90": None, "p99": None, "mean": None, "count": 0}
    return {
        "p50": _r(percentile(xs, 0.50)),
        "p90": _r(percentile(xs, 0.90)),
        "p99": _r(percentile(xs, 0.99)),
        "mean": _r(math.fsum(xs) / len(xs)),
        "count": len(xs),
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _fmt(x: float | None) -> str:
    return "" if x is None else f"{x:.6f}"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it, with the mode a plain
    ``open`` would give (``mkstemp`` makes 0600; results are shared like any file, per the umask)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_CSV_SPECIAL = re.compile(r'[,"\r\n]')
"""What the csv module would quote in a field (its default dialect's delimiter, quote and line ends)."""


def _row(r: JobRecord, policy: str) -> str:
    """A record's line of ``jobs.csv``, as ``csv.writer`` writes it (formatted directly, ~4x faster: a
    field the csv module would quote, a policy's name with a comma, goes through it)."""
    name = r.policy or policy
    first = "" if r.first_start is None else f"{r.first_start:.6f}"
    if r.finish is None:
        finish = jct = ""
    else:
        finish, jct = f"{r.finish:.6f}", f"{r.finish - r.submit:.6f}"
    if _CSV_SPECIAL.search(name) is None:
        return f"{r.job_id},{r.cls},{r.tasks},{r.submit:.6f},{first},{finish},{jct},{name}\n"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(
        (r.job_id, r.cls, r.tasks, _fmt(r.submit), first, finish, jct, name)
    )
    return buf.getvalue()


def _jobs_csv_text(records: Sequence[JobRecord], policy: str) -> str:
    return ",".join(JOBS_HEADER) + "\n" + "".join([_row(r, policy) for r in records])


def write_results(
    out_dir: str | os.PathLike[str],
    records: Sequence[JobRecord],
    *,
    policy: str,
    runtime: str,
    nodes: int,
    slots: int,
    wall_seconds: float,
    task_seconds: float | None = None,
    messages: Mapping[str, int] | None = None,
    counters: Mapping[str, int | float] | None = None,
    extra: Mapping[str, Any] | None = None,
    task_log: Sequence[TaskRecord] | None = None,
    capacity_total: Resources | None = None,
    fairness_window: float | None = None,
    slo: Mapping[int, tuple[str | None, float | None]] | None = None,
    cycles: Sequence[Sequence[float]] = (),
    workload: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``out_dir/jobs.csv`` and ``out_dir/summary.json`` (creating ``out_dir``); return the summary.

    ``task_seconds`` is the total run time of all tasks (replay seconds), for ``utilization =
    task_seconds / (nodes * slots * makespan)``, with ``makespan`` from the first submit to the last
    finish; it is None when ``task_seconds`` is not given or no job finished. ``messages`` counts
    messages by kind; the summary adds ``total`` and ``per_task`` (per task of all jobs). Records are
    written sorted by job id; a record without a policy gets ``policy``. ``mean_jct`` is
    ``jct.all.mean`` (the mean completion time of the finished jobs), repeated at the top level.

    With a ``task_log`` (every task run, with its demand) and the cluster's ``capacity_total``, the
    summary also has ``resource_utilization`` (``cores``/``mem``/``disk``/``net``: demand x full-speed
    task seconds over capacity x ``makespan``, what each resource delivered; None for a resource the
    cluster lacks, or without a makespan), ``resource_allocation`` (the same with the seconds each task
    held its demand: above 1 where nodes over-allocate and tasks run stretched),
    ``utilization_over_time`` (``t``, the end of each of 100 windows of the makespan, and each resource's
    utilization in each: :func:`~aviary.common.usage.utilization_over_time`), and
    ``utilization`` is the busiest resource's (as ``--load`` is the dominant resource's offered load), and
    ``fairness`` (``window``, ``windows``, ``mean``, ``min``, ``max``: Jain's index of the jobs' dominant
    shares per ``fairness_window`` seconds, default 60, see
    :func:`~aviary.common.usage.fairness_over_windows`). For fairness a job is active from its submit to
    its finish; a job that did not finish, to the end of the run (its last task end or job finish).

    ``slo`` maps job ids to their ``(slo class, deadline)`` (``JobSpec.slo``, ``JobSpec.deadline``:
    seconds after submit); when one of them is an SLO job the summary has :func:`slo_metrics`'
    ``slo_jobs``, ``slo_attainment`` and ``be_mean_latency``, else none of these keys.

    ``cycles``: a periodic planner's record per cycle (:meth:`~aviary.common.core.Core.cycle_log`); when
    given, the summary has ``solver`` (:func:`solver_summary`).

    ``workload``: the record of what was replayed (:func:`aviary.launch.replay.provenance.workload_record`),
    kept as the summary's ``workload`` (which ``aviary compare`` checks); without one, no such key.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    recs = sorted(records, key=lambda r: r.job_id)
    summary = summarize(
        recs,
        policy=policy,
        runtime=runtime,
        nodes=nodes,
        slots=slots,
        wall_seconds=wall_seconds,
        task_seconds=task_seconds,
        messages=messages,
        counters=counters,
        extra=extra,
        task_log=task_log,
        capacity_total=capacity_total,
        fairness_window=fairness_window,
        slo=slo,
        cycles=cycles,
        workload=workload,
    )
    atomic_write(out / JOBS_CSV, _jobs_csv_text(recs, policy))
    atomic_write(out / SUMMARY_JSON, json.dumps(summary, indent=2) + "\n")
    return summary


SORT_CHUNK = 200_000
"""Rows of ``jobs.csv`` a :class:`StreamedResults` sorts in memory at a time (about 30 MB): more are sorted
in runs of this many, each in a file of its own, and merged."""


def _job_id(row: str) -> int:
    return int(row[: row.index(",")])


class StreamedResults:
    """``jobs.csv`` and ``summary.json`` of a replay whose jobs are not held (issue 49: a stream of jobs,
    :class:`~aviary.common.workload.JobStream`): each job's row is appended to a file as the job is
    written to the journal (:meth:`add`, the journal's :class:`~aviary.common.journal.JobSink`), in the
    order jobs finish; :meth:`write` sorts them by job id into ``jobs.csv`` (an external sort, by runs of
    :data:`SORT_CHUNK` rows) and writes the summary. Per job, what the summary needs is kept: its
    completion time (exact, 8 bytes; the percentiles are those of :func:`summarize`, not estimates) and,
    for a run cut short, its task-seconds; the earliest submit and latest finish. Both files are then
    byte for byte those :func:`write_results` writes from the same jobs' records (flat jobs without
    SLOs or a task log: what a stream replays)."""

    def __init__(self, out_dir: str | os.PathLike[str], policy: str, *, chunk: int = SORT_CHUNK) -> None:
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.policy = policy
        self.chunk = max(1, chunk)
        self.part = self.out / f".{JOBS_CSV}.rows"
        self.file = open(self.part, "w", encoding="utf-8", newline="")  # noqa: SIM115 (closed by write)
        self.jct: dict[str, array[float]] = {"short": array("d"), "long": array("d")}
        self.work = array("d")  # the finished jobs' task-seconds
        self.jobs = 0
        self.tasks = 0
        self.unfinished: list[int] = []
        self.first_submit = math.inf
        self.last_finish = -math.inf

    def add(self, job: JobSpec, times: JobTimes) -> None:
        """One job's row (finished or not), as :func:`write_results` writes its :class:`JobRecord`."""
        submit = job.submit if times.submit is None else times.submit
        r = JobRecord(job.job_id, job.cls, job.tasks, submit, times.first_start, times.finish, self.policy)
        self.file.write(_row(r, self.policy))
        self.jobs += 1
        self.tasks += r.tasks
        self.first_submit = min(self.first_submit, submit)
        if r.finish is None:
            self.unfinished.append(r.job_id)
        else:
            self.jct[r.cls].append(r.finish - submit)
            self.work.append(math.fsum(job.durations))
            self.last_finish = max(self.last_finish, r.finish)

    def add_unfinished(self, frontend: FrontendCore) -> None:
        """The rows of the jobs the frontend did not finish (call once, at the end, after the journal
        took every finished job): those it submitted, then those it never took from its stream."""
        for job_id, times in list(frontend.times.items()):
            if times.finish is None:
                self.add(frontend.by_id[job_id], times)
        for job in frontend.pending():
            self.add(job, JobTimes())

    @property
    def finished(self) -> int:
        return len(self.jct["short"]) + len(self.jct["long"])

    def finished_work(self) -> float:
        """The finished jobs' task-seconds (a cut run's ``task_seconds``)."""
        return math.fsum(self.work)

    def _sorted_rows(self) -> Iterator[str]:
        """The rows, sorted by job id: in memory up to :attr:`chunk`, else runs of it merged."""
        runs: list[Path] = []
        with open(self.part, encoding="utf-8", newline="") as f:
            while True:
                rows = [line for _, line in zip(range(self.chunk), f, strict=False)]
                if not rows:
                    break
                rows.sort(key=_job_id)
                if not runs and len(rows) < self.chunk:  # all of them: no run files
                    yield from rows
                    return
                run = self.out / f".{JOBS_CSV}.run{len(runs)}"
                run.write_text("".join(rows), encoding="utf-8")
                runs.append(run)
        files = [open(run, encoding="utf-8", newline="") for run in runs]  # noqa: SIM115
        try:
            yield from heapq.merge(*files, key=_job_id)
        finally:
            for f in files:
                f.close()
            for run in runs:
                run.unlink(missing_ok=True)

    def write(
        self,
        *,
        runtime: str,
        nodes: int,
        slots: int,
        wall_seconds: float,
        task_seconds: float | None = None,
        messages: Mapping[str, int] | None = None,
        counters: Mapping[str, int | float] | None = None,
        extra: Mapping[str, Any] | None = None,
        workload: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write ``jobs.csv`` (sorted, atomically) and ``summary.json``; return the summary (the arguments:
        :func:`write_results`')."""
        self.file.close()
        path = self.out / JOBS_CSV
        fd, tmp = tempfile.mkstemp(dir=self.out, prefix=f".{JOBS_CSV}.", suffix=".tmp")
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(",".join(JOBS_HEADER) + "\n")
                rows: list[str] = []
                for row in self._sorted_rows():
                    rows.append(row)
                    if len(rows) >= 4096:
                        f.write("".join(rows))
                        rows.clear()
                f.write("".join(rows))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        finally:
            self.part.unlink(missing_ok=True)
        short, long = self.jct["short"], self.jct["long"]
        makespan = self.last_finish - self.first_submit if self.finished else None
        summary = _summary(
            policy=self.policy,
            runtime=runtime,
            nodes=nodes,
            slots=slots,
            jobs=self.jobs,
            tasks=self.tasks,
            finished=self.finished,
            unfinished=sorted(self.unfinished),
            jcts={"short": jct_stats(short), "long": jct_stats(long), "all": jct_stats([*short, *long])},
            makespan=makespan,
            task_seconds=task_seconds,
            usage={},
            slo={},
            cycles=(),
            messages=messages,
            counters=counters,
            wall_seconds=wall_seconds,
            workload=workload,
            extra=extra,
        )
        atomic_write(self.out / SUMMARY_JSON, json.dumps(summary, indent=2) + "\n")
        return summary


def summarize(
    records: Sequence[JobRecord],
    *,
    policy: str,
    runtime: str,
    nodes: int,
    slots: int,
    wall_seconds: float,
    task_seconds: float | None = None,
    messages: Mapping[str, int] | None = None,
    counters: Mapping[str, int | float] | None = None,
    extra: Mapping[str, Any] | None = None,
    task_log: Sequence[TaskRecord] | None = None,
    capacity_total: Resources | None = None,
    fairness_window: float | None = None,
    slo: Mapping[int, tuple[str | None, float | None]] | None = None,
    cycles: Sequence[Sequence[float]] = (),
    workload: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary :func:`write_results` writes, computed without writing it (the same arguments)."""
    recs = sorted(records, key=lambda r: r.job_id)
    done = [(r, r.finish - r.submit) for r in recs if r.finish is not None]
    unfinished = [r.job_id for r in recs if r.finish is None]
    tasks = sum(r.tasks for r in recs)
    finishes = [r.finish for r in recs if r.finish is not None]
    makespan = max(finishes) - min(r.submit for r in recs) if finishes else None
    jcts = {
        "short": jct_stats(jct for r, jct in done if r.cls == "short"),
        "long": jct_stats(jct for r, jct in done if r.cls == "long"),
        "all": jct_stats(jct for _, jct in done),
    }
    usage: dict[str, Any] = {}
    if task_log is not None and capacity_total is not None:
        usage = _usage_summary(recs, task_log, capacity_total, makespan, fairness_window)
    return _summary(
        policy=policy,
        runtime=runtime,
        nodes=nodes,
        slots=slots,
        jobs=len(recs),
        tasks=tasks,
        finished=len(done),
        unfinished=unfinished,
        jcts=jcts,
        makespan=makespan,
        task_seconds=task_seconds,
        usage=usage,
        slo=slo_metrics(recs, slo or {}),
        cycles=cycles,
        messages=messages,
        counters=counters,
        wall_seconds=wall_seconds,
        workload=workload,
        extra=extra,
    )


def _summary(
    *,
    policy: str,
    runtime: str,
    nodes: int,
    slots: int,
    jobs: int,
    tasks: int,
    finished: int,
    unfinished: Sequence[int],
    jcts: dict[str, dict[str, float | int | None]],
    makespan: float | None,
    task_seconds: float | None,
    usage: dict[str, Any],
    slo: dict[str, Any],
    cycles: Sequence[Sequence[float]],
    messages: Mapping[str, int] | None,
    counters: Mapping[str, int | float] | None,
    wall_seconds: float,
    workload: Mapping[str, Any] | None,
    extra: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The summary of a replay from its aggregates (:func:`summarize`'s, and :class:`StreamedResults`'):
    ``unfinished`` the unfinished jobs' ids in id order, ``jcts`` :func:`jct_stats` per class."""
    utilization = None
    if task_seconds is not None and makespan is not None and makespan > 0:
        utilization = task_seconds / (nodes * slots * makespan)
    msgs: dict[str, Any] = {k: int(v) for k, v in sorted((messages or {}).items())}
    total = sum(msgs.values())
    msgs["total"] = total
    msgs["per_task"] = total / tasks if tasks else None
    if usage:
        busiest = [u for u in usage["resource_utilization"].values() if u is not None]
        utilization = max(busiest) if busiest else None  # a task is no slot: the dominant resource's
    summary: dict[str, Any] = {
        "policy": policy,
        "runtime": runtime,
        "nodes": nodes,
        "slots": slots,
        "jobs": jobs,
        "tasks": tasks,
        "finished": finished,
        "unfinished": list(unfinished[:UNFINISHED_LISTED]),
        "unfinished_count": len(unfinished),
        "jct": jcts,
        "mean_jct": jcts["all"]["mean"],
        "makespan": _r(makespan),
        "task_seconds": _r(task_seconds),
        "utilization": utilization,
        **usage,
        **slo,
        **({"solver": solver_summary(cycles)} if cycles else {}),
        "messages": msgs,
        "counters": dict(sorted((counters or {}).items())),
        "wall_seconds": _r(wall_seconds),
        **({"workload": dict(workload)} if workload is not None else {}),
        "extra": dict(extra or {}),
    }
    return summary


def solver_summary(cycles: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Per-cycle solver figures of a periodic planner: how many cycles and solves, and the p50 / p99 /
    max of the solver's seconds per cycle and of the MILP's columns and rows per cycle (over the
    cycles that solved something) and of the pending jobs."""
    solved = [c for c in cycles if c[5] > 0]

    def spread(values: list[float]) -> dict[str, float | None]:
        xs = sorted(values)
        if not xs:
            return {"p50": None, "p99": None, "max": None}
        return {"p50": _r(percentile(xs, 0.50)), "p99": _r(percentile(xs, 0.99)), "max": _r(xs[-1])}

    return {
        "cycles": len(cycles),
        "solves": int(sum(c[5] for c in cycles)),
        "launched": int(sum(c[2] for c in cycles)),
        "seconds_per_cycle": spread([c[6] for c in solved]),
        "columns_per_cycle": spread([c[3] for c in solved]),
        "rows_per_cycle": spread([c[4] for c in solved]),
        "pending_per_cycle": spread([c[1] for c in solved]),
    }


def slo_metrics(
    records: Sequence[JobRecord], slo: Mapping[int, tuple[str | None, float | None]]
) -> dict[str, Any]:
    """TetriSched's metrics (EuroSys'16 §6.3; spec §1.12): ``{}`` unless some job of ``records`` is an SLO
    job, i.e. its class in ``slo`` (job id -> ``(class, deadline)``) is ``accepted`` or ``noreserve``
    and it has a deadline (seconds after its submit). Else:

    - ``slo_attainment``: ``all``, ``accepted``, ``no_reservation``: the share of those SLO jobs that
      finished by their deadline, ``finish - submit <= deadline`` (:data:`DEADLINE_SLACK`), with the
      replay's measured submit and finish (``jobs.csv``); an unfinished job missed it; None for a class
      without jobs. ``accepted``: the jobs whose reservation was accepted (the workload's ``slo``, which
      the TetriSched and Rayon/CS policies read), ``no_reservation`` the others.
    - ``slo_jobs``: how many SLO jobs each share is over.
    - ``be_mean_latency``: the mean completion time (``finish - submit``) of the finished best-effort
      jobs (every other job: class ``be`` or none), None when none finished.
    """
    met: dict[str, list[bool]] = {"all": [], "accepted": [], "no_reservation": []}
    be: list[float] = []
    for r in records:
        cls, deadline = slo.get(r.job_id, (None, None))
        if cls in SLO_TYPES and deadline is not None:
            ok = r.jct is not None and r.jct <= deadline + DEADLINE_SLACK
            met["all"].append(ok)
            met[SLO_TYPES[cls]].append(ok)
        elif r.jct is not None:
            be.append(r.jct)
    if not met["all"]:
        return {}
    return {
        "slo_jobs": {k: len(v) for k, v in met.items()},
        "slo_attainment": {k: _r(sum(v) / len(v)) if v else None for k, v in met.items()},
        "be_mean_latency": _r(math.fsum(be) / len(be)) if be else None,
    }


def _usage_summary(
    recs: Sequence[JobRecord],
    task_log: Sequence[TaskRecord],
    capacity: Resources,
    makespan: float | None,
    window: float | None,
) -> dict[str, Any]:
    util: dict[str, float] = {}
    held: dict[str, float] = {}
    series: dict[str, list[float]] | None = None
    if makespan is not None and makespan > 0:
        util = utilization_by_resource(task_log, capacity, makespan)
        held = utilization_by_resource(task_log, capacity, makespan, held=True)
        if task_log:
            series = {
                k: [round(x, 4) for x in v]
                for k, v in utilization_over_time(task_log, capacity, makespan).items()
            }
    ends = [t.end for t in task_log] + [r.finish for r in recs if r.finish is not None]
    run_end = max(ends, default=0.0)
    active = {
        r.job_id: (r.submit, max(r.submit, r.finish if r.finish is not None else run_end)) for r in recs
    }
    w = DEFAULT_FAIRNESS_WINDOW if window is None else float(window)
    fair = fairness_over_windows(task_log, capacity, w, active)
    return {
        "resource_utilization": {name: _r(util.get(name)) for name in RESOURCES},
        "resource_allocation": {name: _r(held.get(name)) for name in RESOURCES},
        "utilization_over_time": series,
        "fairness": {
            "window": w,
            "windows": fair["windows"],
            "mean": _r(fair["mean"]),
            "min": _r(fair["min"]),
            "max": _r(fair["max"]),
        },
    }


CUT = "cut"
"""``extra.interrupted_by`` of a run read from its journal that never reached its end (killed, or its machine
stopped)."""
RUNNING = "running"
"""``extra.interrupted_by`` of a run read from its journal while it is still running."""


def _journal(result_dir: str | os.PathLike[str]) -> JournalRecords:
    try:
        return read_journal(result_dir)
    except JournalError as exc:
        raise ResultsError(str(exc)) from None


def journal_records(journal: JournalRecords) -> list[JobRecord]:
    """The finished jobs of a journal as :class:`JobRecord` s, by job id."""
    policy = str(journal.start.get("policy", ""))
    jobs = sorted(journal.jobs, key=lambda j: j.job_id)
    return [JobRecord(j.job_id, j.cls, j.tasks, j.submit, j.first_start, j.finish, policy) for j in jobs]


def journal_summary(result_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The summary of a run from its journal (:mod:`aviary.common.journal`), for a run that never reached
    its end (or is still running): what its finished jobs give (the JCT percentiles, makespan, mean JCT,
    utilization, SLO attainment of those jobs), ``jobs`` and ``unfinished_count`` from its start line,
    messages and counters unknown (None, empty: they come at a run's end), and ``extra.interrupted``
    true, ``extra.interrupted_by`` :data:`CUT` (or :data:`RUNNING`), ``extra.journal`` how it was read
    (records, whether a partial last line was dropped, the wall seconds of the last record).
    :class:`ResultsError` (one line) for a journal that cannot be read."""
    journal = _journal(result_dir)
    start = journal.start
    records = journal_records(journal)
    works = [j.work for j in journal.jobs]
    slo = {j.job_id: (j.slo, j.deadline) for j in journal.jobs if j.slo is not None or j.deadline is not None}
    last = max((j.wall for j in journal.jobs if j.wall is not None), default=None)
    extra = dict(start.get("extra") or {})
    running = journal.running()
    if journal.end is None:
        extra["interrupted"], extra["interrupted_by"] = True, RUNNING if running else CUT
    elif journal.end.get("interrupted_by"):
        extra["interrupted"], extra["interrupted_by"] = True, journal.end["interrupted_by"]
    extra["journal"] = {
        "file": JOURNAL,
        "records": len(journal.jobs),
        "ended": journal.end is not None,
        "running": running,
        "dropped": journal.dropped,
        "last_record_wall_seconds": last,
    }
    nodes, slots = start.get("nodes"), start.get("slots")
    sized = isinstance(nodes, int) and isinstance(slots, int) and nodes * slots > 0
    ended = (journal.end or {}).get("wall_seconds")
    workload = start.get("workload")
    summary = summarize(
        records,
        policy=str(start.get("policy", "?")),
        runtime=str(start.get("runtime", "?")),
        nodes=nodes if sized else 0,  # type: ignore[arg-type]
        slots=slots if sized else 0,  # type: ignore[arg-type]
        wall_seconds=float(ended if isinstance(ended, (int, float)) else last or 0.0),
        task_seconds=math.fsum(works) if sized and None not in works else None,  # type: ignore[arg-type]
        extra=extra,
        slo=slo or None,
        workload=workload if isinstance(workload, dict) else None,
    )
    if journal.total is not None:
        summary["jobs"] = journal.total
        summary["unfinished_count"] = journal.total - summary["finished"]
    if isinstance(start.get("tasks"), int):
        summary["tasks"] = start["tasks"]
    summary["messages"] = {"total": None, "per_task": None}
    return summary


def partial_note(summary: Mapping[str, Any]) -> str | None:
    """One line saying that a run's results are partial, and why (None for a run that ran to its end):
    cut short (read from its journal), still running, or interrupted by a signal."""
    extra = summary.get("extra") or {}
    if not extra.get("interrupted"):
        return None
    kept = extra.get("journal")
    journal: Mapping[str, Any] = kept if isinstance(kept, Mapping) else {}
    done = f"{summary.get('finished')} of {summary.get('jobs')} jobs finished"
    why = extra.get("interrupted_by")
    if why == RUNNING:
        return f"still running: {done} so far (read from its journal, {JOURNAL})"
    if why == CUT:
        last = journal.get("last_record_wall_seconds")
        when = f", the last {last:,.1f} s into the run" if isinstance(last, (int, float)) else ""
        dropped = "; a partial last line was dropped" if journal.get("dropped") else ""
        return (
            f"cut short (it never reached its end: killed, or its machine stopped): {done}{when}; read from "
            f"its journal ({JOURNAL}), figures over those jobs{dropped}"
        )
    return f"interrupted, only {summary.get('finished')} of its {summary.get('jobs')} jobs finished"


def rebuild_results(result_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Write ``jobs.csv`` (the finished jobs) and ``summary.json`` of a run that never reached its end from
    its journal (:func:`journal_summary`); return the summary. :class:`ResultsError` (one line) when the
    folder already has a ``summary.json``, has no journal, or its run is still running."""
    out = Path(result_dir)
    if (out / SUMMARY_JSON).exists():
        raise ResultsError(f"{out / SUMMARY_JSON}: exists already (the run wrote its results)")
    summary = journal_summary(out)
    if summary["extra"].get("interrupted_by") == RUNNING:
        raise ResultsError(f"{out / JOURNAL}: its run is still running; its results come at its end")
    records = journal_records(_journal(out))
    atomic_write(out / JOBS_CSV, _jobs_csv_text(records, summary["policy"]))
    atomic_write(out / SUMMARY_JSON, json.dumps(summary, indent=2) + "\n")
    return summary


def read_summary(result_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Load ``summary.json`` of a results folder; :class:`ResultsError` (one line) if missing or bad. A
    folder with a journal and no ``summary.json`` (a run that never reached its end) is read from its
    journal (:func:`journal_summary`; :func:`partial_note` says so)."""
    path = Path(result_dir) / SUMMARY_JSON
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if (Path(result_dir) / JOURNAL).is_file():
            return journal_summary(result_dir)
        raise ResultsError(f"{path}: not found (is {result_dir} a results folder?)") from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        summary = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("jct"), dict):
        raise ResultsError(f"{path}: field 'jct': missing (not an aviary summary)")
    return summary


def _opt_float(path: Path, lineno: int, field: str, text: str) -> float | None:
    if text == "":
        return None
    try:
        return float(text)
    except ValueError:
        raise ResultsError(f"{path}:{lineno}: field '{field}': not a number: {text!r}") from None


def jobs_rows(path: str | os.PathLike[str]) -> list[dict[str, str]]:
    """The rows of a ``jobs.csv`` file as text, keyed by the short column names of
    :data:`OLD_JOBS_HEADER` (``submit``, ``first_start``, ``finish``, ``jct``: replay seconds) whichever
    of the two headers it has: for scripts that read the columns themselves (:func:`read_jobs` checks
    and converts them). :class:`ResultsError` (one line) for another header or an unreadable file."""
    _, rows = _jobs_csv(Path(path))
    return [dict(zip(OLD_JOBS_HEADER, row, strict=False)) for row in rows if row]


def _jobs_csv(path: Path, missing: str = "") -> tuple[list[str], Iterator[list[str]]]:
    """A ``jobs.csv`` file's header (either of the two) and its rows; :class:`ResultsError` (one line,
    ``missing`` added when the file does not exist) otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: not found{missing}") from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    rows = csv.reader(io.StringIO(text, newline=""))
    header = next(rows, None)
    if header is None or tuple(header) not in (JOBS_HEADER, OLD_JOBS_HEADER):
        raise ResultsError(f"{path}:1: header: expected {','.join(JOBS_HEADER)}")
    return header, rows


def read_jobs(result_dir: str | os.PathLike[str]) -> list[JobRecord]:
    """Load ``jobs.csv`` of a results folder as :class:`JobRecord` s (``jct`` is recomputed), under its
    header or the one written before the units were named (:data:`OLD_JOBS_HEADER`); a bad field is
    named as the file's header names it. Without ``jobs.csv``, the finished jobs of its journal."""
    path = Path(result_dir) / JOBS_CSV
    if not path.exists() and (Path(result_dir) / JOURNAL).is_file():
        return journal_records(_journal(result_dir))
    header, rows = _jobs_csv(path, f" (is {result_dir} a results folder?)")
    names = dict(zip(OLD_JOBS_HEADER, header, strict=True))
    records: list[JobRecord] = []
    for lineno, row in enumerate(rows, 2):
        if not row:
            continue
        if len(row) != len(JOBS_HEADER):
            raise ResultsError(f"{path}:{lineno}: expected {len(JOBS_HEADER)} fields, found {len(row)}")
        job_id, cls, tasks, submit, first_start, finish, _jct, policy = row
        if cls not in ("short", "long"):
            raise ResultsError(f"{path}:{lineno}: field 'class': expected short or long, got {cls!r}")
        try:
            ints = int(job_id), int(tasks)
        except ValueError:
            raise ResultsError(f"{path}:{lineno}: field 'job_id' or 'tasks': not an integer") from None
        sub = _opt_float(path, lineno, names["submit"], submit)
        if sub is None:
            raise ResultsError(f"{path}:{lineno}: field '{names['submit']}': missing")
        records.append(
            JobRecord(
                job_id=ints[0],
                cls=cls,
                tasks=ints[1],
                submit=sub,
                first_start=_opt_float(path, lineno, names["first_start"], first_start),
                finish=_opt_float(path, lineno, names["finish"], finish),
                policy=policy,
            )
        )
    return records


def _cell(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def time_scale_of(summary: Mapping[str, Any]) -> float | None:
    """The replay's time scale (trace seconds per replay second) from its summary, None if unrecorded."""
    for where in (summary.get("workload"), summary.get("extra")):
        if isinstance(where, Mapping) and isinstance(where.get("time_scale"), (int, float)):
            return float(where["time_scale"])
    return None


def units_note(scale: float | None) -> str:
    """What a replay second is: ``replay s = trace s / 1,000`` (``= trace s`` at scale 1)."""
    if scale is None:
        return "replay s: seconds of the replay clock (time scale not recorded)"
    if scale == 1:
        return "replay s = trace s (time scale 1)"
    return f"replay s = trace s / {scale:,g} (time scale)"


CLASSLESS_WORKLOADS = ("tpch", "tpcds", "alibaba", "gshet")
"""Workloads that define no short/long classes (the Google trace's cutoff means nothing for them)."""


def job_classes(summary: Mapping[str, Any]) -> tuple[str, ...]:
    """The job classes a summary is read by: short, long and all for the Google trace's flat jobs; all
    alone for the DAG and SLO workloads, which define no such classes."""
    workload = summary.get("workload")
    kind = workload.get("kind") if isinstance(workload, Mapping) else None
    return ("all",) if kind in CLASSLESS_WORKLOADS else CLASSES


@dataclass(frozen=True, slots=True)
class Metric:
    """One headline figure of a run: its name, value, how it is shown and whether higher is better."""

    name: str
    value: float | None
    fmt: str
    higher_better: bool = False
    group: str = ""
    """Figures of one group (``utilization``, ``SLO attainment``...) share a line in a summary; their
    names start with it."""
    unit: str = ""
    """Shown after the value: `` replay s`` (the replay's clock), `` s`` (wall time), or nothing."""

    def shown(self) -> str:
        return "n/a" if self.value is None else format(self.value, self.fmt) + self.unit


def family(summary: Mapping[str, Any]) -> str:
    """``slo`` (jobs with deadlines: TetriSched's workloads), ``dag`` (multi-resource jobs: a task log),
    or ``flat`` (one-slot tasks: the probe-based and slot-based policies)."""
    if summary.get("slo_attainment") is not None:
        return "slo"
    if summary.get("resource_utilization") is not None:
        return "dag"
    return "flat"


def family_metrics(summary: Mapping[str, Any]) -> list[Metric]:
    """The figures each family of policies is judged by, beyond the JCT percentiles: makespan and
    utilization for all; per-resource utilization and Jain's index for multi-resource runs; SLO
    attainment (all, accepted, no reservation), best-effort latency and solver time for SLO runs."""
    out = [Metric("makespan", summary.get("makespan"), ",.1f", unit=" replay s")]
    by_res = summary.get("resource_utilization")
    if isinstance(by_res, Mapping):
        out += [Metric(f"utilization {k}", v, ".1%", True, "utilization") for k, v in by_res.items()]
        fair = summary.get("fairness")
        out.append(
            Metric("Jain's index", fair.get("mean") if isinstance(fair, Mapping) else None, ".2f", True)
        )
    else:
        out.append(Metric("utilization", summary.get("utilization"), ".1%", True))
    slo = summary.get("slo_attainment")
    if isinstance(slo, Mapping):
        out += [
            Metric(f"SLO attainment {k.replace('_', ' ')}", v, ".1%", True, "SLO attainment")
            for k, v in slo.items()
        ]
        out.append(
            Metric("best-effort mean latency", summary.get("be_mean_latency"), ",.2f", unit=" replay s")
        )
        solver = summary.get("solver")
        per_cycle = solver.get("seconds_per_cycle") if isinstance(solver, Mapping) else None
        if isinstance(per_cycle, Mapping):
            out += [
                Metric(
                    f"solver time per cycle {q}",
                    per_cycle.get(q),
                    ".4f",
                    False,
                    "solver time per cycle",
                    " s",
                )
                for q in ("p50", "p99")
            ]
    return out


NBSP = "\u00a0"
"""Between a counter's name and value, so that a wrapped line never parts them."""


def format_summary_table(summary: Mapping[str, Any]) -> Group:
    """A summary for the console: JCT percentiles (replay seconds) per job class of its workload
    (:func:`job_classes`); its family's headline figures (:func:`family_metrics`) with messages per task
    and the wall clock; what a replay second is; the counters, each name and value unbreakable."""
    table = Table(
        title=f"{summary.get('policy', '?')} ({summary.get('runtime', '?')}, "
        f"{summary.get('nodes', '?')} nodes x {summary.get('slots', '?')} slots): "
        "job completion time in replay s"
    )
    table.add_column("class")
    for name in ("jobs", "p50", "p90", "p99", "mean"):
        table.add_column(name, justify="right")
    for cls in job_classes(summary):
        st = summary.get("jct", {}).get(cls) or {}
        table.add_row(
            cls, str(st.get("count", 0)), *(_cell(st.get(k)) for k in ("p50", "p90", "p99", "mean"))
        )
    figures = Table(show_header=False, box=None, padding=(0, 1))
    figures.add_column(style="bold")
    figures.add_column()
    figures.add_row("finished", f"{summary.get('finished', '?')}/{summary.get('jobs', '?')}")
    fair = summary.get("fairness")
    rows: dict[str, list[str]] = {}
    for m in family_metrics(summary):
        shown = m.shown()
        if m.name == "Jain's index" and isinstance(fair, Mapping) and m.value is not None:
            window = f"{fair.get('windows')} x {fair.get('window', 0):g} replay s"
            shown += f" [{fair['min']:.2f}, {fair['max']:.2f}] over {window}"
        part = m.name[len(m.group) :].strip() if m.group else ""
        rows.setdefault(m.group or m.name, []).append(f"{part} {shown}" if part else shown)
    for name, shown_parts in rows.items():
        figures.add_row(name, ", ".join(shown_parts))
    per_task = summary.get("messages", {}).get("per_task")
    figures.add_row("messages/task", "n/a" if per_task is None else f"{per_task:.2f}")
    wall = summary.get("wall_seconds")
    if wall is not None:
        figures.add_row("wall clock", f"{wall:.1f} s")
    parts: list[Any] = [table, figures, Text(units_note(time_scale_of(summary)), style="dim")]
    counters = [f"{k}{NBSP}{v}" for k, v in (summary.get("counters") or {}).items()]
    if counters:
        parts.append(Text("counters: " + ", ".join(counters), style="dim"))
    return Group(*parts)
