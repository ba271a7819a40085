"""DAG shape statistics and a TPC-DS-like DAG generator matching Carbyne §2.2 Tables 1 and 2.

Carbyne (Grandl et al., OSDI'16) §2.2 characterizes its TPC-DS queries by four structural statistics
(median / 95th percentile over the jobs): **stages** 8/23, **barriers** 1/4 (Table 1), **critical-path
length** 5/8 and **disjoint paths** 4/15 (Table 2), plus the **input work** 11%/88% (Table 1). No TPC-DS
stage DAGs with measured profiles are public (spec §6.3), so :func:`tpcds_like_jobs` draws DAGs whose
statistics match those percentiles (:data:`TPCDS_TABLE1`), with task counts and durations derived from
the TPC-H profiles measured on Spark (``experiments/traces/tpch_dags.json``).

Statistic definitions (:func:`dag_statistics`; [D] where the paper is vague):

- *stages*: the number of stages.
- *barriers*: "stages with multiple parents" (§2.2, verbatim): stages with at least two parents.
- *critical-path length*: the number of stages on the longest parent-to-child path ([D]: counted in
  stages, unweighted, as Table 2's small integers imply; a single stage has length 1).
- *disjoint paths*: "each sequence of stages that can run in parallel with other sequences of different
  stages" (§2.2). [D] The minimum number of vertex-disjoint paths (each stage on exactly one; a path
  follows parent-to-child edges) covering every stage: ``stages - maximum matching`` of the bipartite
  graph parent -> child. A chain has 1, an in-tree (scans joined into one result) its number of roots,
  an out-tree its number of leaves, a diamond 2.
- *input work* (:func:`input_work`; needs durations): [D] the share of the job's task-seconds spent in
  its input stages, the roots (stages without parents).

Generator ([D] throughout; the constants below hold the calibration): a *spine* chain of ``L`` stages
(the critical path) receives ``b`` barriers; every other path is a short chain of stages, either a
*branch* feeding a barrier (a scan joined in) or a *fork* leaving a spine stage to end in its own sink
(a reused intermediate result, a second output). ``L``, ``b`` and the number of paths ``P`` are drawn
from discretized log-normal / tabulated marginals coupled by one shared Gaussian "complexity" factor
(Carbyne gives no joint distribution; without the coupling the stage count's p95 falls short of
23 ≈ 8 + 15), so the stage count ``L + Σ chain lengths`` follows. Branch lengths never exceed the
position they join, so the spine stays a critical path. Stages are numbered roots first, then by depth.

Work and durations: a job reads ``GB`` log-uniform in [20, 500] ("inputs from GBs to hundreds of GBs",
Carbyne §5.1) and does :data:`WORK_PER_GB` task-seconds per GB (TPC-H 250 GB measured 95). Its input
work share is logit-normal with Table 1's TPC-DS median 11 % and p95 88 %; roots share that work, the
other stages the rest, by log-normal weights. (The Spark TPC-H profiles put a median 93 % of the work in
the roots where Carbyne's Table 1 reports 46 % for TPC-H, so their split is not used; input stages do
have the longer tasks per stage when the drawn share is high.) Every stage's mean task duration is
drawn around the TPC-H input stages' (:data:`TASK_MEDIAN`) and its task count is its work divided by
it. On :func:`tpcds_like_jobs`'s 2,000 jobs: 1,500-1,600 tasks and 10,000 task-seconds per job at the
median, 6,700 and 42,000 at p95; stage means p50 8 s, p95 41 s. 250 jobs on 100 default machines
(DRF, load 0.8, simulated) finish in p50 7 min, p90 31 min: Carbyne's "from few minutes to tens of
minutes".
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, fields

from .dag_jobs import DagTraceJob, DagTraceStage
from .trace import MAX_TASKS
from .workload import WorkloadError, check_counts

__all__ = [
    "INPUT_WORK_TABLE1",
    "TPCDS_TABLE1",
    "DagShape",
    "dag_statistics",
    "input_work",
    "percentile",
    "shape_percentiles",
    "tpcds_like_jobs",
]

TPCDS_TABLE1: dict[str, tuple[int, int]] = {
    "stages": (8, 23),
    "barriers": (1, 4),
    "critical_path": (5, 8),
    "disjoint_paths": (4, 15),
}
"""Carbyne §2.2 Tables 1 and 2, TPC-DS row: (median, 95th percentile) of each :class:`DagShape` field."""
INPUT_WORK_TABLE1 = (0.11, 0.88)
"""Carbyne §2.2 Table 1, TPC-DS row: input work, (median, 95th percentile)."""


@dataclass(frozen=True, slots=True)
class DagShape:
    """The structural statistics of one stage DAG (definitions in the module docstring)."""

    stages: int
    barriers: int
    critical_path: int
    disjoint_paths: int


def _check(parents: Sequence[Sequence[int]]) -> list[int]:
    """A topological order of ``parents`` (Kahn); ``ValueError`` on a bad index or a cycle."""
    n = len(parents)
    children: list[list[int]] = [[] for _ in range(n)]
    waiting = [0] * n
    for child, ps in enumerate(parents):
        for p in set(ps):
            if not (isinstance(p, int) and 0 <= p < n) or p == child:
                raise ValueError(f"stage {child}: parent {p!r} is not another stage of the DAG (0..{n - 1})")
            children[p].append(child)
            waiting[child] += 1
    order = [i for i in range(n) if waiting[i] == 0]
    for i in order:  # grows while iterated
        for c in children[i]:
            waiting[c] -= 1
            if waiting[c] == 0:
                order.append(c)
    if len(order) != n:
        raise ValueError(f"the DAG has a cycle through stage {min(set(range(n)) - set(order))}")
    return order


def dag_statistics(parents: Sequence[Sequence[int]]) -> DagShape:
    """Stages, barriers, critical-path length (stages) and disjoint paths of the DAG whose stage ``i``
    waits for the stages ``parents[i]`` (any order; duplicates ignored). Definitions: module docstring
    (Carbyne §2.2). Raises ``ValueError`` (one line) on a parent that is not a stage, or a cycle."""
    n = len(parents)
    order = _check(parents)
    sets = [sorted(set(ps)) for ps in parents]
    depth = [0] * n  # stages on the longest path ending at i
    for i in order:
        depth[i] = 1 + max((depth[p] for p in sets[i]), default=0)
    # Minimum vertex-disjoint path cover = n - maximum matching of edges parent -> child (each stage at
    # most once as a parent, once as a child), by augmenting paths (Kuhn; DAGs here have tens of stages).
    head_of: list[int | None] = [None] * n  # the child matched to each parent

    def augment(c: int, seen: set[int]) -> bool:
        for p in sets[c]:
            if p not in seen:
                seen.add(p)
                holder = head_of[p]
                if holder is None or augment(holder, seen):
                    head_of[p] = c
                    return True
        return False

    matched = sum(augment(c, set()) for c in range(n))
    return DagShape(
        stages=n,
        barriers=sum(len(ps) >= 2 for ps in sets),
        critical_path=max(depth, default=0),
        disjoint_paths=n - matched,
    )


def input_work(job: DagTraceJob) -> float:
    """The share of the job's task-seconds in its root stages (Carbyne §2.2 Table 1 "input work" [D])."""
    total = job.task_seconds
    return math.fsum(s.task_seconds for s in job.stages if not s.parents) / total if total > 0 else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-quantile (``0 < q <= 1``): the smallest value with at least ``q`` of
    ``values`` at or below it (the median of an even count is the lower middle value)."""
    if not values:
        raise ValueError("percentile of no values")
    xs = sorted(values)
    return xs[max(0, math.ceil(q * len(xs)) - 1)]


def shape_percentiles(shapes: Sequence[DagShape]) -> dict[str, tuple[float, float]]:
    """(median, 95th percentile) of every :class:`DagShape` field, keyed as :data:`TPCDS_TABLE1`."""
    out = {}
    for f in fields(DagShape):
        xs = [getattr(s, f.name) for s in shapes]
        out[f.name] = (percentile(xs, 0.5), percentile(xs, 0.95))
    return out


# --- the generator ------------------------------------------------------------------------------------

_RHO = 0.85
"""Correlation of the Gaussian factors behind L, b and P (a shared complexity factor) [D]."""
_CP_MEDIAN, _CP_SIGMA = 4.685, 0.319
"""Critical-path length L: a log-normal rounded, P(L <= 4) = 0.45, P(L <= 7) = 0.93 (Table 2: 5/8) [D]."""
_PATHS_MEDIAN, _PATHS_SIGMA = 4.0, math.log(16 / 4) / 1.645
"""Paths P drawn: a log-normal rounded, median 4, p95 16 (Table 2: 4/15; a fork next to a join merges
two drawn paths into one sequence, see ``test_a_fork_next_to_a_join_shares_a_path``) [D]."""
_BARRIERS_CDF = (0.27, 0.62, 0.79, 0.90, 0.965, 0.99, 1.0)
"""P(b <= k), k = 0..6 (median 1, p95 4 before the b <= L-1, b <= P-1 clamps) [D]."""
_FORK = 0.2
"""Chance that a path beyond the barriers' first branches is a fork rather than another branch [D]."""
_LONGER = 0.04
"""Chance that a branch or fork chain is one stage longer, repeatedly (room permitting) [D]."""

GB_MIN, GB_MAX = 20.0, 500.0
"""A job's input, GB, drawn log-uniform ("inputs from GBs to hundreds of GBs", Carbyne §5.1) [D]."""
WORK_PER_GB = 100.0
"""Task-seconds per GB of input: TPC-H at 250 GB on at most 100 cores measured a median 23,703
task-seconds per query (95 per GB) [D]."""
TASK_MEDIAN, TASK_SIGMA = 8.5, 1.0
"""Per-stage mean task duration (s), log-normal: median the TPC-H 250 GB input stages' 8.47 s, sigma
from the TPC-H 100 GB input stages' p90/median (15.6 s / 4.3 s, i.e. 1.0); used for every stage [D]."""
TASK_MIN, TASK_MAX = 0.1, 600.0
"""Clamp of the drawn per-stage mean task duration (s)."""
MAX_STAGE_TASKS = 3000
"""At most this many tasks per stage (TPC-H 500 GB: 3,013 tasks in its largest input stage)."""
_INPUT_MU = math.log(0.11 / 0.89)
_INPUT_SIGMA = (math.log(0.88 / 0.12) - _INPUT_MU) / 1.645
"""Input work share: logit-normal with median 11 %, p95 88 % (Carbyne Table 1, TPC-DS) [D]."""


def _lognormal_count(z: float, median: float, sigma: float) -> int:
    return max(1, round(math.exp(math.log(median) + sigma * z)))


def _phi(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _shape(rng: random.Random) -> list[list[int]]:
    """One DAG shape: parents per stage; the roots first, then the other stages by depth (a parent is
    always shallower than its child, so parents come earlier)."""
    common = rng.gauss(0.0, 1.0)
    z = [_RHO * common + math.sqrt(1 - _RHO**2) * rng.gauss(0.0, 1.0) for _ in range(3)]
    length = _lognormal_count(z[0], _CP_MEDIAN, _CP_SIGMA)
    paths = _lognormal_count(z[1], _PATHS_MEDIAN, _PATHS_SIGMA) if length > 1 else 1
    u = _phi(z[2])
    barriers = next(k for k, c in enumerate(_BARRIERS_CDF) if u <= c or k == len(_BARRIERS_CDF) - 1)
    barriers = min(barriers, length - 1, paths - 1)

    parents: list[list[int]] = [[i - 1] if i else [] for i in range(length)]  # the spine
    depth = list(range(length))

    def chain(room: int) -> int:
        k = 1
        while k < room and rng.random() < _LONGER:
            k += 1
        return k

    def add_chain(k: int, first_parent: int | None, first_depth: int) -> int:
        """``k >= 1`` new stages in a chain after ``first_parent`` (``None``: a root); the last one."""
        last = first_parent
        for d in range(k):
            parents.append([] if last is None else [last])
            depth.append(first_depth + d)
            last = len(parents) - 1
        return len(parents) - 1

    joins = sorted(rng.sample(range(1, length), barriers))
    fan_in = dict.fromkeys(joins, 1)
    for _ in range(paths - 1 - barriers):
        if joins and rng.random() >= _FORK:
            fan_in[rng.choice(joins)] += 1
        else:
            at = rng.randrange(length - 1)  # a fork leaves spine stage `at`
            add_chain(chain(length - 1 - at), at, at + 1)
    for j in joins:
        for _ in range(fan_in[j]):
            k = chain(j)
            last = add_chain(k, None, j - k)
            parents[j].append(last)
    order = sorted(range(len(parents)), key=lambda i: (bool(parents[i]), depth[i], i))  # roots first
    position = {old: new for new, old in enumerate(order)}
    return [sorted(position[p] for p in parents[old]) for old in order]


def _stages(rng: random.Random, parents: list[list[int]]) -> tuple[DagTraceStage, ...]:
    """Task counts and mean durations: job work from its input size, split into input (root) and other
    work by a drawn input-work share, then across stages by log-normal weights; per stage a mean task
    duration is drawn and the task count is ``work / duration`` (at least 1, at most
    :data:`MAX_STAGE_TASKS`), the mean then adjusted so the stage keeps its work exactly."""
    gb = math.exp(rng.uniform(math.log(GB_MIN), math.log(GB_MAX)))
    work = WORK_PER_GB * gb
    share = 1.0 / (1.0 + math.exp(-rng.gauss(_INPUT_MU, _INPUT_SIGMA)))
    share = min(0.99, max(0.01, share))
    roots = [i for i, ps in enumerate(parents) if not ps]
    weights = [rng.lognormvariate(0.0, 1.0) for _ in parents]
    if len(roots) == len(parents):  # a one-stage job: all of it is input work
        share = 1.0
    group_weight = [0.0, 0.0]  # others, roots
    for i, w in enumerate(weights):
        group_weight[not parents[i]] += w
    out = []
    for i, ps in enumerate(parents):
        is_root = not ps
        part = share if is_root else 1.0 - share
        stage_work = work * part * weights[i] / group_weight[is_root]
        mean = min(TASK_MAX, max(TASK_MIN, rng.lognormvariate(math.log(TASK_MEDIAN), TASK_SIGMA)))
        tasks = min(MAX_STAGE_TASKS, max(1, round(stage_work / mean)))
        out.append(DagTraceStage(tasks, stage_work / tasks, tuple(ps), name=str(i)))
    return tuple(out)


def tpcds_like_jobs(rng: random.Random, count: int) -> list[DagTraceJob]:
    """``count`` TPC-DS-like DAG jobs (stages in topological order, roots first), drawn from ``rng``:
    the same generator state gives the same jobs. Their :func:`dag_statistics` over many jobs match
    Carbyne §2.2 Tables 1/2's TPC-DS row (:data:`TPCDS_TABLE1`) within the stated tolerance over 2,000
    jobs: every median exact, every 95th percentile within ±10 % of the table's, at least ±1 (stages and
    disjoint paths ±2, barriers and critical path ±1; ``tests/test_dag_shapes.py``), and their
    :func:`input_work` its 11 % / 88 % within ±0.03 / ±0.05. Jobs are named ``tpcds-K`` with
    ``line`` = K (1-based); ``submit`` is ``None``. Raises
    :class:`~aviary.common.workload.WorkloadError` unless ``count >= 0``, or once the jobs drawn pass
    a limit of :func:`~aviary.common.workload.check_counts` (before drawing more).
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise WorkloadError(f"count must be an integer >= 0, got {count!r}")
    check_counts(count, 0)
    jobs = []
    tasks = 0
    for k in range(1, count + 1):
        shape = _shape(rng)
        jobs.append(DagTraceJob(name=f"tpcds-{k}", stages=_stages(rng, shape), line=k))
        tasks += jobs[-1].tasks
        if tasks > MAX_TASKS:  # stop drawing at once: the whole count would be larger still
            check_counts(count, tasks, at_least=True)
    return jobs
