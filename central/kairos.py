"""The Kairos central dispatcher (thesis §4.3.3, Algorithm 3): no runtime estimates.

Every task of every job joins one central FIFO queue. Tasks leave it for the node with the fewest
tasks assigned, at most ``slots + q`` per node (admission control bounds the load imbalance: a node
holds at most Q tasks that could have run elsewhere); ties between nodes with the same number of tasks
go to the one with the lowest variance of attained service, as last reported by its ``Heartbeat``
(the LAS-aware ``Var`` policy). Figure 4.6's two other tie-breaks are here too: ``random`` (a
uniformly random node among the tied ones, from the core's seeded generator) and ``sum`` (the lowest
sum of attained service). Ties that remain (e.g. every variance 0 at start-up) go to the node listed
first.

Counts come from the dispatcher's own bookkeeping (tasks placed minus ``TaskFinished`` received), not
from heartbeats: Alg. 3 reads ``numTasks`` from heartbeats and sleeps ∆ between rounds, placing at most
one task per node per round; placing on every arrival and finish with exact counts is the event-driven
equivalent without the ∆ delay, and it can never exceed N + Q because of stale reports. A heartbeat's
task count is kept only for diagnostics (``heartbeat_count_mismatch``).

The estimate in ``SubmitJob`` is ignored and ``PlaceTask`` carries 0.0 as estimate: nothing on the
Kairos path uses runtime estimates. The task duration is passed through only because the node's
executor needs it to run the (sleep) task.

``am_tasks`` (default off; the Kairos testbed, docs/kairos.md): every job's application master holds one
of a node's N + Q places from the moment the job is first served until its last task ends, on the node
the same rule picks: the authors' central side caps a node's containers counting every running
container, the master's too (``LeafQueue.java:1680``: ``maxContainersPerNode -
node.getRunningContainers().size()``). It takes no LAS slot and is never preempted: the node leaves
container 1 of each application (the master) out of LAS (``ContainerManagerImpl.java:829``) and runs it on
a free core or the core kept for launching (``CoresManagerImpl.java:39-42, 94-95``). So here the master is
bookkeeping of the dispatcher only: the node never hears of it (``am_placed``, a counter; ``am_places``,
a gauge).

Failures (issue 14): a node declared dead (``PeerDown``) takes no more tasks (its cap is 0 until
``PeerUp``); the tasks placed on it go back to the front of the queue, in placement order, and a late
``TaskFinished`` or ``Heartbeat`` from it is counted and ignored.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from ..common.core import Core
from ..common.effects import Effect, Send
from ..common.messages import Heartbeat, PeerDown, PeerUp, PlaceTask, SubmitJob, TaskFinished
from .state import CentralState, Held, JobState, slot_nodes

TIEBREAKS = ("var", "random", "sum")
DEFAULT_Q = 2


@dataclass(slots=True)
class NodeState:
    name: str
    index: int
    cap: int  # slots + Q
    count: int = 0  # tasks placed and not finished (own bookkeeping)
    variance: float = 0.0  # from the last heartbeat
    attained_sum: float = 0.0  # from the last heartbeat
    reported: int = 0  # task count of the last heartbeat (diagnostics)
    version: int = 0  # bumped whenever count or key changes (lazy heap entries)


@dataclass(slots=True)
class _Level:
    """Nodes holding the same number of tasks: a lazy min-heap by key (var/sum), or an indexed list
    (random)."""

    heap: list[tuple[float, int, int]] = field(default_factory=list)  # (key, index, version)
    members: list[int] = field(default_factory=list)
    where: dict[int, int] = field(default_factory=dict)


class KairosCentralCore(Core):
    role = "central"

    def __init__(
        self,
        name: str,
        node_slots: dict[str, int],
        *,
        q: int = DEFAULT_Q,
        tiebreak: str = "var",
        seed: int = 0,
        am_tasks: bool = False,
    ) -> None:
        super().__init__(name)
        if not node_slots:
            raise ValueError(f"central scheduler {name}: no nodes")
        if q < 0:
            raise ValueError(f"central scheduler {name}: kairos_q must be >= 0, got {q}")
        if tiebreak not in TIEBREAKS:
            raise ValueError(f"central scheduler {name}: tie-break {tiebreak!r} not one of {TIEBREAKS}")
        self.q = q
        self.node_slots = dict(node_slots)
        self.tiebreak = tiebreak
        self.rng = random.Random(seed)
        self.nodes = [NodeState(n, i, s + q) for i, (n, s) in enumerate(node_slots.items())]
        self.by_name = {n.name: n for n in self.nodes}
        self.levels = [_Level() for _ in range(max(n.cap for n in self.nodes))]
        for node in self.nodes:
            self._enter(node)
        # Jobs and tasks are booked in the shared central state; Alg. 3's queue holds (job, task)
        # in arrival order, a DAG job's stage joining it when its parents finished.
        self.state = CentralState(slot_nodes(node_slots), self, record=False)
        self.queue: deque[tuple[int, int]] = deque()
        self.enqueued: set[tuple[int, int]] = set()  # (job, stage) already in the queue
        self.am_tasks = am_tasks
        self.am: dict[int, NodeState] = {}  # job -> the node whose place its master holds
        self.am_on: Counter[str] = Counter()  # node -> masters it holds

    @property
    def jobs(self) -> dict[int, JobState]:
        return self.state.jobs

    # --- views ----------------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        return {n.name: n.count for n in self.nodes}

    def gauges(self) -> dict[str, float]:
        """Tasks waiting in Alg. 3's central queue, and tasks the nodes hold by this core's count."""
        gauges = {"tasks_pending": float(len(self.queue)), "tasks_running": float(len(self.state.placed))}
        if self.am_tasks:
            gauges["am_places"] = float(len(self.am))
        return gauges

    # --- events ---------------------------------------------------------------------------------------
    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        kind = type(msg)
        if kind is Heartbeat:
            return self._heartbeat(sender, msg)
        if kind is TaskFinished:
            return self._finished(now, sender, msg)
        if kind is SubmitJob:
            # The estimate is booked but never read: Kairos uses no runtime estimates.
            refused = self.state.submit(now, sender, msg)
            return refused if refused is not None else self._dispatch(now)
        if kind is PeerDown:
            return self._node_down(now, msg.name)
        if kind is PeerUp:
            return self._node_up(now, msg.name)
        return self.unexpected(msg)

    def _node_down(self, now: float, name: str) -> list[Effect]:
        node = self.by_name.get(name)
        if node is None or node.cap == 0:
            return []
        lost = self.state.node_down(now, name)
        self.state.fresh.clear()  # their stages are queued here, task by task, not as new stages
        for job, stage, index in reversed(lost):
            self.queue.appendleft((job.job_id, index))
            self.enqueued.add((job.job_id, stage.index))
        self._leave(node)
        node.cap = node.count = 0
        self._enter(node)
        self.am = {j: n for j, n in self.am.items() if n is not node}  # its masters went with it
        self.am_on.pop(name, None)
        return self._dispatch(now)

    def _node_up(self, now: float, name: str) -> list[Effect]:
        node = self.by_name.get(name)
        if node is None or self.state.node_up(name) is None:
            return []
        node.cap = self.node_slots[name] + self.q
        self._enter(node)
        return self._dispatch(now)

    def _heartbeat(self, sender: str, msg: Heartbeat) -> list[Effect]:
        node = self.by_name.get(sender)
        if node is None or node.cap == 0:
            self.counters["unknown_heartbeat"] += 1
            return []
        self.counters["heartbeats_received"] += 1
        node.reported = msg.tasks
        # the masters (am_tasks) are the dispatcher's own bookkeeping: the node does not count them
        if msg.tasks != node.count - (self.am_on[node.name] if self.am_tasks else 0):
            self.counters["heartbeat_count_mismatch"] += 1
        key_changed = (msg.variance, msg.attained_sum) != (node.variance, node.attained_sum)
        node.variance = msg.variance
        node.attained_sum = msg.attained_sum
        if key_changed and self.tiebreak != "random":
            self._leave(node)
            self._enter(node)
        return []

    def _finished(self, now: float, sender: str, msg: TaskFinished) -> list[Effect]:
        node = self.by_name.get(sender)
        placed = self.state.placed.get((msg.job_id, msg.task_index))
        if node is None or placed is None or placed[0].name != sender:
            self.counters["unknown_task_finished" if placed is None else "late_results_ignored"] += 1
            return []
        self._leave(node)
        node.count -= 1
        self._enter(node)
        done = self.state.finish(now, sender, msg)
        if self.am_tasks and msg.job_id not in self.state.jobs:  # its last task: the master ends
            am = self.am.pop(msg.job_id, None)
            if am is not None:
                self.am_on[am.name] -= 1
                self._leave(am)
                am.count -= 1
                self._enter(am)
        return self._dispatch(now) + done

    # --- a restart's recovery (:mod:`aviary.central.recovery`) ------------------------------------------
    def restore_job(
        self, now: float, sender: str, msg: SubmitJob, age: float, held: dict[int, Held]
    ) -> list[Effect]:
        """A job of the dead incarnation: its placed tasks count on their nodes again."""
        _, booked, out = self.state.restore(now, sender, msg, age, held)
        for _, placed_on, _ in booked:
            node = self.by_name[placed_on.name]
            self._leave(node)
            node.count += 1
            self._enter(node)
        return out

    def restored(self, now: float) -> list[Effect]:
        return self._dispatch(now)

    # --- Alg. 3 main loop, event-driven -----------------------------------------------------------------
    def _dispatch(self, now: float) -> list[Effect]:
        effects: list[Effect] = []
        state, queue = self.state, self.queue
        for job in state.fresh.values():  # new jobs and released stages
            for stage in job.runnable:
                if (job.job_id, stage.index) not in self.enqueued:
                    self.enqueued.add((job.job_id, stage.index))
                    # a stage rebuilt after a restart has only some tasks left (in ``retry``, in order)
                    pending = list(stage.retry) or range(stage.offset, stage.offset + stage.tasks)
                    queue.extend((job.job_id, i) for i in pending)
        state.fresh.clear()
        while queue:
            node = self._pick()
            if node is None:  # every node holds N + Q tasks
                break
            job_id = queue[0][0]
            if self.am_tasks and job_id not in self.am:  # its master first, in a place of its own
                self.am[job_id] = node
                self.am_on[node.name] += 1
                self._leave(node)
                node.count += 1
                self._enter(node)
                self.counters["am_placed"] += 1
                continue
            job_id, index = queue.popleft()
            job = state.jobs[job_id]
            stage = next(s for s in job.runnable if s.offset <= index < s.offset + s.tasks)
            if stage.retry and stage.retry[0] != index and index in stage.retry:
                # tasks lost to a later node death go to the queue's front, behind none of the stage's
                # earlier lost ones in ``retry``: the queue's order is the one kept
                stage.retry.remove(index)
                stage.retry.insert(0, index)
            booked = state.assign(now, job, stage, state.by_name[node.name])
            assert booked == index, "a stage's tasks leave the queue in order"
            if stage.unplaced == 0:
                self.enqueued.discard((job_id, stage.index))
            self._leave(node)
            node.count += 1
            self._enter(node)
            self.counters["tasks_placed"] += 1
            effects.append(Send(node.name, PlaceTask(job.job_id, index, job.durations[index], 0.0)))
        return effects

    def _key(self, node: NodeState) -> float:
        return node.variance if self.tiebreak == "var" else node.attained_sum

    def _enter(self, node: NodeState) -> None:
        """File the node under its current count (nodes at their cap are in no level)."""
        node.version += 1
        if node.count >= node.cap:
            return
        level = self.levels[node.count]
        if self.tiebreak == "random":
            level.where[node.index] = len(level.members)
            level.members.append(node.index)
        else:
            heap = level.heap
            heapq.heappush(heap, (self._key(node), node.index, node.version))
            if len(heap) > 4 * len(self.nodes) + 64:  # drop stale entries now and then
                nodes = self.nodes
                level.heap = [e for e in heap if nodes[e[1]].version == e[2]]
                heapq.heapify(level.heap)

    def _leave(self, node: NodeState) -> None:
        """Take the node out of its level (heaps: lazily, by the version bump in ``_enter``)."""
        if self.tiebreak != "random" or node.count >= node.cap:
            return
        level = self.levels[node.count]
        pos = level.where.pop(node.index)
        last = level.members.pop()
        if last != node.index:
            level.members[pos] = last
            level.where[last] = pos

    def _pick(self) -> NodeState | None:
        """The node with the fewest tasks below its cap, ties by the tie-break policy."""
        nodes = self.nodes
        for level in self.levels:
            if self.tiebreak == "random":
                if level.members:
                    return nodes[level.members[self.rng.randrange(len(level.members))]]
                continue
            heap = level.heap
            while heap:
                _, index, version = heap[0]
                node = nodes[index]
                if node.version == version:
                    return node
                heapq.heappop(heap)
        return None
