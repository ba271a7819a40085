"""The Kairos node monitor: Least Attained Service over N slots with preemption (thesis §4.3.2, Alg. 2).

Tasks come from the central dispatcher (``PlaceTask``) and never wait for a slot: a new task is by
definition the youngest one, so it starts at once, on a free slot if there is one, else in the slot of
the running task with the *most* attained service, which is suspended (``Suspend``) and joins the
node's queue of idle tasks (Alg. 2 lines 2-18). When a task ends, the youngest idle task (least
attained service) takes its slot (lines 19-29). Every slot has a quantum timer of W seconds (``SetTimer``
keyed by the slot): when it fires, the running task is charged the time it ran, and if some idle task
has attained at most as much service (line 34: ``<=``) it is swapped in and the running task suspended;
otherwise the running task goes on for another quantum (lines 30-44).

Attained service is accounted from the ``now`` the driver passes (real monotonic time or virtual time):
a running task's attained service is ``attained + (now - start)``; it is charged into ``attained``
whenever the task stops running or its quantum ends. No runtime estimate is read anywhere: the task
duration in ``PlaceTask`` is only handed to the executor (``Launch``), never used to decide.

Choices where the thesis is silent or loose (documented in docs/kairos.md):

- An arrival preempts the running task with the most attained service *as of now* (the stored value
  plus the current quantum's part), not as of its last charge: both are "attained service", the live
  one is exact.
- Starvation guard (thesis: "if a task is not able to run for a given number of consecutive quanta ...
  it gets to run for at least a multiple of W, during which it cannot be preempted", not in Alg. 2): an
  idle task that has waited ``starvation_quanta * W`` seconds since it last ran (or since it arrived,
  if it never ran) is *starving*. At the next quantum expiry or task end on this node, a starving task
  (the one waiting longest first) takes that slot whatever its attained service, and is protected for
  ``starvation_multiple * W``: neither an arrival nor a quantum expiry preempts it until then. If every
  slot holds a protected task, an arriving task waits in the idle queue (it is the youngest, so it runs
  at the next quantum expiry or task end) — the only case where a new task does not start at once.
- Heartbeats every ``heartbeat_interval`` (Alg. 2 line 45): number of tasks (running + idle), the
  population variance of their attained service, and its sum (for the ``Sum`` tie-break of Figure
  4.6). A node that is idle and already said so skips the heartbeat (the central's copy is the same).
- A task that exits while the node thinks it suspended (on the real runtime the exit can race the
  SIGSTOP) is reported finished like any other; nothing is lost.

Options beyond Alg. 2 (defaults: the thesis' algorithm and text; docs/kairos.md "Options from the authors'
code"; the authors' YARN code is ``../shared/anchors/kairos-yarn/code/ContainerManagerImpl.java``, cited
as CMI):

- ``swap_margin`` (quanta, default 0): at a quantum's end the running task is swapped for the youngest
  idle one only if it has attained at least ``swap_margin x W`` more (0: Alg. 2 line 34's ``<=``). The
  authors' code swaps only when ``executing.age - suspended.age >= processorSharingInterval / 2``
  (CMI:1574): ``swap_margin = 0.5``.
- ``starvation`` (default ``"text"``): ``"text"`` is the guard above (thesis §4.3.2's text, Aviary's
  reading); ``"code"`` is what the authors' code does (CMI:1186-1222, 1389, 1459-1461, 1571-1594): each
  task counts its suspensions, an arrival's adds one, a quantum suspension restarts the count at one
  (the copy constructor, CMI:1197-1199, then ``updateAgeSuspend``); at a quantum's end a running task
  whose count exceeds ``starvation_quanta`` (the code's ``nrPreemptionsAllowed``) is not swapped, its
  count is reset and it runs ``starvation_multiple x W`` more (``nrWindowsAfterPreemption``), and an
  arrival may still preempt it; ``"off"``: no guard (plain Alg. 2).
- ``suspended_share`` (default 0): the share of a core a suspended task keeps. The node only exposes it
  (:attr:`KairosNodeCore.suspended_share`); the executor (and the simulator) make the task progress at
  that rate while suspended, as the testbed's ``processorsharing.minimum-cpu`` = 0.1 did (yarn-site.xml:55,
  CMI:1783-1790; thesis §4.4: "reducing the resources allocated to it to a minimum"). Attained service
  still counts running time only, as the code's ``age`` (CMI:1217-1229). A suspended task can then end
  while suspended (``exit_while_suspended``).

Counters: ``preemptions`` (every ``Suspend``, reported even when 0), split into
``preemptions_arrival``, ``preemptions_quantum`` and ``preemptions_starvation``; ``starvation_guards``;
``resumes``; ``tasks_received``; ``tasks_launched``; ``tasks_finished``; ``heartbeats`` (sent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..common.core import Core
from ..common.effects import CancelTimer, Effect, Launch, Resume, Send, SetTimer, Suspend, TaskId
from ..common.messages import GetHolding, Heartbeat, PlaceTask, TaskFinished
from .holdings import Holdings

HEARTBEAT = "heartbeat"
QUANTUM = "quantum"

DEFAULT_QUANTUM = 10.0
DEFAULT_STARVATION_QUANTA = 3
DEFAULT_STARVATION_MULTIPLE = 2.0
STARVATION_MODES = ("text", "code", "off")
"""``starvation``: the thesis text's guard (Aviary's reading), the authors' code's, or none."""


@dataclass(slots=True)
class LasTask:
    """Alg. 2's TaskEntry: a task placed on this node, running or idle."""

    task_id: TaskId
    scheduler: str  # who placed it: gets TaskFinished
    duration: float  # for the executor only (never read by the policy)
    attained: float = 0.0  # service charged so far (excludes the current run, while running)
    start: float = 0.0  # when the current run (or quantum) began; meaningful while running
    slot: int | None = None  # the slot it runs in; None while idle
    launched: bool = False  # False until its first run (then Launch, afterwards Resume)
    idle_since: float = 0.0  # when it last stopped running (or arrived); meaningful while idle
    protected_until: float | None = None  # starvation guard: not preempted before this time
    suspensions: int = 0  # starvation="code": the code's timesPreempted (CMI:1189)

    def live(self, now: float) -> float:
        """Attained service as of ``now``."""
        return self.attained + (now - self.start) if self.slot is not None else self.attained


class KairosNodeCore(Core):
    """A Kairos worker: LAS over ``slots`` slots with quantum ``quantum`` (thesis Alg. 2)."""

    role = "node"

    def __init__(
        self,
        name: str,
        slots: int = 1,
        *,
        central: str | None = "central",
        quantum: float = DEFAULT_QUANTUM,
        starvation_quanta: int = DEFAULT_STARVATION_QUANTA,
        starvation_multiple: float = DEFAULT_STARVATION_MULTIPLE,
        heartbeat_interval: float | None = None,
        swap_margin: float = 0.0,
        starvation: str = "text",
        suspended_share: float = 0.0,
    ) -> None:
        super().__init__(name)
        if slots < 1:
            raise ValueError(f"node {name}: slots must be at least 1, got {slots}")
        if not (quantum > 0 and math.isfinite(quantum)):
            raise ValueError(f"node {name}: quantum must be a positive number, got {quantum}")
        if starvation_quanta < 1:
            raise ValueError(f"node {name}: starvation_quanta must be at least 1, got {starvation_quanta}")
        if not starvation_multiple > 0:
            raise ValueError(f"node {name}: starvation_multiple must be > 0, got {starvation_multiple}")
        if not (swap_margin >= 0 and math.isfinite(swap_margin)):
            raise ValueError(f"node {name}: swap_margin must be >= 0 quanta, got {swap_margin}")
        if starvation not in STARVATION_MODES:
            raise ValueError(
                f"node {name}: starvation must be one of {', '.join(STARVATION_MODES)}, got {starvation!r}"
            )
        if not 0.0 <= suspended_share < 1.0:
            raise ValueError(f"node {name}: suspended_share must be in [0, 1), got {suspended_share}")
        if heartbeat_interval is None:
            heartbeat_interval = quantum / 10
        if not heartbeat_interval > 0:
            raise ValueError(f"node {name}: heartbeat_interval must be > 0, got {heartbeat_interval}")
        self.slots = slots
        self.central = central
        self.quantum = float(quantum)
        self.starvation_wait = starvation_quanta * self.quantum
        self.guard = starvation_multiple * self.quantum
        self.heartbeat_interval = float(heartbeat_interval)
        self.margin = float(swap_margin) * self.quantum
        self.starvation = starvation
        self.allowed = starvation_quanta  # starvation="code": the code's nrPreemptionsAllowed
        self.suspended_share = float(suspended_share)
        """The share of a core a suspended task keeps: read by the executor and the simulator."""
        self.running: list[LasTask | None] = [None] * slots  # by slot
        self.idle: dict[TaskId, LasTask] = {}  # suspended, or not started yet
        self.tasks: dict[TaskId, LasTask] = {}  # every task on this node
        self.holdings = Holdings()  # for a restarted central: what it placed here
        self._said_idle = False
        self.counters["preemptions"] = 0  # always reported, even when nothing was preempted

    # --- views (tests, heartbeats) ------------------------------------------------------------------
    @property
    def free(self) -> int:
        return sum(1 for t in self.running if t is None)

    def attained(self, now: float) -> dict[TaskId, float]:
        """Every task's attained service as of ``now``."""
        return {tid: t.live(now) for tid, t in self.tasks.items()}

    def heartbeat(self, now: float) -> Heartbeat:
        values = [t.live(now) for t in self.tasks.values()]
        n = len(values)
        total = math.fsum(values)
        if n < 2:
            var = 0.0
        else:
            mean = total / n
            var = math.fsum((v - mean) ** 2 for v in values) / n
        return Heartbeat(n, var, total, self.free)

    # --- events -------------------------------------------------------------------------------------
    def start(self, now: float) -> list[Effect]:
        return [SetTimer(HEARTBEAT, self.heartbeat_interval)] if self.central is not None else []

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        if type(msg) is PlaceTask:
            return self._arrive(now, sender, msg)
        if type(msg) is GetHolding:  # a restarted central: every task here is its
            tasks = [t for t in self.tasks.values() if t.scheduler == sender]
            queued = [t.task_id for t in tasks if not t.launched]
            running = [t.task_id for t in tasks if t.launched]
            return [Send(sender, self.holdings.holding(now, sender, queued, running))]
        return self.unexpected(msg)

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        if key == HEARTBEAT:
            return self._heartbeat(now)
        if type(key) is tuple and len(key) == 2 and key[0] == QUANTUM:
            return self._quantum_end(now, key[1])
        return []

    def on_task_exit(self, now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        task = self.tasks.pop(task_id, None)
        if task is None:
            self.counters["unknown_task_exit"] += 1
            return []
        self.counters["tasks_finished" if ok else "tasks_failed"] += 1
        self.holdings.ended(task.scheduler, task_id, now)
        done: list[Effect] = [Send(task.scheduler, TaskFinished(task_id[0], task_id[1], ok))]
        if task.slot is None:  # exited while we thought it suspended (a race with SIGSTOP)
            self.idle.pop(task_id, None)
            self.counters["exit_while_suspended"] += 1
            return done
        slot = task.slot
        self.running[slot] = None
        starving = self._starving(now) if self.starvation == "text" else None  # lines 21-27
        if starving is not None:
            self.counters["starvation_guards"] += 1
            return [*done, *self._run(now, starving, slot, guard=True)]
        young = self._youngest()
        if young is None:
            return [*done, CancelTimer((QUANTUM, slot))]
        return [*done, *self._run(now, young, slot)]

    # --- Alg. 2 ---------------------------------------------------------------------------------------
    def _arrive(self, now: float, sender: str, msg: PlaceTask) -> list[Effect]:
        task_id = (msg.job_id, msg.task_index)
        if task_id in self.tasks:
            self.counters["duplicate_task"] += 1
            return []
        task = LasTask(task_id, sender, msg.duration, idle_since=now)
        self.tasks[task_id] = task
        self.counters["tasks_received"] += 1
        for slot, t in enumerate(self.running):
            if t is None:  # line 8: a free core
                return self._run(now, task, slot)
        victim = self._oldest_unprotected(now)
        if victim is None:  # every slot holds a starvation-guarded task: wait for the next slot
            self.idle[task_id] = task
            self.counters["arrivals_waiting"] += 1
            return []
        # lines 11-15: preempt the running task with the most attained service
        freed = victim.slot
        assert freed is not None
        effects = self._suspend(now, victim)
        victim.suspensions += 1  # CMI:1389 updateAgeSuspend on the original: the count goes on
        self.counters["preemptions_arrival"] += 1
        return [*effects, *self._run(now, task, freed)]

    def _quantum_end(self, now: float, slot: int) -> list[Effect]:
        task = self.running[slot]
        if task is None:  # a stale timer (the slot emptied): nothing runs there
            return []
        # line 32: charge the quantum
        task.attained += now - task.start
        task.start = now
        task.protected_until = None
        if self.starvation == "text":
            starving = self._starving(now)
            if starving is not None:
                self.counters["starvation_guards"] += 1
                self.counters["preemptions_starvation"] += 1
                return [*self._suspend(now, task), *self._run(now, starving, slot, guard=True)]
        elif self.starvation == "code" and task.suspensions > self.allowed:  # CMI:1571, 1590-1594
            task.suspensions = 0
            self.counters["starvation_guards"] += 1
            return [SetTimer((QUANTUM, slot), self.guard)]  # arrivals may still preempt it
        young = self._youngest()
        # line 34 (margin 0: ``<=``); the authors' code: older by at least W / 2 (CMI:1574)
        if young is not None and task.attained - young.attained >= self.margin:
            self.counters["preemptions_quantum"] += 1
            task.suspensions = 1  # CMI:1459-1461: a copy (count 0) is suspended and counted once
            return [*self._suspend(now, task), *self._run(now, young, slot)]
        return [SetTimer((QUANTUM, slot), self.quantum)]  # lines 43-44: go on for another quantum

    def _heartbeat(self, now: float) -> list[Effect]:
        effects: list[Effect] = [SetTimer(HEARTBEAT, self.heartbeat_interval)]
        if self.central is None:
            return effects
        hb = self.heartbeat(now)
        if hb.tasks == 0:
            if self._said_idle:
                return effects
            self._said_idle = True
        else:
            self._said_idle = False
        self.counters["heartbeats"] += 1
        effects.append(Send(self.central, hb))
        return effects

    # --- helpers --------------------------------------------------------------------------------------
    def _run(self, now: float, task: LasTask, slot: int, *, guard: bool = False) -> list[Effect]:
        """Put ``task`` (new or idle) in ``slot`` and start its quantum (lines 16-18, 24-27, 38-41)."""
        self.idle.pop(task.task_id, None)
        self.running[slot] = task
        task.slot = slot
        task.start = now
        task.protected_until = now + self.guard if guard else None
        if task.launched:
            self.counters["resumes"] += 1
            first: Effect = Resume(task.task_id)
        else:
            task.launched = True
            self.holdings.launched(task.task_id, now)
            self.counters["tasks_launched"] += 1
            first = Launch(task.task_id, task.duration)
        return [first, SetTimer((QUANTUM, slot), self.guard if guard else self.quantum)]

    def _suspend(self, now: float, task: LasTask) -> list[Effect]:
        """Charge ``task`` what it ran and move it to the idle set (lines 12-15, 35-37)."""
        assert task.slot is not None
        task.attained += now - task.start
        self.running[task.slot] = None
        task.slot = None
        task.protected_until = None
        task.idle_since = now
        self.idle[task.task_id] = task
        self.counters["preemptions"] += 1
        return [Suspend(task.task_id)]

    def _oldest_unprotected(self, now: float) -> LasTask | None:
        best: LasTask | None = None
        best_att = -1.0
        for t in self.running:
            if t is None or (t.protected_until is not None and t.protected_until > now):
                continue
            att = t.live(now)
            if att > best_att:
                best, best_att = t, att
        return best

    def _youngest(self) -> LasTask | None:
        """The idle task with the least attained service (the one idle longest among equals)."""
        best: LasTask | None = None
        for t in self.idle.values():
            if best is None or (t.attained, t.idle_since) < (best.attained, best.idle_since):
                best = t
        return best

    def _starving(self, now: float) -> LasTask | None:
        """The idle task waiting longest, if it has waited ``starvation_quanta`` quanta or more."""
        best: LasTask | None = None
        for t in self.idle.values():
            if best is None or t.idle_since < best.idle_since:
                best = t
        if best is not None and now - best.idle_since >= self.starvation_wait - 1e-9:
            return best
        return None
