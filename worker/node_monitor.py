"""The node monitor core: slots, a queue of probes and placed tasks, late binding (DESIGN §2, §5).

Sparrow's node side (thesis §2.3.5, after Ousterhout et al., SOSP'13): a probe is a reservation in
the node's queue; when a slot is free and a probe is at the head of the queue, the node reserves the
slot and asks the probe's scheduler for a task (``GetTask``). The scheduler answers ``AssignTask``
(the node runs it in the reserved slot) or ``NoTask`` (the slot is freed and the next entry is
served). ``CancelProbes`` drops a job's queued probes once all its tasks are handed out. A task placed
directly by a central scheduler (``PlaceTask``) waits in the same queue and starts without a round
trip when it reaches the head.

The queue discipline is FIFO here; later policies (SRPT, LAS) replace :class:`FifoQueue`.

Failures (issue 14): on ``PeerDown`` of a scheduler the node drops what it queued for it, frees the slots
held for its unanswered ``GetTask`` (``get_task_abandoned``) and kills the tasks it placed
(``tasks_orphaned``: its jobs run again from the scheduler that took them over); nothing more is sent to
it until ``PeerUp``. A central scheduler that restarts asks what the node holds of its work
(``GetHolding``): the node answers with its placed tasks queued, running and finished
(:mod:`aviary.worker.holdings`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..common.core import Core
from ..common.effects import Effect, Kill, Launch, Send, TaskId
from ..common.messages import (
    AssignTask,
    CancelProbes,
    GetHolding,
    GetTask,
    NoTask,
    PeerDown,
    PeerUp,
    PlaceTask,
    Probe,
    TaskFinished,
)
from .holdings import Holdings


@dataclass(slots=True, init=False)  # an __init__ of its own: native when compiled (common/effects.py)
class ProbeEntry:
    """``count`` reservations of one job from one scheduler (a batched probe)."""

    scheduler: str
    job_id: int
    estimate: float
    remaining: int
    count: int
    # the next probe of the same job and scheduler in the queue (FifoQueue's own link)
    same: ProbeEntry | None = field(default=None, repr=False, compare=False)

    def __init__(self, scheduler: str, job_id: int, estimate: float, remaining: int, count: int) -> None:
        self.scheduler = scheduler
        self.job_id = job_id
        self.estimate = estimate
        self.remaining = remaining
        self.count = count
        self.same = None


@dataclass(slots=True, init=False)
class TaskEntry:
    """A task placed on this node by a central scheduler."""

    scheduler: str
    job_id: int
    task_index: int
    duration: float
    estimate: float

    def __init__(
        self, scheduler: str, job_id: int, task_index: int, duration: float, estimate: float
    ) -> None:
        self.scheduler = scheduler
        self.job_id = job_id
        self.task_index = task_index
        self.duration = duration
        self.estimate = estimate


Entry = ProbeEntry | TaskEntry


class FifoQueue:
    """First come, first served. A cancel drops the job's queued reservations at once: its probes stay in
    the queue, marked dropped (``count`` 0), and are skipped when they reach the head, so a cancel costs
    the job's probes here, not the length of the queue."""

    def __init__(self) -> None:
        self._q: deque[Entry] = deque()
        # the first probe queued of each (scheduler, job); the others follow it, in order, by ``same``
        self._queued: dict[tuple[str, int], ProbeEntry] = {}
        self._dropped = 0  # probes cancelled, still in _q

    def __len__(self) -> int:
        return len(self._q) - self._dropped

    def push(self, entry: Entry) -> None:
        self._q.append(entry)
        if type(entry) is ProbeEntry:
            key = (entry.scheduler, entry.job_id)
            last = self._queued.get(key)
            if last is None:
                self._queued[key] = entry
            else:  # rare: a job probes a node twice
                while last.same is not None:
                    last = last.same
                last.same = entry

    def cancel(self, scheduler: str, job_id: int) -> int:
        """Drop a job's queued probes; returns how many reservations that drops."""
        key = (scheduler, job_id)
        e = self._queued.get(key)
        if e is None:
            return 0
        del self._queued[key]
        n = 0
        while e is not None:
            n += e.count
            e.count = 0
            self._dropped += 1
            e = e.same
        q = self._q
        if self._dropped == len(q):  # the usual case: that job's probes were all there was
            q.clear()
            self._dropped = 0
        elif self._dropped > 64 and 2 * self._dropped > len(q):  # mostly dropped: sweep them out
            self._q = deque([e for e in q if _live(e)])
            self._dropped = 0
        return n

    def entries(self, scheduler: str) -> list[Entry]:
        """The entries of ``scheduler`` waiting, in order."""
        return [e for e in self._q if e.scheduler == scheduler and _live(e)]

    def drop_scheduler(self, scheduler: str) -> int:
        """Drop every entry (probes and placed tasks) of ``scheduler``; returns how many."""
        before = len(self)
        self._q = deque([e for e in self._q if e.scheduler != scheduler and _live(e)])
        self._dropped = 0
        for key in [k for k in self._queued if k[0] == scheduler]:
            del self._queued[key]
        return before - len(self._q)

    def pop(self) -> Entry | None:
        """The entry at the head, for one reservation: a probe with more stays at the head, its
        ``count`` one less (the caller reads only its scheduler and job)."""
        q = self._q
        while q:
            head = q[0]
            if isinstance(head, TaskEntry):
                return q.popleft()
            count = head.count
            if count == 0:  # dropped by a cancel
                q.popleft()
                self._dropped -= 1
                continue
            if count > 1:
                head.count = count - 1
                return head
            q.popleft()
            key = (head.scheduler, head.job_id)  # the head is its job's first probe here
            if head.same is None:
                del self._queued[key]
            else:
                self._queued[key] = head.same
            return head
        return None

    def reservations(self) -> int:
        """Probe reservations plus placed tasks waiting."""
        return sum(1 if isinstance(e, TaskEntry) else e.count for e in self._q)  # a dropped probe: 0


def _live(e: Entry) -> bool:
    """Not a probe dropped by a cancel."""
    return isinstance(e, TaskEntry) or e.count > 0


class NodeMonitorCore(Core):
    """A node with ``slots`` task slots serving its queue with late binding."""

    role = "node"

    def __init__(self, name: str, slots: int = 1) -> None:
        super().__init__(name)
        if slots < 1:
            raise ValueError(f"node {name}: slots must be at least 1, got {slots}")
        self.slots = slots
        self.free = slots
        self.queue = FifoQueue()
        # GetTask sent, answer pending (a dict: a Counter's missing key calls Python's __missing__)
        self.requests: dict[tuple[str, int], int] = {}
        self.running: dict[TaskId, str] = {}  # task -> scheduler to tell when it ends
        self.dead: set[str] = set()  # schedulers declared dead (PeerDown)
        self.holdings = Holdings()  # of the tasks placed here (PlaceTask), for a restarted central
        self.clock = 0.0  # the last input's ``now``

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        self.clock = now
        kind = type(msg)
        if kind is Probe:
            self.counters["probes"] += msg.count
            self.queue.push(ProbeEntry(sender, msg.job_id, msg.estimate, msg.remaining, max(1, msg.count)))
            return self._serve()
        if kind is AssignTask:
            return self._assigned(sender, msg)
        if kind is NoTask:
            key = (sender, msg.job_id)
            if self.requests.get(key, 0) > 0:
                self._answered(key)
                self.free += 1
                self.counters["no_task"] += 1
                return self._serve()
            self.requests.pop(key, None)
            return self.unexpected(msg)
        if kind is CancelProbes:
            self.counters["probes_cancelled"] += self.queue.cancel(sender, msg.job_id)
            return []
        if kind is PlaceTask:
            self.queue.push(TaskEntry(sender, msg.job_id, msg.task_index, msg.duration, msg.estimate))
            return self._serve()
        if kind is PeerDown:
            return self._scheduler_down(msg.name)
        if kind is PeerUp:
            self.dead.discard(msg.name)
            return []
        if kind is GetHolding:
            queued = [(e.job_id, e.task_index) for e in self.queue.entries(sender) if type(e) is TaskEntry]
            running = [task for task, scheduler in self.running.items() if scheduler == sender]
            return [Send(sender, self.holdings.holding(now, sender, queued, running))]
        return self.unexpected(msg)

    def _scheduler_down(self, name: str) -> list[Effect]:
        """Forget a dead scheduler's queued work, free the slots waiting on it, kill its tasks."""
        self.dead.add(name)
        self.counters["entries_dropped"] += self.queue.drop_scheduler(name)
        held = [key for key in self.requests if key[0] == name]
        for key in held:
            n = self.requests.pop(key)
            self.free += n
            self.counters["get_task_abandoned"] += n
        orphans = [task for task, scheduler in self.running.items() if scheduler == name]
        self.counters["tasks_orphaned"] += len(orphans)
        return [*(Kill(task) for task in orphans), *self._serve()]

    def on_task_exit(self, now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        self.clock = now
        scheduler = self.running.pop(task_id, None)
        if scheduler is None:
            self.counters["unknown_task_exit"] += 1
            return []
        self.holdings.ended(scheduler, task_id, now)
        self.free += 1
        if scheduler in self.dead:  # an orphan we killed, or one that ended meanwhile: nobody to tell
            return self._serve()
        self.counters["tasks_finished" if ok else "tasks_failed"] += 1
        return [Send(scheduler, TaskFinished(task_id[0], task_id[1], ok)), *self._serve()]

    def _assigned(self, sender: str, msg: AssignTask) -> list[Effect]:
        key = (sender, msg.job_id)
        if self.requests.get(key, 0) > 0:
            self._answered(key)
            return [*self._launch(sender, msg.job_id, msg.task_index, msg.duration), *self._serve()]
        # Not the answer to a GetTask of ours (forged, or from a scheduler declared dead, or from an
        # earlier replay): counted and dropped, never run in a slot nobody reserved for it.
        self.requests.pop(key, None)
        self.counters["unsolicited_assign"] += 1
        return []

    def _answered(self, key: tuple[str, int]) -> None:
        if self.requests[key] == 1:
            del self.requests[key]
        else:
            self.requests[key] -= 1

    def _launch(self, scheduler: str, job_id: int, task_index: int, duration: float) -> list[Effect]:
        task_id = (job_id, task_index)
        if task_id in self.running:  # a duplicate assignment: the task already runs here
            self.counters["duplicate_task"] += 1
            self.free += 1
            return []
        self.running[task_id] = scheduler
        self.counters["tasks_launched"] += 1
        return [Launch(task_id, duration)]

    def _serve(self) -> list[Effect]:
        """Fill free slots from the head of the queue (late binding for probes)."""
        effects: list[Effect] = []
        while self.free > 0:
            entry = self.queue.pop()
            if entry is None:
                break
            self.free -= 1
            if isinstance(entry, TaskEntry):
                effects.extend(self._launch(entry.scheduler, entry.job_id, entry.task_index, entry.duration))
                self.holdings.launched((entry.job_id, entry.task_index), self.clock)
            else:
                key = (entry.scheduler, entry.job_id)
                self.requests[key] = self.requests.get(key, 0) + 1
                effects.append(Send(entry.scheduler, GetTask(entry.job_id)))
        return effects
