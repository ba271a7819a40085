"""Issue 26: random inputs to every core the registry builds, and random failures in short simulated runs.

Each core (every role of every policy: node monitors, distributed schedulers, central schedulers, the
central's :class:`Recovering` wrapper, and the frontend) is driven by hypothesis through a sequence of
inputs: messages of every kind of :mod:`aviary.common.messages` with well-typed but arbitrary field values
(each passed through the wire codec, so the core sees exactly what the runtime's decoder yields), from
the cluster's names and from strangers; answers to what the core sent (a node finishing a task it was
given, a scheduler answering a ``GetTask``...); the timers the core set; and exits of the tasks it
launched (and of some it did not), on a monotone clock. Who may send what is checked by the runtime
(:mod:`aviary.common.senders`) only when its transport knows roles; a plain address book lets any name
through, so the cores here hear anything from anyone, except what the runtime takes only from a
controller (``SubmitJob``, ``PeerDown``, ``PeerUp``, ``Shutdown``) and the control kinds it answers
itself (``Hello``, ``GetStats``, ``GetCounters``, ``Shutdown``).

What must hold: no exception escapes a handler; every effect is one of the eight kinds with a sendable
message (it encodes); and after every input the invariants below (:func:`check_invariants`) that each
core's docstring states: a node never launches a task that its executor still runs and keeps its free
slots within ``[0, slots]``; a central scheduler's bookkeeping (:class:`CentralState`) is consistent
(each node's free room is its limit minus what is placed there, never below zero where the policy places
only by fit); a scheduler sends at most one ``JobDone`` per job per submission; the frontend never counts
a job twice. A short simulated replay with random failures of random processes ends with every job
finished or reported unfinished, never both, watched by the conformance kit's observer
(:class:`aviary.launch.check.runs.Watch`: no task launched or finished twice, no slot double-booked, no
job told done twice), which ``aviary policy check`` runs on every policy under random workloads.
"""

from __future__ import annotations

import functools
import math
import typing
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from helpers import sent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aviary.central.kairos import KairosCentralCore
from aviary.central.recovery import Recovering
from aviary.central.state import CentralState
from aviary.common.core import Core
from aviary.common.effects import CancelTimer, Kill, Launch, Multicast, Resume, Send, SetTimer, Suspend
from aviary.common.failures import Failure
from aviary.common.frontend import FrontendCore
from aviary.common.messages import (
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
from aviary.common.model import JobSpec
from aviary.common.resources import EPS
from aviary.distributed.dlwl import DlwlSchedulerCore
from aviary.launch.check.runs import Watch
from aviary.launch.drivers.sim import simulate
from aviary.launch.policies.registry import POLICIES, build_core, policy_cluster
from aviary.worker.hybrid import HybridNodeCore

FUZZ = settings(
    max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True
)
"""The same examples every run (CI must not depend on luck); ``--hypothesis-seed`` or a changed example
count explores others."""

STRANGERS = ("stranger", "", "node-9", "sched-7")
CONTROL = (Hello, GetStats, GetCounters, Shutdown)  # answered by the runtime, never handed to a core
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

    @property
    def names(self) -> list[str]:
        return list(self.roles)

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
        self.apply(self.core.on_timer(self.now, key))

    def exit(self, task_id: tuple[int, int], ok: bool) -> None:
        self.executing.discard(task_id)
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


def drive(d: Driver, data: st.DataObject, steps: int = 40) -> None:
    """Start the core, then ``steps`` random inputs; the invariants are checked after each."""
    kinds = [k for k in MESSAGE_TYPES if k not in CONTROL]
    senders = st.sampled_from([*d.names, *STRANGERS])
    d.apply(d.core.start(d.now))
    check_invariants(d)
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
        check_invariants(d)


# --- the invariants -----------------------------------------------------------------------------------------


def check_invariants(d: Driver) -> None:
    core = d.core
    for job, n in d.done.items():  # a job is done once per submission at most
        assert n <= d.submitted[job], f"job {job}: {n} JobDone after {d.submitted[job]} SubmitJob"
    inner = core.core if isinstance(core, Recovering) else core
    state = getattr(inner, "state", None)
    if isinstance(state, CentralState):
        check_central(state, d, recovered=isinstance(core, Recovering))
    kind = type(inner).__name__
    if kind in ("NodeMonitorCore", "HybridNodeCore"):
        assert 0 <= inner.free <= inner.slots, (inner.free, inner.slots)
        assert set(inner.running) <= d.executing, "a running task its executor does not run"
        requests = inner.requests.values()
        pending = sum(requests) if kind == "NodeMonitorCore" else sum(len(q) for q in requests)
        assert inner.free + pending + len(inner.running) == inner.slots, "slots lost or made up"
    if kind == "ResourceNodeCore":
        used = [0.0] * 4
        for task_id, task in inner.running.items():
            assert task.exited or task_id in d.executing, task_id
            used = [u + x for u, x in zip(used, task.demand, strict=True)]
        for r in range(4):
            assert d.close(inner.free[r], inner.capacity[r] - used[r]), (inner.free, used)
        assert inner.free[1] >= -EPS, "memory is a hard limit"
        if not inner.fluid:
            assert all(x >= -EPS for x in inner.free), inner.free
    if kind == "KairosNodeCore":
        running = {t.task_id for t in inner.running if t is not None}
        assert len(running) == sum(t is not None for t in inner.running), "a task in two slots"
        assert not running & inner.idle.keys() and running | inner.idle.keys() == inner.tasks.keys()
        for slot, t in enumerate(inner.running):
            assert t is None or t.slot == slot
    if isinstance(inner, FrontendCore):
        finished = [j for j, t in inner.times.items() if t.finish is not None]
        assert inner.finished == len(finished) <= len(inner.jobs)
        assert all(inner.times[j].submit is not None for j in finished)
        assert not set(finished) & set(inner.unfinished())


def check_central(state: CentralState, d: Driver, *, recovered: bool) -> None:
    """:class:`CentralState`'s bookkeeping: what is placed on each node is what its free room lacks; each
    stage's counts agree with the tasks placed and finished."""
    on: dict[str, list[Any]] = {n.name: [] for n in state.nodes}
    of_job: Counter[int] = Counter()
    of_stage: Counter[tuple[int, int]] = Counter()
    for (job_id, index), (node, stage, _) in state.placed.items():
        assert job_id in state.jobs and stage.job_id == job_id, (job_id, index)
        assert stage.offset <= index < stage.offset + stage.tasks, (job_id, index)
        on[node.name].append(stage.demand)
        of_job[job_id] += 1
        of_stage[job_id, stage.index] += 1
    for node in state.nodes:
        assert node.running == len(on[node.name]), node.name
        if node.dead:
            continue
        limit = state.limits[node.index]
        for r in range(4):
            held = sum(demand[r] for demand in on[node.name])
            assert d.close(node.free[r], limit[r] - held), (node, held)
    for job in state.jobs.values():
        assert job.running == of_job[job.job_id]
        assert job.finished == sum(s.finished for s in job.stages) < job.tasks
        for s in job.stages:
            assert 0 <= s.finished <= s.tasks and s.placed <= s.tasks
            assert s.placed == of_stage[job.job_id, s.index] + s.finished, (job.job_id, s.index)
    core = d.core.core if recovered else d.core
    if recovered:  # a restart books what the nodes report, whether it fits or not
        return
    kind = type(core).__name__
    if kind in ("CentralFifoCore", "PackingCore"):  # a task is placed only where it fits
        for node in state.nodes:
            assert all(x >= -EPS for x in node.free), (node.name, node.free)
    if kind == "KairosCentralCore":  # at most slots + Q tasks per node
        for n in core.nodes:
            assert n.count <= n.cap, (n.name, n.count, n.cap)


# --- the tests -------------------------------------------------------------------------------------------


def cluster_of(policy: str) -> Any:
    return policy_cluster(policy, nodes=2, schedulers=2, bind_ports=False, params={})


@pytest.mark.parametrize("policy", list(POLICIES))
@given(data=st.data())
@FUZZ
def test_every_core_survives_random_inputs(policy: str, data: st.DataObject) -> None:
    cluster = cluster_of(policy)
    roles = {p.name: p.role for p in cluster.processes}
    specs = [p for p in cluster.processes if p.role != "frontend"]
    which = data.draw(st.sampled_from([*range(len(specs)), "recovering"]))
    if which == "recovering":
        assert cluster.central is not None or not POLICIES[policy].central
        spec = cluster.central or specs[0]
        core = build_core(spec, cluster, recover=True)
    else:
        core = build_core(specs[which], cluster)
    drive(Driver(core, roles, cluster.frontend.name), data)


@st.composite
def job_specs(draw: st.DrawFn, most: int = 6) -> list[JobSpec]:
    ids = draw(st.lists(st.integers(0, 9), min_size=1, max_size=most, unique=True))
    return [
        JobSpec(
            j,
            draw(st.floats(0.0, 3.0)),
            draw(st.lists(st.floats(0.01, 2.0), min_size=1, max_size=3)),
            draw(st.floats(0.01, 2.0)),
            draw(st.booleans()),
        )
        for j in ids
    ]


@pytest.mark.parametrize("policy", ["sparrow", "fifo", "eagle", "drf"])
@given(data=st.data())
@FUZZ
def test_the_frontend_survives_random_inputs(policy: str, data: st.DataObject) -> None:
    cluster = cluster_of(policy)
    roles = {p.name: p.role for p in cluster.processes if p.role != "frontend"}
    frontend = FrontendCore(
        cluster.frontend.name,
        data.draw(job_specs()),
        POLICIES[policy].route(cluster),
        wait_for=data.draw(st.lists(st.sampled_from(list(roles)), max_size=2, unique=True)),
        roles=roles,
        liveness=data.draw(st.sampled_from([None, (0.5, 2)])),
        restarts=data.draw(st.booleans()),
    )
    drive(Driver(frontend, {**roles, cluster.frontend.name: "frontend"}, "control"), data)


@pytest.mark.parametrize("policy", ["sparrow", "fifo", "eagle", "drf", "graphene"])
@given(data=st.data())
@settings(FUZZ, max_examples=6)
def test_a_replay_with_random_failures_loses_and_doubles_nothing(policy: str, data: st.DataObject) -> None:
    cluster = policy_cluster(policy, nodes=3, schedulers=2, bind_ports=False)
    jobs = data.draw(job_specs(8))
    names = [p.name for p in cluster.processes if p.role != "frontend"]
    failures = data.draw(
        st.lists(st.builds(Failure, st.sampled_from(names), st.floats(0.0, 4.0)), max_size=3)
    )
    watch = Watch(cluster, POLICIES[policy].dag)  # the conformance kit's observer (aviary policy check)
    failures = sorted(failures, key=lambda f: (f.at, f.name))
    out = simulate(cluster, jobs, failures=failures, wall_limit=5, observer=watch)
    assert watch.problems == []
    fe = out.frontend
    finished = {j for j, t in fe.times.items() if t.finish is not None}
    unfinished = set(fe.unfinished())
    assert not finished & unfinished and finished | unfinished == {j.job_id for j in jobs}
    assert fe.finished == len(finished)
    if not failures:
        assert not unfinished and out.stopped is None
    assert not out.counters["executor.duplicate_launch"]
    for core in out.cores.values():  # each central scheduler's record of finished tasks
        log = [(entry[0], entry[1]) for entry in core.task_log()]
        assert len(log) == len(set(log)), f"{core.name}: a task finished twice"


# --- what the fuzzer found (plain regression tests) -----------------------------------------------------


def test_a_steal_reply_of_malformed_probes_is_counted_and_dropped() -> None:
    """``StealReply.probes`` is untyped on the wire: an item that is not ``[scheduler, job, estimate,
    remaining, count]`` raised ValueError in the thief (worker/hybrid.py)."""
    node = HybridNodeCore("node-0", 1)
    reply = StealReply([[1, 2], "x", ["sched-0", 1.5, 1.0, 1, 1], ["sched-0", 3, 0.5, 2, 0]])
    effects = node.on_message(0.0, "node-1", reply)
    assert node.counters["bad_stolen_probes"] == 3
    assert node.counters["steals"] == 1  # the good one, a count of 0 taken as 1 like a Probe's
    assert [(to, m) for to, m in sent(effects, GetTask)] == [("sched-0", GetTask(3))]


def test_a_recover_whose_ages_do_not_match_its_jobs_is_dropped() -> None:
    """A ``Recover`` with fewer ages than jobs raised ValueError at every later input of the restarted
    central (central/recovery.py): it is dropped, and a good one is still heard."""
    cluster = cluster_of("fifo")
    core = build_core(cluster.central, cluster, recover=True)
    assert core.on_message(0.0, "frontend", Recover([1, 2], [0.5], ["node-0"])) == []
    assert core.counters["bad_recover"] == 1
    assert sent(core.on_message(0.0, "frontend", Recover([], [], ["node-0"])), GetHolding) == [
        ("node-0", GetHolding())
    ]
    assert sent(core.on_message(0.1, "node-0", Holding([], [], [])), GetHolding) == []
    assert not core.recovering


def test_kairos_places_the_tasks_of_two_dead_nodes_in_its_queue_order() -> None:
    """Two nodes died before their tasks could be placed again: the second one's went to the queue's
    front, the first one's first in the stage's ``retry``, and ``_dispatch`` asserted (central/kairos.py;
    found by a simulated replay with node-0 and node-1 killed)."""
    core = KairosCentralCore("central", {"node-0": 1, "node-1": 1, "node-2": 1}, q=0)
    placed = sent(core.on_message(0.0, "frontend", SubmitJob(1, [1.0] * 4, 1.0)), PlaceTask)
    where = {m.task_index: to for to, m in placed}
    assert len(where) == 3
    core.on_message(0.1, "frontend", PeerDown("node-0"))
    core.on_message(0.2, "frontend", PeerDown("node-1"))
    left = next(i for i, to in where.items() if to == "node-2")
    effects = core.on_message(0.3, "node-2", TaskFinished(1, left))
    again = sent(effects, PlaceTask)
    assert [to for to, _ in again] == ["node-2"]
    assert again[0][1].task_index == next(i for i, to in where.items() if to == "node-1")


def test_dlwl_ignores_a_task_finished_from_an_empty_name() -> None:
    """A ``TaskFinished`` for a task never placed, from a sender named "", matched the default of a
    lookup and raised KeyError (distributed/dlwl.py)."""
    core = DlwlSchedulerCore("sched-0", ["node-0", "node-1"], ["node-0", "node-1"])
    core.on_message(0.0, "frontend", SubmitJob(1, [1.0, 1.0, 1.0], 1.0))
    assert core.on_message(0.1, "", TaskFinished(1, 7)) == []
    assert core.counters["late_results_ignored"] == 1


def test_rayon_places_a_gang_that_demands_nothing() -> None:
    """A stage whose demand takes no room (all zeros) made Rayon/CS's slot count loop for ever
    (central/rayon_cs.py: ``gather``)."""
    cluster = cluster_of("rayon-cs")
    core = build_core(cluster.central, cluster)
    core.start(0.0)
    core.on_message(0.0, "frontend", SubmitJob(1, [1.0, 1.0], 1.0, [[2, 1.0, [0.0, 0.0, 0.0, 0.0], []]]))
    assert len(sent(core.on_timer(1.0, "cycle"), PlaceTask)) == 2
