"""The interface every role implements: a core turns inputs into effects and never does I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, MutableMapping
from typing import Any

from mypy_extensions import mypyc_attr

from .effects import Effect, Send, TaskId
from .messages import JobDone


@mypyc_attr(allow_interpreted_subclasses=True)
class Core:
    """Base class of all cores. ``now`` is the driver's clock in seconds (real or virtual)."""

    role = "core"

    def __init__(self, name: str) -> None:
        self.name = name
        self.counters: Counter[str] = Counter()

    def start(self, now: float) -> list[Effect]:
        return []

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        raise NotImplementedError

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        return []

    def on_task_exit(self, now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        return []

    def task_log(self) -> list[Any]:
        """A central scheduler's ``[job_id, task_index, start, end, demand]`` per finished task."""
        return []

    offloop: frozenset[Any] = frozenset()
    """Timer keys whose handler may run long (TetriSched's solve): the real runtime runs it in a worker
    thread and holds the inputs that arrive meanwhile, so its event loop keeps reading the socket; the
    simulator calls it like any other."""

    latest_wins: frozenset[type] = frozenset()
    """Message kinds whose handler only records the message's content about ``(sender, msg.job_id)``:
    it returns no effects, does not use ``now``, and a later message of the kind from the same sender
    about the same job overrides an earlier one. The simulator may hold such messages and, before the
    core's next other input, hand it only the last of each (sender, job) that has arrived by then (the
    real runtime delivers every one; the core's state is the same either way)."""

    def cycle_log(self) -> list[Any]:
        """A periodic planner's ``[now, pending, launched, columns, rows, solves, solver seconds]`` per
        cycle (TetriSched's MILP size and solve time)."""
        return []

    def gauges(self) -> dict[str, float]:
        """What the core holds right now (a central scheduler's pending jobs, stages and tasks and its last
        solve's time, a multi-resource node's running demand per resource...), for the live dashboard:
        read when its ``Counters`` are asked for, never part of the results."""
        return {}

    def unexpected(self, msg: Any) -> list[Effect]:
        """A well-formed message this role does not handle: count it and carry on."""
        self.counters[f"unexpected.{type(msg).__name__}"] += 1
        return []

    def refuse_submit(self, sender: str, msg: Any, jobs: Container[int]) -> list[Effect] | None:
        """The answer to a ``SubmitJob`` that leaves nothing to schedule, else None: a job id already
        known is counted and ignored, a job without tasks is done at once."""
        if msg.job_id in jobs:
            self.counters["duplicate_job"] += 1
            return []
        if not msg.durations:
            return [Send(sender, JobDone(msg.job_id, 0.0))]
        return None

    def task_finished(self, jobs: MutableMapping[int, Any], msg: Any) -> list[Effect]:
        """Count one finished task of ``jobs[msg.job_id]`` (``msg``: a ``TaskFinished``); after the
        job's last one, forget the job and tell its frontend (``JobDone`` with the delay of its first
        start). A job state has ``frontend``, ``durations``, ``arrival``, ``first_start``, ``finished``."""
        job = jobs[msg.job_id]
        if not msg.ok:
            self.counters["tasks_failed"] += 1
        job.finished += 1
        if job.finished < len(job.durations):
            return []
        del jobs[msg.job_id]
        first = job.arrival if job.first_start is None else job.first_start
        return [Send(job.frontend, JobDone(msg.job_id, first - job.arrival))]
