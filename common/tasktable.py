"""A run's task table: one line per run of a task on a node, written beside ``jobs.csv`` as tasks end.

``tasks.csv`` has the columns of :data:`HEADER`:

- ``job_id``, ``task`` (its index in the job), ``stage`` (of a DAG job; 0 for a flat one), ``node``;
- ``attempt``: 1 for the task's first run to end, 2 for the next (a task runs again when its node or
  scheduler was declared dead, or a central scheduler killed it to place it again);
- ``outcome``: ``finished`` (it ran to its end), ``killed`` (its node or scheduler ended it) or
  ``unfinished`` (it had not ended when the run did: cut short, or lost with a node that was killed);
- ``submit_replay_s``: the job's submit time; ``placed_replay_s``: when the task reached the node (the
  message that handed it over: ``AssignTask`` under late binding, which starts it at once; ``PlaceTask``,
  ``LongTask`` or ``QueueTask`` into the node's queue); ``start_replay_s``: when the node launched it;
  ``finish_replay_s``: when it ended (empty if ``unfinished``); all in replay seconds (scaled as the
  replay ran, as ``jobs.csv``'s) to the microsecond, on the frontend's clock;
- ``preemptions``: times the node suspended it (LAS, Kairos, SRPT with preemption).

``placed - submit`` is the scheduling delay, ``start - placed`` the wait in the node's queue,
``finish - start`` the run with its suspensions (the ``_replay_s`` left out).

Where the rows come from: a :class:`TaskRecorder` is told what the drivers see of the node cores
(nothing in a core changes): the simulator's loop tells one recorder of every node's placements,
launches, suspensions and exits; on the real runtime each node process's runtime watches its own core
(an observer of its inputs and effects) and sends its rows to the frontend in ``TaskRecords`` batches
every quarter second while tasks end (and before its ``Stats``). On one machine (one kernel:
the batch's boot id is the frontend's, network namespaces and containers included) every process reads
the same monotonic clock, and the times need no mapping. A node on another machine is mapped by its
batches: one sent at node time ``s`` and received at frontend time ``r`` bounds the clocks' offset from
below by ``s - r``; the largest such bound is used, so its times are late by at most the one-way delay
of its fastest batch (a LAN's latency: events of two hosts that close apart may show in either order).

Where the lines go: a :class:`TaskTable` takes the rows, adds what the frontend knows (submit time,
stage, attempt) and writes them through the journal's :class:`~aviary.common.journal.RecordWriter`, in
the order the tasks ended (deterministic on the simulator), so a run killed outright keeps the table of
what ended up to a second before. The journal polls it on its own clock (:class:`~aviary.common.journal.
Journal`); ``aviary replay --no-task-table`` turns it off (its cost: ``docs/measurements.md``).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from .effects import Launch, Suspend
from .messages import AssignTask, LongTask, PlaceTask, QueueTask
from .model import JobSpec

__all__ = ["BINDS", "BOOT_ID", "HEADER", "TASKS_CSV", "NodeBook", "Row", "TaskRecorder", "TaskTable"]

TASKS_CSV = "tasks.csv"
HEADER: tuple[str, ...] = ("job_id", "task", "stage", "node", "attempt", "outcome")
HEADER += ("submit_replay_s", "placed_replay_s", "start_replay_s", "finish_replay_s", "preemptions")


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


BOOT_ID = _boot_id()
"""This kernel's boot id (empty where there is none): processes with the same one share a monotonic clock."""
BINDS = frozenset({AssignTask, PlaceTask, LongTask, QueueTask})
"""The messages that hand a node a task (``job_id``, ``task_index``): its ``placed`` time."""

Row = tuple[int, int, str, float, float, float | None, int, bool]
"""``(job id on the wire, task index, node, placed, start, finish or None, preemptions, ok)``, times on
the recording process's clock."""


class NodeBook:
    """One node's tasks for a :class:`TaskRecorder`: when each was placed, until it starts, and each
    running task's ``[placed, start, preemptions, order]`` (``order``: the recorder's count of starts)."""

    __slots__ = ("name", "placed_at", "recorder", "running")

    def __init__(self, name: str, recorder: TaskRecorder) -> None:
        self.name = name
        self.recorder = recorder
        self.placed_at: dict[tuple[int, int], float] = {}
        self.running: dict[Any, list[Any]] = {}

    def placed(self, job: int, index: int, now: float) -> None:
        """A message handed this node the task."""
        self.placed_at[(job, index)] = now

    def started(self, task_id: Any, now: float) -> None:
        recorder = self.recorder
        recorder.starts += 1
        self.running[task_id] = [self.placed_at.pop(task_id, now), now, 0, recorder.starts]

    def suspended(self, task_id: Any) -> None:
        run = self.running.get(task_id)
        if run is not None:
            run[2] += 1

    def ended(self, task_id: Any, now: float, ok: bool) -> None:
        run = self.running.pop(task_id, None)
        if run is not None:
            self.recorder.rows.append((task_id[0], task_id[1], self.name, run[0], run[1], now, run[2], ok))


class TaskRecorder:
    """Watches node cores: called as an observer ``(now, core, input, effects)`` after each input a node
    core handled (``("message", sender, msg)``, ``("timer", key)``, ``("exit", task_id, ok)``), or told
    by the simulator's loop directly (through each node's :class:`NodeBook`), it keeps each running
    task's placement, start and suspensions and makes a :data:`Row` when it ends, in :attr:`rows` (taken
    by whoever writes them)."""

    def __init__(self) -> None:
        self.books: dict[str, NodeBook] = {}
        """node -> its tasks placed and running."""
        self.starts = 0
        self.rows: list[Row] = []

    def book(self, node: str) -> NodeBook:
        """The node's book (made at the first call)."""
        book = self.books.get(node)
        if book is None:
            book = self.books[node] = NodeBook(node, self)
        return book

    def __call__(self, now: float, core: Any, input: tuple[Any, ...], effects: list[Any]) -> None:
        """The observer: what a node core's input and effects say (the real runtime's node process)."""
        kind = input[0]
        book = self.book(core.name)
        if kind == "exit":
            book.ended(input[1], now, input[2])
        elif kind == "message" and type(input[2]) in BINDS:
            book.placed(input[2].job_id, input[2].task_index, now)
        for e in effects:
            t = type(e)
            if t is Launch:
                book.started(e.task_id, now)
            elif t is Suspend:
                book.suspended(e.task_id)

    def take(self) -> list[Row]:
        """The rows made since the last call."""
        rows, self.rows = self.rows, []
        return rows

    def unfinished(self) -> list[Row]:
        """A row for each task still running (the run ends without it), in the order they started; it
        forgets them."""
        runs = [(run, book.name, task) for book in self.books.values() for task, run in book.running.items()]
        runs.sort(key=lambda r: r[0][3])
        for book in self.books.values():
            book.running.clear()
        return [(task[0], task[1], name, run[0], run[1], None, run[2], False) for run, name, task in runs]


class _Head:
    """What the rows of one job share: the text before its task index and around its submit time, the
    job when it has stages (else None: every task is of stage 0), and how many runs of each of its tasks
    were written so far (by task index)."""

    __slots__ = ("mid", "prefix", "runs", "staged")

    def __init__(self, prefix: str, mid: str, staged: JobSpec | None, runs: list[int]) -> None:
        self.prefix = prefix
        self.mid = mid
        self.staged = staged
        self.runs = runs


class TaskTable:
    """The task table of the replay of ``jobs``, written through ``writer`` (the journal's
    :class:`~aviary.common.journal.RecordWriter` of ``tasks.csv``)."""

    def __init__(self, writer: Any, jobs: Sequence[JobSpec]) -> None:
        self.writer = writer
        self.jobs = {j.job_id: j for j in jobs}
        self.attempts: dict[tuple[int, int], int] = {}
        """(job, task) -> runs written so far, of tasks no job of ``jobs`` has (others: ``_Head.runs``)."""
        self.offsets: dict[str, float] = {}
        """node -> the largest lower bound seen of its clock minus the frontend's (real runtime)."""
        self._stage_starts: dict[int, list[int]] = {}
        self._heads: dict[int, _Head] = {}
        """job id -> what its rows share (:class:`_Head`)."""
        writer.write(",".join(HEADER) + "\n")

    def _stage(self, job: JobSpec, index: int) -> int:
        starts = self._stage_starts.get(job.job_id)
        if starts is None:
            starts, at = [], 0
            for stage in job.stages:
                starts.append(at)
                at += stage.tasks
            self._stage_starts[job.job_id] = starts
        return bisect.bisect_right(starts, index) - 1

    def add(self, rows: Sequence[Row], origin: float, submits: dict[int, Any], stride: int) -> None:
        """Write ``rows`` whose clock reads ``origin`` at the replay's start; ``submits``: job id -> its
        times (``FrontendCore.times``), ``stride``: the frontend's resubmission stride of wire ids."""
        jobs, attempts, heads = self.jobs, self.attempts, self._heads
        lines: list[str] = []
        for wire, index, node, placed, start, finish, preempted, ok in rows:
            job_id = wire % stride
            head = heads.get(job_id)
            if head is None:  # what every row of the job shares, made once: its id and submit time
                times = submits.get(job_id)
                submit = "" if times is None or times.submit is None else f"{times.submit:.6f}"
                job = jobs.get(job_id)
                multi = job is not None and len(job.stages) >= 2
                runs = [0] * job.tasks if job is not None else []  # attempts so far, by task index
                head = heads[job_id] = _Head(f"{job_id},", f",{submit},", job if multi else None, runs)
            stage = 0 if head.staged is None else self._stage(head.staged, index)
            runs = head.runs
            if 0 <= index < len(runs):
                attempt = runs[index] = runs[index] + 1
            else:  # an index the job does not have (a bad row): counted by key
                key = (job_id, index)
                attempt = attempts[key] = attempts.get(key, 0) + 1
            if finish is None:
                tail = f"unfinished{head.mid}{placed - origin:.6f},{start - origin:.6f},,{preempted}\n"
            else:
                outcome = "finished" if ok else "killed"
                times_ = f"{placed - origin:.6f},{start - origin:.6f},{finish - origin:.6f}"
                tail = f"{outcome}{head.mid}{times_},{preempted}\n"
            lines.append(f"{head.prefix}{index},{stage},{node},{attempt},{tail}")
        self.writer.extend(lines)

    def add_batch(
        self, node: str, sent: float, received: float, boot: str, rows: Sequence[Any], t0: float, **kw: Any
    ) -> None:
        """A node's batch (real runtime): sent at ``sent`` on its clock, received at ``received`` on the
        frontend's, whose replay began at ``t0``, from a kernel of boot id ``boot``; see the module for
        the clock mapping."""
        if boot and boot == BOOT_ID:
            offset = self.offsets[node] = 0.0
        else:
            bound = sent - received
            offset = self.offsets[node] = max(self.offsets.get(node, bound), bound)
        self.add([tuple(row) for row in rows], t0 + offset, **kw)  # msgpack gives lists

    def poll(self) -> None:
        self.writer.poll()

    def close(self) -> None:
        self.writer.close()

    @property
    def error(self) -> str | None:
        return self.writer.error
