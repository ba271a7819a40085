"""Trace files in the Hawk/Eagle format (DESIGN §4).

One job per line, whitespace separated, times in seconds::

    submit_time  num_tasks  mean_task_duration  d_1 d_2 ... d_num_tasks

Blank lines and lines whose first field starts with ``#`` are skipped. Jobs may appear out of submit
order; :func:`read_trace` returns them sorted by submit time, stably (ties keep file order).
Any bad line raises :class:`TraceError` with one line naming the file, the line and the field, e.g.
``trace.tr:12: field 'num_tasks': expected 3 durations, found 2``.

Limits of input (issue 26; ``docs/inputs.md``): every reader and workload builder of the project checks
its numbers against the constants below, before it allocates anything in proportion to them, and names
the limit in its one-line error. Each is far above what any real trace has (the figures measured on the
bundled files, ``experiments/traces``), and low enough that a replay stays within a machine's memory and
a float's precision.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

__all__ = [
    "MAX_DURATION",
    "MAX_JOBS",
    "MAX_JOB_TASKS",
    "MAX_TASKS",
    "MAX_TIME",
    "TraceError",
    "TraceJob",
    "read_trace",
]

MAX_TIME = 1e9
"""Largest time of an input, in seconds (a submit time, an Alibaba ``start_s``; a replay's submit times
and task durations once scaled and merged): 31.7 years. The bundled traces span at most 1.5e6 s
(Google's last submit; Alibaba's starts end at 6.9e5 s). Below it a float still resolves 1.2e-7 s, so a
job's completion time (a difference of two such times) keeps its microseconds; at 1e300 a 5 s job had a
JCT of 0."""
MAX_DURATION = 1e8
"""Largest task duration of an input, in seconds (a task, a mean task duration, an Alibaba
``duration_s``, a TPC-H mean task runtime): 3.2 years. The bundled traces' longest is 326,131 s
(a Google task; Alibaba 59,708 s, TPC-H 50.5 s)."""
MAX_JOB_TASKS = 1_000_000
"""Most tasks of one job (and of one stage) an input may have. The bundled traces' largest job has
175,991 tasks (Alibaba, whose largest stage has 97,890; Google 4,950; a TPC-H stage 3,013)."""
MAX_TASKS = 10_000_000
"""Most tasks of a whole workload: a trace file read, or a replay's jobs once built (after merging
tasks). The bundled Alibaba file has 3.05 M tasks in all, the Google sample 312,558; 1e7 tasks take
about 0.5 GB of durations alone, several GB in a simulator."""
MAX_JOBS = 1_000_000
"""Most jobs of a workload (trace lines, Alibaba jobs, ``--jobs``). The bundled traces have 10,000
(Google) and 6,535 (Alibaba) jobs; the whole public Google 2011 trace has about 670,000. A million jobs
take about 0.5 GB before they run."""

_FIELDS = ("submit_time", "num_tasks", "mean_task_duration")


class TraceError(ValueError):
    """A trace file that cannot be read; the message is one line: ``path:LINE: field 'NAME': what``."""


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job as written in the trace, unscaled (trace seconds)."""

    line: int
    """1-based line number in the trace file."""
    submit: float
    durations: list[float]
    mean: float
    """The trace's own mean task duration field (what the short/long cutoff is applied to)."""

    @property
    def tasks(self) -> int:
        return len(self.durations)

    @property
    def task_seconds(self) -> float:
        return math.fsum(self.durations)


def _number(path: str, lineno: int, field: str, token: str, limit: float = MAX_DURATION) -> float:
    try:
        value = float(token)
    except ValueError:
        raise TraceError(f"{path}:{lineno}: field '{field}': not a number: {token!r}") from None
    if not math.isfinite(value):
        raise TraceError(f"{path}:{lineno}: field '{field}': not a finite number: {token!r}")
    if value < 0:
        raise TraceError(f"{path}:{lineno}: field '{field}': must not be negative, got {token}")
    if value > limit:
        raise TraceError(f"{path}:{lineno}: field '{field}': {token} is above the limit of {limit:g} s")
    return value


def _count(path: str, lineno: int, token: str) -> int:
    try:
        value = int(token)
    except ValueError:
        number = _number(path, lineno, "num_tasks", token, math.inf)
        if not number.is_integer():
            raise TraceError(f"{path}:{lineno}: field 'num_tasks': not an integer: {token!r}") from None
        value = int(number)
    if value < 1:
        raise TraceError(f"{path}:{lineno}: field 'num_tasks': must be at least 1, got {token}")
    if value > MAX_JOB_TASKS:
        raise TraceError(
            f"{path}:{lineno}: field 'num_tasks': {token} is above the limit of {MAX_JOB_TASKS:,} tasks a job"
        )
    return value


def _parse_line(path: str, lineno: int, parts: list[str]) -> TraceJob:
    if len(parts) < 3:
        raise TraceError(f"{path}:{lineno}: field '{_FIELDS[len(parts)]}': missing")
    submit = _number(path, lineno, "submit_time", parts[0], MAX_TIME)
    num_tasks = _count(path, lineno, parts[1])
    mean = _number(path, lineno, "mean_task_duration", parts[2])
    tokens = parts[3:]
    if len(tokens) != num_tasks:
        raise TraceError(
            f"{path}:{lineno}: field 'num_tasks': expected {num_tasks} durations, found {len(tokens)}"
        )
    try:
        durations = list(map(float, tokens))
        bad = not all(0.0 <= d <= MAX_DURATION for d in durations)  # a NaN is bad too
    except ValueError:
        bad = True
    if bad:  # slow path, only to name the offending field
        for i, token in enumerate(tokens, 1):
            _number(path, lineno, f"d_{i}", token)
    return TraceJob(line=lineno, submit=submit, durations=durations, mean=mean)


def read_trace(path: str | os.PathLike[str]) -> list[TraceJob]:
    """Read a whole trace file; jobs come back sorted by submit time (stable).

    Raises :class:`TraceError` (one line naming file, line and field) on the first bad line, or when the
    file cannot be opened.
    """
    name = os.fspath(path)
    jobs: list[TraceJob] = []
    tasks = 0
    try:
        with open(name, encoding="utf-8", errors="replace") as f:
            for lineno, text in enumerate(f, 1):
                parts = text.split()
                if not parts or parts[0].startswith("#"):
                    continue
                if len(jobs) == MAX_JOBS:
                    raise TraceError(
                        f"{name}:{lineno}: field 'submit_time': more than the limit of {MAX_JOBS:,} jobs"
                    )
                job = _parse_line(name, lineno, parts)
                tasks += job.tasks
                if tasks > MAX_TASKS:
                    limit = f"more than the limit of {MAX_TASKS:,} tasks a trace"
                    raise TraceError(f"{name}:{lineno}: field 'num_tasks': {limit}")
                jobs.append(job)
    except OSError as exc:
        raise TraceError(f"{name}: cannot read trace: {exc.strerror or exc}") from None
    jobs.sort(key=lambda job: job.submit)  # stable, and linear time on an already sorted file
    return jobs
