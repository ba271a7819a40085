"""The simulations of :mod:`aviary.experiments.kairos_analysis`: the Table 4.1 workload and its variants
(load, arrivals, a map -> reduce barrier, task durations, Q, W, the guard), a frontend that submits a
job as stages, and the observer that counts the dispatch decisions with a real choice between tied
nodes."""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aviary.central.kairos import KairosCentralCore
from aviary.common.core import Core
from aviary.common.effects import Effect, Send, SetTimer
from aviary.common.messages import JobDone, PlaceTask, SubmitJob, TaskFinished
from aviary.common.results import percentile
from aviary.experiments.kairos_workload import CATEGORIES, GeneratedJob, job_stages, table41_jobs
from aviary.launch.drivers.sim import Simulator
from aviary.launch.policies.registry import build_core, policy_cluster
from aviary.worker.las import KairosNodeCore

NODES, SLOTS, Q, QUANTUM = 30, 4, 4, 50.0
POLICIES = ("fifo", "kairos", "kairos-random", "kairos-sum")
LABELS = {"fifo": "FIFO", "kairos": "Var", "kairos-random": "Random", "kairos-sum": "Sum"}
GUARD_COUNTERS = ("preemptions_arrival", "preemptions_quantum", "preemptions_starvation", "starvation_guards")
NO_GUARD = 10**9  # starvation_quanta that never fires
STAGES = 4  # job id = index * STAGES + stage
PCTS = {"p10": 0.10, "p30": 0.30, "p50": 0.50, "p90": 0.90, "p99": 0.99}


@dataclass(frozen=True, slots=True)
class SimJob:
    arrival: float
    category: int
    stages: list[list[float]]


def workload(
    seed: int,
    *,
    mean_gap: float = 60.0,
    arrivals: Literal["poisson", "uniform"] = "poisson",
    barrier: bool = False,
    spread: float = 0.0,
    overhead: float = 0.0,
) -> list[SimJob]:
    """100 Table 4.1 jobs (the same arrivals and categories as ``kairos_real.py`` for a seed);
    ``overhead``: each job's fixed cost taken out of its tasks (``kairos_workload.JOB_OVERHEAD``)."""
    rng = random.Random(10_000 + seed)  # task spreads only: the job draw stays that of the seed
    jobs = table41_jobs(100, seed=seed, mean_gap=mean_gap, arrivals=arrivals)
    return [
        SimJob(
            j.submit,
            j.category.number,
            job_stages(j, barrier=barrier, spread=spread, rng=rng, overhead=overhead),
        )
        for j in jobs
    ]


def published_jobs(path: Path | str, overhead: float = 0.0) -> tuple[list[SimJob], float]:
    """The job sequence of the thesis' published workload file (``extra-files/workloads/
    generated_workload_kairos`` in github.com/epfl-labos/kairos; not bundled): per line the sleep before
    the job (s), its reduces, queue, input path, output, extra flops of maps and reduces. The category
    comes from the input's name and the flops (``small`` without flops is category 1, with flops 2);
    tasks follow our model (:func:`job_stages`). Returns the jobs (first at 0) and the mean gap."""
    names = {"small": 1, "medium": 3, "mediumlong": 4, "long": 5}
    jobs: list[SimJob] = []
    t, gaps = 0.0, []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        f = line.split()
        if not f:
            continue
        try:
            gap, kind, flops = float(f[0]), f[3].rsplit("-", 1)[-1], int(f[5])
            number = names[kind] if kind != "small" else (1 if flops == 0 else 2)
        except (IndexError, KeyError, ValueError):
            raise ValueError(f"{path}:{n}: not a workload line: {line!r}") from None
        if jobs:
            t += gap
            gaps.append(gap)
        job = GeneratedJob(t, CATEGORIES[number - 1])
        jobs.append(SimJob(t, number, job_stages(job, overhead=overhead)))
    if not jobs:
        raise ValueError(f"{path}: no jobs")
    return jobs, statistics.fmean(gaps) if gaps else 60.0


def offered_load(jobs: Sequence[SimJob], mean_gap: float) -> float:
    work = math.fsum(math.fsum(ds) for j in jobs for ds in j.stages)
    return work / (NODES * SLOTS * len(jobs) * mean_gap)


class StagedFrontend(Core):
    """Submits job ``i``'s stage 0 at its arrival and stage ``k + 1`` when stage ``k`` is reported done."""

    role = "frontend"

    def __init__(self, jobs: Sequence[SimJob], central: str) -> None:
        super().__init__("frontend")
        self.jobs = list(jobs)
        self.central = central
        self.submitted: dict[int, float] = {}  # stage job id -> submission time
        self.finish: dict[int, float] = {}  # job index -> completion time

    @property
    def done(self) -> bool:
        return len(self.finish) == len(self.jobs)

    def start(self, now: float) -> list[Effect]:
        return [SetTimer(("arrive", i), j.arrival) for i, j in enumerate(self.jobs)]

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        return self._submit(now, key[1], 0)

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        if type(msg) is not JobDone:
            return self.unexpected(msg)
        i, k = divmod(msg.job_id, STAGES)
        if k + 1 < len(self.jobs[i].stages):
            return self._submit(now, i, k + 1)
        self.finish[i] = now
        return []

    def _submit(self, now: float, i: int, k: int) -> list[Effect]:
        ds = self.jobs[i].stages[k]
        self.submitted[i * STAGES + k] = now
        return [Send(self.central, SubmitJob(i * STAGES + k, ds, math.fsum(ds) / len(ds)))]


@dataclass
class Run:
    """One simulation: job completion times and per-task placement / finish times."""

    jobs: list[SimJob]
    jct: list[float]
    submitted: dict[int, float]
    placed: dict[tuple[int, int], float]
    finished: dict[tuple[int, int], float]
    ties: Counter[str] = field(default_factory=Counter)
    counters: Counter[str] = field(default_factory=Counter)  # summed over the cores
    backlog: float = 0.0  # time-average of the central queue length (tasks)
    busy_queue: float = 0.0  # share of the time the central queue is not empty


def node_state(core: KairosNodeCore, now: float) -> tuple[tuple[float, float], ...]:
    return tuple(sorted((round(t.duration, 6), round(t.live(now), 6)) for t in core.tasks.values()))


def count_ties(
    central: KairosCentralCore,
    nodes: dict[str, KairosNodeCore],
    ties: Counter[str],
    now: float,
    effects: list[Effect],
) -> None:
    """Count the placements of one input of the dispatcher where the tie-break had a real choice; called
    by the observer hook with the input's effects, after it.

    Within one dispatch round (Algorithm 3), the pick fills the lowest count level first, so when a level
    is first used, every node of the round at that level is already there. If the round puts ``k`` tasks
    on a level of ``m`` tied nodes, the tie-break chooses which nodes get them; the choice changes nothing
    when ``k = m`` and the ``k`` tasks are equal (each tied node gets one equal task), or when the tied
    nodes are in identical states (same tasks, same attained service). Otherwise those ``k`` placements
    are *consequential*. The round is replayed from its effects: a node's count when the round started is
    its count now less the tasks the round placed on it (nothing else changes a count within a round),
    and the node cores are untouched until the placements arrive, so their states are those of the pick."""
    placements = [(e.to, e.msg) for e in effects if type(e) is Send and type(e.msg) is PlaceTask]
    if not placements:
        return
    count = {n.name: n.count for n in central.nodes}
    for name, _ in placements:
        count[name] -= 1
    caps = {n.name: n.cap for n in central.nodes}
    levels: dict[int, tuple[int, list[float], bool]] = {}
    for name, msg in placements:
        level = count[name]
        if level not in levels:
            tied = [n for n, c in count.items() if c == level and c < caps[n]]
            distinct = len({node_state(nodes[n], now) for n in tied}) > 1
            levels[level] = (len(tied), [], distinct)
        levels[level][1].append(msg.duration)
        count[name] += 1
    for m, ds, distinct in levels.values():
        ties["placements"] += len(ds)
        if m > 1:
            ties["tied"] += len(ds)
        if m > 1 and distinct and (len(ds) < m or len(set(ds)) > 1):
            ties["consequential"] += len(ds)


def simulate(
    jobs: list[SimJob],
    policy: str,
    *,
    q: int = Q,
    quantum: float = QUANTUM,
    starvation_quanta: int = 3,
    slots: int = SLOTS,
    seed: int = 1,
    ties: bool = False,
    extra: dict[str, Any] | None = None,
) -> Run:
    """One simulated run of ``jobs`` under ``policy`` (``ties``: count tied placements, Kairos only;
    ``extra``: more of the policy's parameters, e.g. the testbed options of ``factors.py``)."""
    params: dict[str, Any] = (
        {"quantum": quantum, "kairos_q": q, "starvation_quanta": starvation_quanta}
        if policy.startswith("kairos")
        else {}
    )
    params.update(extra or {})
    cluster = policy_cluster(policy, nodes=NODES, slots=slots, bind_ports=False, seed=seed, params=params)
    cores = [build_core(p, cluster) for p in cluster.processes if p.role != "frontend"]
    central = next(c for c in cores if c.role == "central")
    frontend = StagedFrontend(jobs, central.name)
    placed: dict[tuple[int, int], float] = {}
    finished: dict[tuple[int, int], float] = {}
    run = Run(jobs, [], frontend.submitted, placed, finished)
    queue_area, queue_busy, last, backlog = [0.0], [0.0], [0.0], [0]
    tie_nodes = None
    if ties and isinstance(central, KairosCentralCore):
        tie_nodes = {c.name: c for c in cores if isinstance(c, KairosNodeCore)}

    def observe(now: float, core: Any, input: tuple[Any, ...], effects: list[Effect]) -> None:
        """The simulator's observer hook: the dispatcher's backlog over time, placements, finishes."""
        if core is not central:
            return
        if tie_nodes is not None:
            count_ties(central, tie_nodes, run.ties, now, effects)  # type: ignore[arg-type]
        if input[0] != "message":
            return
        queue_area[0] += backlog[0] * (now - last[0])  # the backlog since the last message
        queue_busy[0] += (now - last[0]) if backlog[0] else 0.0
        last[0] = now
        backlog[0] = len(central.queue)  # type: ignore[attr-defined]
        msg = input[2]
        if type(msg) is TaskFinished:
            finished[msg.job_id, msg.task_index] = now
        for e in effects:
            if type(e) is Send and type(e.msg) is PlaceTask:
                placed[e.msg.job_id, e.msg.task_index] = now

    sim = Simulator([*cores, frontend], observer=observe)
    sim.run(frontend=frontend)  # type: ignore[arg-type]
    if not frontend.done:
        raise RuntimeError(f"{policy}: {len(jobs) - len(frontend.finish)} jobs never finished")
    run.jct = [frontend.finish[i] - j.arrival for i, j in enumerate(jobs)]
    run.counters = sim.counters()
    run.backlog, run.busy_queue = queue_area[0] / last[0], queue_busy[0] / last[0]
    return run


def pcts(xs: Sequence[float]) -> dict[str, float]:
    s = sorted(xs)
    return {k: percentile(s, q) for k, q in PCTS.items()}


# the workload variants and parameters of section 3 (Fig. 4.7)
@dataclass(frozen=True)
class Variant:
    name: str
    make: Callable[[int], list[SimJob]]
    mean_gap: float = 60.0
    q: int = Q
    quantum: float = QUANTUM
    starvation_quanta: int = 3
    fifo_slots: int = SLOTS
    policies: tuple[str, ...] = POLICIES


BASE, BARRIER, SPREAD = (
    "base: Poisson gaps of 60 s, bags of equal tasks",
    "map -> reduce barrier",
    "task durations +-90 % within a job",
)
VARIANTS = (
    Variant(BASE, lambda s: workload(s)),
    Variant("lower load: gaps of 90 s", lambda s: workload(s, mean_gap=90.0), mean_gap=90.0),
    Variant("lower load: gaps of 120 s", lambda s: workload(s, mean_gap=120.0), mean_gap=120.0),
    Variant("lower load: gaps of 180 s", lambda s: workload(s, mean_gap=180.0), mean_gap=180.0),
    Variant(
        "uniform gaps 42-78 s (as the published workload file)", lambda s: workload(s, arrivals="uniform")
    ),
    Variant(BARRIER, lambda s: workload(s, barrier=True)),
    Variant(SPREAD, lambda s: workload(s, spread=0.9)),
    Variant(
        "barrier + durations +-90 % + gaps of 120 s",
        lambda s: workload(s, barrier=True, spread=0.9, mean_gap=120.0),
        mean_gap=120.0,
    ),
    Variant("Q = 2", lambda s: workload(s), q=2, policies=("fifo", "kairos")),
    Variant("Q = 8", lambda s: workload(s), q=8, policies=("fifo", "kairos")),
    Variant("Q = infinity (no central queue)", lambda s: workload(s), q=10_000, policies=("fifo", "kairos")),
    Variant("W = 10 s", lambda s: workload(s), quantum=10.0, policies=("fifo", "kairos")),
    Variant("W = 100 s", lambda s: workload(s), quantum=100.0, policies=("fifo", "kairos")),
    Variant(
        "no starvation guard", lambda s: workload(s), starvation_quanta=NO_GUARD, policies=("fifo", "kairos")
    ),
    Variant(
        "Q = 8, no starvation guard",
        lambda s: workload(s),
        q=8,
        starvation_quanta=NO_GUARD,
        policies=("fifo", "kairos"),
    ),
    Variant(
        "Q = infinity, no starvation guard (Alg. 2 alone)",
        lambda s: workload(s),
        q=10_000,
        starvation_quanta=NO_GUARD,
        policies=("fifo", "kairos"),
    ),
    Variant(
        "Q = infinity, no guard, gaps of 120 s",
        lambda s: workload(s, mean_gap=120.0),
        mean_gap=120.0,
        q=10_000,
        starvation_quanta=NO_GUARD,
        policies=("fifo", "kairos"),
    ),
    Variant(
        "FIFO on 30 x 3 slots (Kairos on 30 x 4)",
        lambda s: workload(s),
        fifo_slots=3,
        policies=("fifo", "kairos"),
    ),
)
