"""The real runtime: drives one core with an asyncio (uvloop) loop, one ZeroMQ socket and an executor.

The first driver beside the simulator (:mod:`aviary.launch.drivers.sim`): both execute the same cores'
effects, this one on sockets, clocks and executors, that one on virtual time.

It decodes frames into messages for the core and carries out the core's effects. Control messages
(``Hello``, ``GetStats``, ``Shutdown``) are answered here, for every role alike. Each message counts
only from the roles that may send it (:mod:`aviary.common.senders`, by the names of the cluster
description; with keys, names proven by their keys): a ``Shutdown`` or a ``SubmitJob`` only from the
frontend or a launcher's ``control``, a ``Probe`` only from a scheduler, a ``GetTask`` only from a
node, nothing from a name the description does not hold. A bad frame, a message from a sender that may
not send it, a send to an unknown peer or an exception inside a core is counted, logged once per kind,
and survived. A ``GetTask`` that cannot be sent is answered here with a ``NoTask`` from its addressee,
so the node frees the slot it reserved at once.

Each replay is an epoch of its own (issue 14): a ``Hello`` from the frontend carries the replay's epoch,
and a process that hears a new one after an earlier replay starts afresh: a new core from ``rebuild``
(the counters carry on), every task still running killed and its exit ignored (``stale_tasks_killed``),
the old core's timers cancelled. Work and completions left from the earlier replay then reach a core
that never heard of them and are counted (``unknown_*``), never mixed into the new replay's results.

The task table (:mod:`aviary.common.tasktable`): when the frontend's ``Hello`` asks for it, a node's
runtime watches its core with a :class:`~aviary.common.tasktable.TaskRecorder` (as the simulator does:
nothing in the core changes) and sends the frontend its rows in ``TaskRecords`` batches, at most every
:data:`RECORDS_EVERY` seconds and before every ``Stats``; they are the testbed's bookkeeping, not
scheduling traffic, so they are not counted with the messages it sent.

Faults of the network (issue 50): when the frontend sends ``LinkFaults`` (a replay with ``--fail``'s link
items), the process's :class:`~aviary.common.linklayer.LinkLayer` carries everything it sends from then on
in ``Link`` segments and injects the faults on them; segments it receives are unwrapped here, and the
frames they carry handled as any other, from the same sender (:mod:`aviary.common.linklayer`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from .addresses import FrameTooLarge, UnknownPeer
from .core import Core
from .effects import CancelTimer, Kill, Launch, Multicast, Resume, Send, SetTimer, Suspend
from .linklayer import LinkLayer
from .messages import (
    BadFrame,
    Counters,
    GetCounters,
    GetStats,
    GetTask,
    Hello,
    Link,
    LinkFaults,
    NoTask,
    PeerDown,
    PeerUp,
    Register,
    Shutdown,
    Stats,
    SubmitJob,
    TaskRecords,
    decode,
    encode,
)
from .senders import may_send
from .tasktable import BOOT_ID, TaskRecorder
from .wire import AnyTransport

log = logging.getLogger("aviary.runtime")

BEAT = 1.0
"""Seconds between two unasked ``Register``s a process sends the frontend while it works through a backlog
of frames (a scheduler handing out a 1,000-task job at 1,000 nodes): the ``Hello`` waiting behind them
would come too late, and a busy process is not a dead one."""
BEAT_CHECK = 64
"""Frames handled between two looks at the clock for :data:`BEAT`, and two looks at the transport's own
events (over tcp, a connection coming up: a backlog reads none meanwhile)."""

PARTNERS = {"node": ("scheduler", "central"), "scheduler": ("node",), "central": ("node",)}
"""The roles a process of each role connects to as it starts (:meth:`Runtime.run`), before any work: the
first jobs of a replay then meet a warm testbed, not thousands of connections and key handshakes made
on their first messages (at 1,000 nodes the jobs of the first 10 s took 0.7 s longer at the median)."""

WARM_UP = 10.0
"""Seconds at most a process leaves the ``Hello``s of registration unanswered while the connections it
made at its start are still being set up (the frontend says ``Hello`` again until it answers)."""

CONTROL_KINDS = frozenset({"Hello", "Register", "GetStats", "Shutdown", "Stats", "GetCounters", "Counters"})
CONTROL_KINDS |= {"TaskRecords", "LinkFaults"}
RECORDS_EVERY = 0.25
"""Seconds at most between a node's ``TaskRecords`` batches while its tasks end."""
LINGER = 3.0
"""Seconds at most a process that stops waits for its last segments to be acknowledged (its ``Stats``
under message loss): a socket's linger."""
INPUTS = {"on_message": "message", "on_timer": "timer", "on_task_exit": "exit"}
"""A core handler's name -> the input kind a :class:`~aviary.common.tasktable.TaskRecorder` sees."""
FROM_FRONTEND = (PeerDown, PeerUp, SubmitJob, Shutdown, LinkFaults)
"""What a process takes only from the frontend (or a launcher's ``control``), even from a transport
that knows no roles: failure news, jobs, the order to stop and the faults of the network to inject."""


ExecutorFactory = Callable[[asyncio.AbstractEventLoop, Callable[[Any, bool], None]], Any]
"""Makes a node's executor on the running loop, given the callback for a task's exit
(:func:`aviary.worker.executors.make_executor` with its kind bound): the runtime, on the ground floor,
never imports the worker's executors itself."""


class Runtime:
    """Runs ``core`` on ``transport`` until :meth:`stop` (or a ``Shutdown`` message).

    Its counters: ``dropped.<kind>`` for frames dropped (bad envelope, not msgpack, bad version,
    unknown type, bad fields), ``error.<kind>`` for anything else that went wrong and was survived,
    and ``executor.<kind>`` for what the executor counted (kills, ignored requests).
    """

    def __init__(
        self,
        core: Core,
        transport: AnyTransport,
        executor: ExecutorFactory | None = None,
        rebuild: Callable[[], Core] | None = None,
    ) -> None:
        self.core = core
        self.rebuild = rebuild
        self.epoch = 0
        self.tasks: set[Any] = set()  # launched and not exited
        self.stale: set[Any] = set()  # killed at a new epoch: their exits are ignored
        self.transport = transport
        self.make_executor = executor
        self.executor: Any = None
        self.sent: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self._timers: dict[Any, asyncio.TimerHandle] = {}
        self._held: list[tuple[Any, tuple[Any, ...]]] | None = None
        """While an off-loop handler runs (:attr:`Core.offloop`): the inputs that arrived, in order."""
        self._stopped: asyncio.Future[None] | None = None
        self._stop_early = False  # stop() came before run() began: run() returns at once
        self._frozen: list[tuple[Any, tuple[Any, ...]]] | None = None
        """While paused (:meth:`pause`): timers, task exits and injected calls that came, in order."""
        self.loop: asyncio.AbstractEventLoop | None = None
        self.crashed = False
        self._cold_until: float | None = None
        """Until when registration waits for the connections made at the start (None: they are up, or
        WARM_UP passed)."""
        self._beat_to: str | None = None
        """The controller whose ``Hello`` this process last answered: told it lives while it is busy."""
        self._beat_at = 0.0
        self._link_faults: LinkFaults | None = None
        """The frontend's: the ``LinkFaults`` of this replay, told again to a restarted process."""
        self.recorder: TaskRecorder | None = None
        """A node's recorder of its tasks, while the frontend (:attr:`records_to`) asks for them."""
        self.records_to = ""
        self._records_due: asyncio.TimerHandle | None = None
        self.links = LinkLayer(core.name, core.role, transport)
        """This process's links with its peers, on from a ``LinkFaults`` (:mod:`aviary.common.linklayer`)."""

    # --- life cycle --------------------------------------------------------------------------------
    async def run(self) -> None:
        loop = self.loop = self.links.loop = asyncio.get_running_loop()
        self.links.poke = self._after_outside_drain
        self._stopped = loop.create_future()
        if self._stop_early:
            return
        if self.make_executor is not None:
            self.executor = self.make_executor(loop, self._task_exit)
        loop.add_reader(self.transport.fd, self._drain)
        self._cold_until = self.now() + WARM_UP
        want, me = PARTNERS.get(self.core.role, ()), self.core.name
        self.transport.connect([n for n, r in self.transport.roles.items() if r in want and n != me])
        try:
            self._apply(self.core.start(self.now()))
            self._drain()
            await self._stopped
            if not self.crashed:
                await self.links.settle(LINGER)
        finally:
            loop.remove_reader(self.transport.fd)
            self.links.stop()
            for handle in self._timers.values():
                handle.cancel()
            if self.executor is not None:
                await self.executor.close()

    def stop(self) -> None:
        if self._stopped is None:
            self._stop_early = True
        elif not self._stopped.done():
            self._stopped.set_result(None)

    def pause(self) -> None:
        """Freeze as SIGSTOP freezes a process (a packed node stopped alone, ``--fail NAME@T+PAUSE``): no
        frame is read, and timers, task exits and injected calls wait, in order, for :meth:`resume`."""
        if self._frozen is not None or self.loop is None or self.crashed:
            return
        self._frozen = []
        self.links.frozen = True
        self.loop.remove_reader(self.transport.fd)

    def resume(self) -> None:
        """Go on after :meth:`pause`: what waited first, then the frames that arrived meanwhile."""
        if self._frozen is None or self.loop is None or self.crashed:
            return
        frozen, self._frozen = self._frozen, None
        self.links.frozen = False
        self.loop.add_reader(self.transport.fd, self._drain)
        for fn, args in frozen:
            fn(*args)
        self._drain()

    def _freeze(self, fn: Any, *args: Any) -> bool:
        """While paused, keep ``fn(*args)`` for :meth:`resume` (True); else False."""
        if self._frozen is None:
            return False
        self._frozen.append((fn, args))
        return True

    def crash(self) -> None:
        """Stop at once, as a SIGKILL stops a process: no input read, no timer fired and nothing sent
        from now on (the executor's tasks are killed as :meth:`run` ends)."""
        self.crashed = True
        self.links.stop()
        if self.loop is not None:
            self.loop.remove_reader(self.transport.fd)
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self.stop()

    @staticmethod
    def now() -> float:
        """The core's clock: monotonic, in seconds (uvloop's own clock only has milliseconds)."""
        return time.monotonic()

    def stats(self, logs: bool = True) -> Stats:
        counters: dict[str, int | float] = dict(self.core.counters)
        counters.update({f"dropped.{k}": v for k, v in self.transport.counts().items()})
        counters.update({f"error.{k}": v for k, v in self.errors.items()})
        counters.update({f"links.{k}": v for k, v in self.links.link_counters().items()})
        if self.executor is not None:
            counters.update({f"executor.{k}": v for k, v in self.executor.counters.items()})
        if not logs:
            return Stats(counters, dict(self.sent))
        return Stats(counters, dict(self.sent), self.core.task_log(), self.core.cycle_log())

    # --- inputs ------------------------------------------------------------------------------------
    def _drain(self) -> None:
        """Handle every frame waiting; the last socket operation is always a recv that found none,
        so the edge-triggered ZeroMQ descriptor will signal the next one (the tcp transport's ``epoll``
        descriptor is level-triggered: it stays readable while anything waits). What is sent meanwhile
        the transport holds and writes at the end, one write per peer (and every :data:`BEAT_CHECK`
        frames). While a long backlog is worked through, the frontend hears a ``Register`` every
        :data:`BEAT` seconds."""
        if self.crashed or self._frozen is not None:
            return
        transport = self.transport
        recv = transport.recv
        handled = 0
        transport.hold()  # what is sent meanwhile goes in one write per peer
        try:
            while (item := recv()) is not None:
                handled += 1
                if handled % BEAT_CHECK == 0:
                    if self._beat_to is not None and self.now() - self._beat_at > BEAT:
                        self._register(self._beat_to)
                    transport.flush()
                sender, frame = item
                msg = self._decoded(sender, frame)
                if type(msg) is Link:
                    self._segment(sender, msg)
                elif msg is not None:
                    self._deliver(sender, msg)
        finally:
            transport.release()

    def _segment(self, sender: str, seg: Link) -> None:
        """A segment of a link: acknowledged at once, its frames (if it completes an in-order run)
        handled as if they had come alone, from the same sender."""
        roles = self.transport.roles
        if roles and not may_send(roles.get(sender), seg):
            self._drop("link-from-stranger", f"ignored a Link segment from {sender!r}, who is no process")
            return
        frames, restarted = self.links.receive(sender, seg, self.now())
        for frame in frames:
            msg = self._decoded(sender, frame)
            if type(msg) is Link:
                self._drop("link-in-link", f"dropped a Link segment inside a segment from {sender!r}")
            elif msg is not None:
                self._deliver(sender, msg)
        said = self._link_faults
        if restarted and said is not None:  # a restarted peer hears this replay's faults again
            self._send_raw(sender, LinkFaults(said.faults, said.seed, self.now() - self.links.t0))

    def _decoded(self, sender: str, frame: Any) -> Any:
        """The message of a frame, or None for a bad one (dropped and counted)."""
        try:
            return decode(frame)
        except BadFrame as exc:
            self._drop(exc.kind, f"dropped a frame from {sender!r}: {exc}")
            return None

    def start_links(self, to: list[str], faults: list[str], seed: int, clock: float) -> None:
        """The frontend, as a replay with faults of the network begins at replay time ``clock``: tell the
        processes ``to`` (directly, before any fault) and carry everything over links from now on."""
        said = self._link_faults = LinkFaults(faults, seed, clock)
        for name in to:
            self._send_raw(name, said)
        self.links.configure(faults, seed, clock, self.now())

    def _send_raw(self, to: str, msg: Any) -> None:
        """Send past the links (``LinkFaults``: what turns them on)."""
        try:
            self.transport.send(to, encode(msg))
        except Exception as exc:
            self._error("send-failed", f"{type(msg).__name__} to {to!r} failed: {exc}")

    def _hold(self, fn: Any, *args: Any) -> bool:
        """While an off-loop handler runs, keep ``fn(*args)`` for after it (True); else False."""
        if self._held is None:
            return False
        self._held.append((fn, args))
        return True

    def _deliver(self, sender: str, msg: Any) -> None:
        if not isinstance(msg, Hello) and self._hold(self._deliver, sender, msg):
            return
        roles = self.transport.roles  # empty: a plain address book, no roles to check
        allowed = may_send(roles.get(sender), msg) if roles else True
        if not allowed or (isinstance(msg, FROM_FRONTEND) and sender not in self.transport.controllers):
            kind = type(msg).__name__
            role = roles.get(sender, "a stranger")
            self._drop(
                f"{kind.lower()}-from-stranger",
                f"ignored a {kind} from {sender!r} ({role}), who may not send it",
            )
            return
        if type(msg).__name__ in CONTROL_KINDS and self._control(sender, msg):
            return
        self._call(self.core.on_message, sender, msg)

    def _control(self, sender: str, msg: Any) -> bool:
        if isinstance(msg, Hello):
            if msg.epoch and msg.epoch != self.epoch and sender in self.transport.controllers:
                self._new_epoch(msg.epoch)
                self._records(msg.tasks, sender)
            if msg.epoch and sender in self.transport.controllers:
                self._beat_to = sender
            if self._cold_until is not None:
                if not self.transport.connected() and self.now() < self._cold_until:
                    return True  # registering: answered once the connections made at the start are up
                self._cold_until = None
            self._register(sender)
        elif isinstance(msg, GetStats):
            self._send_records()
            self._send(sender, self.stats())
        elif isinstance(msg, LinkFaults):
            try:
                self.links.configure(msg.faults, msg.seed, msg.clock, self.now())
            except ValueError as exc:
                self._error("link-faults", f"LinkFaults from {sender!r} not taken: {exc}")
        elif isinstance(msg, GetCounters):
            stats = self.stats(logs=False)
            self._send(sender, Counters(stats.counters, stats.messages, self.core.gauges()))
        elif isinstance(msg, Shutdown):
            self._send_records()
            self._send(sender, self.stats())
            self.stop()
        else:
            return False
        return True

    def _records(self, wanted: bool, frontend: str) -> None:
        """A new replay: record this node's tasks for ``frontend`` if it wants them."""
        self.recorder = TaskRecorder() if wanted and self.core.role == "node" else None
        self.records_to = frontend

    def _send_records(self) -> None:
        """Send the rows recorded since the last batch (if any) to the frontend that asked for them."""
        self._records_due = None
        if self._frozen is None and self.recorder is not None and self.recorder.rows:
            self._send(self.records_to, TaskRecords(self.recorder.take(), self.now(), BOOT_ID))

    def _register(self, to: str) -> None:
        """Answer a ``Hello`` (or beat, :meth:`_drain`): the role, the slots and whether it recovers."""
        core = self.core
        recovering = getattr(core, "recovering", False)  # a restarted central scheduler, not rebuilt yet
        self._beat_at = self.now()
        self._send(to, Register(core.role, getattr(core, "slots", 0), recovering))

    def _new_epoch(self, epoch: int) -> None:
        """A new replay: after an earlier one, a fresh core and none of the old one's tasks or timers
        (nor its links: a new incarnation of them, off until the new replay's ``LinkFaults``)."""
        first, self.epoch = self.epoch == 0, epoch
        if not first:
            self.links.reset()
        if first or self.rebuild is None:
            return
        counters = self.core.counters
        self.core = self.rebuild()
        self.core.counters = counters
        counters["epochs"] += 1
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for task in self.tasks:
            self.executor.kill(task)
        counters["stale_tasks_killed"] += len(self.tasks)
        self.stale |= self.tasks
        self.tasks = set()
        self._apply(self.core.start(self.now()))

    def _fire(self, key: Any) -> None:
        if self._freeze(self._fire, key):
            return
        self._timers.pop(key, None)
        if self._hold(self._fire, key):
            return
        if key in self.core.offloop:
            self._held = []
            assert self.loop is not None
            future = self.loop.run_in_executor(None, self.core.on_timer, self.now(), key)
            future.add_done_callback(self._offloaded)
        else:
            self._call(self.core.on_timer, key)
            self._after_outside_drain()

    def _offloaded(self, future: asyncio.Future[list[Any]]) -> None:
        """An off-loop handler returned: apply its effects, then the inputs held meanwhile, in order (one
        of them may start another off-loop handler: the rest are held again, still in order)."""
        if self._freeze(self._offloaded, future):
            return
        held, self._held = self._held or [], None
        try:
            self._apply(future.result())
        except Exception:
            self._error("core.on_timer", "core raised", exc_info=True)
        for fn, args in held:
            fn(*args)
        self._after_outside_drain()

    def _task_exit(self, task_id: Any, ok: bool) -> None:
        if self._freeze(self._task_exit, task_id, ok) or self._hold(self._task_exit, task_id, ok):
            return
        if task_id in self.stale:  # an earlier replay's task
            self.stale.discard(task_id)
            return
        self.tasks.discard(task_id)
        self._call(self.core.on_task_exit, task_id, ok)
        self._after_outside_drain()

    def _after_outside_drain(self) -> None:
        # A send may have consumed the descriptor's edge: look for waiting frames now.
        if self.transport.readable():
            self._drain()

    def inject(self, fn: Any, *args: Any) -> None:
        """Call a core method (``fn(now, *args) -> effects``) from outside the loop's callbacks."""
        if self._freeze(self.inject, fn, *args) or self._hold(self.inject, fn, *args):
            return
        self._call(fn, *args)
        self._after_outside_drain()

    def _call(self, fn: Any, *args: Any) -> None:
        now = self.now()
        try:
            effects = fn(now, *args)
        except Exception as exc:
            name = getattr(fn, "__name__", "call")
            handling = f"{args[1]!r} from {args[0]!r}" if name == "on_message" else ", ".join(map(repr, args))
            text = f"its {self.core.role} core raised {type(exc).__name__}: {exc} in {name}({handling})"
            self._error(f"core.{name}", text, exc_info=True)
            return
        if self.recorder is not None:
            recorder = self.recorder
            recorder(now, self.core, (INPUTS.get(getattr(fn, "__name__", ""), "call"), *args), effects)
            if recorder.rows and self._records_due is None and self.loop is not None:
                self._records_due = self.loop.call_later(RECORDS_EVERY, self._send_records)
        self._apply(effects)

    def _drop(self, kind: str, text: str) -> None:
        self.transport.dropped[kind] += 1
        if self.transport.dropped[kind] == 1:
            log.warning("%s: %s (further ones of this kind are only counted)", self.core.name, text)

    def _error(self, kind: str, text: str, exc_info: bool = False) -> None:
        self.errors[kind] += 1
        if self.errors[kind] == 1:
            log.warning(
                "%s: %s (further ones of this kind are only counted)", self.core.name, text, exc_info=exc_info
            )

    # --- effects -----------------------------------------------------------------------------------
    def _apply(self, effects: list[Any]) -> None:
        for effect in effects:
            kind = type(effect)
            if kind is Send:
                self._send(effect.to, effect.msg)
            elif kind is Multicast:
                self._multicast(effect.to, effect.msg)
            elif kind is SetTimer:
                self._set_timer(effect.key, effect.delay)
            elif kind is CancelTimer:
                handle = self._timers.pop(effect.key, None)
                if handle is not None:
                    handle.cancel()
            elif kind is Launch:
                self.tasks.add(effect.task_id)
                self.executor.launch(effect.task_id, effect.duration)
            elif kind is Suspend:
                self.executor.suspend(effect.task_id)
            elif kind is Resume:
                self.executor.resume(effect.task_id)
            elif kind is Kill:
                self.executor.kill(effect.task_id)
            else:
                self._error("bad-effect", f"unknown effect {effect!r}")

    def _send(self, to: str, msg: Any, frame: bytes | None = None) -> None:
        if self.crashed:
            return
        kind = type(msg).__name__
        try:
            if self.links.on:
                self.links.send(to, encode(msg) if frame is None else frame, self.now())
            else:
                self.transport.send(to, encode(msg) if frame is None else frame)
        except UnknownPeer:
            self._error("unknown-peer", f"no address for peer {to!r}; {kind} not sent")
            if isinstance(msg, GetTask):  # no answer will come: free the reserved slot now
                self._call(self.core.on_message, to, NoTask(msg.job_id))
            return
        except FrameTooLarge as exc:
            self._error("frame-too-large", f"{kind} to {to!r} not sent: {exc} (see AVIARY_MAX_FRAME)")
            return
        except Exception as exc:  # zmq errors: the peer is unreachable
            self._error("send-failed", f"{kind} to {to!r} failed: {exc}")
            return
        if kind not in CONTROL_KINDS:
            self.sent[kind] += 1

    def _multicast(self, targets: list[str], msg: Any) -> None:
        """One message to several peers, encoded once (Eagle's remaining-task updates go to every node
        holding a probe of the job: tens of copies)."""
        if self.crashed:
            return
        kind = type(msg).__name__
        try:
            frame = encode(msg)
        except Exception as exc:
            self._error("encode-failed", f"{kind} not sent: {exc}")
            return
        for to in targets:
            self._send(to, msg, frame)

    def _set_timer(self, key: Any, delay: float) -> None:
        assert self.loop is not None
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        self._timers[key] = self.loop.call_later(max(0.0, delay), self._fire, key)
