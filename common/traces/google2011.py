"""``aviary trace convert google-2011``: clusterdata-2011-2 (schema v2.1, google/cluster-data
``ClusterData2011_2.md`` and its "Google cluster-usage traces: format + schema" document) to Aviary trace
jobs, streamed.

Read: the ``job_events`` and ``task_events`` parts as published (gzipped CSV, no header, parts numbered in
time order), merged by timestamp (at one time: the jobs' submits, then the task events, then the jobs'
other events).

- ``job_events``: timestamp, missing info, job ID, event type, user, scheduling class, job name, logical
  job name.
- ``task_events``: timestamp, missing info, job ID, task index, machine ID, event type, user, scheduling
  class, priority, CPU request, memory request, disk space request, different-machine restriction.
- Event types: 0 SUBMIT, 1 SCHEDULE, 2 EVICT, 3 FAIL, 4 FINISH, 5 KILL, 6 LOST, 7 UPDATE_PENDING,
  8 UPDATE_RUNNING. Timestamps in microseconds; the window starts at 600 s; 0 means before it, 2^63 - 1
  after it. Requests are normalized to the largest machine; an empty field is missing.

What a job becomes (``docs/traces.md``, "Google 2011"):

- its **submit time**: its first job SUBMIT, in seconds;
- each **task's duration**: its *last attempt*, from its last SCHEDULE to the event that ended that
  attempt (FINISH; or EVICT, FAIL, KILL or LOST when no later attempt ran: the slot was held that long).
  Earlier attempts, ended by EVICT/FAIL/KILL/LOST and followed by a resubmission, are counted in the
  summary (``attempts_redone``), not in the duration: the replay runs the work the task needed once.
  A task that never ran (killed while pending) is left out of its job (``tasks_never_ran``);
- ``cpu``/``mem``: the largest request among its tasks (the last SUBMIT or UPDATE of each);
  ``prio``: the largest priority among its tasks; ``class``: the job's scheduling class; ``job``: its ID.

A job is written when its terminal job event (FAIL, FINISH, KILL or LOST) arrives inside the window; a
task still running then ends at that time. Jobs that do not end inside the window, or began before it
(first event at time 0, or no SUBMIT), are **open**: ``open="drop"`` counts and drops them, ``"cut"``
writes them with their times cut to the window (a time 0 read as 600 s, a task still running ending at
the last timestamp of the trace). Memory holds the open jobs only; output in submit order goes through
:class:`~aviary.common.traces.rows.ExternalSort`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..trace import MAX_JOB_TASKS, MAX_TIME, TraceError, TraceJob
from .rows import BadRows, Bytes, csv_rows, parts

__all__ = ["FINISH", "SCHEDULE", "SUBMIT", "Counts", "Event", "convert_2011", "run_events"]

SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(9)
ENDS = frozenset((EVICT, FAIL, FINISH, KILL, LOST))
JOB_ENDS = frozenset((FAIL, FINISH, KILL, LOST))
WINDOW_START = 600_000_000
"""The 2011 trace's first timestamp (µs): a time 0 is before the window."""
AFTER = 2**63 - 1
"""A timestamp after the window."""

TASK_FIELDS = (
    "timestamp", "missing info", "job ID", "task index", "machine ID", "event type", "user",
    "scheduling class", "priority", "CPU request", "memory request", "disk space request",
    "different-machine restriction",
)  # fmt: skip
JOB_FIELDS = (
    "timestamp", "missing info", "job ID", "event type", "user", "scheduling class", "job name",
    "logical job name",
)  # fmt: skip


@dataclass(slots=True)
class _Task:
    start: int | None = None
    """Start of the attempt running (µs), if one is."""
    span: int | None = None
    """The last ended attempt's run (µs)."""
    cpu: float | None = None
    mem: float | None = None
    priority: int | None = None
    attempts: int = 0
    ended: int | None = None
    """When an EVICT, FAIL, KILL or LOST came with no attempt running (``same_time``, :func:`run_events`)."""
    finished: int | None = None
    """When a FINISH came with no attempt running (``same_time``)."""


@dataclass(slots=True)
class _Job:
    submit: int | None = None
    before: bool = False
    """Began before the window (a first event at 0, or no SUBMIT)."""
    sched_class: int | None = None
    priority: int | None = None
    """The job's own priority (2019 collection events), if its tasks give none."""
    after: tuple[str, ...] = ()
    tasks: dict[int, _Task] = field(default_factory=dict)


@dataclass
class Counts:
    """What the conversion did, for its summary."""

    rows: int = 0
    jobs_written: int = 0
    tasks_written: int = 0
    jobs_open_dropped: int = 0
    jobs_open_cut: int = 0
    jobs_without_tasks: int = 0
    tasks_never_ran: int = 0
    attempts_redone: int = 0
    late_events: int = 0
    open_peak: int = 0
    bad: BadRows = field(default_factory=BadRows)

    def lines(self) -> list[str]:
        out = [f"{k.replace('_', ' ')}: {v:,}" for k, v in vars(self).items() if isinstance(v, int) and v]
        if self.bad.total:
            kinds = ", ".join(f"{n} in '{f}'" for f, n in self.bad.counts.most_common())
            out.append(f"bad rows skipped: {self.bad.total:,} ({kinds}); the first: {self.bad.first}")
        return out


def _int(where: str, name: str, token: str, low: int = 0, high: int = AFTER) -> int:
    try:
        value = int(token)
    except ValueError:
        raise TraceError(f"{where}: field '{name}': not an integer: {token!r}") from None
    if not low <= value <= high:
        raise TraceError(f"{where}: field '{name}': must be in {low}..{high}, got {token}")
    return value


def _share(where: str, name: str, token: str) -> float | None:
    if token == "":
        return None
    try:
        value = float(token)
    except ValueError:
        raise TraceError(f"{where}: field '{name}': not a number: {token!r}") from None
    if not 0 <= value <= 1e3:  # NaN too
        raise TraceError(f"{where}: field '{name}': must be a share in 0..1000, got {token}")
    return value


Event = tuple[int, int, int, int, int, int | None, int | None, float | None, float | None, tuple[str, ...]]
"""(timestamp, order, job ID, task index, event type, class, priority, cpu, mem, after); order: 0 a job
SUBMIT, 1 a task event, 2 another job event: at one time, a job is submitted before its tasks, and its
tasks end before it does. The event types are the 2011 schema's (2019's are mapped to them); ``after``:
job IDs the job waits for (2019 ``start_after_collection_ids``; empty in 2011)."""


def _events(files: list[Path], job: bool, bad: BadRows, progress: Bytes) -> Iterator[Event]:
    names = JOB_FIELDS if job else TASK_FIELDS
    for path, lineno, row in csv_rows(files, progress):
        where = f"{path}:{lineno}"
        try:
            if len(row) < (4 if job else 6):
                raise TraceError(f"{where}: field '{names[len(row)]}': missing ({len(row)} fields)")
            ts = _int(where, "timestamp", row[0])
            jid = _int(where, "job ID", row[2])
            if job:
                kind = _int(where, "event type", row[3], 0, 8)
                klass = _int(where, "scheduling class", row[5], 0, 3) if len(row) > 5 and row[5] else None
                yield ts, 0 if kind == SUBMIT else 2, jid, 0, kind, klass, None, None, None, ()
            else:
                index = _int(where, "task index", row[3], 0, MAX_JOB_TASKS - 1)
                kind = _int(where, "event type", row[5], 0, 8)
                prio = _int(where, "priority", row[8], 0, 11) if len(row) > 8 and row[8] else None
                cpu = _share(where, "CPU request", row[9]) if len(row) > 9 else None
                mem = _share(where, "memory request", row[10]) if len(row) > 10 else None
                yield ts, 1, jid, index, kind, None, prio, cpu, mem, ()
        except TraceError as exc:
            bad.bad(str(exc), str(exc).split("field '", 1)[-1].split("'", 1)[0])


def _seconds(us: int) -> float:
    return us / 1e6


def _finish(jid: int, job: _Job, end: int, counts: Counts) -> TraceJob | None:
    """The trace job of a job ended at ``end`` (µs); None if no task of it ran."""
    durations: list[float] = []
    cpu = mem = None
    prio = None
    for index in sorted(job.tasks):  # task index order
        task = job.tasks[index]
        span = task.span
        if task.start is not None:
            span = max(0, end - task.start)
        if span is None:
            counts.tasks_never_ran += 1
            continue
        durations.append(_seconds(span))
        if task.cpu is not None:
            cpu = task.cpu if cpu is None else max(cpu, task.cpu)
        if task.mem is not None:
            mem = task.mem if mem is None else max(mem, task.mem)
        if task.priority is not None:
            prio = task.priority if prio is None else max(prio, task.priority)
    if not durations:
        counts.jobs_without_tasks += 1
        return None
    if prio is None:
        prio = job.priority
    submit = _seconds(job.submit if job.submit is not None else WINDOW_START)
    if not submit <= MAX_TIME:
        raise TraceError(f"job {jid}: submit time {submit:g} s is above the limit of {MAX_TIME:g} s")
    return TraceJob(
        line=0,
        submit=submit,
        durations=durations,
        mean=math.fsum(durations) / len(durations),
        cpu=cpu,
        mem=mem,
        priority=prio,
        sched_class=job.sched_class,
        name=str(jid),
        after=job.after,
    )


def convert_2011(
    inputs: Sequence[Path],
    *,
    open_jobs: Literal["drop", "cut"] = "drop",
    bad: BadRows | None = None,
    progress: Bytes | None = None,
    counts: Counts | None = None,
) -> Iterator[TraceJob]:
    """Yield the jobs of the 2011 trace's parts under ``inputs`` as they end (not in submit order), then
    the open ones (``open_jobs="cut"``). Raises :class:`TraceError` (one line) on a bad row unless
    ``bad.skip``, or when ``inputs`` hold no ``task_events`` part."""
    counts = counts if counts is not None else Counts()
    if bad is not None:
        counts.bad = bad
    progress = progress if progress is not None else Bytes()
    job_files, task_files = parts(inputs, "job_events"), parts(inputs, "task_events")
    if not task_files or not job_files:
        missing = "task_events" if not task_files else "job_events"
        raise TraceError(f"{', '.join(map(str, inputs))}: no {missing} part (*.csv.gz) found")
    progress.total = sum(p.stat().st_size for p in job_files + task_files)
    # Two progress counters would double count: the task stream (by far the larger) drives the bar.
    # The merge's key (time, order) needs each stream sorted by it: the job events are split into their
    # submits and their other events (one job's end and another's submit can share a microsecond, in
    # that order in the file), each read once (tee keeps what one side read ahead of the other).
    submits, others = itertools.tee(_events(job_files, True, counts.bad, Bytes()))
    merged = heapq.merge(
        (e for e in submits if e[1] == 0),
        _events(task_files, False, counts.bad, progress),
        (e for e in others if e[1] == 2),
        key=lambda e: (e[0], e[1]),
    )
    yield from run_events(merged, open_jobs, counts)


def run_events(
    events: Iterable[Event], open_jobs: Literal["drop", "cut"], counts: Counts, *, same_time: bool = False
) -> Iterator[TraceJob]:
    """The state machine of the Google traces' job and task life cycles (module docstring), over
    ``events`` in time order: yield each job as its terminal job event arrives, then the open ones
    (``open_jobs="cut"``).

    ``same_time``: the events of one task at one microsecond come in a fixed order rather than as they
    happened (2019: sorted, EVICT/FAIL/KILL/LOST, then FINISH, then SUBMIT, then SCHEDULE), so an end
    that finds no attempt running and a SCHEDULE at that same microsecond are read as an attempt of zero
    length: always for a FINISH (a task finishes only after it ran), for another end unless a SUBMIT
    comes between (a pending task killed, then submitted again and scheduled)."""
    jobs: dict[int, _Job] = {}
    done: set[int] = set()  # ended jobs, for late events: ids only
    last = WINDOW_START
    for ts, order, jid, index, kind, klass, prio, cpu, mem, after in events:
        is_job = order != 1
        counts.rows += 1
        if ts == AFTER:
            continue  # after the window: as if it never happened in it
        last = max(last, ts)
        job = jobs.get(jid)
        if job is None:
            if jid in done:
                counts.late_events += 1
                continue
            job = jobs[jid] = _Job()
            job.before = ts == 0 or not (is_job and kind == SUBMIT)
            counts.open_peak = max(counts.open_peak, len(jobs))
        at = ts or WINDOW_START
        if is_job:
            if klass is not None:
                job.sched_class = klass
            if prio is not None:
                job.priority = prio
            if after:
                job.after = after
            if kind == SUBMIT and job.submit is None:
                job.submit = at
            elif kind in JOB_ENDS:
                del jobs[jid]
                done.add(jid)
                if job.before and open_jobs == "drop":
                    counts.jobs_open_dropped += 1
                    continue
                counts.jobs_open_cut += job.before
                out = _finish(jid, job, at, counts)
                if out is not None:
                    counts.jobs_written += 1
                    counts.tasks_written += out.tasks
                    yield out
            continue
        task = job.tasks.get(index)
        if task is None:
            if len(job.tasks) >= MAX_JOB_TASKS:
                raise TraceError(f"job {jid}: more than the limit of {MAX_JOB_TASKS:,} tasks a job")
            task = job.tasks[index] = _Task()
        if cpu is not None:
            task.cpu = cpu
        if mem is not None:
            task.mem = mem
        if prio is not None:
            task.priority = prio
        if kind == SUBMIT:
            if task.span is not None:
                counts.attempts_redone += 1  # a resubmission: the ended attempt is not the task's run
                task.span = None
            task.ended = None  # not task.finished: see same_time
            if job.submit is None and not job.before:
                job.submit = at
        elif kind == SCHEDULE:
            if same_time and task.start is None and (task.ended == at or task.finished == at):
                task.span = 0  # scheduled and ended at this microsecond (the end was sorted first)
                task.attempts += 1
                task.ended = None
            else:
                task.start = at
        elif kind in ENDS:
            if task.start is not None:
                task.span = max(0, at - task.start)
                task.start = None
                task.attempts += 1
            elif not same_time:
                pass
            elif kind == FINISH:
                task.finished = at
            else:
                task.ended = at
    for jid, job in jobs.items():  # still open at the end of the window
        if open_jobs == "drop":
            counts.jobs_open_dropped += 1
            continue
        counts.jobs_open_cut += 1
        out = _finish(jid, job, last, counts)
        if out is not None:
            counts.jobs_written += 1
            counts.tasks_written += out.tasks
            yield out
