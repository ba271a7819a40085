"""Central Least Work Left for long jobs (Hawk, thesis §2.3.7; Eagle, §3.3.3) with Eagle's succinct
state sharing (SSS, §3.3.3).

"The centralized component keeps a priority queue of tuples of the form <server, waiting time> ... The
waiting time is the sum of the estimated execution time for all long tasks in that server's queue plus
the remaining estimated execution time of any long task that currently may be executing. When a new job
is scheduled, for every task, the centralized allocation algorithm puts the task on the node that is at
the head of the priority queue ... After every task assignment, the priority queue is updated." The
central scheduler knows only what it placed: a task is *queued* from its placement until the node says
it started (``TaskStarted``), then *running* until ``TaskFinished``; short tasks are invisible to it.

SSS: bit i of the bitvector is set while the i-th node of the cluster (``Cluster.nodes`` order) has a
long task placed by this scheduler, queued or running. Every ``LongTask`` carries the bitvector as it
is once the whole job is placed, and the scheduler's clock as its timestamp.

The same core serves the centralized baseline of §2.4.5 (``lwl``: every job, over all nodes) and Hawk
without partitions (over all nodes).

Failures (issue 14): a dead target (``PeerDown``) gets no more tasks (its waiting time is infinite until
``PeerUp``); the tasks placed there, queued or running, are placed again by LWL on the live ones, and a
``TaskStarted`` or ``TaskFinished`` from a node that no longer holds the task is counted and ignored.

Speed: :class:`LwlIndex` finds the least-loaded node in O(log n) per task, with no per-job scan of the
nodes: a node's waiting time at time t is ``Q + max(0, R - t)`` (Q the queued estimates, R the expected
end of its running long task), so nodes whose running task is not expected to end yet are ordered by
``R + Q`` in one heap, the others by ``Q`` in another, and nodes move from the first to the second as
their R passes (a third heap keyed by R). Stale heap entries are skipped lazily.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence
from typing import Any

from ..common.core import Core
from ..common.effects import Effect, Send
from ..common.messages import LongTask, PeerDown, PeerUp, SubmitJob, TaskFinished, TaskStarted
from .state import CentralState, Held, JobState, StageState, slot_nodes

__all__ = ["CentralLwlCore", "LwlIndex"]


class LwlIndex:
    """Estimated long work waiting at each of ``n`` nodes, and the node with the least of it.

    ``queued[i]``: estimates of tasks placed on node i and not started; ``ends[i]``: expected end of the
    task running there (``-inf`` if none, or when the node has several slots, the latest of them).
    Ties go to ``rank`` order (a seeded permutation, so equal nodes are not taken in index order).
    """

    def __init__(self, n: int, rank: Sequence[int] | None = None) -> None:
        self.n = n
        self.queued = [0.0] * n
        self.ends = [-math.inf] * n
        self.running: list[list[float]] = [[] for _ in range(n)]  # expected ends of running tasks
        self.rank = list(rank) if rank is not None else list(range(n))
        self.version = [0] * n
        self.idle: list[tuple[float, int, int, int]] = [(0.0, self.rank[i], i, 0) for i in range(n)]
        heapq.heapify(self.idle)
        self.busy: list[tuple[float, int, int, int]] = []  # (R + Q, rank, i, version)
        self.expiry: list[tuple[float, int, int]] = []  # (R, i, version)

    def wait(self, i: int, now: float) -> float:
        return self.queued[i] + max(0.0, self.ends[i] - now)

    def _push(self, i: int, now: float) -> None:
        self.version[i] += 1
        v = self.version[i]
        end = self.ends[i]
        if end > now:
            heapq.heappush(self.busy, (end + self.queued[i], self.rank[i], i, v))
            heapq.heappush(self.expiry, (end, i, v))
        else:
            heapq.heappush(self.idle, (self.queued[i], self.rank[i], i, v))

    def _rebuild(self, now: float) -> None:
        self.idle, self.busy, self.expiry = [], [], []
        for i in range(self.n):
            self.version[i] += 1
            v = self.version[i]
            if self.ends[i] > now:
                self.busy.append((self.ends[i] + self.queued[i], self.rank[i], i, v))
                self.expiry.append((self.ends[i], i, v))
            else:
                self.idle.append((self.queued[i], self.rank[i], i, v))
        heapq.heapify(self.idle)
        heapq.heapify(self.busy)
        heapq.heapify(self.expiry)

    def least(self, now: float) -> int:
        """The node with the least estimated waiting time now."""
        if len(self.idle) + len(self.busy) > 8 * self.n + 64:  # mostly stale entries
            self._rebuild(now)
        version = self.version
        expiry, idle, busy = self.expiry, self.idle, self.busy
        while expiry and expiry[0][0] <= now:  # running tasks now expected to have ended
            _, i, v = heapq.heappop(expiry)
            if version[i] == v:
                self._push(i, now)
        while idle and version[idle[0][2]] != idle[0][3]:
            heapq.heappop(idle)
        while busy and version[busy[0][2]] != busy[0][3]:
            heapq.heappop(busy)
        if not busy:
            return idle[0][2]
        if not idle:
            return busy[0][2]
        a, b = idle[0], busy[0]
        wa, wb = a[0], b[0] - now
        if wa < wb or (wa == wb and a[1] < b[1]):
            return a[2]
        return b[2]

    def add(self, i: int, estimate: float, now: float) -> None:
        """A task with this estimate was placed on node i."""
        self.queued[i] += estimate
        self._push(i, now)

    def start(self, i: int, estimate: float, now: float) -> None:
        """A placed task of node i started running now."""
        self.queued[i] = max(0.0, self.queued[i] - estimate)
        self.running[i].append(now + estimate)
        self.ends[i] = max(self.running[i])
        self._push(i, now)

    def report(self, i: int, wait: float, now: float) -> None:
        """Node i reported ``wait`` seconds of work now: forget what was known, expect that work to end
        at ``now + wait`` (DLWL heartbeats)."""
        self.queued[i] = 0.0
        self.running[i] = [now + wait] if wait > 0 else []
        self.ends[i] = now + wait if wait > 0 else -math.inf
        self._push(i, now)

    def disable(self, i: int, now: float) -> None:
        """Node i died: it never has the least work (until :meth:`enable`)."""
        self.queued[i] = math.inf
        self.running[i] = []
        self.ends[i] = -math.inf
        self._push(i, now)

    def enable(self, i: int, now: float) -> None:
        """Node i rejoined, empty."""
        self.queued[i] = 0.0
        self._push(i, now)

    def finish(self, i: int, estimate: float, started_end: float | None, now: float) -> None:
        """A task of node i ended: ``started_end`` is the expected end recorded when it started (None if
        it was never reported started; then it leaves the queued work)."""
        if started_end is None:
            self.queued[i] = max(0.0, self.queued[i] - estimate)
        else:
            runs = self.running[i]
            if started_end in runs:
                runs.remove(started_end)
            self.ends[i] = max(runs) if runs else -math.inf
        if self.queued[i] < 1e-9:
            self.queued[i] = 0.0
        self._push(i, now)


class CentralLwlCore(Core):
    """LWL placement of every job it gets on ``targets`` (the general partition), with SSS bitvectors.

    ``nodes`` is every node of the cluster in ``Cluster.nodes`` order (bit positions); ``targets`` the
    names of those it may place on. ``sss`` piggybacks the bitvector on every ``LongTask``.
    """

    role = "central"

    def __init__(
        self, name: str, nodes: Sequence[str], targets: Sequence[str], *, sss: bool = False, seed: int = 0
    ) -> None:
        super().__init__(name)
        if not targets:
            raise ValueError(f"central scheduler {name}: no nodes to place long tasks on")
        position = {n: i for i, n in enumerate(nodes)}
        missing = [t for t in targets if t not in position]
        if missing:
            raise ValueError(f"central scheduler {name}: unknown target nodes {missing[:3]}")
        self.nodes = list(nodes)
        self.targets = list(targets)
        self.bit = [position[t] for t in self.targets]  # target index -> bit position
        self.index = {t: k for k, t in enumerate(self.targets)}
        rng = random.Random(f"{seed}/{name}")
        rank = list(range(len(self.targets)))
        rng.shuffle(rank)
        self.lwl = LwlIndex(len(self.targets), rank)
        self.sss = sss
        self.bits = 0
        self.longs = [0] * len(self.targets)  # tasks placed and not finished, per target
        self.nbytes = (len(self.nodes) + 7) // 8
        # Jobs and tasks are booked in the shared central state (one node entry per target, in order).
        self.state = CentralState(slot_nodes(dict.fromkeys(self.targets, 1)), self, record=False)
        self.ends: dict[tuple[int, int], float] = {}  # task -> expected end once started

    def bitvector(self) -> bytes:
        return self.bits.to_bytes(self.nbytes, "little")

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        kind = type(msg)
        if kind is TaskStarted:
            return self._started(now, sender, msg)
        if kind is TaskFinished:
            return self._finished(now, sender, msg)
        if kind is SubmitJob:
            return self._submit(now, sender, msg)
        if kind is PeerDown:
            return self._node_down(now, msg.name)
        if kind is PeerUp:
            k = self.index.get(msg.name)
            if k is not None and self.state.node_up(msg.name) is not None:
                self.lwl.enable(k, now)
            return []
        return self.unexpected(msg)

    def _node_down(self, now: float, name: str) -> list[Effect]:
        k = self.index.get(name)
        if k is None:
            return []
        lost = self.state.node_down(now, name)
        self.state.fresh.clear()
        self.lwl.disable(k, now)
        if self.longs[k]:
            self.longs[k] = 0
            self.bits &= ~(1 << self.bit[k])
        effects: list[Effect] = []
        for job, stage, index in lost:
            self.ends.pop((job.job_id, index), None)
            effects += self._place(now, job, stage)
        return effects

    def _place(self, now: float, job: JobState, stage: StageState) -> list[Effect]:
        """The stage's next task (a lost one first) on the node with the least long work left."""
        k = self.lwl.least(now)
        if self.state.nodes[k].dead:  # every target is dead: the frontend ends the replay
            return []
        self.lwl.add(k, job.estimate, now)
        i = self.state.assign(now, job, stage, self.state.nodes[k], started=False)
        if self.longs[k] == 0:
            self.bits |= 1 << self.bit[k]
        self.longs[k] += 1
        self.counters["long_tasks_placed"] += 1
        bv, stamp = (self.bitvector(), now) if self.sss else (b"", -1.0)
        return [Send(self.targets[k], LongTask(job.job_id, i, job.durations[i], job.estimate, bv, stamp))]

    def _submit(self, now: float, frontend: str, msg: SubmitJob) -> list[Effect]:
        state = self.state
        if (refused := state.submit(now, frontend, msg, counter="jobs_central")) is not None:
            return refused
        job = state.jobs[msg.job_id]
        state.fresh.clear()
        lwl, longs, est, nodes = self.lwl, self.longs, msg.estimate, state.nodes
        placed = []
        while job.runnable:  # a flat job: every task now (the first start is the node's TaskStarted)
            k = lwl.least(now)
            lwl.add(k, est, now)
            placed.append((state.assign(now, job, job.runnable[0], nodes[k], started=False), k))
            if longs[k] == 0:
                self.bits |= 1 << self.bit[k]
            longs[k] += 1
        self.counters["long_tasks_placed"] += len(placed)
        bv, stamp = (self.bitvector(), now) if self.sss else (b"", -1.0)
        targets = self.targets
        return [
            Send(targets[k], LongTask(msg.job_id, i, msg.durations[i], est, bv, stamp)) for i, k in placed
        ]

    # --- a restart's recovery (:mod:`aviary.central.recovery`) ------------------------------------------
    def restore_job(
        self, now: float, sender: str, msg: SubmitJob, age: float, held: dict[int, Held]
    ) -> list[Effect]:
        """A job of the dead incarnation: its tasks queued or running on a node are that node's long work
        again (a running one expected to end its estimate after it started)."""
        job, booked, out = self.state.restore(now, sender, msg, age, held)
        for index, node, _ in booked:
            assert job is not None  # a job with booked tasks is admitted
            k = node.index  # the state's nodes are the targets, in order
            status, _, ago = held[index]
            self.lwl.add(k, job.estimate, now)
            if status == "running":
                self.lwl.start(k, job.estimate, now - ago)
                self.ends[job.job_id, index] = now - ago + job.estimate
            if self.longs[k] == 0:
                self.bits |= 1 << self.bit[k]
            self.longs[k] += 1
        return out

    def restored(self, now: float) -> list[Effect]:
        """Place every task not held by a node, as a submission would."""
        state = self.state
        state.fresh.clear()
        effects: list[Effect] = []
        for job in list(state.active.values()):
            while job.runnable and (placed := self._place(now, job, job.runnable[0])):
                effects += placed
        return effects

    def _started(self, now: float, node: str, msg: TaskStarted) -> list[Effect]:
        job = self.state.jobs.get(msg.job_id)
        k = self.index.get(node)
        if job is None or k is None or not 0 <= msg.task_index < job.tasks:
            self.counters["unknown_task_started"] += 1
            return []
        placed = self.state.placed.get((msg.job_id, msg.task_index))
        if placed is None or placed[0].name != node:  # from a node declared dead: placed elsewhere now
            self.counters["late_results_ignored"] += 1
            return []
        self.state.started(now, job)
        self.lwl.start(k, job.estimate, now)
        self.ends[msg.job_id, msg.task_index] = now + job.estimate
        return []

    def _finished(self, now: float, node: str, msg: TaskFinished) -> list[Effect]:
        job = self.state.jobs.get(msg.job_id)
        k = self.index.get(node)
        placed = self.state.placed.get((msg.job_id, msg.task_index))
        if job is None or k is None or placed is None:
            self.counters["unknown_task_finished"] += 1
            return []
        if placed[0].name != node:  # from a node declared dead: placed elsewhere now
            self.counters["late_results_ignored"] += 1
            return []
        self.lwl.finish(k, job.estimate, self.ends.pop((msg.job_id, msg.task_index), None), now)
        self.longs[k] -= 1
        if self.longs[k] == 0:
            self.bits &= ~(1 << self.bit[k])
        return self.state.finish(now, node, msg)
