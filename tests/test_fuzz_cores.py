"""Random inputs to every core the registry builds, and random failures in short simulated runs.

Each core (every role of every policy: node monitors, distributed schedulers, central schedulers, the
central's :class:`Recovering` wrapper, and the frontend) is driven by the conformance kit's driver
(:mod:`aviary.launch.check.fuzz`, which ``aviary policy check``'s ``messages`` check runs on any policy)
through a sequence of inputs: messages of every kind of :mod:`aviary.common.messages` with well-typed but
arbitrary field values (each passed through the wire codec, so the core sees exactly what the runtime's
decoder yields), from the cluster's names and from strangers; answers to what the core sent (a node
finishing a task it was given, a scheduler answering a ``GetTask``...); the timers the core set; and
exits of the tasks it launched (and of some it did not), on a monotone clock. Who may send what is
checked by the runtime (:mod:`aviary.common.senders`) only when its transport knows roles; a plain
address book lets any name through, so the cores here hear anything from anyone, except what the runtime
takes only from a controller (``SubmitJob``, ``PeerDown``, ``PeerUp``, ``Shutdown``) and the control
kinds it answers itself (``Hello``, ``GetStats``, ``GetCounters``, ``Shutdown``).

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

from collections import Counter
from typing import Any

import pytest
from helpers import sent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aviary.central.kairos import KairosCentralCore
from aviary.central.recovery import Recovering
from aviary.central.state import CentralState
from aviary.common.failures import Failure
from aviary.common.frontend import FrontendCore
from aviary.common.messages import (
    GetHolding,
    GetTask,
    Holding,
    PeerDown,
    PlaceTask,
    Recover,
    StealReply,
    SubmitJob,
    TaskFinished,
)
from aviary.common.model import JobSpec
from aviary.common.resources import EPS
from aviary.distributed.dlwl import DlwlSchedulerCore
from aviary.launch.check.fuzz import Driver, drive
from aviary.launch.check.runs import Watch
from aviary.launch.drivers.sim import simulate
from aviary.launch.policies.registry import POLICIES, build_core, policy_cluster
from aviary.worker.hybrid import HybridNodeCore

FUZZ = settings(
    max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True
)
"""The same examples every run (CI must not depend on luck); ``--hypothesis-seed`` or a changed example
count explores others."""


def check_invariants(d: Driver) -> None:
    """What the built-in cores' own state must keep (the kit's driver checks what any core must)."""
    core = d.core
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
    drive(Driver(core, roles, cluster.frontend.name), data, check=check_invariants)


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
    drive(
        Driver(frontend, {**roles, cluster.frontend.name: "frontend"}, "control"),
        data,
        check=check_invariants,
    )


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


FAMILIES = [
    *("sparrow", "hawk", "eagle", "kairos", "fifo", "dlwl"),
    *("tetris", "drf", "carbyne", "graphene", "tetrisched"),
]
"""A policy of every family (the probe-based ones, the Kairos and FIFO central queues, DLWL, and the
multi-resource central policies)."""


@pytest.mark.parametrize("policy", FAMILIES)
def test_faults_of_the_network_lose_and_double_nothing(policy: str) -> None:
    """Random link faults (loss, duplication, reordering, delay, partitions; the conformance kit's
    ``network-fault`` strategy, so ``aviary policy check`` runs the same search): every job finishes, no
    task finishes twice, no slot is double-booked (:func:`run_case`'s watch). A failure shrinks to the
    smallest case, its faults written as ``--fail`` items."""
    from aviary.launch.check.runs import cases, run_case, search

    spec = POLICIES[policy]
    failing, problems = search(lambda c: run_case(spec, c)[0], cases(spec, "network"), 6)
    assert failing is None, f"{failing.text() if failing else ''}: {problems}"


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
