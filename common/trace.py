"""Trace files in the Hawk/Eagle format (DESIGN §4).

One job per line, whitespace separated, times in seconds::

    submit_time  num_tasks  mean_task_duration  d_1 d_2 ... d_num_tasks

Blank lines and lines whose first field starts with ``#`` are skipped. Jobs may appear out of submit
order; :func:`read_trace` returns them sorted by submit time, stably (ties keep file order);
:func:`iter_trace` yields them one line at a time, in file order (a generator: nothing is held).

**Aviary trace format** (``docs/traces.md``): the same lines, optionally followed by ``KEY=VALUE``
tokens after the durations, for what the Hawk/Eagle format cannot carry (:data:`EXTRA_KEYS`): the job's
CPU and memory requests per task (``cpu=``, ``mem=``: normalized to the largest machine, as the Google
traces give them), ``prio=`` and ``class=`` (Google priority and scheduling class), ``job=`` (the source's
job id), ``after=`` (comma-separated source job ids this job waits for) and ``gang=1`` (the tasks start
together: an SWF job). A reader of the plain format sees a line whose first ``3 + num_tasks`` fields are
the Hawk/Eagle ones; ``aviary trace convert --plain`` writes none of the extras.
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
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "EXTRA_KEYS",
    "MAX_DURATION",
    "MAX_JOBS",
    "MAX_JOB_TASKS",
    "MAX_TASKS",
    "MAX_TIME",
    "TraceError",
    "TraceJob",
    "format_job",
    "iter_trace",
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
MAX_TASKS = 30_000_000
"""Most tasks of a whole workload: a trace file read, or a replay's jobs once built (after merging
tasks). The whole Google 2011 month has about 25 M tasks (issue 49: a month replayed on 12,500 nodes),
this is that with a fifth more; the bundled Alibaba file has 3.05 M tasks in all, the Google sample
312,558. Read whole (:func:`read_trace`, a replay's list of jobs) a task costs about 130 bytes, 3-4 GB at
the limit; streamed (:func:`aviary.common.workload.stream_workload`) a replay holds only the jobs it is
running, and 32 bytes a job of the trace."""
MAX_JOBS = 1_000_000
"""Most jobs of a workload (trace lines, Alibaba jobs, ``--jobs``). The bundled traces have 10,000
(Google) and 6,535 (Alibaba) jobs; the whole public Google 2011 trace has about 670,000. A million jobs
take about 0.5 GB before they run."""

_FIELDS = ("submit_time", "num_tasks", "mean_task_duration")

EXTRA_KEYS = ("cpu", "mem", "prio", "class", "job", "after", "gang")
"""The ``KEY=VALUE`` tokens an Aviary trace line may end with, in the order :func:`format_job` writes
them: ``cpu``, ``mem`` (per-task requests, a share of the largest machine, 0..:data:`MAX_SHARE`),
``prio``, ``class`` (integers), ``job`` (a name), ``after`` (names, comma-separated), ``gang`` (0 or 1)."""

MAX_SHARE = 1e3
"""Largest ``cpu=`` / ``mem=`` request read (a share of the largest machine; the Google traces' are <= 1)."""


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
    cpu: float | None = None
    """Per-task CPU request, a share of the largest machine's cores (``cpu=``); ``None``: not given."""
    mem: float | None = None
    """Per-task memory request, a share of the largest machine's memory (``mem=``); ``None``: not given."""
    priority: int | None = None
    """The source's priority (Google 0..11; ``prio=``)."""
    sched_class: int | None = None
    """The source's scheduling class (Google 0..3; ``class=``)."""
    name: str | None = None
    """The source's job id (``job=``)."""
    after: tuple[str, ...] = ()
    """Source job ids this job waits for (``after=``: Google 2019 ``start_after_collection_ids``, SWF
    preceding job)."""
    gang: bool = False
    """All tasks start together (``gang=1``: an SWF job of N processors)."""

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
    extras: dict[str, object] = {}
    if len(tokens) > num_tasks and "=" in tokens[-1]:
        extras = _extras(path, lineno, tokens[num_tasks:])
        tokens = tokens[:num_tasks]
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
    return TraceJob(line=lineno, submit=submit, durations=durations, mean=mean, **extras)  # type: ignore[arg-type]


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:/")


def _name(path: str, lineno: int, key: str, token: str) -> str:
    if not token or len(token) > 64 or not set(token) <= _NAME_CHARS:
        raise TraceError(
            f"{path}:{lineno}: field '{key}': not a job id (1-64 of A-Z a-z 0-9 _-.:/): {token!r}"
        )
    return token


def _int(path: str, lineno: int, key: str, token: str, low: int, high: int) -> int:
    try:
        value = int(token)
    except ValueError:
        raise TraceError(f"{path}:{lineno}: field '{key}': not an integer: {token!r}") from None
    if not low <= value <= high:
        raise TraceError(f"{path}:{lineno}: field '{key}': must be in {low}..{high}, got {token}")
    return value


def _extras(path: str, lineno: int, tokens: list[str]) -> dict[str, object]:
    """The ``KEY=VALUE`` tokens of an Aviary trace line as :class:`TraceJob` fields."""
    out: dict[str, object] = {}
    for token in tokens:
        key, eq, value = token.partition("=")
        if not eq or key not in EXTRA_KEYS:
            if not eq:
                raise TraceError(f"{path}:{lineno}: field 'num_tasks': more fields than {tokens!r} allow")
            raise TraceError(f"{path}:{lineno}: field '{key}': unknown (one of {', '.join(EXTRA_KEYS)})")
        if key in ("cpu", "mem"):
            out[key] = _number(path, lineno, key, value, MAX_SHARE)
        elif key == "prio":
            out["priority"] = _int(path, lineno, key, value, -(10**9), 10**9)
        elif key == "class":
            out["sched_class"] = _int(path, lineno, key, value, -(10**9), 10**9)
        elif key == "gang":
            out["gang"] = bool(_int(path, lineno, key, value, 0, 1))
        elif key == "job":
            out["name"] = _name(path, lineno, key, value)
        else:
            names = value.split(",") if value else []
            if len(names) > MAX_JOB_TASKS:
                raise TraceError(f"{path}:{lineno}: field 'after': more than {MAX_JOB_TASKS:,} jobs")
            out["after"] = tuple(_name(path, lineno, key, n) for n in names)
    return out


def _short(x: float) -> str:
    """A number as short as it reads back exactly (``repr``), integers without ``.0``."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def format_job(job: TraceJob, *, plain: bool = False) -> str:
    """One trace line (no newline) that :func:`iter_trace` reads back as ``job`` (but its ``line``):
    the Hawk/Eagle fields, then, unless ``plain``, the extras that are set (:data:`EXTRA_KEYS` order)."""
    parts = [_short(job.submit), str(len(job.durations)), _short(job.mean), *map(_short, job.durations)]
    if not plain:
        if job.cpu is not None:
            parts.append(f"cpu={_short(job.cpu)}")
        if job.mem is not None:
            parts.append(f"mem={_short(job.mem)}")
        if job.priority is not None:
            parts.append(f"prio={job.priority}")
        if job.sched_class is not None:
            parts.append(f"class={job.sched_class}")
        if job.name is not None:
            parts.append(f"job={job.name}")
        if job.after:
            parts.append("after=" + ",".join(job.after))
        if job.gang:
            parts.append("gang=1")
    return " ".join(parts)


def iter_trace(path: str | os.PathLike[str]) -> Iterator[TraceJob]:
    """Yield the jobs of a trace file one line at a time, in file order (bounded memory: one job).

    Raises :class:`TraceError` (one line naming file, line and field) at the first bad line, or when the
    file cannot be opened; limits per job (:data:`MAX_JOB_TASKS`...), not per file.
    """
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8", errors="replace") as f:
            for lineno, text in enumerate(f, 1):
                parts = text.split()
                if parts and not parts[0].startswith("#"):
                    yield _parse_line(name, lineno, parts)
    except OSError as exc:
        raise TraceError(f"{name}: cannot read trace: {exc.strerror or exc}") from None


def read_trace(path: str | os.PathLike[str]) -> list[TraceJob]:
    """Read a whole trace file; jobs come back sorted by submit time (stable).

    Raises :class:`TraceError` (one line naming file, line and field) on the first bad line, or when the
    file cannot be opened.
    """
    name = os.fspath(path)
    jobs: list[TraceJob] = []
    tasks = 0
    for job in iter_trace(name):
        if len(jobs) == MAX_JOBS:
            raise TraceError(
                f"{name}:{job.line}: field 'submit_time': more than the limit of {MAX_JOBS:,} jobs"
            )
        tasks += job.tasks
        if tasks > MAX_TASKS:
            limit = f"more than the limit of {MAX_TASKS:,} tasks a trace"
            raise TraceError(f"{name}:{job.line}: field 'num_tasks': {limit}")
        jobs.append(job)
    jobs.sort(key=lambda job: job.submit)  # stable, and linear time on an already sorted file
    return jobs
