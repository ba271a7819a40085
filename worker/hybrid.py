"""The node monitor of the hybrid schedulers: Hawk (thesis ch. 2), Eagle (ch. 3) and the DLWL+SRPT
baseline (§3.6.2), one core with switches for each mechanism so the thesis' ablations can be run.

The node keeps one queue (:class:`~aviary.worker.queues.HybridQueue`) of short and long entries:
probes of distributed schedulers (late binding, as in Sparrow: ``GetTask`` when served, then
``AssignTask`` or ``NoTask``), long tasks placed by the central scheduler (``LongTask``, thesis §2.3.7)
and, for DLWL, tasks placed early by distributed schedulers (``QueueTask``). Switches:

- ``srpt``: serve by Eagle's SRPT with bypass counters (Algorithm 1, §3.4.3; starvation ``threshold``
  5 x the estimated task duration, §3.5) instead of FIFO; ``stop_at_long`` limits it to the short
  probes ahead of the first long entry (Eagle); off, every entry competes (DLWL+SRPT).
- ``sticky``: sticky batch probing (SBP, §3.4.1): a probe is not used up by the task it brings; after
  each task the node serves its queue again (SRPT or FIFO), so it asks the same job for another task
  until the scheduler answers ``NoTask`` (the job has none left) or cancels the job's probes.
- ``sss``: succinct state sharing (§3.3.3): the node keeps the bitvector and timestamp of the last
  ``LongTask``; while it holds long work (queued or running) it rejects short probes with
  ``ProbeRejected`` carrying them, except probes of the last round (sent to the short partition).
- ``stealer``: Hawk's randomized stealing (§2.3.6): a node that runs out of work asks up to N random
  general-partition nodes for probes (:mod:`aviary.worker.stealing`; every node has one, §2.3.6, or
  only the general partition's, §3.6.1); ``victim`` lets this node give its first group of short
  probes behind a long task to a thief (general-partition nodes).
- ``report_start``: tell the placing scheduler when a placed task starts (``TaskStarted``), so the
  central LWL can count the remaining part of a running long task.
- ``long_cutoff``: a centrally placed task (``LongTask``) is long when its estimate is at least this
  (default 0: every one, as Hawk and Eagle route only long jobs to the central scheduler); the ``lwl``
  baseline of §2.4.5 places short jobs centrally too and passes the cutoff.
- ``heartbeat_to``: DLWL heartbeats (``QueueReport``, the estimated queue wait) to these schedulers
  every ``heartbeat`` seconds, when something other than the passage of time changed it (the
  schedulers let a report decay at one second per second between reports).

Counters (thesis Table 3.2; every name of :data:`NODE_COUNTERS` is written, 0 included):
``probes_behind_long`` (probe reservations queued while long work was running or queued ahead: "probes
initially scheduled behind a long task"), ``short_ran_behind_long`` (short tasks that waited behind long
work: a long task held a slot of this node for some time while the short task's entry waited, whatever
the policy: probes, stolen probes, DLWL's placed tasks, the ``lwl`` baseline's short tasks; a stolen probe
that ran at once on its thief was "rescued" and is not counted), ``steals`` (probe reservations stolen
by this node), ``probes_rejected``; and ``probes_received``, ``steal_requests``, ``steal_successes``,
``probes_given`` (stolen from this node), ``tasks_launched``, ``long_launched``, ``tasks_finished``,
``no_task``, ``probes_cancelled``, ``sticky_tasks`` (tasks a probe brought after its first, SBP).

Failures (issue 14): on ``PeerDown`` of a scheduler (distributed or central) the node drops its queued
entries (``entries_dropped``), frees the slots held for its unanswered ``GetTask``
(``get_task_abandoned``) and kills its running tasks (``tasks_orphaned``), telling it nothing more until
``PeerUp``; of another node, the stealer never asks it again (and asks the next victim if it was waiting
on that one). A central scheduler that restarts asks what the node holds of its work (``GetHolding``):
its placed tasks queued, running and finished (:mod:`aviary.worker.holdings`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..common.core import Core
from ..common.effects import Effect, Kill, Launch, Send, SetTimer, TaskId
from ..common.messages import (
    AssignTask,
    CancelProbes,
    GetHolding,
    GetTask,
    LongTask,
    NoTask,
    PeerDown,
    PeerUp,
    PlaceTask,
    Probe,
    ProbeRejected,
    QueueReport,
    QueueTask,
    RemainingUpdate,
    StealReply,
    StealRequest,
    TaskFinished,
    TaskStarted,
)
from .holdings import Holdings
from .queues import Entry, HybridQueue
from .stealing import Stealer

__all__ = ["LAST_ATTEMPT", "NODE_COUNTERS", "HybridNodeCore"]

NODE_COUNTERS = (
    "probes_received",
    "probes_behind_long",
    "short_ran_behind_long",
    "probes_rejected",
    "steals",
    "steal_requests",
    "steal_successes",
    "probes_given",
    "probes_cancelled",
    "no_task",
    "sticky_tasks",
    "tasks_launched",
    "long_launched",
    "tasks_finished",
)
"""Counters every hybrid node writes, even when 0 (the thesis' Table 3.2 and the stealing columns)."""

LAST_ATTEMPT = 2
"""Eagle's last placement round (the short partition): a node never rejects a probe of this round."""

HEARTBEAT = "heartbeat"

# The kinds on_message tells apart, as constants: where this module is compiled (speedups.py) a Final
# name is a C static, while an imported name is looked up in the module's dict at every use.
_K_AssignTask: Final[type] = AssignTask
_K_Probe: Final[type] = Probe
_K_NoTask: Final[type] = NoTask
_K_CancelProbes: Final[type] = CancelProbes
_K_RemainingUpdate: Final[type] = RemainingUpdate
_K_LongTask: Final[type] = LongTask
_K_QueueTask: Final[type] = QueueTask
_K_StealRequest: Final[type] = StealRequest
_K_StealReply: Final[type] = StealReply
_K_PlaceTask: Final[type] = PlaceTask
_K_PeerDown: Final[type] = PeerDown
_K_PeerUp: Final[type] = PeerUp
_K_GetHolding: Final[type] = GetHolding

_LATEST_WINS: Final = frozenset({RemainingUpdate})
"""One set for all nodes: the simulator reads it at every message it sends to a node."""

_NOTHING_TO_STEAL: Final = StealReply([])
"""The answer of a victim with nothing to give: one object for all (a message is never changed once
sent), as most steal requests get it."""


class _Running:
    __slots__ = ("entry", "estimate", "long", "scheduler", "started")

    def __init__(self, scheduler: str, entry: Entry | None, long: bool, estimate: float, started: float):
        self.scheduler = scheduler
        self.entry = entry
        self.long = long
        self.estimate = estimate
        self.started = started


class HybridNodeCore(Core):
    """A node with ``slots`` slots serving one queue of short probes and long tasks."""

    role = "node"

    def __init__(
        self,
        name: str,
        slots: int = 1,
        *,
        srpt: bool = False,
        stop_at_long: bool = True,
        sticky: bool = False,
        sss: bool = False,
        threshold: float = 5.0,
        stealer: Stealer | None = None,
        victim: bool = False,
        report_start: bool = True,
        heartbeat_to: Sequence[str] = (),
        heartbeat: float = 0.0,
        long_cutoff: float = 0.0,
    ) -> None:
        super().__init__(name)
        if slots < 1:
            raise ValueError(f"node {name}: slots must be at least 1, got {slots}")
        if threshold < 0:
            raise ValueError(f"node {name}: starvation threshold must be >= 0, got {threshold}")
        self.slots = slots
        self.free = slots
        self.queue = HybridQueue(threshold)
        self.srpt = srpt
        self.stop_at_long = stop_at_long
        self.sticky = sticky
        self.sss = sss
        self.threshold = threshold
        self.stealer = stealer
        self.victim = victim
        self.report_start = report_start
        self.heartbeat_to = tuple(heartbeat_to)
        self.heartbeat = heartbeat
        self.long_cutoff = long_cutoff
        # GetTask sent, answer pending: the entry, and whether it waited behind long work, oldest first (a
        # list: one or two long, made at every GetTask, where a deque costs a block of 64 slots)
        self.requests: dict[tuple[str, int], list[tuple[Entry, bool]]] = {}
        self.running: dict[TaskId, _Running] = {}
        self.running_long = 0
        self._long_busy = 0.0  # seconds during which a long task held a slot, until _long_since
        self._long_since = 0.0  # when running_long last became non-zero
        self.counters.update(dict.fromkeys(NODE_COUNTERS, 0))
        self.bitvector = b""
        self.stamp = -1.0
        self._dirty = True  # the queue changed since the last heartbeat
        self.dead: set[str] = set()  # peers declared dead (PeerDown)
        self.holdings = Holdings()  # of the tasks placed here, for a restarted central
        if srpt:  # on_message's RemainingUpdate overwrites the job's entries' count (only SRPT reads it)
            self.latest_wins = _LATEST_WINS

    # --- state ---------------------------------------------------------------------------------------
    @property
    def holds_long_work(self) -> bool:
        """A long task runs here or waits in the queue (what SSS rejects probes for)."""
        return self.running_long > 0 or self.queue.longs > 0

    def long_clock(self, now: float) -> float:
        """Seconds so far during which a long task held a slot of this node. An entry records it when
        its wait begins (``Entry.mark``); it waited behind long work iff the clock moved on by the time
        it is served (thesis Table 3.2's "short tasks that execute after experiencing head-of-line
        blocking")."""
        if self.running_long:
            return self._long_busy + (now - self._long_since)
        return self._long_busy

    def _waited_behind_long(self, entry: Entry, now: float) -> bool:
        return not entry.long and self.long_clock(now) > entry.mark

    def estimated_wait(self, now: float) -> float:
        """Estimated queue waiting time: queued estimates plus what is left of the running tasks."""
        queued = sum(
            e.estimate * (e.count - e.active if self.sticky and e.probe else e.count) for e in self.queue
        )
        running = sum(max(0.0, r.estimate - (now - r.started)) for r in self.running.values())
        return (queued + running) / self.slots

    # --- inputs --------------------------------------------------------------------------------------
    def start(self, now: float) -> list[Effect]:
        if self.heartbeat_to and self.heartbeat > 0:
            return [*self._report(now), SetTimer(HEARTBEAT, self.heartbeat)]
        return []

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        if key == HEARTBEAT:
            return [*self._report(now), SetTimer(HEARTBEAT, self.heartbeat)]
        return []

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        self._dirty = True
        kind = type(msg)
        if kind is _K_AssignTask:
            return self._assigned(now, sender, msg)
        if kind is _K_Probe:
            return self._probe(now, sender, msg)
        if kind is _K_NoTask:
            return self._no_task(now, sender, msg)
        if kind is _K_CancelProbes:
            self.counters["probes_cancelled"] += self.queue.cancel(sender, msg.job_id)
            return []
        if kind is _K_RemainingUpdate:
            self.queue.set_remaining(sender, msg.job_id, msg.remaining)
            return []
        if kind is _K_LongTask:
            if msg.bitvector:
                self.bitvector, self.stamp = msg.bitvector, msg.stamp
            entry = Entry(
                sender, msg.job_id, msg.estimate, probe=False, long=msg.estimate >= self.long_cutoff,
                task_index=msg.task_index, duration=msg.duration, mark=self.long_clock(now),
            )  # fmt: skip
            self.queue.push(entry)
            return self._serve(now)
        if kind is _K_QueueTask:
            entry = Entry(
                sender, msg.job_id, msg.estimate, probe=False, long=msg.long, remaining=msg.remaining,
                task_index=msg.task_index, duration=msg.duration, mark=self.long_clock(now),
            )  # fmt: skip
            self.queue.push(entry)
            return self._serve(now)
        if kind is _K_StealRequest:
            return self._give(sender)
        if kind is _K_StealReply:
            return self._stolen(now, msg)
        if kind is _K_PlaceTask:
            entry = Entry(
                sender, msg.job_id, msg.estimate, probe=False, task_index=msg.task_index,
                duration=msg.duration, mark=self.long_clock(now),
            )  # fmt: skip
            self.queue.push(entry)
            return self._serve(now)
        if kind is _K_PeerDown:
            return self._peer_down(now, msg.name)
        if kind is _K_PeerUp:
            self.dead.discard(msg.name)
            if self.stealer is not None:
                self.stealer.up(msg.name)
            return []
        if kind is _K_GetHolding:
            queued = [(e.job_id, e.task_index) for e in self.queue if e.scheduler == sender and not e.probe]
            running = [
                t for t, run in self.running.items() if run.scheduler == sender and run.entry is not None
            ]
            return [Send(sender, self.holdings.holding(now, sender, queued, running))]
        return self.unexpected(msg)

    def _peer_down(self, now: float, name: str) -> list[Effect]:
        """A scheduler died: forget its work here; a node died: stop stealing from it."""
        self.dead.add(name)
        effects: list[Effect] = []
        for key in [k for k in self.requests if k[0] == name]:
            for entry, _ in self.requests.pop(key):
                self.free += 1
                self.counters["get_task_abandoned"] += 1
                if self.sticky and entry.probe:
                    self.queue.activate(entry, -1)
        self.counters["entries_dropped"] += self.queue.drop_scheduler(name)
        orphans = [task for task, run in self.running.items() if run.scheduler == name]
        self.counters["tasks_orphaned"] += len(orphans)
        effects += [Kill(task) for task in orphans]
        if self.stealer is not None:
            effects += self.stealer.down(name, self._idle())
        return effects + self._serve(now, idle_check=True)

    def _probe(self, now: float, sender: str, msg: Probe) -> list[Effect]:
        count = max(1, msg.count)
        self.counters["probes_received"] += count
        long_work = self.holds_long_work
        if self.sss and long_work and not msg.long and msg.attempt < LAST_ATTEMPT:
            self.counters["probes_rejected"] += count
            return [Send(sender, ProbeRejected(msg.job_id, count, msg.attempt, self.bitvector, self.stamp))]
        if long_work and not msg.long:
            self.counters["probes_behind_long"] += count
        entry = Entry(
            sender, msg.job_id, msg.estimate, probe=True, long=msg.long, remaining=msg.remaining,
            count=count, mark=self.long_clock(now),
        )  # fmt: skip
        self.queue.push(entry)
        return self._serve(now)

    def _assigned(self, now: float, sender: str, msg: AssignTask) -> list[Effect]:
        key = (sender, msg.job_id)
        pending = self.requests.get(key)
        if not pending:  # not the answer to a GetTask of ours: counted and dropped (NodeMonitorCore)
            self.counters["unsolicited_assign"] += 1
            return []
        entry, behind = pending.pop(0)
        if not pending:
            del self.requests[key]
        if msg.remaining >= 0:
            entry.remaining = msg.remaining
            self.queue.set_remaining(sender, msg.job_id, msg.remaining)
        if self.srpt:
            self.queue.charge_bypass(entry)
        if behind:
            self.counters["short_ran_behind_long"] += 1
        if entry.tasks:
            self.counters["sticky_tasks"] += 1
        entry.tasks += 1
        return [
            *self._launch(now, sender, entry, msg.job_id, msg.task_index, msg.duration),
            *self._serve(now),
        ]

    def _no_task(self, now: float, sender: str, msg: NoTask) -> list[Effect]:
        key = (sender, msg.job_id)
        pending = self.requests.get(key)
        if not pending:
            return self.unexpected(msg)
        entry, _ = pending.pop(0)
        if not pending:
            del self.requests[key]
        self.free += 1
        self.counters["no_task"] += 1
        if self.sticky:
            self.queue.activate(entry, -1)
            self.queue.remove(entry)  # the job has no task left for this probe
        return self._serve(now, idle_check=True)

    def on_task_exit(self, now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        self._dirty = True
        run = self.running.pop(task_id, None)
        if run is None:
            self.counters["unknown_task_exit"] += 1
            return []
        self.free += 1
        if run.long:
            self.running_long -= 1
            if not self.running_long:
                self._long_busy += now - self._long_since
        if self.dead and run.scheduler in self.dead:  # an orphan (killed, or ended meanwhile): nobody to tell
            return self._serve(now, idle_check=True)
        if run.entry is not None and not run.entry.probe:
            self.holdings.ended(run.scheduler, task_id, now)
        if run.entry is not None and self.sticky and run.entry.probe:
            self._release(run.entry, now)
        self.counters["tasks_finished" if ok else "tasks_failed"] += 1
        return [
            Send(run.scheduler, TaskFinished(task_id[0], task_id[1], ok)),
            *self._serve(now, idle_check=True),
        ]

    # --- serving -------------------------------------------------------------------------------------
    def _launch(
        self, now: float, scheduler: str, entry: Entry | None, job_id: int, index: int, duration: float
    ) -> list[Effect]:
        task_id = (job_id, index)
        if task_id in self.running:  # a duplicate assignment: the task already runs here
            self.counters["duplicate_task"] += 1
            self.free += 1
            if entry is not None and self.sticky and entry.probe:
                self._release(entry, now)
            return []
        long = entry is not None and entry.long
        estimate = entry.estimate if entry is not None else duration
        self.running[task_id] = _Running(scheduler, entry, long, estimate, now)
        if entry is not None and not entry.probe:
            self.holdings.launched(task_id, now)
        if long:
            if not self.running_long:
                self._long_since = now
            self.running_long += 1
            self.counters["long_launched"] += 1
        self.counters["tasks_launched"] += 1
        return [Launch(task_id, duration)]

    def _release(self, entry: Entry, now: float) -> None:
        """A sticky probe gives its slot back (SBP, §3.4.1) and waits again: a new wait begins unless
        some of its reservations were still waiting (their older wait goes on)."""
        if entry.active >= entry.count:
            entry.mark = self.long_clock(now)
        self.queue.activate(entry, -1)

    def _select(self) -> Entry | None:
        if self.srpt:
            return self.queue.srpt(stop_at_long=self.stop_at_long)
        return self.queue.first()

    def _serve(self, now: float, idle_check: bool = False) -> list[Effect]:
        """Fill free slots from the queue; with ``idle_check`` (a slot just came free), a node left with
        nothing to serve starts stealing."""
        effects: list[Effect] = []
        queue = self.queue
        while self.free > 0:
            entry = self._select()
            if entry is None:
                break
            self.free -= 1
            if entry.probe:
                if self.sticky:
                    queue.activate(entry, 1)
                else:
                    queue.consume(entry)
                key = (entry.scheduler, entry.job_id)
                request = (entry, self._waited_behind_long(entry, now))
                pending = self.requests.get(key)
                if pending is None:
                    self.requests[key] = [request]
                else:
                    pending.append(request)
                effects.append(Send(entry.scheduler, GetTask(entry.job_id)))
            else:
                if self.srpt and not self.stop_at_long:
                    queue.charge_bypass(entry)
                queue.remove(entry)
                if self._waited_behind_long(entry, now):
                    self.counters["short_ran_behind_long"] += 1
                effects.extend(
                    self._launch(now, entry.scheduler, entry, entry.job_id, entry.task_index, entry.duration)
                )
                if self.report_start:
                    effects.append(Send(entry.scheduler, TaskStarted(entry.job_id, entry.task_index)))
        if idle_check and self.free > 0 and self.stealer is not None and self._idle():
            sent = self.stealer.start()
            self.counters["steal_requests"] += len(sent)
            effects.extend(sent)
        return effects

    def _idle(self) -> bool:
        return self.free > 0 and self.queue.first() is None

    # --- stealing ------------------------------------------------------------------------------------
    def _give(self, thief: str) -> list[Effect]:
        group = self.queue.steal_group(self.running_long > 0) if self.victim else []
        if not group:
            return [Send(thief, _NOTHING_TO_STEAL)]
        self.counters["probes_given"] += sum(e.count for e in group)
        return [
            Send(
                thief, StealReply([[e.scheduler, e.job_id, e.estimate, e.remaining, e.count] for e in group])
            )
        ]

    def _stolen(self, now: float, msg: StealReply) -> list[Effect]:
        stealer = self.stealer
        probes = [p for p in msg.probes if _stolen_probe(p)]
        if len(probes) < len(msg.probes):  # not what a victim's _give makes: counted and dropped
            self.counters["bad_stolen_probes"] += len(msg.probes) - len(probes)
        if not probes:
            if stealer is None:
                return []
            sent = stealer.failed(self._idle())
            self.counters["steal_requests"] += len(sent)
            return sent
        if stealer is not None:
            stealer.succeeded()
        self.counters["steal_successes"] += 1
        long_work = self.holds_long_work
        for scheduler, job_id, estimate, remaining, count in probes:
            count = max(1, count)  # as a Probe's
            self.counters["steals"] += count
            if long_work:
                self.counters["probes_behind_long"] += count
            self.queue.push(
                Entry(str(scheduler), int(job_id), float(estimate), probe=True, remaining=int(remaining),
                      count=int(count), mark=self.long_clock(now))
            )  # fmt: skip
        return self._serve(now, idle_check=True)

    # --- DLWL heartbeats -----------------------------------------------------------------------------
    def _report(self, now: float) -> list[Effect]:
        if not self._dirty:
            return []
        self._dirty = False
        wait = self.estimated_wait(now)
        return [Send(s, QueueReport(wait)) for s in self.heartbeat_to]


def _stolen_probe(p: Any) -> bool:
    """Whether ``p``, an item of a ``StealReply``, is a probe as a victim sends it: ``[scheduler, job_id,
    estimate, remaining, count]``, a name, an int, a number and two ints (a StealReply's items are untyped
    on the wire)."""
    if not isinstance(p, (list, tuple)) or len(p) != 5:
        return False
    scheduler, job_id, estimate, remaining, count = p
    return (
        isinstance(scheduler, str)
        and all(isinstance(x, int) and not isinstance(x, bool) for x in (job_id, remaining, count))
        and isinstance(estimate, (int, float))
        and not isinstance(estimate, bool)
    )
