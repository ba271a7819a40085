"""Events of the 2011 trace's schema (``common/traces/google2011.py`` cites it) for jobs whose truth is
known: what the tests and the conversion benchmark feed ``aviary trace convert google-2011``, since the
real trace cannot be downloaded here. Streamed: rows come out in time order while only the jobs still
running are held (a heap of their future rows).

A true job: submitted at ``submit_us``; each task submitted with it, then for each *redo* attempt
scheduled, ended by EVICT/FAIL/KILL/LOST after ``run_us`` and resubmitted at once, then scheduled and
FINISHed after ``duration_us``; the job FINISHes with its last task. The converter must give back, for
each, ``expected(job)``.
"""

from __future__ import annotations

import gzip
import heapq
import math
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..trace import TraceJob
from .google2011 import EVICT, FAIL, FINISH, KILL, LOST, SCHEDULE, SUBMIT, WINDOW_START

__all__ = ["TrueJob", "TrueTask", "event_rows", "expected", "random_jobs", "write_parts"]


@dataclass(frozen=True, slots=True)
class TrueTask:
    duration_us: int
    cpu: float
    mem: float
    priority: int
    redo: tuple[tuple[int, int], ...] = ()
    """Attempts before the last: (EVICT/FAIL/KILL/LOST, µs it ran)."""


@dataclass(frozen=True, slots=True)
class TrueJob:
    jid: int
    submit_us: int
    sched_class: int
    tasks: tuple[TrueTask, ...]
    after: tuple[int, ...] = ()
    """Jobs it waits for (2019 ``start_after_collection_ids``; the 2011 schema has none)."""


def expected(job: TrueJob) -> TraceJob:
    """What converting ``job``'s events must give (the last attempt's run per task, the largest
    request, the largest priority)."""
    ds = [t.duration_us / 1e6 for t in job.tasks]
    return TraceJob(
        line=0,
        submit=job.submit_us / 1e6,
        durations=ds,
        mean=math.fsum(ds) / len(ds),
        cpu=max(t.cpu for t in job.tasks),
        mem=max(t.mem for t in job.tasks),
        priority=max(t.priority for t in job.tasks),
        sched_class=job.sched_class,
        name=str(job.jid),
        after=tuple(map(str, job.after)),
    )


def random_jobs(rng: random.Random, n: int, *, max_tasks: int = 20, redo: float = 0.1) -> Iterator[TrueJob]:
    """``n`` random true jobs in submit order (Poisson arrivals, a mean gap of 2 s, from the window's
    start); about ``redo`` of the tasks have one or two earlier attempts."""
    t = WINDOW_START
    for k in range(n):
        t += int(rng.expovariate(1 / 2e6)) + 1
        tasks = []
        for _ in range(rng.randint(1, max_tasks)):
            attempts = tuple(
                (rng.choice((EVICT, FAIL, KILL, LOST)), rng.randint(1, 10**8))
                for _ in range(rng.choice((1, 2)) if rng.random() < redo else 0)
            )
            tasks.append(
                TrueTask(
                    duration_us=rng.randint(1, 10**9),
                    cpu=round(rng.random(), 4),
                    mem=round(rng.random(), 4),
                    priority=rng.randint(0, 11),
                    redo=attempts,
                )
            )
        yield TrueJob(jid=6_000_000_000 + k, submit_us=t, sched_class=rng.randint(0, 3), tasks=tuple(tasks))


def _job_rows(job: TrueJob) -> Iterator[tuple[int, bool, list[str]]]:
    j, c = str(job.jid), str(job.sched_class)
    yield job.submit_us, True, [str(job.submit_us), "", j, str(SUBMIT), "user", c, "name", "logical"]
    end = job.submit_us
    for i, task in enumerate(job.tasks):
        base = [
            "",
            j,
            str(i),
            "",
            "",
            "user",
            c,
            str(task.priority),
            str(task.cpu),
            str(task.mem),
            "0.001",
            "0",
        ]

        def row(ts: int, kind: int, machine: str = "", base: list[str] = base) -> tuple[int, bool, list[str]]:
            fields = [str(ts), *base]
            fields[4], fields[5] = machine, str(kind)
            return ts, False, fields

        t = job.submit_us
        yield row(t, SUBMIT)
        for kind, run in task.redo:
            yield row(t, SCHEDULE, "42")
            t += run
            yield row(t, kind, "42")
            yield row(t, SUBMIT)
        yield row(t, SCHEDULE, "7")
        t += task.duration_us
        yield row(t, FINISH, "7")
        end = max(end, t)
    yield end, True, [str(end), "", j, str(FINISH), "user", c, "name", "logical"]


def event_rows(jobs: Iterable[TrueJob]) -> Iterator[tuple[bool, list[str]]]:
    """The rows of ``jobs`` (in submit order) in time order, as ``(is a job event, fields)``."""
    heap: list[tuple[int, int, bool, list[str]]] = []
    seq = 0
    for job in jobs:
        while heap and heap[0][0] < job.submit_us:
            _, _, is_job, fields = heapq.heappop(heap)
            yield is_job, fields
        for ts, is_job, fields in _job_rows(job):
            heapq.heappush(heap, (ts, seq, is_job, fields))
            seq += 1
    while heap:
        _, _, is_job, fields = heapq.heappop(heap)
        yield is_job, fields


def write_parts(
    folder: Path, rows: Iterable[tuple[bool, list[str]]], rows_per_part: int, level: int = 6
) -> int:
    """Write ``rows`` as ``folder/job_events/part-NNNNN-of-?????.csv.gz`` and ``task_events/...``, as
    published (no header); returns the compressed bytes written."""
    outs: dict[bool, tuple[gzip.GzipFile | None, int, int]] = {}
    written = 0
    for is_job, fields in rows:
        kind = "job_events" if is_job else "task_events"
        f, part, count = outs.get(is_job, (None, -1, rows_per_part))
        if count >= rows_per_part:
            if f is not None:
                f.close()
            part += 1
            (folder / kind).mkdir(parents=True, exist_ok=True)
            f = gzip.open(  # noqa: SIM115 (closed at the next part or the end)
                folder / kind / f"part-{part:05d}-of-99999.csv.gz", "wb", compresslevel=level
            )
            count = 0
        assert f is not None
        f.write((",".join(fields) + "\n").encode())
        outs[is_job] = (f, part, count + 1)
    for f, _, _ in outs.values():
        if f is not None:
            f.close()
    for kind in ("job_events", "task_events"):
        written += (
            sum(p.stat().st_size for p in (folder / kind).glob("*.gz")) if (folder / kind).is_dir() else 0
        )
    return written
