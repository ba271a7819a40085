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

from collections.abc import Iterable

from ..common.effects import TaskId
from ..common.messages import Holding


class Holdings:
    """The start times of centrally placed tasks running here and the log of those that finished."""

    def __init__(self) -> None:
        self.started: dict[TaskId, float] = {}
        self.finished: dict[str, list[tuple[int, int, float]]] = {}

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
            self.finished.setdefault(scheduler, []).append((task_id[0], task_id[1], start))

    def holding(
        self, now: float, scheduler: str, queued: Iterable[TaskId], running: Iterable[TaskId]
    ) -> Holding:
        """The answer to ``scheduler``'s ``GetHolding``: ``queued`` and ``running`` are its tasks here."""
        started = self.started
        return Holding(
            [(j, i) for j, i in queued],
            [(j, i, now - started.get((j, i), now)) for j, i in running],
            [(j, i, now - start) for j, i, start in self.finished.get(scheduler, ())],
        )
