"""What a node holds of a central scheduler's work, for the scheduler's restart (issue 26).

A central scheduler that died comes back empty and asks every live node (``GetHolding``) what it placed
there: the node answers (``Holding``) with its tasks queued, running (or suspended) and finished, each
finished or running one with the seconds since it started. Finished tasks are kept because their
``TaskFinished`` may have reached the dead process and been lost with it; the restarted scheduler counts
those of its unfinished jobs as done, so no task runs twice and none is lost. This is the node side of
YARN's work-preserving ResourceManager restart, where NodeManagers keep their containers and report
them on re-registration (`docs/failures.md`).

Only centrally placed tasks are kept (``PlaceTask``, ``LongTask``): a probe's task belongs to a
distributed scheduler, whose death re-runs its jobs elsewhere.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from ..common.effects import TaskId
from ..common.messages import Holding


class Holdings:
    """The start times of centrally placed tasks running here and the log of those that finished: per
    scheduler, their (job, index) pairs and start times in two flat arrays (24 bytes a task, not a tuple's
    ~105: a month of the Google trace under Hawk finishes 4 M central tasks)."""

    def __init__(self) -> None:
        self.started: dict[TaskId, float] = {}
        self.finished: dict[str, tuple[array[int], array[float]]] = {}

    def launched(self, task_id: TaskId, now: float) -> None:
        """A centrally placed task started running (its first launch, not a resume)."""
        self.started.setdefault(task_id, now)

    def killed(self, task_id: TaskId) -> None:
        """A centrally placed task was killed (preempted): placed again, it starts anew."""
        self.started.pop(task_id, None)

    def ended(self, scheduler: str, task_id: TaskId, now: float) -> None:
        """A centrally placed task ended (a task of no record here is ignored)."""
        start = self.started.pop(task_id, None)
        if start is not None:
            log = self.finished.get(scheduler)
            if log is None:
                log = self.finished[scheduler] = (array("q"), array("d"))
            log[0].extend(task_id)
            log[1].append(start)

    def holding(
        self, now: float, scheduler: str, queued: Iterable[TaskId], running: Iterable[TaskId]
    ) -> Holding:
        """The answer to ``scheduler``'s ``GetHolding``: ``queued`` and ``running`` are its tasks here."""
        started = self.started
        finished: list[tuple[int, int, float]] = []
        log = self.finished.get(scheduler)
        if log is not None:
            ids, starts = log
            finished = [(ids[2 * k], ids[2 * k + 1], now - start) for k, start in enumerate(starts)]
        return Holding(
            [(j, i) for j, i in queued],
            [(j, i, now - started.get((j, i), now)) for j, i in running],
            finished,
        )
