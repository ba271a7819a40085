"""The simulator: the same cores as the real runtime, driven on virtual time in one process (DESIGN §2).

The second driver beside the real runtime (:mod:`aviary.common.runtime`): both execute the same cores'
effects, this one on virtual time, that one on sockets, clocks and executors.

Every process of the cluster gets exactly the core the real runtime would run (``registry.build_core``;
the frontend a :class:`FrontendCore` that waits for nobody). Instead of sockets, clocks and executors
there is an event queue:

- a ``Send`` is delivered to the target's ``on_message(now, sender, msg)`` after ``net_delay``; messages
  are passed as objects (never encoded) and counted by kind like the real runtime counts them;
- ``SetTimer(key, delay)`` calls ``on_timer(now, key)`` after ``delay``, replacing a pending timer of
  the same key of the same core; ``CancelTimer`` cancels it;
- ``Launch`` / ``Suspend`` / ``Resume`` / ``Kill`` are carried out by a virtual executor with the
  semantics of the real ``TimerExecutor``: a task exits ``ok`` after ``duration`` seconds of *running*
  time (a task suspended for X finishes X later; X x (1 - s) later if its core says a suspended task
  keeps a share s of a core, ``suspended_share``), ``Kill`` ends it at once with ``ok=False``, and an
  exit is always delivered as an event of its own, never while a core's effects are being applied.

Events are ordered by (virtual time, sequence number), the sequence number being the order in which
they were created, so a run is a pure function of its inputs: the driver has no randomness of its own,
and every core owns a seeded ``random.Random``. Messages between a pair of processes keep FIFO order.

Speed: all messages take the same ``net_delay`` and are sent at a non-decreasing virtual time, so in
creation order they are already sorted by delivery time; they go to a FIFO (a deque) instead of the
heap, and only timers and task exits use the heap. The loop merges the two by (time, sequence), which
is exactly the order a single heap would give. Stale timers and exits (replaced, cancelled, suspended,
killed) are dropped lazily when they come up.

Two more shortcuts, both exact: a ``Multicast`` (a scheduler's update or cancel to many nodes), like
consecutive ``Send``s of one message object, is one FIFO entry, delivered to its targets in a row
(their sequence numbers are consecutive, so nothing could come between them); and a message of a kind
the target declares in ``Core.latest_wins`` (the hybrid node's ``RemainingUpdate``) is held by the
target and handed to it just before its next other input, only the last of each (sender, job) among
those that have arrived (the targets of one multicast share one held record, with the sequence number
of the first: as arrived before an input exactly when each own record would be).

Observing a run (DESIGN §9, "observe, don't patch"): an ``observer(now, core, input, effects)`` given to
the :class:`Simulator` (or :func:`simulate`) is called after every input a core handled, with the input
as ``("start",)``, ``("message", sender, msg)``, ``("timer", key)`` or ``("exit", task_id, ok)`` and the
effects the core returned (to read, not to change). Analyses record what they need from there instead
of replacing a core's methods; without an observer the loop runs exactly as before.
"""

from __future__ import annotations

import gc
import heapq
import math
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...common.cluster import Cluster
from ...common.core import Core
from ...common.effects import (
    CancelTimer,
    Effect,
    Kill,
    Launch,
    Multicast,
    Resume,
    Send,
    SetTimer,
    Suspend,
    TaskId,
)
from ...common.failures import DETECT_SECONDS, EXIT_DETECT_SECONDS, RESTART_SECONDS, Failure
from ...common.frontend import FrontendCore
from ...common.journal import Journal
from ...common.links import LinkEnd, Segment
from ...common.messages import Register
from ...common.model import JobSpec
from ...common.netfaults import FaultPlan, LinkFault
from ...common.runtime import CONTROL_KINDS
from ...common.tasktable import BINDS, NodeBook, TaskRecorder
from ...common.workload import JobStream
from ..policies.registry import build_core, cluster_policy

__all__ = ["SimOutcome", "Simulator", "simulate"]

Progress = Callable[[FrontendCore, float], None]

# Heap event kinds (messages live in their own FIFO).
_TIMER = 0
_EXIT = 1
_KILLED = 2
_LATE = 3
"""A heap event: a message the network held back (a link fault's delay), moved to the FIFO when due."""
_LINK = 4
"""A heap event: a link's retransmission timer (:mod:`aviary.common.links`, with link faults only)."""


@dataclass
class SimOutcome:
    frontend: FrontendCore
    """Holds the times of every job (submit, first_start, finish), as in a real run."""
    messages: Counter[str]
    """Messages sent by kind (type name), all processes; control kinds are never sent."""
    counters: Counter[str]
    """The sum of all cores' counters, plus ``error.unknown-peer`` and ``executor.*`` anomalies."""
    events: int
    """Events processed (messages delivered, timers fired, task exits; stale ones not counted)."""
    wall_seconds: float
    """Real time the simulation took, building the cores included."""
    virtual_seconds: float
    """Virtual time at the end (the run starts at 0)."""
    cores: dict[str, Core] = field(default_factory=dict, repr=False)
    """Every process's core by name, in their final state (for inspection)."""
    stopped: str | None = None
    """Why the run ended before every job was done: ``"SIGINT"`` (Ctrl-C, with ``interruptible``),
    ``"wall limit"`` (``wall_limit``), :data:`CORE_RAISED` (then ``error`` says which and how); None when
    it ran to its end."""
    error: str | None = None
    """The one line of a core's exception that stopped the run (:class:`CoreError`)."""


Observer = Callable[[float, Core, tuple[Any, ...], list[Effect]], None]
"""Called after every input a core handled (module docstring)."""


class Held:
    """A held message (:attr:`Core.latest_wins`): arrival time, sequence number, sender, message, and
    the (sender, kind, job) of which only the last counts. One object for the targets of one multicast
    (a class, not a tuple: shared as it is by every target's list, also when compiled)."""

    __slots__ = ("at", "key", "msg", "sender", "seq")

    def __init__(self, at: float, seq: int, sender: str, msg: Any, key: str = "") -> None:
        self.at = at
        self.seq = seq
        self.sender = sender
        self.msg = msg
        # (sender, kind, job) as a string: its hash is computed once (a tuple's at every lookup)
        self.key = key or held_key(sender, msg)


def held_key(sender: str, msg: Any) -> str:
    """Of held messages with one key, only the last counts: (sender, kind, job)."""
    return f"{sender}\0{id(type(msg))}\0{msg.job_id}"


class _Sub:
    """A process's membership of a :class:`_Channel`: it is handed the channel's records from index
    ``next`` on, up to ``end`` (exclusive; -1 while it is still a member)."""

    __slots__ = ("chan", "end", "next", "proc")

    def __init__(self, chan: _Channel, proc: _Proc, next: int) -> None:
        self.chan = chan
        self.proc = proc
        self.next = next
        self.end = -1


class _Channel:
    """The multicasts of one held key (a scheduler's updates about one job): one record each, and which
    processes were among the targets of which (a membership per process and its interval), so that a
    multicast to the same nodes as the one before costs O(1) per node that changed, not per target."""

    __slots__ = ("idle", "key", "order", "recs", "subs")

    def __init__(self, key: str) -> None:
        self.key = key
        self.recs: list[Held] = []  # one per multicast with a held target, in order
        self.subs: dict[str, _Sub] = {}  # the current members by name
        self.order: list[str] = []  # the current members in the last multicast's order
        self.idle: list[_Sub] = []  # members handed every record so far (not in their process's news)


CHANNELS_PRUNED_AT = 4096
"""Channels (one per job a scheduler multicasts held updates about) a simulation holds before it drops
those that are quiet (:meth:`Simulator._prune_channels`)."""


class CoreError(Exception):
    """A core raised while handling an input: a bug of its policy, after which no figure means anything.
    One line names the process, its role, the virtual time, the input and the exception."""

    def __init__(self, name: str, core: Core, now: float, handling: str, exc: Exception) -> None:
        role = getattr(core, "role")  # noqa: B009 (compiled, core.role would read Core's own, not a subclass's)
        self.raised = exc
        """The core's own exception (the compiled build does not keep ``raise ... from``'s cause)."""
        super().__init__(
            f"the {role} core of {name} raised {type(exc).__name__}: {exc}, at virtual time "
            f"{now:,.3f} s, handling {handling}"
        )


class _WallLimit(Exception):
    """Raised from the progress hook when a bounded simulation ran out of wall time."""


class _Stalled(Exception):
    """Raised from the progress hook when no job finished for :func:`quiet_limit` of virtual time."""


STALLED = "stall"
CORE_RAISED = "a core's exception"
"""``SimOutcome.stopped`` when the replay gave up: no job finished for :func:`quiet_limit`."""


GC_FIRST_GENERATION = 1_000_000
"""The collector's first-generation threshold while the loop runs: millions of short-lived tuples per run
would otherwise trigger collections (which walk the long-lived core state) thousands of times per second
(1,000,000: Hawk at 12,500 nodes ~2 % faster than with 200,000; the cores make no cyclic garbage)."""


def quiet_limit(jobs: Sequence[JobSpec]) -> float:
    """Virtual seconds without a job finishing, every job submitted, after which a replay gives up: ten
    times all the jobs' work (slowed down as much as a job can be) plus an hour. A cluster that works
    on anything finishes a job sooner; one that cannot (a bug) would otherwise run on its heartbeats for
    ever."""
    return 10 * math.fsum(math.fsum(j.durations) * max(1.0, j.slowdown) for j in jobs) + 3600.0


def _sooner(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """``a < b`` for a message and a heap event, ``(time, seq, ...)`` each with distinct sequence numbers:
    what the tuples' comparison says, on the unboxed time (a native comparison where this module is
    compiled, instead of a generic one per item)."""
    ta: float = a[0]
    tb: float = b[0]
    if ta != tb:
        return ta < tb
    sa: int = a[1]
    sb: int = b[1]
    return sa < sb


class _Proc:
    """One simulated process: its core, its timers and its virtual executor."""

    __slots__ = (
        "book",
        "core",
        "held",
        "lazy",
        "name",
        "news",
        "on_message",
        "on_task_exit",
        "on_timer",
        "share",
        "tasks",
        "timers",
        "wrapped",
    )

    def __init__(self, core: Core) -> None:
        self.core = core
        self.name = core.name
        self.on_message: Callable[..., list[Effect]] = core.on_message
        # The handlers above were replaced (an observer, a kill): the loop calls them, else the core's
        # own methods directly (a native call where this module is compiled).
        self.wrapped = False
        # Read as Python does (the class attribute of a core class that overrides it), also when this
        # module and Core are compiled (speedups.py), where a plain read would see Core's default.
        self.lazy: frozenset[type] = getattr(core, "latest_wins", frozenset())
        # Messages of ``lazy`` kinds sent to it, in arrival order (the targets of one multicast share one
        # record, with the sequence number of the first).
        self.held: list[Held] = []
        # Its memberships of multicast channels with records it has not been handed yet.
        self.news: list[_Sub] = []
        self.on_timer: Callable[..., list[Effect]] = core.on_timer
        self.on_task_exit: Callable[..., list[Effect]] = core.on_task_exit
        self.timers: dict[Any, int] = {}  # key -> sequence number of the live timer event
        # task -> [sequence number of the live exit event (0 while suspended), remaining, started], and
        # while suspended at a share of a core (``share``), that share as a fourth item
        self.tasks: dict[TaskId, list[Any]] = {}
        # The share of a core a suspended task keeps (a Kairos node's ``suspended_share``; 0: none)
        self.share: float = float(getattr(core, "suspended_share", 0.0))
        # Its book in the simulator's task recorder (a node's, with the task table on)
        self.book: NodeBook | None = None


class _Paused:
    """A process stopped for a while (:meth:`Simulator.pause`): its own handlers, kept, and its inputs
    meanwhile, in order (``(0, sender, msg)``, ``(1, key, None)``, ``(2, task_id, ok)``)."""

    def __init__(self, proc: _Proc) -> None:
        self.handlers = (proc.on_message, proc.on_timer, proc.on_task_exit)
        self.wrapped = proc.wrapped
        self.waiting: list[tuple[int, Any, Any]] = []

    def wait_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        self.waiting.append((0, sender, msg))
        return []

    def wait_timer(self, now: float, key: Any) -> list[Effect]:
        self.waiting.append((1, key, None))
        return []

    def wait_exit(self, now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        self.waiting.append((2, task_id, ok))
        return []


def _observe(proc: _Proc, observer: Observer) -> None:
    """Wrap the process's handlers so that ``observer`` sees each input and its effects."""
    core = proc.core
    on_message, on_timer, on_task_exit = proc.on_message, proc.on_timer, proc.on_task_exit

    def message(now: float, sender: str, msg: Any) -> list[Effect]:
        effects = on_message(now, sender, msg)
        observer(now, core, ("message", sender, msg), effects)
        return effects

    def timer(now: float, key: Any) -> list[Effect]:
        effects = on_timer(now, key)
        observer(now, core, ("timer", key), effects)
        return effects

    def task_exit(now: float, task_id: TaskId, ok: bool) -> list[Effect]:
        effects = on_task_exit(now, task_id, ok)
        observer(now, core, ("exit", task_id, ok), effects)
        return effects

    proc.on_message, proc.on_timer, proc.on_task_exit = message, timer, task_exit
    proc.wrapped = True


class Simulator:
    """Drives a set of cores on virtual time. :func:`simulate` builds one for a cluster and a replay;
    tests may build one from any cores (a name must be unique)."""

    def __init__(
        self, cores: Iterable[Core], *, net_delay: float = 0.0005, observer: Observer | None = None
    ) -> None:
        if not net_delay >= 0:
            raise ValueError(f"net_delay must be >= 0, got {net_delay}")
        self.net_delay = float(net_delay)
        self.observer = observer
        self.recorder: TaskRecorder | None = None
        """The task table's recorder, told of the tasks of the processes with a ``book`` (the nodes)."""
        self.plan: FaultPlan | None = None
        """The run's faults of the network (``--fail`` link items): each message sent meets its fate.
        With a plan, every message goes over a link that loses nothing (:mod:`aviary.common.links`):
        numbered, acknowledged, sent again, handed on once and in order, fenced by incarnation."""
        self.links: dict[tuple[str, str], LinkEnd] = {}
        """(process, peer) -> that process's end of their link (with a plan)."""
        self.incarnations: dict[str, int] = {}
        """A process's incarnation, when not its first (1): a restart (:meth:`revive`) is a new one."""
        self.old_links: list[LinkEnd] = []  # the link ends of processes that died (their counters)
        self.dead: set[str] = set()
        """The processes killed (:meth:`kill`) and not restarted since."""
        self.procs: dict[str, _Proc] = {}
        for core in cores:
            if core.name in self.procs:
                raise ValueError(f"two cores named {core.name!r}")
            self.procs[core.name] = proc = _Proc(core)
            if observer is not None:
                _observe(proc, observer)
        self.now = 0.0
        self.events = 0
        self.launched = 0
        """Tasks launched so far (a run's progress in its units of work: :func:`simulate`'s ``watch``)."""
        self.seq = 0
        self.heap: list[tuple[Any, ...]] = []
        self.inbox: deque[tuple[Any, ...]] = deque()
        self.sent: Counter[type] = Counter()
        self.errors: Counter[str] = Counter()
        self.channels: dict[str, _Channel] = {}  # by held key (the multicasts of held kinds)
        self.prune_at = CHANNELS_PRUNED_AT  # channels there may be before the quiet ones are dropped
        self.started = False
        self.retired: list[Core] = []  # the cores of processes that were restarted
        self.paused: dict[str, _Paused] = {}  # processes stopped for a while (a stall), by name

    # --- results -----------------------------------------------------------------------------------
    @property
    def cores(self) -> dict[str, Core]:
        return {name: p.core for name, p in self.procs.items()}

    def messages(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for kind, n in self.sent.items():
            name = kind.__name__
            if name not in CONTROL_KINDS:
                out[name] += n
        return out

    def counters(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for core in [*self.retired, *(p.core for p in self.procs.values())]:
            total.update(core.counters)
        total.update(self.errors)
        return total

    @property
    def pending(self) -> int:
        """Events still queued (stale timers and exits included; a multicast counts once)."""
        return len(self.heap) + len(self.inbox) + sum(len(p.held) + len(p.news) for p in self.procs.values())

    # --- running -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Call every core's ``start`` (in the order the cores were given) and apply its effects; once."""
        if self.started:
            return
        self.started = True
        if self.plan is not None:
            for p in self.procs.values():
                self._link(p)
        for p in list(self.procs.values()):
            try:
                effects = p.core.start(self.now)
            except Exception as exc:
                raise CoreError(p.name, p.core, self.now, "its start", exc) from exc
            if self.observer is not None:
                self.observer(self.now, p.core, ("start",), effects)
            self._apply(p, effects, self.now)

    def run(
        self,
        *,
        frontend: FrontendCore | None = None,
        progress: Progress | None = None,
        progress_every: int = 20_000,
        until: float | None = None,
    ) -> None:
        """Process events until the queue is empty, ``frontend`` (if given) is done, or the next event
                lies beyond virtual time ``until``. ``progress(frontend, now)`` is called every
                ``progress_every`` events (only with a frontend). An exception of a core stops the run as a
        :class:`CoreError` naming the core and the input (the exception its cause)."""
        self.start()
        if frontend is not None and frontend.done:
            return
        fproc = self.procs[frontend.name] if frontend is not None else None
        fcore = frontend
        limit: Any = float("inf") if until is None else until  # compared with boxed times: kept boxed
        if progress is None or frontend is None:
            progress_every = 1 << 62
        next_report = self.events + max(1, progress_every)

        heap = self.heap
        inbox = self.inbox
        heappop = heapq.heappop
        heappush = heapq.heappush
        popleft = inbox.popleft
        append = inbox.append
        procs = self.procs
        sent = self.sent
        errors = self.errors
        delay = self.net_delay
        seq = self.seq
        events = self.events
        now = self.now
        TIMER, EXIT = _TIMER, _EXIT
        binds = BINDS
        plan = self.plan
        LATE = _LATE
        LINK = _LINK
        # Typed locals: native attribute access where this module is compiled (speedups.py).
        proc: _Proc
        target: _Proc | None

        # A bigger first generation (GC_FIRST_GENERATION)
        gc_threshold = gc.get_threshold()
        gc.set_threshold(max(gc_threshold[0], GC_FIRST_GENERATION), *gc_threshold[1:])
        stop: tuple[float, int] | None = None  # where the run ended, for the held messages
        # The kinds some core declares in Core.latest_wins (one set, read at every send)
        lazy: frozenset[type] = frozenset().union(*(p.lazy for p in self.procs.values()))
        hold = bool(lazy)
        group: list[_Proc] = []  # a multicast being delivered: its targets left, last first
        gsender = ""
        gmsg: Any = None
        gseq = 0
        try:
            while True:
                # --- next event: the rest of a multicast, else the earlier, by (time, seq), of the ----
                # --- message FIFO and the heap ------------------------------------------------------
                if group:
                    proc = group.pop()
                    gseq += 1
                    if hold and (proc.held or proc.news):
                        self.seq = seq
                        events += self._deliver_held(proc, now, gseq)
                        seq = self.seq
                    events += 1
                    book = proc.book
                    if book is not None and type(gmsg) in binds:
                        book.placed(gmsg.job_id, gmsg.task_index, now)
                    try:
                        if proc.wrapped:
                            effects = proc.on_message(now, gsender, gmsg)
                        else:
                            effects = proc.core.on_message(now, gsender, gmsg)
                    except Exception as exc:
                        raise CoreError(proc.name, proc.core, now, f"{gmsg!r} from {gsender!r}", exc) from exc
                    if proc is fproc and fcore is not None and fcore.done:
                        if group:  # not delivered yet: back to the head of the FIFO
                            inbox.appendleft((now, gseq + 1, group[::-1], gsender, gmsg))
                        self.seq = seq
                        assert fproc is not None
                        self._apply(fproc, effects, now)
                        seq = self.seq
                        stop = (now, gseq)
                        break
                elif inbox and (not heap or _sooner(inbox[0], heap[0])):
                    ev = inbox[0]  # a message: (time, seq, target or targets, sender, msg)
                    if ev[0] > limit:
                        stop = (limit, seq + 1)
                        break
                    popleft()
                    now = ev[0]
                    dest = ev[2]
                    if type(dest) is list:  # a multicast: one message object to several targets
                        group = dest[::-1]
                        proc = group.pop()
                        gsender = ev[3]
                        gmsg = ev[4]
                        gseq = ev[1]
                    else:
                        proc = dest
                    if hold and (proc.held or proc.news):
                        self.seq = seq
                        events += self._deliver_held(proc, now, ev[1])
                        seq = self.seq
                    events += 1
                    book = proc.book
                    if book is not None and type(ev[4]) in binds:
                        book.placed(ev[4].job_id, ev[4].task_index, now)
                    try:
                        if proc.wrapped:  # (a link's segment handler sends: it keeps self.seq)
                            self.seq = seq
                            effects = proc.on_message(now, ev[3], ev[4])
                            seq = self.seq
                        else:
                            effects = proc.core.on_message(now, ev[3], ev[4])
                    except Exception as exc:
                        raise CoreError(proc.name, proc.core, now, f"{ev[4]!r} from {ev[3]!r}", exc) from exc
                    if proc is fproc and fcore is not None and fcore.done:
                        if group:
                            inbox.appendleft((now, gseq + 1, group[::-1], gsender, gmsg))
                        self.seq = seq
                        assert fproc is not None
                        self._apply(fproc, effects, now)
                        seq = self.seq
                        stop = (now, ev[1])
                        break
                elif heap:
                    ev = heap[0]  # (time, seq, kind, proc, a, b)
                    if ev[0] > limit:
                        stop = (limit, seq + 1)
                        break
                    heappop(heap)
                    proc = ev[3]
                    kind = ev[2]
                    if kind is LATE:  # its delay is over: delivered next, as the FIFO's first
                        inbox.appendleft((ev[0], ev[1], proc, ev[4], ev[5]))
                        continue
                    if kind is LINK:  # a link's retransmission timer
                        now = ev[0]
                        self.seq = seq
                        self._retransmit(proc, ev[4], now, ev[1])
                        seq = self.seq
                        continue
                    if kind is TIMER:
                        key = ev[4]
                        timers = proc.timers
                        if timers.get(key) != ev[1]:
                            continue  # replaced or cancelled
                        del timers[key]
                        now = ev[0]
                        if hold and (proc.held or proc.news):
                            self.seq = seq
                            events += self._deliver_held(proc, now, ev[1])
                            seq = self.seq
                        events += 1
                        try:
                            effects = proc.on_timer(now, key)
                        except Exception as exc:
                            raise CoreError(proc.name, proc.core, now, f"the timer {key!r}", exc) from exc
                    elif kind is EXIT:
                        entry = ev[5]
                        if entry[0] != ev[1]:
                            continue  # suspended, re-armed or killed since
                        task_id = ev[4]
                        del proc.tasks[task_id]
                        now = ev[0]
                        book = proc.book
                        if book is not None:
                            book.ended(task_id, now, True)
                        if hold and (proc.held or proc.news):
                            self.seq = seq
                            events += self._deliver_held(proc, now, ev[1])
                            seq = self.seq
                        events += 1
                        try:
                            if proc.wrapped:
                                effects = proc.on_task_exit(now, task_id, True)
                            else:
                                effects = proc.core.on_task_exit(now, task_id, True)
                        except Exception as exc:
                            raise CoreError(
                                proc.name, proc.core, now, f"the end of task {task_id}", exc
                            ) from exc
                    else:  # KILLED
                        now = ev[0]
                        book = proc.book
                        if book is not None:
                            book.ended(ev[4], now, False)
                        if hold and (proc.held or proc.news):
                            self.seq = seq
                            events += self._deliver_held(proc, now, ev[1])
                            seq = self.seq
                        events += 1
                        try:
                            effects = proc.on_task_exit(now, ev[4], False)
                        except Exception as exc:
                            raise CoreError(
                                proc.name, proc.core, now, f"the kill of task {ev[4]}", exc
                            ) from exc
                else:
                    stop = (math.inf, seq + 1)
                    break
                if events >= next_report:
                    next_report = events + progress_every
                    progress(frontend, now)  # type: ignore[misc,arg-type]
                if not effects:
                    continue

                # --- apply the effects (inline: this is the hot path) -------------------------------
                # Any: boxed once for all the messages of these effects (a float local of the compiled
                # build would be boxed again for every one)
                arrive: Any = now + delay
                name = proc.name
                last = None  # the message of the last Send of these effects, and its FIFO entry
                for e in effects:
                    if plan is not None and isinstance(e, Send | Multicast):  # faults of the network
                        last = None
                        self.seq = seq
                        for to in [e.to] if isinstance(e, Send) else e.to:
                            self._faulty(name, to, e.msg, now)
                        seq = self.seq
                    elif isinstance(e, Send):
                        target = procs.get(e.to)
                        if target is None:
                            errors["error.unknown-peer"] += 1
                            continue
                        msg = e.msg
                        seq += 1
                        kind = type(msg)
                        if kind in lazy and kind in target.lazy:  # Core.latest_wins: held till its next input
                            target.held.append(Held(arrive, seq, name, msg))
                            sent[kind] += 1
                            continue
                        sent[kind] += 1
                        if msg is last:
                            # The same message object again, right after: one FIFO entry for all its
                            # targets (their sequence numbers are consecutive, so nothing can come
                            # between them: delivering them in a row is the order they would have).
                            ev = inbox[-1]
                            if type(ev[2]) is list:
                                ev[2].append(target)
                            else:
                                inbox[-1] = (ev[0], ev[1], [ev[2], target], name, msg)
                            continue
                        last = msg
                        append((arrive, seq, target, name, msg))
                    elif isinstance(e, Multicast):
                        # As a Send to each target in a row (the same sequence numbers and records),
                        # without an effect per target.
                        last = None
                        msg = e.msg
                        kind = type(msg)
                        if kind in lazy:  # held by some core, so perhaps by these targets
                            self.seq = seq
                            self._multicast_held(name, e.to, msg, arrive)
                            seq = self.seq
                            continue
                        fifo: list[_Proc] | None = None  # the FIFO entry of the run of targets now
                        ntargets = 0
                        for to in e.to:
                            target = procs.get(to)
                            if target is None:
                                errors["error.unknown-peer"] += 1
                                continue
                            seq += 1
                            ntargets += 1
                            if fifo is None:
                                fifo = [target]
                                append((arrive, seq, fifo, name, msg))
                            else:
                                fifo.append(target)
                        sent[kind] += ntargets
                    elif isinstance(e, Launch):
                        last = None
                        tasks = proc.tasks
                        task_id = e.task_id
                        if task_id in tasks:
                            errors["executor.duplicate_launch"] += 1
                            continue
                        d = e.duration
                        d = float(d) if d > 0.0 else 0.0
                        seq += 1
                        entry = [seq, d, now]
                        tasks[task_id] = entry
                        heappush(heap, (now + d, seq, EXIT, proc, task_id, entry))
                        self.launched += 1
                        book = proc.book
                        if book is not None:
                            book.started(task_id, now)
                    elif isinstance(e, SetTimer):
                        last = None
                        seq += 1
                        proc.timers[e.key] = seq
                        d = e.delay
                        heappush(heap, (now + d if d > 0.0 else now, seq, TIMER, proc, e.key, None))
                    elif isinstance(e, CancelTimer):
                        last = None
                        proc.timers.pop(e.key, None)
                    else:
                        last = None
                        self.seq = seq
                        self._executor(proc, e, now)
                        seq = self.seq
        finally:
            self.seq = seq
            self.events = events
            self.now = now
            gc.set_threshold(*gc_threshold)
        if stop is not None:  # what was held and has arrived by the end is delivered
            self._deliver_all_held(*stop)
        if progress is not None and frontend is not None:
            progress(frontend, now)  # the final state, so a progress bar can reach its end

    # --- held messages (Core.latest_wins) -------------------------------------------------------------
    def _multicast_held(self, name: str, to: list[str], msg: Any, arrive: Any) -> None:
        """A multicast of a kind some core holds: as a ``Send`` to each target in a row (the same
        sequence numbers, counts and errors), its held targets sharing one record on the channel of its
        key. The channel's members are the held targets of its last multicast, in that order: a walk
        over both lists finds who joined and who left, so an unchanged target costs one comparison."""
        key = held_key(name, msg)
        chan = self.channels.get(key)
        if chan is None:
            if len(self.channels) >= self.prune_at:
                self._prune_channels()
            chan = self.channels[key] = _Channel(key)
        kind = type(msg)
        procs = self.procs
        subs = chan.subs
        prev = chan.order
        nprev = len(prev)
        idx = len(chan.recs)  # the index of this multicast's record
        base = self.seq
        known = 0  # targets that exist so far (a sequence number each)
        first = 0  # the sequence number of the first held target (0: none)
        fifo: list[_Proc] | None = None  # the FIFO entry of the run of plain targets now
        irregular = False  # a target that is no member: unknown, plain, or named twice
        i = 0
        j = 0
        n = len(to)
        while j < n:
            x = to[j]
            if i < nprev and prev[i] == x:  # a member still (the usual case)
                i += 1
                j += 1
                known += 1
                fifo = None
                if not first:
                    first = base + known
                continue
            if x not in subs:  # joins, or a plain or unknown target
                j += 1
                target = procs.get(x)
                if target is None:
                    self.errors["error.unknown-peer"] += 1
                    irregular = True
                    continue
                known += 1
                if kind in target.lazy:
                    fifo = None
                    if not first:
                        first = base + known
                    sub = _Sub(chan, target, idx)
                    subs[x] = sub
                    target.news.append(sub)
                else:
                    irregular = True
                    if fifo is None:
                        fifo = [target]
                        self.inbox.append((arrive, base + known, fifo, name, msg))
                    else:
                        fifo.append(target)
                continue
            # A member, not where the last multicast had it: the member there has left (if it comes
            # later after all, it joins again from this record on: the same records as a member).
            if i < nprev:
                subs.pop(prev[i]).end = idx
                i += 1
                continue
            irregular = True  # named twice: the members' order is made again
            j += 1
            known += 1
            fifo = None
            if not first:
                first = base + known
        for y in prev[i:]:  # the members the walk did not meet have left
            subs.pop(y).end = idx
        if first:
            chan.recs.append(Held(arrive, first, name, msg, key))
        for sub in chan.idle:  # members handed every record so far: there is one more
            if sub.end < 0:
                sub.proc.news.append(sub)
        chan.idle = []
        if irregular:  # the members, each once, in this multicast's order
            order: list[str] = []
            for x in to:
                if x in subs and x not in order:
                    order.append(x)
            chan.order = order
        else:
            chan.order = to  # kept, not copied (Multicast: the core does not change it afterwards)
        self.seq = base + known
        self.sent[kind] += known

    def _prune_channels(self) -> None:
        """Drop the channels whose every member was handed every record (those of jobs done with, as a
        rule): one in that state acts as a new one of its key would (each target of its next multicast
        joins at that record, and is handed it before its next input), and a record still to be handed
        to a former member stays with that member's news. Without this, the channels of every job of a
        replay would stay (Eagle: ~7 KB a job, 5 GB for a month of the Google trace). Amortized: the
        next sweep comes when there are twice as many channels as this one kept."""
        keep: dict[str, _Channel] = {}
        for key, chan in self.channels.items():
            n = len(chan.recs)
            for sub in chan.subs.values():
                if sub.next < n:
                    keep[key] = chan
                    break
        self.channels = keep
        self.prune_at = max(CHANNELS_PRUNED_AT, 2 * len(keep))

    def _deliver_held(self, proc: _Proc, t: float, q: int) -> int:
        """Hand ``proc`` the held messages that arrive before (time t, sequence q): of several from one
        sender about one job only the last (the core declared that the others do not matter), in the
        order in which the first of each arrived. Returns how many arrived."""
        news = proc.news
        if len(news) == 1 and not proc.held:  # the usual case: one membership with news
            sub = news[0]
            chan = sub.chan
            recs = chan.recs
            hi = len(recs) if sub.end < 0 else sub.end
            k = hi - 1
            start = sub.next
            while k >= start:
                ev = recs[k]
                if ev.at < t or (ev.at == t and ev.seq < q):
                    break
                k -= 1
            if k < start:
                return 0
            sub.next = k + 1
            if k + 1 == hi:
                news.clear()
                if sub.end < 0:
                    chan.idle.append(sub)
            self._hand_held(proc, recs[k])
            return k + 1 - start
        count = 0
        firsts: list[int] = []  # per message handed: the sequence number of the first of its key
        hand: list[Held] = []
        if news:
            keep: list[_Sub] = []
            for sub in news:
                chan = sub.chan
                recs = chan.recs
                hi = len(recs) if sub.end < 0 else sub.end
                k = hi - 1
                start = sub.next
                while k >= start:  # the last that has arrived (usually the last there is)
                    ev = recs[k]
                    if ev.at < t or (ev.at == t and ev.seq < q):
                        break
                    k -= 1
                if k < start:
                    keep.append(sub)
                    continue
                count += k + 1 - start
                firsts.append(recs[start].seq)
                hand.append(recs[k])
                sub.next = k + 1
                if k + 1 < hi:
                    keep.append(sub)
                elif sub.end < 0:
                    chan.idle.append(sub)
            proc.news = keep
        held = proc.held
        if held:
            ev = held[-1]
            if ev.at < t or (ev.at == t and ev.seq < q):  # usually all have arrived
                n = len(held)
            else:
                n = 0
                for ev in held:
                    if ev.at > t or (ev.at == t and ev.seq > q):
                        break
                    n += 1
            for k in range(n):
                ev = held[k]
                firsts.append(ev.seq)
                hand.append(ev)
            del held[:n]
            count += n
        if len(hand) == 1:
            self._hand_held(proc, hand[0])
        elif hand:
            order = sorted(range(len(hand)), key=firsts.__getitem__)
            last: dict[str, Held] = {}  # by key, in the order the first of each arrived
            for k in order:
                ev = hand[k]
                was = last.get(ev.key)
                if was is None or ev.seq > was.seq:
                    last[ev.key] = ev
            for ev in last.values():
                self._hand_held(proc, ev)
        return count

    def _hand_held(self, proc: _Proc, ev: Held) -> None:
        at = ev.at
        if proc.wrapped:
            effects = proc.on_message(at, ev.sender, ev.msg)
        else:  # a native call where this module is compiled
            effects = proc.core.on_message(at, ev.sender, ev.msg)
        if effects:  # the core broke its promise: apply them rather than lose them
            self.errors["error.held-effects"] += 1
            self._apply(proc, effects, at)

    def _deliver_all_held(self, t: float, q: int) -> None:
        """Every process's held messages that arrive before (t, q) (the end of a run)."""
        for p in self.procs.values():
            if p.held or p.news:
                self.events += self._deliver_held(p, t, q)

    # --- slow paths ----------------------------------------------------------------------------------
    def _faulty(self, name: str, to: str, msg: Any, now: float) -> None:
        """A message sent with faults of the network (:attr:`plan`): the next segment of the sender's
        link with ``to``, kept until acknowledged (and the link's retransmission timer set)."""
        if to not in self.procs:
            self.errors["error.unknown-peer"] += 1
            return
        self.sent[type(msg)] += 1
        end = self._end(name, to)
        self._wire(name, to, end.send(now, msg), now)
        self._arm(self.procs[name], to, end, now)

    def _end(self, name: str, peer: str) -> LinkEnd:
        """``name``'s end of its link with ``peer`` (made at their first message)."""
        end = self.links.get((name, peer))
        if end is None:
            inc = self.incarnations
            end = self.links[(name, peer)] = LinkEnd(inc.get(name, 1), inc.get(peer, 1))
        return end

    def _wire(self, name: str, to: str, seg: Segment, now: float) -> None:
        """Put a segment on the wire: it meets its fate (lost, or each copy after its delay; a delayed
        one waits in the heap, :data:`_LATE`)."""
        assert self.plan is not None
        target = self.procs[to]
        arrive = now + self.net_delay
        for d in self.plan.fate(name, to, now):
            self.seq += 1
            if d > 0.0:
                heapq.heappush(self.heap, (arrive + d, self.seq, _LATE, target, name, seg))
            else:
                self.inbox.append((arrive, self.seq, target, name, seg))

    def _arm(self, proc: _Proc, peer: str, end: LinkEnd, now: float) -> None:
        """The link's retransmission timer, set or brought forward (:meth:`LinkEnd.rearm`); the one it
        replaces stays in the heap and is dropped when it comes up (its number is no longer the end's)."""
        at = end.rearm(now)
        if at is None:
            return
        self.seq += 1
        end.timer = self.seq
        heapq.heappush(self.heap, (at, self.seq, _LINK, proc, peer, None))

    def _retransmit(self, proc: _Proc, peer: str, now: float, timer: int) -> None:
        """A link's retransmission timer (number ``timer``): what is due goes again, and the timer is
        set anew while something is unacknowledged. A dead process's link ends are gone with it."""
        end = self.links.get((proc.name, peer))
        if end is None or self.procs[proc.name] is not proc or end.timer != timer:  # died, or replaced
            return
        end.fired()
        for seg in end.due(now):
            self._wire(proc.name, peer, seg, now)
        self._arm(proc, peer, end, now)

    def _link(self, proc: _Proc) -> None:
        """With a plan, what reaches ``proc`` is a segment of one of its links: its handler takes the
        segment first (installed at the start and at a restart, under a stall's and a death's)."""
        inner = proc.on_message

        def on_segment(now: float, sender: str, seg: Segment) -> list[Any]:
            return self._segment(proc, now, sender, seg, inner)

        proc.on_message = on_segment
        proc.wrapped = True

    def _segment(self, proc: _Proc, now: float, sender: str, seg: Segment, inner: Any) -> list[Any]:
        """A segment reaches ``proc``: its link acknowledges it and hands on, once and in order, what it
        now may; the effects of ``inner``'s handling of each (the core's, or an observer's), in order."""
        end = self._end(proc.name, sender)
        msgs, replies = end.receive(now, seg)
        for r in replies:
            self._wire(proc.name, sender, r, now)
        self._arm(proc, sender, end, now)
        effects: list[Any] = []
        book = proc.book
        for msg in msgs:
            if book is not None and type(msg) in BINDS:
                book.placed(msg.job_id, msg.task_index, now)
            effects += inner(now, sender, msg)
        return effects

    def link_counters(self) -> dict[str, int]:
        """What the links did (with a plan): segments put on the wire (first sends, retransmissions and
        acknowledgements), and the sum over every link end of :class:`~aviary.common.links.LinkEnd`'s
        counters."""
        assert self.plan is not None
        total: Counter[str] = Counter({"segments": sum(self.plan.sent.values())})
        for end in [*self.links.values(), *self.old_links]:
            total.update(end.counters)
        return dict(total)

    def _apply(self, proc: _Proc, effects: list[Any], now: float | None = None) -> None:
        """Apply effects outside the hot loop (start, and the last event of a run)."""
        if now is None:
            now = self.now
        for e in effects:
            k = type(e)
            if self.plan is not None and (k is Send or k is Multicast):
                for to in [e.to] if k is Send else e.to:
                    self._faulty(proc.name, to, e.msg, now)
            elif k is Send:
                target = self.procs.get(e.to)
                if target is None:
                    self.errors["error.unknown-peer"] += 1
                    continue
                self.sent[type(e.msg)] += 1
                self.seq += 1
                self.inbox.append((now + self.net_delay, self.seq, target, proc.name, e.msg))
            elif k is Multicast:
                self._apply(proc, [Send(to, e.msg) for to in e.to], now)
            elif k is SetTimer:
                self.seq += 1
                proc.timers[e.key] = self.seq
                heapq.heappush(self.heap, (now + max(0.0, e.delay), self.seq, _TIMER, proc, e.key, None))
            elif k is CancelTimer:
                proc.timers.pop(e.key, None)
            else:
                self._executor(proc, e, now)

    # --- failures ------------------------------------------------------------------------------------
    def kill(self, name: str) -> None:
        """The process dies now, as by kill -9: its timers and tasks are gone, and what reaches it later
        is dropped (``error.sent-to-dead``). Others learn of it only when told (``PeerDown``)."""
        proc = self.procs[name]
        self.paused.pop(name, None)
        self.dead.add(name)
        for key in [k for k in self.links if k[0] == name]:  # its ends of its links die with it
            self.old_links.append(self.links.pop(key))

        def dropped(*_: Any) -> list[Effect]:
            self.errors["error.sent-to-dead"] += 1
            return []

        proc.on_message = proc.on_timer = dropped
        proc.on_task_exit = lambda *_: []
        proc.wrapped = True
        proc.timers.clear()
        proc.held.clear()
        proc.news.clear()
        proc.lazy = frozenset()  # what is multicast to it later goes the way of a plain target
        for chan in self.channels.values():
            sub = chan.subs.pop(name, None)
            if sub is not None:
                sub.end = sub.next  # nothing more for it
                chan.order = [x for x in chan.order if x != name]
        for entry in proc.tasks.values():
            entry[0] = -1  # its exit event is now stale
        proc.tasks.clear()

    def pause(self, name: str) -> None:
        """The process stops now, as by SIGSTOP (``--fail NAME@T+PAUSE``): what reaches it (messages,
        its timers, its tasks' exits) waits, in order, for :meth:`resume`."""
        proc = self.procs[name]
        if name in self.paused:
            return
        paused = _Paused(proc)
        self.paused[name] = paused
        proc.on_message, proc.on_timer, proc.on_task_exit = (
            paused.wait_message,
            paused.wait_timer,
            paused.wait_exit,
        )
        proc.wrapped = True

    def resume(self, name: str) -> None:
        """Go on after :meth:`pause`: what waited is handled now, in the order it came."""
        paused = self.paused.pop(name, None)
        if paused is None:
            return
        proc = self.procs[name]
        proc.on_message, proc.on_timer, proc.on_task_exit = paused.handlers
        proc.wrapped = paused.wrapped
        for kind, a, b in paused.waiting:
            if kind == 0:
                effects = proc.on_message(self.now, a, b)
            elif kind == 1:
                effects = proc.on_timer(self.now, a)
            else:
                effects = proc.on_task_exit(self.now, a, b)
            self._apply(proc, effects, self.now)

    def revive(self, core: Core) -> None:
        """A process killed earlier starts again as ``core`` (a restart, issue 26): what is sent to it from
        now on reaches the new core (what was sent meanwhile was lost with the old one), and the old
        core's counters still count in :meth:`counters`."""
        old = self.procs[core.name]
        self.retired.append(old.core)
        self.dead.discard(core.name)
        self.incarnations[core.name] = self.incarnations.get(core.name, 1) + 1
        self.procs[core.name] = proc = _Proc(core)
        if self.observer is not None:
            _observe(proc, self.observer)
        if self.plan is not None:
            self._link(proc)
        self._apply(proc, core.start(self.now), self.now)

    def apply(self, name: str, effects: list[Effect]) -> None:
        """Carry out effects of the named core produced outside the event loop (a driver's call)."""
        self._apply(self.procs[name], effects, self.now)

    def _executor(self, proc: _Proc, e: Any, now: float) -> None:
        """The virtual executor: Launch / Suspend / Resume / Kill, as the real ``TimerExecutor``."""
        k = type(e)
        tasks = proc.tasks
        entry = tasks.get(e.task_id) if k is not Launch else None
        if k is Launch:
            if e.task_id in tasks:
                self.errors["executor.duplicate_launch"] += 1
                return
            d = max(0.0, float(e.duration))
            self.seq += 1
            entry = [self.seq, d, now]
            tasks[e.task_id] = entry
            heapq.heappush(self.heap, (now + d, self.seq, _EXIT, proc, e.task_id, entry))
            self.launched += 1
            if proc.book is not None:
                proc.book.started(e.task_id, now)
        elif k is Suspend:
            if entry is None:
                self.errors["executor.unknown_suspend"] += 1
            elif entry[0] == 0 or len(entry) > 3:
                self.errors["executor.redundant_suspend"] += 1
            else:
                if proc.book is not None:
                    proc.book.suspended(e.task_id)
                entry[1] = max(0.0, entry[1] - (now - entry[2]))
                share = proc.share
                if share > 0.0:  # it goes on at ``share`` of a core: a new, later exit event
                    self.seq += 1
                    entry[0] = self.seq
                    entry[2] = now
                    entry.append(share)
                    heapq.heappush(
                        self.heap, (now + entry[1] / share, self.seq, _EXIT, proc, e.task_id, entry)
                    )
                else:
                    entry[0] = 0  # its exit event is now stale
        elif k is Resume:
            if entry is None:
                self.errors["executor.unknown_resume"] += 1
            elif entry[0] != 0 and len(entry) == 3:
                self.errors["executor.redundant_resume"] += 1
            else:
                if len(entry) > 3:  # what it did at its share while suspended
                    entry[1] = max(0.0, entry[1] - (now - entry[2]) * entry.pop())
                self.seq += 1
                entry[0] = self.seq
                entry[2] = now
                heapq.heappush(self.heap, (now + entry[1], self.seq, _EXIT, proc, e.task_id, entry))
        elif k is Kill:
            if entry is None:
                self.errors["executor.unknown_kill"] += 1
                return
            del tasks[e.task_id]
            entry[0] = -1  # its exit event (if any) is now stale
            self.errors["executor.killed"] += 1
            # Reported as an event of its own at the same instant, like the real call_soon.
            self.seq += 1
            heapq.heappush(self.heap, (now, self.seq, _KILLED, proc, e.task_id, None))
        else:
            self.errors["error.bad-effect"] += 1


def _journal_messages(proc: _Proc, frontend: FrontendCore, journal: Journal) -> None:
    """After each message the frontend handles (a ``JobDone`` finishes a job; its timers never do), the
    journal notes what finished; the other processes run unwrapped."""
    handle = proc.on_message
    note = journal.note

    def message(now: float, sender: str, msg: Any) -> list[Effect]:
        effects = handle(now, sender, msg)
        note(frontend)
        return effects

    proc.on_message = message
    proc.wrapped = True


KILL, DECLARE, RESTART, PAUSE, RESUME, REJOIN = 0, 1, 2, 3, 4, 5
"""The steps of an injected failure, in this order at one instant."""


def simulate(
    cluster: Cluster,
    jobs: list[JobSpec] | JobStream,
    *,
    net_delay: float = 0.0005,
    progress: Progress | None = None,
    progress_every: int = 20_000,
    wall_limit: float | None = None,
    interruptible: bool = False,
    failures: Sequence[Failure] = (),
    detect: float = EXIT_DETECT_SECONDS,
    stall_detect: float = DETECT_SECONDS,
    observer: Observer | None = None,
    journal: Journal | None = None,
    watch: Callable[[Simulator], None] | None = None,
    link_faults: Sequence[LinkFault] = (),
) -> SimOutcome:
    """Replay ``jobs`` on ``cluster`` on virtual time: the real runtime's cores, a fixed network delay
    and a virtual executor. Stops when every job is done, or when nothing is left to happen (then
    ``outcome.frontend.unfinished()`` names the jobs that never finished). Deterministic.

    ``wall_limit``: stop after about this many seconds of real time (checked every ``progress_every``
    events); ``interruptible``: a ``KeyboardInterrupt`` (Ctrl-C, or a handler that raises it) stops
    the run too, the frontend keeping the times of the jobs that finished. Either way the outcome says
    so in ``stopped``.

    ``failures``: processes killed (as by kill -9) at replay times; the frontend declares each dead
    ``detect`` seconds later: by default as soon as a real replay notices its child's exit
    (:data:`~aviary.common.failures.EXIT_DETECT_SECONDS`); ``DETECT_SECONDS`` models a death found by
    missed heartbeats. A failure with a ``stall`` stops the process for that long instead
    (:meth:`Simulator.pause`): one stalled longer than ``stall_detect`` (the liveness limit) is declared
    dead that long after its stop, and rejoins when it goes on, as its answer to the next ``Hello`` makes
    it rejoin a real replay. A ``cut`` of ``link_faults`` that hides a process from the frontend for
    longer than ``stall_detect`` does the same (:meth:`FaultPlan.silences`), while the process runs on
    behind it. ``observer``: see the module docstring. ``journal``: each finished job is
    journaled after the frontend's message that finished it (:meth:`Journal.note`; the frontend alone is
    wrapped), and written on its clock there and at every progress check; with its task table, the loop
    tells a :class:`~aviary.common.tasktable.TaskRecorder` of every node's tasks (placed, started,
    suspended, ended). ``link_faults``: faults of the network (:mod:`aviary.common.netfaults`), drawn
    with the cluster's seed: each message meets its fate as it is sent. ``watch`` is handed the
    :class:`Simulator` before it starts (a progress bar reads its ``launched`` tasks).

    ``jobs`` as a :class:`~aviary.common.workload.JobStream` (issue 49): the frontend takes each job from
    it as the job is due, and, with a ``journal``, forgets the jobs it has written (its ``results``, the
    streamed ``jobs.csv``, get them too), so a whole month's trace replays in bounded memory; the
    replay is the one of the same jobs as a list."""
    t0 = time.perf_counter()
    policy = cluster_policy(cluster)
    fspec = cluster.frontend
    roles = {p.name: p.role for p in cluster.processes if p.role != "frontend"}
    route = policy.route(cluster)
    if isinstance(jobs, JobStream):
        frontend = FrontendCore(fspec.name, iter(jobs), route, roles=roles, restarts=True, total=jobs.count)
        quiet = 10 * jobs.work + 3600.0  # quiet_limit's, of flat jobs (no slowdown)
    else:
        frontend = FrontendCore(fspec.name, jobs, route, roles=roles, restarts=True)
        quiet = quiet_limit(jobs)
    others = [build_core(spec, cluster) for spec in cluster.processes if spec.role != "frontend"]
    sim = Simulator([*others, frontend], net_delay=net_delay, observer=observer)
    if link_faults:
        sim.plan = FaultPlan(link_faults, {p.name: p.role for p in cluster.processes}, seed=cluster.seed)
    if watch is not None:
        watch(sim)
    deadline = t0 + (wall_limit or 0.0)

    if journal is not None:
        _journal_messages(sim.procs[frontend.name], frontend, journal)
        if journal.tasks is not None:  # the task table: the loop tells a recorder of every node's tasks
            journal.recorder = sim.recorder = recorder = TaskRecorder()
            for spec in cluster.nodes:
                sim.procs[spec.name].book = recorder.book(spec.name)

    def hook(fe: FrontendCore, now: float) -> None:
        if journal is not None:
            journal.poll()
        if progress is not None:
            progress(fe, now)
        if wall_limit is not None and time.perf_counter() > deadline and not fe.done and sim.pending:
            raise _WallLimit
        if fe.submitted == fe.total and now - fe.last_progress > quiet and not fe.done:
            raise _Stalled

    stopped = error = None
    # Every other process is up before the frontend starts submitting (as after Register in a real run).
    try:
        kills = [f for f in failures if not f.stall]
        steps = [(f.at, KILL, f.name) for f in kills]
        steps += [(f.at + detect, DECLARE, f.name) for f in kills]
        restart = detect + RESTART_SECONDS
        steps += [(f.at + restart, RESTART, f.name) for f in kills if roles.get(f.name) == "central"]
        stalls = [f for f in failures if f.stall]
        steps += [(f.at, PAUSE, f.name) for f in stalls]
        steps += [(f.at + stall_detect, DECLARE, f.name) for f in stalls if f.stall > stall_detect]
        steps += [(f.at + f.stall, RESUME, f.name) for f in stalls]
        if sim.plan is not None:  # partitions that hide a process from the frontend: silence, as real
            for silent, declared, heard in sim.plan.silences(frontend.name, stall_detect):
                steps += [(declared, DECLARE, silent), (heard, REJOIN, silent)]
        for at, step, name in sorted(steps):
            sim.run(frontend=frontend, progress=hook, progress_every=progress_every, until=at)
            if frontend.done:
                break
            sim.now = max(sim.now, at)
            if step == DECLARE:
                sim.apply(frontend.name, frontend.declare_dead(sim.now, name, "injected failure"))
            elif step == KILL:
                sim.kill(name)
            elif step == PAUSE:
                sim.pause(name)
            elif step in (RESUME, REJOIN):
                if step == RESUME:
                    sim.resume(name)
                if name in frontend.dead and name not in sim.dead:  # it answers the next Hello: rejoins
                    core = sim.procs[name].core
                    back = Register(roles[name], getattr(core, "slots", 0), False)
                    sim.apply(frontend.name, frontend.on_message(sim.now, name, back))
            else:  # a central scheduler restarted by its launcher: it rebuilds its state
                sim.revive(build_core(cluster.get(name), cluster, recover=True))
                sim.apply(frontend.name, frontend.central_back(sim.now, name))
        if not frontend.done:
            sim.run(frontend=frontend, progress=hook, progress_every=progress_every)
    except _WallLimit:
        stopped = "wall limit"
    except _Stalled:
        stopped = STALLED
    except CoreError as exc:
        stopped, error = CORE_RAISED, str(exc)
    except KeyboardInterrupt:
        if not interruptible:
            raise
        stopped = "SIGINT"
    if journal is not None:
        journal.note(frontend)
    return SimOutcome(
        frontend=frontend,
        messages=sim.messages(),
        counters=sim.counters(),
        events=sim.events,
        wall_seconds=time.perf_counter() - t0,
        virtual_seconds=sim.now,
        cores=sim.cores,
        stopped=stopped,
        error=error,
    )
