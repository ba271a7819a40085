"""Random inputs to one core, as a runtime would hand them (the conformance kit's ``messages`` check, and
the project's fuzz tests): messages of every kind of :mod:`aviary.common.messages` with well-typed but
arbitrary field values (each passed through the wire codec, so the core sees exactly what the runtime's
decoder yields), from the cluster's names and from strangers; answers to what the core sent (a node
finishing a task it was given, a scheduler answering a ``GetTask``...); the timers the core set; and
exits of the tasks it launched (and of some it did not), on a monotone clock.

What must hold of any core: no exception escapes a handler; every effect is one of the eight kinds with
a sendable message (it encodes); a node never launches a task its executor still runs; a job is told
done at most once per submission. (``tests/test_fuzz_cores.py`` adds what the built-in cores' own state
must keep.)"""

from __future__ import annotations

import functools
import math
import typing
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from hypothesis import strategies as st

from ...common.core import Core
from ...common.effects import CancelTimer, Kill, Launch, Multicast, Resume, Send, SetTimer, Suspend
from ...common.frontend import FrontendCore
from ...common.messages import (
    MESSAGE_TYPES,
    AssignTask,
    Counters,
    GetCounters,
    GetHolding,
    GetStats,
    GetTask,
    Hello,
    Holding,
    JobDone,
    KillTask,
    Link,
    LinkFaults,
    LongTask,
    NoTask,
    PeerDown,
    PeerUp,
    PlaceTask,
    Probe,
    ProbeRejected,
    QueueTask,
    Recover,
    Register,
    Shutdown,
    StealReply,
    StealRequest,
    SubmitJob,
    TaskFinished,
    TaskStarted,
    decode,
    encode,
)

STRANGERS = ("stranger", "", "node-9", "sched-7")
CONTROL = (Hello, GetStats, GetCounters, Shutdown, Link, LinkFaults)  # the runtime's, never a core's
FROM_CONTROLLER = (SubmitJob, PeerDown, PeerUp, Shutdown)  # taken only from the frontend, roles or not
EFFECTS = (Send, Multicast, SetTimer, CancelTimer, Launch, Suspend, Resume, Kill)

# --- values ----------------------------------------------------------------------------------------------

job_ids = st.one_of(st.integers(0, 3), st.integers(-(2**63), 2**63 - 1))
small = st.integers(-2, 6)
ints = st.one_of(small, st.integers(-(2**63), 2**63 - 1))
floats = st.one_of(
    st.floats(0.0, 5.0),
    st.sampled_from([0.0, -1.0, math.nan, math.inf, -math.inf, 1e308, 1e-300]),
    st.floats(allow_nan=True, allow_infinity=True),
)
texts = st.one_of(
    st.sampled_from(["", "gpu", "rack", "accepted", "be", "noreserve", "x"]), st.text(max_size=4)
)
anything = st.recursive(
    st.one_of(st.none(), st.booleans(), ints, floats, texts),
    lambda inner: st.lists(inner, max_size=4),
    max_leaves=8,
)


def names_of(cluster: Any) -> list[str]:
    return [p.name for p in cluster.processes]


def value_of(tp: Any, names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """A strategy for a message field of type ``tp``."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is int:
        return ints
    if tp is float:
        return floats
    if tp is bool:
        return st.booleans()
    if tp is str:
        return st.one_of(st.sampled_from([*names, *STRANGERS]), texts)
    if tp is bytes:
        return st.binary(max_size=3)
    if tp is Any:
        return anything
    if origin is list:
        return st.lists(value_of(args[0], names), max_size=4)
    if origin is tuple:
        return st.tuples(*(value_of(a, names) for a in args))
    if origin is dict:
        return st.dictionaries(value_of(args[0], names), value_of(args[1], names), max_size=3)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return st.one_of(*(st.none() if a is type(None) else value_of(a, names) for a in args))
    raise AssertionError(f"no strategy for {tp!r}")


@st.composite
def stages_for(draw: st.DrawFn, n: int, sane: bool) -> list[Any]:
    """A DAG of stages holding ``n`` tasks with demands that fit a machine (``sane``), or with any
    numbers, or (sometimes) anything at all."""
    if not sane and draw(st.integers(0, 3)) == 0:
        return draw(st.lists(anything, max_size=3))
    amount = st.sampled_from([0.0, 0.5, 1.0, 2.0]) if sane else st.one_of(st.floats(0.0, 64.0), floats)
    out: list[Any] = []
    left = n
    while left > 0:
        t = draw(st.integers(1, left))
        demand = draw(st.lists(amount, max_size=4))
        parents = draw(st.lists(st.integers(0, len(out) - 1), max_size=2)) if out else []
        out.append([t, draw(st.floats(0.0, 5.0) if sane else floats), demand, parents])
        left -= t
    return out


@st.composite
def submits(draw: st.DrawFn, sane: bool = False) -> SubmitJob:
    """A job as a frontend sends it (``sane``: of jobs 0-3, durations and estimates of seconds, demands
    that fit), or with any values."""
    n = draw(st.integers(1, 4) if sane else st.integers(0, 4))
    number = st.floats(0.0, 5.0) if sane else st.one_of(st.floats(0.0, 5.0), floats)
    flat = draw(st.booleans())
    return SubmitJob(
        draw(st.integers(0, 3) if sane else job_ids),
        draw(st.lists(number, min_size=n, max_size=n)),
        draw(number),
        [] if flat else draw(stages_for(n, sane)),
        draw(st.one_of(st.none(), number)),
        draw(st.sampled_from(["", "accepted", "noreserve", "be"] if sane else ["", "be", "x"])),
        draw(st.booleans()),
        draw(st.sampled_from(["", "gpu", "rack", "x"])),
        draw(st.one_of(st.just(1.0), st.floats(1.0, 3.0) if sane else floats)),
    )


def recovers(names: tuple[str, ...]) -> st.SearchStrategy[Recover]:
    """A frontend's ``Recover``: some of jobs 0-3 with their ages, some of the cluster's nodes."""
    nodes = [n for n in names if n.startswith("node-")]
    return st.lists(st.integers(0, 3), max_size=4, unique=True).flatmap(
        lambda jobs: st.builds(
            Recover,
            st.just(jobs),
            st.lists(st.floats(0.0, 5.0), min_size=len(jobs), max_size=len(jobs)),
            st.lists(st.sampled_from(nodes), max_size=len(nodes), unique=True),
        )
    )


@functools.cache
def message_of(kind: type, names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    if kind is SubmitJob:
        return submits()
    if kind is Recover:
        return st.one_of(recovers(names), fields_of(kind, names))
    return fields_of(kind, names)


def fields_of(kind: type, names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """Any message of ``kind``: every field drawn from its type."""
    hints = typing.get_type_hints(kind)
    kwargs = {}
    for f in msgspec.structs.fields(kind):
        if f.name == "job_id":
            kwargs[f.name] = job_ids
        elif f.name in ("task_index", "count", "remaining", "attempt", "slots", "tasks"):
            kwargs[f.name] = ints
        elif f.name == "name":
            kwargs[f.name] = st.sampled_from([*names, *STRANGERS])
        else:
            kwargs[f.name] = value_of(hints[f.name], names)
    return st.builds(kind, **kwargs)


def wire(msg: Any) -> Any | None:
    """``msg`` as the runtime's decoder hands it to a core, or None when no frame could carry it."""
    try:
        return decode(encode(msg))
    except (msgspec.EncodeError, OverflowError, ValueError):
        return None


# --- the driver --------------------------------------------------------------------------------------------


@dataclass
class Driver:
    """Feeds one core its inputs as a runtime would and checks each of its effects."""

    core: Core
    roles: dict[str, str]  # every process of the cluster by name (the frontend too)
    frontend: str
    now: float = 0.0
    timers: dict[Any, float] = field(default_factory=dict)  # key -> due
    executing: set[tuple[int, int]] = field(default_factory=set)  # launched, exit not delivered yet
    sent: list[tuple[str, Any]] = field(default_factory=list)  # what the core sent, to answer
    submitted: Counter[int] = field(default_factory=Counter)  # SubmitJob delivered, by job
    done: Counter[int] = field(default_factory=Counter)  # JobDone sent, by job
    anomalies: Counter[str] = field(default_factory=Counter)
    scale: float = 1.0  # the largest amount of a resource demand heard of (rounding in free-room sums)

    log: list[str] = field(default_factory=list)  # the inputs so far, as a person reads them

    @property
    def names(self) -> list[str]:
        return list(self.roles)

    def check(self) -> None:
        """What must hold of any core after every input: a job is told done at most once a submission."""
        for job, n in self.done.items():
            assert n <= self.submitted[job], f"job {job}: {n} JobDone after {self.submitted[job]} SubmitJob"

    def apply(self, effects: Any) -> None:
        assert isinstance(effects, list), effects
        for e in effects:
            assert type(e) in EFFECTS, e
            if type(e) is Send or type(e) is Multicast:
                assert type(e.msg) in MESSAGE_TYPES, e
                encode(e.msg)  # a message the runtime can send
                for to in [e.to] if type(e) is Send else e.to:
                    assert isinstance(to, str), e
                    self.sent.append((to, e.msg))
                    if type(e.msg) is JobDone:
                        self.done[e.msg.job_id] += 1
            elif type(e) is SetTimer:
                assert isinstance(e.delay, (int, float)), e
                if not e.delay >= 0:
                    self.anomalies[f"timer delay {e.delay}"] += 1
                self.timers[e.key] = self.now + e.delay if e.delay >= 0 else self.now
            elif type(e) is CancelTimer:
                self.timers.pop(e.key, None)
            elif type(e) is Launch:
                # a node never launches a task its executor still runs
                assert e.task_id not in self.executing, f"{e.task_id} launched twice"
                self.executing.add(e.task_id)
            elif e.task_id not in self.executing:
                self.anomalies[f"{type(e).__name__} of a task not running"] += 1

    def message(self, sender: str, msg: Any) -> None:
        msg = wire(msg)
        if msg is None or isinstance(msg, CONTROL):
            return
        if isinstance(msg, FROM_CONTROLLER) and sender != self.frontend:
            return
        if type(msg) is SubmitJob:
            self.submitted[msg.job_id] += 1
            for stage in msg.stages:
                if isinstance(stage, list) and len(stage) > 2 and isinstance(stage[2], list):
                    self.heard(stage[2])
        if type(msg) is PlaceTask:
            self.heard(msg.demand)
        self.log.append(f"t={self.now:.3f} from {sender!r}: {msg!r}")
        self.apply(self.core.on_message(self.now, sender, msg))

    def heard(self, demand: list[Any]) -> None:
        amounts = [abs(x) for x in demand if type(x) in (int, float) and math.isfinite(x)]
        self.scale = max([self.scale, *amounts])

    def close(self, a: float, b: float) -> bool:
        """Equal but for the rounding of sums of amounts up to :attr:`scale`."""
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6 + 1e-12 * self.scale)

    def timer(self, key: Any) -> None:
        due = self.timers.pop(key)
        if math.isfinite(due):
            self.now = max(self.now, due)
        self.log.append(f"t={self.now:.3f} timer {key!r}")
        self.apply(self.core.on_timer(self.now, key))

    def exit(self, task_id: tuple[int, int], ok: bool) -> None:
        self.executing.discard(task_id)
        self.log.append(f"t={self.now:.3f} task {task_id} exits ({'ok' if ok else 'failed'})")
        self.apply(self.core.on_task_exit(self.now, task_id, ok))


tasks = st.tuples(st.integers(0, 3), small)


def answer(data: st.DataObject, roles: dict[str, str], msg: Any) -> Any | None:
    """What the addressee of ``msg`` (a message the core sent) would answer, or None."""
    k = type(msg)
    draw = data.draw
    if k in (PlaceTask, LongTask, QueueTask, AssignTask, KillTask):
        j, i = msg.job_id, msg.task_index
        if k is KillTask:
            return TaskFinished(j, i, False)
        return draw(st.sampled_from([TaskStarted(j, i), TaskFinished(j, i, True), TaskFinished(j, i, False)]))
    if k is Probe:
        return draw(st.sampled_from([GetTask(msg.job_id), ProbeRejected(msg.job_id, msg.count, msg.attempt)]))
    if k is GetTask:
        assign = st.builds(AssignTask, st.just(msg.job_id), small, st.floats(0.0, 5.0), floats, small)
        return draw(st.one_of(st.just(NoTask(msg.job_id)), assign))
    if k is StealRequest:
        names = st.sampled_from([*roles, *STRANGERS])
        probe = st.tuples(names, st.integers(0, 3), floats, small, small).map(list)
        return StealReply(draw(st.one_of(st.lists(probe, max_size=3), st.lists(anything, max_size=2))))
    if k is GetHolding:
        ago = st.one_of(st.floats(0.0, 5.0), floats)
        return Holding(
            draw(st.lists(tasks, max_size=3)),
            draw(st.lists(st.tuples(st.integers(0, 3), small, ago), max_size=3)),
            draw(st.lists(st.tuples(st.integers(0, 3), small, ago), max_size=3)),
        )
    if k is SubmitJob:
        return JobDone(msg.job_id, draw(floats))
    if k is Hello:
        return Register(draw(st.sampled_from(["node", "scheduler", "central"])), 1, draw(st.booleans()))
    if k is GetCounters:
        return Counters({}, {})
    return None


ACTIONS = (*["message"] * 2, "submit", *["answer"] * 3, *["timer"] * 2, "exit", "wait", "dead")
"""Each step's kind, by weight."""


def drive(
    d: Driver, data: st.DataObject, steps: int = 40, check: Callable[[Driver], None] | None = None
) -> None:
    """Start the core, then ``steps`` random inputs; after each, what must hold of any core
    (:meth:`Driver.check`) and ``check`` (what a core's own state must keep)."""
    kinds = [k for k in MESSAGE_TYPES if k not in CONTROL]
    senders = st.sampled_from([*d.names, *STRANGERS])
    d.log.append(f"t={d.now:.3f} start")
    d.apply(d.core.start(d.now))
    d.check()
    if check is not None:
        check(d)
    for _ in range(data.draw(st.integers(steps // 2, steps))):
        action = data.draw(st.sampled_from(ACTIONS))
        if action == "answer" and d.sent:
            to, msg = d.sent[data.draw(st.integers(0, len(d.sent) - 1))]
            reply = answer(data, d.roles, msg)
            if reply is not None:
                d.message(to, reply)
        elif action == "timer" and d.timers:
            d.timer(data.draw(st.sampled_from(sorted(d.timers, key=repr))))
        elif action == "exit":
            own = st.sampled_from(sorted(d.executing)) if d.executing else tasks
            d.exit(data.draw(st.one_of(own, tasks)), data.draw(st.booleans()))
        elif action == "submit":  # a plausible job, or a restarted central's Recover
            job = data.draw(st.one_of(submits(sane=True), recovers(tuple(d.names))))
            d.message(d.frontend, job)
        elif action == "wait":
            d.now += data.draw(st.floats(0.0, 10.0))
        elif action == "dead" and isinstance(d.core, FrontendCore):  # its driver declares one dead
            name = data.draw(st.sampled_from([*d.names, *STRANGERS]))
            d.apply(d.core.declare_dead(d.now, name, "fuzz", exited=data.draw(st.booleans())))
        else:
            kind = data.draw(st.sampled_from(kinds))
            sender = d.frontend if kind in FROM_CONTROLLER else data.draw(senders)
            d.message(sender, data.draw(message_of(kind, tuple(d.names))))
        d.check()
        if check is not None:
            check(d)


# --- the invariants -----------------------------------------------------------------------------------------
