"""Simulated runs of a policy under random workloads, watched for what must never happen.

A *case* is a small cluster and workload drawn by hypothesis (:func:`cases`): nodes, slots, schedulers,
a seed, a network delay, jobs (arrival, task durations) and, for the fault checks, a process that dies
at a time, or faults of the network (``--fail``'s link items: which links, which kind, when).
:func:`run_case` replays it on the simulator with a :class:`Watch` observing every core's inputs and
effects, and returns what went wrong, one line each:

- a core raised (the input it was handling named);
- a node launched a task it already runs, or ran more tasks than its slots at once (a double-booked
  slot), or, with capacity vectors, more memory than it has (memory is a hard limit);
- a task finished twice, or a scheduler told a job done twice;
- a job lost: the run ended (nothing left to happen) with a job neither finished nor reported unfinished
  by a stop, or, without faults or with faults the policy must survive, a job not finished at all.

:func:`check_cases` runs a property over many cases with hypothesis and returns the shrunk failing case.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ...common.cluster import Cluster
from ...common.core import Core
from ...common.declaration import Policy
from ...common.effects import Effect, Launch, Resume, Send, Suspend
from ...common.failures import Failure
from ...common.messages import JobDone, PlaceTask
from ...common.model import JobSpec
from ...common.netfaults import parse_link_faults
from ...common.resources import EPS, Resources
from ..drivers.sim import CORE_RAISED, simulate
from ..policies.registry import policy_cluster


@dataclass(frozen=True)
class Case:
    """One simulated run: the cluster's shape, the seed, the one-way delay and the jobs, each
    ``[arrival, [task durations]]``; ``fail``: ``[process, time]`` of a process that dies; ``links``: faults
    of the network, as ``--fail``'s link items (:mod:`aviary.common.netfaults`)."""

    nodes: int
    slots: int
    schedulers: int
    seed: int
    delay: float
    jobs: list[list[Any]]
    fail: list[Any] | None = None
    links: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The case as one line of JSON (``aviary policy check --case``)."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def parse(cls, text: str) -> Case:
        data = json.loads(text)
        return cls(**data)

    def cluster(self, policy: Policy) -> Cluster:
        return policy_cluster(
            policy,
            nodes=self.nodes,
            slots=self.slots,
            schedulers=self.schedulers,
            seed=self.seed,
            bind_ports=False,
        )

    def job_specs(self) -> list[JobSpec]:
        out = []
        for i, (arrival, durations) in enumerate(self.jobs):
            estimate = sum(durations) / len(durations)
            out.append(JobSpec(i, float(arrival), [float(d) for d in durations], estimate, False))
        return out


@dataclass
class Watch:
    """The observer of a run: what every node runs, what finished, what was told done."""

    cluster: Cluster
    dag: bool
    problems: list[str] = field(default_factory=list)
    running: dict[str, set[Any]] = field(default_factory=dict)
    suspended: dict[str, set[Any]] = field(default_factory=dict)
    demand: dict[Any, Resources] = field(default_factory=dict)
    finished: Counter[Any] = field(default_factory=Counter)
    done: Counter[int] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.nodes = {n.name: n for n in self.cluster.nodes}
        self.running = {n: set() for n in self.nodes}
        self.suspended = {n: set() for n in self.nodes}
        self.frontend = self.cluster.frontend.name

    def problem(self, now: float, text: str) -> None:
        if len(self.problems) < 5:
            self.problems.append(f"at {now:.4f} s: {text}")

    def __call__(self, now: float, core: Core, event: tuple[Any, ...], effects: list[Effect]) -> None:
        name = core.name
        node = self.nodes.get(name)
        if node is not None and event[0] == "exit":
            self.running[name].discard(event[1])
            self.suspended[name].discard(event[1])
            if event[2]:
                self.finished[event[1]] += 1
                if self.finished[event[1]] == 2:
                    self.problem(now, f"task {event[1]} finished twice (on {name}, again)")
        for e in effects:
            if isinstance(e, Send):
                msg = e.msg
                if type(msg) is JobDone and e.to == self.frontend:
                    self.done[msg.job_id] += 1
                    if self.done[msg.job_id] == 2:
                        self.problem(now, f"{name} told job {msg.job_id} done twice")
                elif type(msg) is PlaceTask and msg.demand:
                    self.demand[msg.job_id, msg.task_index] = Resources.of(msg.demand)
            elif node is None:
                continue
            elif isinstance(e, Launch):
                if e.task_id in self.running[name]:
                    self.problem(now, f"{name} launched task {e.task_id} while it runs it already")
                self.running[name].add(e.task_id)
                self._capacity(now, name)
            elif isinstance(e, Suspend):
                self.suspended[name].add(e.task_id)
            elif isinstance(e, Resume):
                self.suspended[name].discard(e.task_id)
                self._capacity(now, name)

    def _capacity(self, now: float, name: str) -> None:
        active = self.running[name] - self.suspended[name]
        spec = self.nodes[name]
        if not self.dag and len(active) > spec.slots:
            self.problem(
                now, f"{name} runs {len(active)} tasks at once on {spec.slots} slot(s): a double-booked slot"
            )
        if self.dag:
            memory = sum(self.demand[t].mem for t in active if t in self.demand)
            if memory > spec.resources.mem + EPS:
                self.problem(
                    now, f"{name} holds {memory:g} GB of memory in {spec.resources.mem:g}: over capacity"
                )


def run_case(policy: Policy, case: Case, *, must_finish: bool = True) -> tuple[list[str], dict[int, Any]]:
    """Replay ``case`` with ``policy`` under a :class:`Watch`: its problems, and each job's times
    (``(first_start, finish)``) for comparing two runs."""
    cluster = case.cluster(policy)
    watch = Watch(cluster, policy.dag)
    jobs = case.job_specs()
    failures = [Failure(str(case.fail[0]), float(case.fail[1]))] if case.fail else []
    links = parse_link_faults(case.links)
    out = simulate(
        cluster,
        jobs,
        net_delay=case.delay,
        observer=watch,
        failures=failures,
        wall_limit=20.0,
        link_faults=links,
    )
    problems = list(watch.problems)
    if out.stopped == CORE_RAISED:
        problems.insert(0, str(out.error))
    elif out.stopped == "wall limit":
        problems.append("the run did not end within 20 s of wall time (a loop that never stops?)")
    fe = out.frontend
    finished = {j for j, t in fe.times.items() if t.finish is not None}
    unfinished = set(fe.unfinished())
    if finished & unfinished or finished | unfinished != {j.job_id for j in jobs}:
        problems.append(
            f"jobs neither finished nor reported unfinished: {sorted(set(fe.times) - finished - unfinished)}"
        )
    if must_finish and out.stopped is None and unfinished:
        problems.append(f"jobs lost: {sorted(unfinished)} never finished (nothing was left to happen)")
    times = {j: (t.first_start, t.finish) for j, t in fe.times.items()}
    return problems, times


def determinism(policy: Policy, case: Case) -> list[str]:
    """The same case twice: the same times for every job (a core's randomness is its own, seeded)."""
    first, a = run_case(policy, case)
    second, b = run_case(policy, case)
    if first or second:
        return []  # the other checks report it
    if a != b:
        diff = next(j for j in a if a[j] != b.get(j))
        return [f"the same case twice gave different results: job {diff} at {a[diff]} then {b[diff]}"]
    return []


Property = Callable[[Case], list[str]]
"""What must hold of one case: the problems found (none: it holds)."""

MS = 1000.0


def link_faults(policy: Policy) -> Any:
    """A hypothesis strategy of one to three link faults over ``policy``'s processes: a link (every one,
    a role's, one node's, both ways or one), a kind (loss, duplication, reordering and delay of up to
    half the messages, or a partition), and a window of the run (a partition always ends). Shrinks
    toward one fault on every link from the start."""
    from hypothesis import strategies as st

    roles = sorted({p.role for p in Case(2, 1, 1, 0, 0.0, []).cluster(policy).processes} - {"node"})
    sides = st.sampled_from(["*", "{node}", "node-0", *(f"{{{r}}}" for r in roles)])
    link = st.tuples(sides, st.sampled_from(["<>", ">"]), sides).map("".join)
    share = st.integers(1, 50).map(lambda p: f"={p}%")
    kind = st.one_of(
        st.tuples(st.sampled_from(["drop", "dup", "reorder"]), share).map("".join),
        st.tuples(st.integers(1, 500), st.integers(1, 100)).map(lambda d: f"delay=0ms..{d[0]}ms/{d[1]}%"),
        st.just("cut"),
    )
    window = st.tuples(st.integers(0, 3000), st.integers(1, 2000)).map(lambda w: f"@{w[0]}ms+{w[1]}ms")
    item = st.tuples(link, st.just(":"), kind, window).map("".join)
    return st.lists(item, min_size=1, max_size=3)


def cases(policy: Policy, fault: str | None = None) -> Any:
    """A hypothesis strategy of :class:`Case`s for ``policy``; ``fault``: ``node`` (one of at least two
    nodes dies), ``central`` (the central scheduler dies and is restarted) or ``network`` (faults of the
    network, :func:`link_faults`)."""
    from hypothesis import strategies as st

    times = st.integers(0, 3000).map(lambda x: x / MS)
    durations = st.lists(st.integers(10, 2000).map(lambda x: x / MS), min_size=1, max_size=4)
    jobs = st.lists(st.tuples(times, durations).map(list), min_size=1, max_size=8)

    def shaped(nodes: int) -> Any:
        fail: Any = st.none()
        if fault == "node":
            fail = st.tuples(st.integers(0, nodes - 1).map(lambda i: f"node-{i}"), times).map(list)
        elif fault == "central":
            fail = st.tuples(st.just("central"), times).map(list)
        return st.builds(
            Case,
            nodes=st.just(nodes),
            slots=st.integers(1, 2),
            schedulers=st.integers(1, 2),
            seed=st.integers(0, 999),
            delay=st.sampled_from([0.0005, 0.002, 0.005]),
            jobs=jobs,
            fail=fail,
            links=link_faults(policy) if fault == "network" else st.just([]),
        )

    return st.integers(2 if fault == "node" else 1, 4).flatmap(shaped)


def searching(examples: int) -> Any:
    """hypothesis' settings for a search of the kit: ``examples`` cases, the same ones every run
    (derandomized, no database), quiet (the kit reports the shrunk case itself)."""
    from hypothesis import HealthCheck, Verbosity, settings

    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )


def search(prop: Property, strategy: Any, examples: int) -> tuple[Case | None, list[str]]:
    """Run ``prop`` over ``examples`` cases drawn from ``strategy`` (the same ones every time); the
    smallest failing case hypothesis shrinks to, and its problems, or ``(None, [])``."""
    from hypothesis import given

    failing: list[Any] = []

    @searching(examples)
    @given(strategy)
    def holds(case: Case) -> None:
        problems = prop(case)
        if problems:
            failing[:] = [case, problems]  # the last failing call is the shrunk case, replayed at the end
            raise AssertionError(problems[0])

    try:
        holds()
    except Exception:
        if failing:
            return failing[0], failing[1]
        raise
    return None, []
