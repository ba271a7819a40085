"""Trace files in the Hawk/Eagle format (DESIGN §4).

One job per line, whitespace separated, times in seconds::

    submit_time  num_tasks  mean_task_duration  d_1 d_2 ... d_num_tasks

Blank lines and lines whose first field starts with ``#`` are skipped. Jobs may appear out of submit
order; :func:`read_trace` returns them sorted by submit time, stably (ties keep file order).
Any bad line raises :class:`TraceError` with one line naming the file, the line and the field, e.g.
``trace.tr:12: field 'num_tasks': expected 3 durations, found 2``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

__all__ = ["TraceError", "TraceJob", "read_trace"]

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


def _number(path: str, lineno: int, field: str, token: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise TraceError(f"{path}:{lineno}: field '{field}': not a number: {token!r}") from None
    if not math.isfinite(value):
        raise TraceError(f"{path}:{lineno}: field '{field}': not a finite number: {token!r}")
    if value < 0:
        raise TraceError(f"{path}:{lineno}: field '{field}': must not be negative, got {token}")
    return value


def _count(path: str, lineno: int, token: str) -> int:
    try:
        value = int(token)
    except ValueError:
        number = _number(path, lineno, "num_tasks", token)
        if not number.is_integer():
            raise TraceError(f"{path}:{lineno}: field 'num_tasks': not an integer: {token!r}") from None
        value = int(number)
    if value < 1:
        raise TraceError(f"{path}:{lineno}: field 'num_tasks': must be at least 1, got {token}")
    return value


def _parse_line(path: str, lineno: int, parts: list[str]) -> TraceJob:
    if len(parts) < 3:
        raise TraceError(f"{path}:{lineno}: field '{_FIELDS[len(parts)]}': missing")
    submit = _number(path, lineno, "submit_time", parts[0])
    num_tasks = _count(path, lineno, parts[1])
    mean = _number(path, lineno, "mean_task_duration", parts[2])
    tokens = parts[3:]
    if len(tokens) != num_tasks:
        raise TraceError(
            f"{path}:{lineno}: field 'num_tasks': expected {num_tasks} durations, found {len(tokens)}"
        )
    try:
        durations = list(map(float, tokens))
        bad = not math.isfinite(sum(durations)) or min(durations) < 0
    except ValueError:
        bad = True
    if bad:  # slow path, only to name the offending field
        for i, token in enumerate(tokens, 1):
            _number(path, lineno, f"d_{i}", token)
        raise TraceError(f"{path}:{lineno}: field 'd_1..d_{num_tasks}': task-seconds overflow")
    return TraceJob(line=lineno, submit=submit, durations=durations, mean=mean)


def read_trace(path: str | os.PathLike[str]) -> list[TraceJob]:
    """Read a whole trace file; jobs come back sorted by submit time (stable).

    Raises :class:`TraceError` (one line naming file, line and field) on the first bad line, or when the
    file cannot be opened.
    """
    name = os.fspath(path)
    jobs: list[TraceJob] = []
    try:
        with open(name, encoding="utf-8", errors="replace") as f:
            for lineno, text in enumerate(f, 1):
                parts = text.split()
                if not parts or parts[0].startswith("#"):
                    continue
                jobs.append(_parse_line(name, lineno, parts))
    except OSError as exc:
        raise TraceError(f"{name}: cannot read trace: {exc.strerror or exc}") from None
    jobs.sort(key=lambda job: job.submit)  # stable, and linear time on an already sorted file
    return jobs
