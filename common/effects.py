"""Effects: what a core asks its driver to do (DESIGN §2). Cores return lists of these and do no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TaskId = tuple[int, int]
"""A task is named by (job id, task index)."""


@dataclass(slots=True)
class Send:
    to: str
    msg: Any


@dataclass(slots=True)
class SetTimer:
    """Call ``on_timer(now, key)`` after ``delay`` seconds; setting a key again replaces its timer."""

    key: Any
    delay: float


@dataclass(slots=True)
class CancelTimer:
    key: Any


@dataclass(slots=True)
class Launch:
    """Node monitor only: start a task that runs for ``duration`` seconds of running time."""

    task_id: TaskId
    duration: float


@dataclass(slots=True)
class Suspend:
    task_id: TaskId


@dataclass(slots=True)
class Resume:
    task_id: TaskId


@dataclass(slots=True)
class Kill:
    task_id: TaskId


Effect = Send | SetTimer | CancelTimer | Launch | Suspend | Resume | Kill
