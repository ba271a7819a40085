"""A node monitor that admits placed tasks by resource fit (the multi-resource central policies), with a
fluid model of contention for the resources a node can over-allocate.

The node has a capacity vector (:mod:`aviary.common.resources`) instead of slots, and one of two
contention models (``contention``, declared once as the policies' ``--contention``):

- ``"off"``: a ``PlaceTask`` runs at once when its whole demand vector fits what the running tasks leave
  free, at full speed: a node is a bin.
- ``"fluid"`` (DESIGN §4): memory is a hard limit checked at admission; cores, disk and network are
  *fungible* and may be over-allocated. Each running task progresses at rate
  ``min(1, min over the fungible resources r it uses of capacity_r / demand_r summed over the node's
  running tasks)``, recomputed whenever a task starts or ends, and holds all of its resources for the
  stretched time. This is how Graphene's simulator treats over-allocation ("when the total resource
  demand crosses machine capacity, we delay the completion of tasks further by a proportional amount",
  ``graphene.txt`` §7.4), and why it overbooks "network and disk that do not lose goodput when demand
  exceeds capacity (unlike say memory)" (§7.2); Tez + CP's slowdown from "arbitrary over-allocation"
  (same section) is this model's stretched tasks. ``disk_loss`` [D] is the sensitivity knob for a disk
  that *does* lose goodput when over-subscribed (seeks): with demand D above capacity C the disk delivers
  ``C * (1 - disk_loss * (1 - C / D))``, i.e. no loss at D = C and a loss tending to ``disk_loss`` as
  the over-subscription grows (default 0, the papers' wording).

How a task runs at a rate, on both runtimes, with the seven effects: the executor runs the task's own
work (a sleep of its duration, as ever) and the node core keeps each task's *fluid progress* itself,
the integral of its rate. A task completes when both are done: its executor exited and its progress
reached its duration. Rates never exceed 1, so the executor's exit comes first unless it ran late
(a process or container start); the core then holds the task, with its resources, until a timer
(``SetTimer(FLUID, ...)`` for the earliest projected end, re-set on every change) says its work is done.
Without over-allocation every rate is 1 and each task completes at its executor's exit, exactly as with
``"off"``.

The cost of an event grows gently with the tasks on a node (YARN-like baselines over-allocate cores and
hold dozens of stretched tasks per node): a task's rate depends only on *which* fungible resources it
uses (a 3-bit mask), so the rates are computed once per mask, given to every task only when they change
(else to the tasks launched since), and the earliest projected end is looked for among the tasks whose
executor has exited only. Each task's progress is still advanced by the same float operations in the
same order, so results are identical to recomputing every rate on every change.

The central scheduler places a task only where its bookkeeping says it fits (memory, at least), so a
task that must wait here means the two views differ (a message overtaken, a second scheduler): it waits
in FIFO order, counted as ``waited_for_room``, and is never dropped. A task that could never run (its
demand exceeds the whole capacity; with ``"fluid"``, its memory does, or it uses a resource the node
lacks) is refused at once with
``TaskFinished(ok=False)``.

Preemption (``KillTask``, central -> node): the scheduler that placed a task may kill it. The node gives
its resources back at once (the central scheduler has already made the task runnable again and may
place another task here right behind the kill), issues ``Kill`` to its executor and answers
``TaskFinished(ok=False)``; the executor's later exit of the killed task is swallowed
(``killed_exits_ignored``). A task still waiting for room is simply dropped, with the same answer. A
``KillTask`` for a task this node does not run (it already finished: its ``TaskFinished`` is on the way,
and serves as the answer) is counted (``kill_unknown_task``) and ignored; one from a scheduler other
than the task's is refused (``kill_refused``, no answer), so exactly one ``TaskFinished`` follows every
kill a task's own scheduler sends. A ``PlaceTask`` for a task whose killed run has not exited yet waits
until it has (``waited_for_kill``), so the executor never holds two runs of one task.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ..common.choices import CONTENTION
from ..common.core import Core
from ..common.effects import CancelTimer, Effect, Kill, Launch, Send, SetTimer, TaskId
from ..common.messages import GetHolding, KillTask, PeerDown, PeerUp, PlaceTask, TaskFinished
from ..common.resources import EPS, ONE_CORE, Resources, vector_sum
from .holdings import Holdings

FLUID = "fluid"
"""The timer key of the fluid model's next projected task end."""
FUNGIBLE = (0, 2, 3)
"""The dimensions a node may over-allocate: cores, disk, network (not memory)."""
_ONES: tuple[float, ...] = (1.0,) * 8
"""The rate of each fungible-resource mask on a node that is not over-allocated."""
DONE = 1e-9
"""Seconds of work left below which a task's fluid progress counts as complete (float sums; a task at
rate 1 beside 2,000 changes of rates, at a clock reading of 3e6 s, stays well within it)."""


class _Running:
    """A task holding resources: who placed it, its demand, its work left (seconds at rate 1), its rate,
    whether its executor has exited, the fungible resources it uses (bit i: ``FUNGIBLE[i]``) and its
    launch order on the node."""

    __slots__ = ("demand", "exited", "left", "mask", "rate", "scheduler", "seq")

    def __init__(self, scheduler: str, demand: Resources, work: float, seq: int) -> None:
        self.scheduler = scheduler
        self.demand = demand
        self.left = work
        self.rate = 1.0
        self.exited = False
        self.mask = (demand[0] > 0) | (demand[2] > 0) << 1 | (demand[3] > 0) << 2
        self.seq = seq


class ResourceNodeCore(Core):
    role = "node"

    def __init__(
        self, name: str, capacity: Resources, contention: str = "off", disk_loss: float = 0.0
    ) -> None:
        super().__init__(name)
        if contention not in CONTENTION:
            raise ValueError(f"contention must be one of {', '.join(CONTENTION)}, got {contention!r}")
        if not 0.0 <= disk_loss < 1.0:
            raise ValueError(f"disk_loss must be >= 0 and < 1, got {disk_loss!r}")
        self.capacity = capacity
        self.free = capacity
        self.fluid = contention == "fluid"
        self.disk_loss = disk_loss
        self.slots = max(1, int(capacity.cores))  # what Register reports
        self.waiting: deque[tuple[str, PlaceTask, Resources]] = deque()
        self.running: dict[TaskId, _Running] = {}
        self.since = 0.0  # when the fluid progress of the running tasks was last brought up to date
        self.timed = False  # a FLUID timer is set
        self.shared = _ONES  # the rate per mask every running task was given at the last change
        self.fresh: list[_Running] = []  # launched since the last change: no rate given yet
        self.stretched: dict[TaskId, _Running] = {}  # running tasks whose executor has exited
        self.launches = 0
        self.killing: set[TaskId] = set()  # killed tasks whose executor has not reported the exit yet
        self.holdings = Holdings()  # for a restarted central: what it placed here
        self.clock = 0.0  # the last input's ``now``

    def gauges(self) -> dict[str, float]:
        """The demand of the running tasks summed per resource (beyond the capacity where disk, network or
        cores are over-allocated) and the tasks waiting for room: the live dashboard's resource view."""
        used = vector_sum(task.demand for task in self.running.values())
        return {**{f"used_{r}": u for r, u in used._asdict().items()}, "queued": float(len(self.waiting))}

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        self.clock = now
        if type(msg) is KillTask:
            return self._kill(now, sender, msg)
        if type(msg) is GetHolding:  # a restarted central
            queued = [(m.job_id, m.task_index) for s, m, _ in self.waiting if s == sender]
            running = [t for t, task in self.running.items() if task.scheduler == sender]
            return [Send(sender, self.holdings.holding(now, sender, queued, running))]
        if type(msg) is PeerDown or type(msg) is PeerUp:
            # Liveness news of a peer (a scheduler, another node): nothing changes here, the tasks run on
            # (a central that comes back finds them); counted, as the other node cores do, not unexpected.
            self.counters["peer_down" if type(msg) is PeerDown else "peer_up"] += 1
            return []
        if type(msg) is not PlaceTask:
            return self.unexpected(msg)
        try:
            demand = Resources.of(msg.demand) if msg.demand else ONE_CORE
        except ValueError:
            self.counters["bad_demand"] += 1
            return [Send(sender, TaskFinished(msg.job_id, msg.task_index, False))]
        if not self._could_run(demand):
            self.counters["task_too_big"] += 1
            return [Send(sender, TaskFinished(msg.job_id, msg.task_index, False))]
        if (msg.job_id, msg.task_index) in self.killing:
            self.counters["waited_for_kill"] += 1
            self.waiting.append((sender, msg, demand))
            return []
        if self.waiting or not self._admits(demand):
            self.counters["waited_for_room"] += 1
            self.waiting.append((sender, msg, demand))
            return []
        self._advance(now)
        effects = self._launch(sender, msg, demand)
        return effects + self._retime() if self.fluid else effects

    def on_task_exit(self, now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        self.clock = now
        if task_id in self.killing:  # the exit of a run killed by KillTask: already answered
            self.killing.discard(task_id)
            self.counters["killed_exits_ignored"] += 1
            if self.fluid:
                self._advance(now)
                return self._admit_waiting() + self._retime()
            return self._admit_waiting()
        task = self.running.get(task_id)
        if task is None:
            self.counters["unknown_task_exit"] += 1
            return []
        if not self.fluid:
            return self._complete(now, task_id, ok)
        self._advance(now)
        if ok and task.left > DONE:  # over-allocated: work left, resources kept
            task.exited = True
            self.stretched[task_id] = task
            self.counters["tasks_stretched"] += 1
            return self._retime()
        return self._complete(now, task_id, ok) + self._retime()

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        if key != FLUID or not self.fluid:
            return []
        self.clock = now
        self._advance(now)
        effects: list[Effect] = []
        self.timed = False
        # In launch order (the running tasks' order), whatever order their executors exited in.
        for _, task_id in sorted((task.seq, t) for t, task in self.stretched.items() if task.left <= DONE):
            effects += self._complete(now, task_id, True)
        return effects + self._retime()

    # --- admission and completion ------------------------------------------------------------------
    def _could_run(self, demand: Resources) -> bool:
        """On an idle node: with ``"fluid"``, its memory fits and every fungible resource it uses exists
        (over-allocation only slows it down); else its whole demand fits."""
        if not self.fluid:
            return demand.fits_in(self.capacity)
        c = self.capacity
        return demand[1] <= c[1] + EPS and all(c[r] > 0 for r in FUNGIBLE if demand[r] > 0)

    def _admits(self, demand: Resources) -> bool:
        if self.fluid:
            return demand[1] <= self.free[1] + EPS
        return demand.fits_in(self.free)

    def _launch(self, sender: str, msg: PlaceTask, demand: Resources) -> list[Effect]:
        task_id = (msg.job_id, msg.task_index)
        if task_id in self.running:
            self.counters["duplicate_task"] += 1
            return []
        self.launches += 1
        self.running[task_id] = task = _Running(sender, demand, msg.duration, self.launches)
        if self.fluid:
            self.fresh.append(task)
        self.holdings.launched(task_id, self.clock)
        self.free = self.free.minus(demand)
        self.counters["tasks_launched"] += 1
        return [Launch(task_id, msg.duration)]

    def _complete(self, now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        """The task ends: its resources come back, and waiting tasks that now fit start."""
        task = self.running.pop(task_id)
        self.stretched.pop(task_id, None)
        self.holdings.ended(task.scheduler, task_id, now)
        self.free = self.free.plus(task.demand)
        self.counters["tasks_finished" if ok else "tasks_failed"] += 1
        return [Send(task.scheduler, TaskFinished(task_id[0], task_id[1], ok)), *self._admit_waiting()]

    def _admit_waiting(self) -> list[Effect]:
        """Start the waiting tasks that now fit, in FIFO order (the head blocks the rest)."""
        effects: list[Effect] = []
        while self.waiting and self._admits(self.waiting[0][2]):
            sender, msg, need = self.waiting[0]
            if (msg.job_id, msg.task_index) in self.killing:
                break
            self.waiting.popleft()
            effects += self._launch(sender, msg, need)
        return effects

    def _kill(self, now: float, sender: str, msg: KillTask) -> list[Effect]:
        """Preemption (module docstring): free the task's resources now, kill its run, answer."""
        task_id = (msg.job_id, msg.task_index)
        answer: list[Effect] = [Send(sender, TaskFinished(msg.job_id, msg.task_index, False))]
        task = self.running.get(task_id)
        if task is None:
            for i, (placer, placed, _) in enumerate(self.waiting):
                if (placed.job_id, placed.task_index) == task_id:
                    if placer != sender:
                        self.counters["kill_refused"] += 1
                        return []
                    del self.waiting[i]
                    self.counters["tasks_killed"] += 1
                    if not self.fluid:
                        return answer + self._admit_waiting()
                    self._advance(now)
                    return answer + self._admit_waiting() + self._retime()
            self.counters["kill_unknown_task"] += 1
            return []
        if task.scheduler != sender:
            self.counters["kill_refused"] += 1
            return []
        if self.fluid:
            self._advance(now)
        del self.running[task_id]
        self.stretched.pop(task_id, None)
        self.holdings.killed(task_id)
        self.free = self.free.plus(task.demand)
        self.counters["tasks_killed"] += 1
        if not task.exited:
            self.killing.add(task_id)
            answer.append(Kill(task_id))
        answer += self._admit_waiting()
        return answer + self._retime() if self.fluid else answer

    # --- the fluid model -----------------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        """Bring every running task's work left up to ``now`` at the rates in force since the last change."""
        elapsed = now - self.since
        self.since = now
        if elapsed > 0:
            for task in self.running.values():
                left = task.left
                if left > 0:
                    left -= task.rate * elapsed
                    task.left = left if left > 0.0 else 0.0  # max(0.0, left), without the call

    def _mask_rates(self) -> tuple[float, ...]:
        """The rate of a task using the fungible resources of each mask (bit i: ``FUNGIBLE[i]``) under
        the current allocation: the module docstring's formula, once per mask."""
        used = self.capacity.minus(self.free)  # the summed demand of the tasks holding resources
        c = self.capacity
        if used[0] <= c[0] + EPS and used[2] <= c[2] + EPS and used[3] <= c[3] + EPS:
            return _ONES
        share = [1.0] * 4
        for r in FUNGIBLE:
            if used[r] > c[r] + EPS:
                share[r] = c[r] / used[r]
        if used[2] > c[2] + EPS and self.disk_loss:
            share[2] *= 1.0 - self.disk_loss * (1.0 - c[2] / used[2])
        a, b, n = share[0], share[2], share[3]
        return (1.0, min(1.0, a), min(1.0, b), min(1.0, a, b), min(1.0, n), min(1.0, a, n), min(1.0, b, n),
                min(1.0, a, b, n))  # fmt: skip

    def rates(self) -> dict[TaskId, float]:
        """Each running task's rate under the current allocation (the module docstring's formula)."""
        rates = self._mask_rates()
        return {t: rates[task.mask] for t, task in self.running.items()}

    def _retime(self) -> list[Effect]:
        """New rates after a change, and the timer for the earliest end of a task whose executor has
        exited (the others complete at their exit or, if slowed, are timed when they exit)."""
        rates = self._mask_rates()
        if rates != self.shared:
            self.shared = rates
            for task in self.running.values():
                task.rate = rates[task.mask]
        else:
            for task in self.fresh:
                task.rate = rates[task.mask]
        self.fresh.clear()
        if not self.stretched:  # nothing to wait for: a timer set earlier would fire for nothing
            was, self.timed = self.timed, False
            return [CancelTimer(FLUID)] if was else []
        self.timed = True
        return [SetTimer(FLUID, min([task.left / task.rate for task in self.stretched.values()]))]
