"""Effects: what a core asks its driver to do (DESIGN §2). Cores return lists of these and do no I/O.

Each is a dataclass (equality and repr for tests) with an ``__init__`` of its own: the compiled build
(``speedups.py``) makes that a native constructor, where a dataclass-made one runs as interpreted code
(about 3x the cost of making one; a simulated run makes tens of millions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TaskId = tuple[int, int]
"""A task is named by (job id, task index)."""


@dataclass(slots=True, init=False)
class Send:
    to: str
    msg: Any

    def __init__(self, to: str, msg: Any) -> None:
        self.to = to
        self.msg = msg


@dataclass(slots=True, init=False)
class Multicast:
    """One message to several peers, as a ``Send`` to each in this order (a scheduler's update or cancel
    to every node holding a job's probes: one effect, where a ``Send`` each cost tens of millions of
    objects in a simulated run). Each peer is named once, and the list is not changed afterwards (the
    simulator keeps it to compare with the next multicast of the kind)."""

    to: list[str]
    msg: Any

    def __init__(self, to: list[str], msg: Any) -> None:
        self.to = to
        self.msg = msg


@dataclass(slots=True, init=False)
class SetTimer:
    """Call ``on_timer(now, key)`` after ``delay`` seconds; setting a key again replaces its timer."""

    key: Any
    delay: float

    def __init__(self, key: Any, delay: float) -> None:
        self.key = key
        self.delay = delay


@dataclass(slots=True, init=False)
class CancelTimer:
    key: Any

    def __init__(self, key: Any) -> None:
        self.key = key


@dataclass(slots=True, init=False)
class Launch:
    """Node monitor only: start a task that runs for ``duration`` seconds of running time."""

    task_id: TaskId
    duration: float

    def __init__(self, task_id: TaskId, duration: float) -> None:
        self.task_id = task_id
        self.duration = duration


@dataclass(slots=True, init=False)
class Suspend:
    task_id: TaskId

    def __init__(self, task_id: TaskId) -> None:
        self.task_id = task_id


@dataclass(slots=True, init=False)
class Resume:
    task_id: TaskId

    def __init__(self, task_id: TaskId) -> None:
        self.task_id = task_id


@dataclass(slots=True, init=False)
class Kill:
    task_id: TaskId

    def __init__(self, task_id: TaskId) -> None:
        self.task_id = task_id


Effect = Send | Multicast | SetTimer | CancelTimer | Launch | Suspend | Resume | Kill
