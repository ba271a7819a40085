"""DAG workloads with multi-resource demands (DESIGN §4, §9; spec §4.3, §6).

Four sources, each turned into a scaled replay of :class:`~aviary.common.model.JobSpec` DAGs by
:func:`build_dag_workload`:

- ``"alibaba"``: 6,535 real DAG jobs of the Alibaba v2018 trace, one CSV row per stage
  (``experiments/traces/alibaba_dags.csv``, :func:`read_alibaba`);
- ``"tpch"``: the 22 TPC-H queries as Spark stage DAGs with measured per-stage task counts and mean task
  runtimes (``experiments/traces/tpch_dags.json``, :func:`read_tpch`); every job is a seeded uniformly
  random query at an input size drawn from a declared mix of the file's profiles (below);
- ``"tpcds"``: TPC-DS-like DAGs drawn by :func:`aviary.common.dag_shapes.tpcds_like_jobs` to match the
  structure Carbyne §2.2 Tables 1/2 report for TPC-DS (spec §6.3: no TPC-DS profiles are public); every
  job is a seeded draw;
- ``"google"``: the flat jobs of the Google sample (:func:`~aviary.common.trace.read_trace`), one stage
  each, keeping their per-task durations.

Readers return trace-level jobs (:class:`DagTraceJob`: trace seconds, nothing scaled) whose stages are
renumbered in a stable topological order (Kahn's algorithm, the earliest stage in file order first), so
parents always come before their children, as :class:`~aviary.common.model.Stage` requires.

:func:`build_dag_workload` follows :func:`aviary.common.workload.build_workload` step by step:

1. **Sample** K jobs (``"consecutive"`` or ``"random"``, as in ``workload.py``); for TPC-H, K seeded
   uniform draws from the 22 queries, each at a profile drawn from the mix; for TPC-DS, K seeded draws
   from the generator.
2. **Classify** by the job's trace mean task duration (trace seconds, before scaling) against ``cutoff``.
3. **Merge tasks** per stage: a stage of ``n`` tasks keeps ``m = task_count(n, task_scale)``. A stage with
   per-task durations (Google) merges them with :func:`~aviary.common.workload.merge_tasks`; a stage with
   only a mean (Alibaba, TPC-H) runs ``m`` tasks of ``n/m`` times the mean. Stage task-seconds are kept.
4. **Time scale**: durations divided by ``time_scale``. Each stage's estimate is its mean task duration
   after scaling; the job's estimate is the mean over all its tasks.
5. **Demands** (:func:`synthesize_demands`): one vector per stage, shared by its tasks.
6. **Arrivals**: the trace's own submit times (shifted to 0, divided by ``time_scale``), or Poisson at an
   offered load defined by the **dominant resource**: with arrival rate λ,
   ``load_r = λ · E[Σ_tasks duration · demand_r] / capacity_total_r`` and ``load = max_r load_r``, so the
   mean gap is ``max_r (mean per-job resource-seconds_r / capacity_total_r) / load``
   (:func:`poisson_mean_gap`; :func:`offered_load` measures it on a built workload).

Randomness comes from ``random.Random(seed)`` split into independent streams for sampling, arrivals,
demands and TPC-H profiles (a fourth stream, drawn after the other three, so adding it changed none of
them), so changing the load changes neither the jobs nor their demands, and changing the TPC-H mix
changes neither the queries drawn nor their demands (every profile of a query has the same stages), only
their task counts and durations. The jobs are the same for every policy given the seed.

TPC-H input sizes (issue 24). What the papers say: Carbyne §5.1 "Workloads" (``carbyne.txt`` line 306)
[P]: "the jobs are randomly chosen from one of the corresponding benchmark [...] Each job lasts from few
minutes to tens of minutes, and we generate corresponding input sizes from GBs to hundreds of GBs";
Graphene's evaluation setup (``graphene.txt`` lines 366-367, ligatures lost in the text) [P]: "Each job
is picked at random from the corresponding benchmark. We built representative inputs and varied input
size from GBs to tens of TBs such that the average query completes in a few minutes and the longest
query finishes in under ten minutes on the idle cluster"; the spec's small-scale reproductions (§2, §3,
themselves [D]) ask for TPC-H shapes with synthesized demands, and §6 ships the erdos CloudLab profiles
``{50,100,250,500}g_maxCores_{50,75,100,200}`` [P]. Neither paper gives the distribution of sizes.
Our choices [D]:

- The default mix :data:`TPCH_MIX` ``"sizes"`` draws each job's profile uniformly from the four data
  sizes 50, 100, 250 and 500 GB, all at ``maxCores_50``. The sizes are nearly log-spaced (x2, x2.5, x2),
  so a uniform draw over them is close to log-uniform over 50-500 GB, the "tens to hundreds of GBs" part
  of the papers' range; the file has no smaller (GB-scale) size, and Decima's 2-20 GB profiles carry no
  licence (spec §6). ``maxCores`` is the core cap of the Spark run that measured a profile, not an input
  size: more cores on the same data measured more, longer tasks (500 GB: 6.2 s mean task at 50 cores,
  27.1 s at 200), i.e. the measuring cluster's own contention, which Aviary's nodes model themselves;
  the least contended measurement, 50 cores, is also the profile of every replay before the mixes.
- Measured per job (task-seconds, mean over the 22 queries): 1,772 (50 GB), 3,566 (100 GB), 9,328
  (250 GB), 23,489 (500 GB); tasks 521, 882, 1,979, 3,778. So under ``"sizes"`` the mean job does 5.4x
  the work of a 50 GB one, 500 GB jobs do 62 % of it, and a job has 1,790 tasks on average.
- ``"50g"`` (:data:`TPCH_MIXES`) is the single profile ``50g_maxCores_50`` of earlier replays: with it
  a seed gives exactly the jobs it gave before the mixes. A mix may also be written
  ``PROFILE[:WEIGHT],...`` over any of the file's 16 profiles (:func:`tpch_mix`).
- Where the draw is recorded: :class:`~aviary.common.model.JobSpec` has no name, so a TPC-H job's
  ``line`` is ``query position + 100 * profile index`` in :func:`tpch_profiles`' order
  (:data:`TPCH_LINE_STRIDE`; 50 GB at 50 cores is index 0, so the old lines are unchanged;
  ``tpch_label(805)`` is ``"Q5@250g_maxCores_50"``); ``summary.json``'s workload record lists the lines,
  and its digests tell two mixes apart. The trace-level job is named ``Q5@250g_maxCores_50``.
- The offered load follows the drawn sizes: :func:`poisson_mean_gap` takes the mean resource-seconds of
  the jobs actually built, so ``--load`` stays the dominant resource's offered load and the mean gap
  between arrivals grows with the mean job (by about 5.4x from ``"50g"`` to ``"sizes"``).

Decisions the spec leaves open:

- Alibaba ``plan_mem`` is on the trace's [0, 100] scale (Alibaba ``schema.md``: "normalized memory size,
  [0, 100]", as is a machine's ``mem_size``), i.e. percent of the largest machine's memory; its values
  step by 100/1024 (0.2, 0.29, 0.39, 0.49, 0.59: 2-6 units of 1/1024). :attr:`DagTraceStage.mem_share`
  is ``plan_mem / 100`` and ``"alibaba-plan"`` asks ``mem_share * machine memory`` (0.19 GB for the
  median 0.3 on a 64 GB machine). Reading it as a whole-machine fraction would give a 19 GB median and
  put the 4 stages with ``plan_mem > 1`` (up to 2.35) above any machine.
- A zero mean task duration (Alibaba, TPC-H) is read as :data:`MIN_TASK_SECONDS` (1 ms) so that every
  task takes time; no shipped row has one (the smallest Alibaba stage mean is 0.0037 s, TPC-H 53 ms).
- The 11 Alibaba stages whose label is not a number (``M1_Stg8``, a truncated ``J30_4_5_…``) are roots,
  as the file's ``parents`` column says; their names are kept in :attr:`DagTraceStage.name`.
- TPC-H jobs: :attr:`DagTraceJob.line` is the query's position in the JSON (Q1 → 1 … Q22 → 22); the
  JSON's own stage numbering is already topological (every edge goes from a lower to a higher number),
  so the renumbering is the identity on the shipped file. Demands are drawn per job, not per query.
- Google jobs keep their per-task durations unfloored (the bundled sample has no zero duration), so
  ``kind="google"`` reproduces ``build_workload``'s durations and classes and only adds a demand.
"""

from __future__ import annotations

import csv
import heapq
import json
import math
import os
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

from .dag_jobs import DagTraceJob, DagTraceStage
from .dag_shapes import tpcds_like_jobs
from .model import GOOGLE_CUTOFF, JobSpec, Stage, stage_offsets
from .resources import DEFAULT_MACHINE, RESOURCES, ZERO, Resources, vector_sum
from .trace import MAX_DURATION, MAX_JOB_TASKS, MAX_JOBS, MAX_TIME, TraceJob, read_trace
from .workload import WorkloadError, _sample, check_counts, check_scaled, merge_tasks, task_count

__all__ = [
    "ALIBABA_CSV",
    "DEFAULT_MACHINE",
    "DEMAND_MAX",
    "DEMAND_MIN",
    "GOOGLE_TRACE",
    "MIN_TASK_SECONDS",
    "TPCH_JSON",
    "TPCH_LINE_STRIDE",
    "TPCH_MIX",
    "TPCH_MIXES",
    "TPCH_PROFILE",
    "DagKind",
    "DagTraceError",
    "DagTraceJob",
    "DagTraceStage",
    "DemandMode",
    "build_dag_workload",
    "check_dag_workload",
    "google_dag_jobs",
    "log_uniform",
    "offered_load",
    "poisson_mean_gap",
    "read_alibaba",
    "read_tpch",
    "resource_seconds",
    "synthesize_demands",
    "tpch_label",
    "tpch_mix",
    "tpch_profiles",
]

TRACES = Path(__file__).resolve().parent.parent / "experiments" / "traces"
ALIBABA_CSV = TRACES / "alibaba_dags.csv"
TPCH_JSON = TRACES / "tpch_dags.json"
GOOGLE_TRACE = TRACES / "google_10k.tr"
TPCH_PROFILE = "50g_maxCores_50"
"""The profile :func:`read_tpch` reads by default: 50 GB of data, at most 50 cores (before the mixes, every
TPC-H job of a replay ran at it; :data:`TPCH_MIXES` ``"50g"`` still does)."""
TPCH_MIXES: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "sizes": MappingProxyType({f"{gb}g_maxCores_50": 1.0 for gb in (50, 100, 250, 500)}),
        "50g": MappingProxyType({TPCH_PROFILE: 1.0}),
    }
)
"""Named TPC-H profile mixes, profile -> weight (module docstring, "TPC-H input sizes"): ``"sizes"``, each
of the four data sizes equally likely at 50 cores; ``"50g"``, the single profile of replays before the
mixes."""
TPCH_MIX = "sizes"
"""The mix of a TPC-H workload unless told otherwise."""
TPCH_LINE_STRIDE = 100
"""A mixed TPC-H job's :attr:`~aviary.common.model.JobSpec.line` is ``query position + TPCH_LINE_STRIDE *
the profile's index in`` :func:`tpch_profiles` (``50g_maxCores_50``, the first, keeps the bare position);
:func:`tpch_label` reads it back."""

DEMAND_MIN = Resources(cores=0.02, mem=0.1, disk=0.01, net=0.01)
DEMAND_MAX = Resources(cores=6.0, mem=17.0, disk=1.0, net=1.0)
"""Spec §6.2 (the Tetris poster's ranges): per-task demands are drawn log-uniform in [min, max]."""
MIN_TASK_SECONDS = 1e-3
"""A zero mean task duration in a DAG trace is read as this (trace seconds)."""
PLAN_LIMIT = 1e6
"""Largest Alibaba ``plan_cpu`` / ``plan_mem`` read (the file's largest: 500 and 2.35): 10,000 cores."""

DagKind = Literal["alibaba", "tpch", "tpcds", "google"]
DemandMode = Literal["synth", "alibaba-plan", "trace"]
_KINDS = ("alibaba", "tpch", "tpcds", "google")
_DEMAND_MODES = ("synth", "alibaba-plan", "trace")

MIN_SHARE = 1e-3
"""``demands="trace"``: a request of 0 (Google has some) asks this share of the machine, so that no task
demands nothing."""


class DagTraceError(ValueError):
    """A DAG trace that cannot be read. One line: ``path:LINE: field 'NAME': what`` for the CSV,
    ``path: QUERY stage S: field 'NAME': what`` for the JSON."""


# --- reading ------------------------------------------------------------------------------------------


def _number(
    where: str,
    field: str,
    token: Any,
    *,
    minimum: float | None = 0.0,
    limit: float = MAX_DURATION,
    unit: str = "s",
) -> float:
    if isinstance(token, bool):
        raise DagTraceError(f"{where}: field '{field}': not a number: {token!r}")
    try:
        value = float(token)
    except (TypeError, ValueError):
        raise DagTraceError(f"{where}: field '{field}': not a number: {token!r}") from None
    if not math.isfinite(value):
        raise DagTraceError(f"{where}: field '{field}': not a finite number: {token!r}")
    if minimum is not None and value < minimum:
        raise DagTraceError(f"{where}: field '{field}': must be at least {minimum:g}, got {token}")
    if abs(value) > limit:
        raise DagTraceError(f"{where}: field '{field}': {token} is above the limit of {limit:g} {unit}")
    return value


def _count(where: str, field: str, token: Any) -> int:
    value = _number(where, field, token, limit=math.inf)
    if not value.is_integer():
        raise DagTraceError(f"{where}: field '{field}': not an integer: {token!r}")
    if value < 1:
        raise DagTraceError(f"{where}: field '{field}': must be at least 1, got {token}")
    if value > MAX_JOB_TASKS:
        raise DagTraceError(
            f"{where}: field '{field}': {token} is above the limit of {MAX_JOB_TASKS:,} tasks a job"
        )
    return int(value)


def _job_tasks(where: str, field: str, stages: Sequence[DagTraceStage]) -> None:
    """Raise :class:`DagTraceError` if the stages of one job have more tasks than the limit in all."""
    tasks = sum(s.tasks for s in stages)
    if tasks > MAX_JOB_TASKS:
        raise DagTraceError(
            f"{where}: field '{field}': the job has {tasks:,} tasks, above the limit of {MAX_JOB_TASKS:,}"
        )


def _topological(parents: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """A stable topological order of stages given their parents (Kahn's algorithm, the smallest ready
    index first: an already ordered DAG keeps its order). Returns ``(order, [])``, or ``(partial,
    cycle)`` with ``cycle`` a list of stages each waiting for the next (and the last for the first)."""
    n = len(parents)
    children: list[list[int]] = [[] for _ in range(n)]
    waiting = [0] * n
    for child, ps in enumerate(parents):
        for p in set(ps):
            children[p].append(child)
            waiting[child] += 1
    ready = [i for i in range(n) if waiting[i] == 0]  # sorted, hence a heap
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for c in children[i]:
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, c)
    if len(order) == n:
        return order, []
    # Every stage left waits for a parent that is also left: walking up parents must close a cycle.
    left = set(range(n)) - set(order)
    seen: dict[int, int] = {}
    path: list[int] = []
    i = min(left)
    while i not in seen:
        seen[i] = len(path)
        path.append(i)
        i = next(p for p in parents[i] if p in left)
    return order, path[seen[i] :]


def _renumbered(
    stages: Sequence[DagTraceStage], parents: Sequence[Sequence[int]], order: list[int]
) -> tuple[DagTraceStage, ...]:
    position = {old: new for new, old in enumerate(order)}
    out: list[DagTraceStage] = []
    for old in order:
        s = stages[old]
        ps = tuple(sorted({position[p] for p in parents[old]}))
        out.append(DagTraceStage(s.tasks, s.mean, ps, s.cores, s.mem_share, s.name, s.durations, s.cpu_share))
    return tuple(out)


_ALIBABA_COLUMNS = ("job", "stage", "parents", "instances", "start_s", "duration_s", "plan_cpu", "plan_mem")


@dataclass(slots=True)
class _Row:
    line: int
    label: str
    parents: list[str]
    stage: DagTraceStage
    start: float


def read_alibaba(path: str | os.PathLike[str] = ALIBABA_CSV) -> list[DagTraceJob]:
    """Read the Alibaba DAG CSV (one row per stage, columns in ``experiments/traces/DAGS.md``): jobs in
    order of their first ``start_s`` (stable), stages renumbered topologically (ties: file order).

    Raises :class:`DagTraceError` (one line naming file, line and field) on a missing column, a bad
    number, a duplicate stage, a parent that is not a stage of the job, or a cycle.
    """
    name = os.fspath(path)
    jobs: dict[str, list[_Row]] = {}
    try:
        with open(name, encoding="utf-8", errors="replace", newline="") as f:
            reader = csv.reader(f)
            try:
                header = next(reader, None)
                if header is None:
                    raise DagTraceError(f"{name}:1: field 'job': missing header")
                columns = {c.strip(): i for i, c in enumerate(header)}
                for c in _ALIBABA_COLUMNS:
                    if c not in columns:
                        raise DagTraceError(f"{name}:1: field '{c}': missing column")
                at = [columns[c] for c in _ALIBABA_COLUMNS]
                for fields in reader:
                    if not any(x.strip() for x in fields):
                        continue
                    jobs_row = _alibaba_row(name, reader.line_num, fields, at)
                    if jobs_row[0] not in jobs and len(jobs) == MAX_JOBS:
                        raise DagTraceError(
                            f"{name}:{reader.line_num}: field 'job': more than the limit of {MAX_JOBS:,} jobs"
                        )
                    jobs.setdefault(jobs_row[0], []).append(jobs_row[1])
            except csv.Error as exc:
                raise DagTraceError(f"{name}:{reader.line_num}: field 'job': bad CSV: {exc}") from None
    except OSError as exc:
        raise DagTraceError(f"{name}: cannot read trace: {exc.strerror or exc}") from None
    out = [_alibaba_job(name, job, rows) for job, rows in jobs.items()]
    out.sort(key=lambda j: j.submit or 0.0)  # every Alibaba job has a submit; stable
    return out


def _alibaba_row(name: str, line: int, fields: list[str], at: list[int]) -> tuple[str, _Row]:
    where = f"{name}:{line}"
    if len(fields) <= max(at):
        missing = next(c for c, i in zip(_ALIBABA_COLUMNS, at, strict=True) if i >= len(fields))
        raise DagTraceError(f"{where}: field '{missing}': missing")
    job, label, parents, instances, start, duration, cpu, mem = (fields[i].strip() for i in at)
    if not job:
        raise DagTraceError(f"{where}: field 'job': empty")
    if not label:
        raise DagTraceError(f"{where}: field 'stage': empty")
    stage = DagTraceStage(
        tasks=_count(where, "instances", instances),
        mean=max(_number(where, "duration_s", duration), MIN_TASK_SECONDS),
        cores=_number(where, "plan_cpu", cpu, limit=PLAN_LIMIT, unit="") / 100.0,
        mem_share=_number(where, "plan_mem", mem, limit=PLAN_LIMIT, unit="") / 100.0,
        name=label,
    )
    return job, _Row(
        line, label, parents.split(), stage, _number(where, "start_s", start, minimum=None, limit=MAX_TIME)
    )


def _alibaba_job(name: str, job: str, rows: list[_Row]) -> DagTraceJob:
    index: dict[str, int] = {}
    for k, row in enumerate(rows):
        if row.label in index:
            raise DagTraceError(
                f"{name}:{row.line}: field 'stage': duplicate stage {row.label!r} of job {job!r} "
                f"(first on line {rows[index[row.label]].line})"
            )
        index[row.label] = k
    parents: list[list[int]] = []
    for row in rows:
        for p in row.parents:
            if p not in index:
                raise DagTraceError(
                    f"{name}:{row.line}: field 'parents': parent {p!r} is not a stage of job {job!r}"
                )
        parents.append([index[p] for p in row.parents])
    _job_tasks(f"{name}:{rows[0].line}", "instances", [r.stage for r in rows])
    order, cycle = _topological(parents)
    if cycle:
        labels = " -> ".join(repr(rows[i].label) for i in [*cycle, cycle[0]])
        raise DagTraceError(
            f"{name}:{rows[cycle[0]].line}: field 'parents': job {job!r} has a cycle "
            f"(stage -> parent): {labels}"
        )
    return DagTraceJob(
        name=job,
        stages=_renumbered([r.stage for r in rows], parents, order),
        submit=min(r.start for r in rows),
        line=rows[0].line,
    )


def _load_json(name: str, lines: dict[str, int] | None = None) -> dict[str, Any]:
    """The JSON object of the file ``name``; ``lines``, when given, gets the line of each of its keys."""
    try:
        with open(name, encoding="utf-8") as f:
            text = f.read()
        data = json.loads(text)
    except OSError as exc:
        raise DagTraceError(f"{name}: cannot read trace: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DagTraceError(f"{name}: field 'queries': not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise DagTraceError(
            f"{name}: field 'queries': expected an object of queries, got {type(data).__name__}"
        )
    if lines is not None:
        lines.update(_key_lines(text))
    return data


def _key_lines(text: str) -> dict[str, int]:
    """The line (from 1) of each key of the JSON object ``text`` (valid JSON, already parsed)."""
    decoder = json.JSONDecoder()
    out: dict[str, int] = {}
    blank = re.compile(r"[ \t\n\r]*")

    def skip(i: int) -> int:
        match = blank.match(text, i)
        return match.end() if match else i

    i, line, counted = skip(0) + 1, 1, 0  # past the "{"
    while True:
        i = skip(i)
        if i >= len(text) or text[i] != '"':
            return out
        line += text.count("\n", counted, i)
        counted = i
        key, i = decoder.raw_decode(text, i)
        out.setdefault(key, line)
        i = skip(skip(i) + 1)  # past the ":"
        _, i = decoder.raw_decode(text, i)
        i = skip(i) + 1  # past the "," (or the closing "}")


def _query_part(where: str, query: Any, key: str, kind: type) -> Any:
    value = query.get(key) if isinstance(query, dict) else None
    if not isinstance(value, kind):
        raise DagTraceError(
            f"{where}: field '{key}': missing or not a{'n object' if kind is dict else ' list'}"
        )
    return value


def tpch_profiles(path: str | os.PathLike[str] = TPCH_JSON) -> list[str]:
    """The profiles every query of the TPC-H JSON has, in the first query's order."""
    name = os.fspath(path)
    data = _load_json(name)
    common: list[str] | None = None
    for key, query in data.items():
        names = list(_query_part(f"{name}: {key}", query, "profiles", dict))
        common = names if common is None else [p for p in common if p in names]
    return common or []


def read_tpch(
    path: str | os.PathLike[str] = TPCH_JSON, profile: str = TPCH_PROFILE
) -> dict[str, DagTraceJob]:
    """Read the TPC-H JSON at one ``profile`` (see :func:`tpch_profiles`): query name -> job, in file
    order. Mean task runtimes are converted from ms to seconds; stages are renumbered topologically.

    Raises :class:`DagTraceError` (one line naming file, query, stage and field) on an unknown profile,
    a bad number, a stage without exactly one profile row, an edge to a missing stage, or a cycle.
    """
    name = os.fspath(path)
    out: dict[str, DagTraceJob] = {}
    lines: dict[str, int] = {}
    for position, (key, query) in enumerate(_load_json(name, lines).items(), 1):
        try:
            out[key] = _tpch_query(f"{name}: {key}", key, query, profile, position)
        except DagTraceError as exc:  # the query's line, before the field: "path: Q7 stage 0 (line 9): ..."
            head, sep, tail = str(exc).partition(": field '")
            raise DagTraceError(f"{head} (line {lines.get(key, 1)}){sep}{tail}") from None
    return out


def _tpch_query(where: str, key: str, query: Any, profile: str, position: int) -> DagTraceJob:
    """One query of the TPC-H JSON at ``profile`` (:func:`read_tpch`)."""
    ids = _query_part(where, query, "stages", list)
    edges = _query_part(where, query, "edges", list)
    profiles = _query_part(where, query, "profiles", dict)
    if not ids:
        raise DagTraceError(f"{where}: field 'stages': empty (a query needs at least one stage)")
    index: dict[int, int] = {}
    for k, s in enumerate(ids):
        sid = _stage_id(f"{where} stage #{k}", "stages", s)
        if sid in index:
            raise DagTraceError(f"{where} stage {sid}: field 'stages': listed twice")
        index[sid] = k
    if profile not in profiles:
        known = ", ".join(profiles) or "none"
        raise DagTraceError(f"{where}: field 'profiles': unknown profile {profile!r} (known: {known})")
    rows = profiles[profile]
    if not isinstance(rows, list):
        raise DagTraceError(f"{where}: field 'profiles.{profile}': not a list")
    found: dict[int, DagTraceStage] = {}
    for k, row in enumerate(rows):
        if not (isinstance(row, list) and len(row) == 3):
            raise DagTraceError(
                f"{where} row #{k}: field 'profiles.{profile}': expected [stage, tasks, mean_ms], got {row!r}"
            )
        sid = _stage_id(f"{where} row #{k}", f"profiles.{profile}", row[0])
        at = f"{where} stage {sid}"
        if sid not in index:
            raise DagTraceError(f"{at}: field 'profiles.{profile}': not a stage of the query")
        if sid in found:
            raise DagTraceError(f"{at}: field 'profiles.{profile}': profiled twice")
        mean_ms = _number(
            at, f"profiles.{profile}.mean_task_runtime_ms", row[2], limit=MAX_DURATION * 1000.0, unit="ms"
        )
        found[sid] = DagTraceStage(
            tasks=_count(at, f"profiles.{profile}.tasks", row[1]),
            mean=max(mean_ms / 1000.0, MIN_TASK_SECONDS),
            name=str(sid),
        )
    for sid in index:
        if sid not in found:
            raise DagTraceError(f"{where} stage {sid}: field 'profiles.{profile}': no profile row")
    _job_tasks(where, f"profiles.{profile}", list(found.values()))
    parents: list[list[int]] = [[] for _ in ids]
    for edge in edges:
        if not (isinstance(edge, list) and len(edge) == 2):
            raise DagTraceError(f"{where}: field 'edges': expected [parent, child], got {edge!r}")
        p, c = (_stage_id(f"{where}", "edges", x) for x in edge)
        if c not in index:
            raise DagTraceError(f"{where}: field 'edges': edge {edge}: child {c} is not a stage")
        if p not in index:
            raise DagTraceError(f"{where} stage {c}: field 'edges': parent {p} does not exist")
        parents[index[c]].append(index[p])
    order, cycle = _topological(parents)
    if cycle:
        labels = " -> ".join(str(ids[i]) for i in [*cycle, cycle[0]])
        raise DagTraceError(
            f"{where} stage {ids[cycle[0]]}: field 'edges': a cycle (stage -> parent): {labels}"
        )
    stages = [found[sid] for sid in index]  # in the order of "stages"
    return DagTraceJob(name=key, stages=_renumbered(stages, parents, order), line=position)


def tpch_mix(mix: str | Mapping[str, float], profiles: Sequence[str]) -> dict[str, float]:
    """The mix ``mix`` names, as profile -> weight (weights as given, not normalized), checked against
    ``profiles`` (those of the file, :func:`tpch_profiles`). ``mix`` is a name of :data:`TPCH_MIXES`, or
    ``PROFILE[:WEIGHT],...`` (weight 1 when omitted; one profile alone is today's single-profile
    workload), or a mapping profile -> weight.

    Raises :class:`~aviary.common.workload.WorkloadError`, one line naming the field ``tpch_mix``, on an
    unknown name or profile, a profile listed twice, a weight that is not a positive finite number, or
    an empty mix."""
    if isinstance(mix, str):
        text = mix.strip()
        if text in TPCH_MIXES:
            mix = TPCH_MIXES[text]
        else:
            pairs: list[tuple[str, str]] = []
            for part in text.split(","):
                name, _, weight = part.strip().partition(":")
                pairs.append((name.strip(), weight.strip() if _ else "1"))
            if not any(name for name, _ in pairs):
                raise WorkloadError(
                    f"tpch_mix: empty (a mix: {', '.join(TPCH_MIXES)} or PROFILE[:WEIGHT],...)"
                )
            return _checked_mix(pairs, profiles)
    elif not isinstance(mix, Mapping):
        raise WorkloadError(f"tpch_mix: expected a mix name, PROFILE[:WEIGHT],... or a mapping, got {mix!r}")
    if not mix:
        raise WorkloadError(f"tpch_mix: empty (a mix: {', '.join(TPCH_MIXES)} or PROFILE[:WEIGHT],...)")
    return _checked_mix(list(mix.items()), profiles)


def _checked_mix(pairs: Sequence[tuple[Any, Any]], profiles: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, weight in pairs:
        if name not in profiles:
            raise WorkloadError(
                f"tpch_mix: unknown mix or profile {name!r} (mixes: {', '.join(TPCH_MIXES)}; profiles: "
                f"{', '.join(profiles) or 'none'})"
            )
        if name in out:
            raise WorkloadError(f"tpch_mix: profile {name!r} listed twice")
        try:
            value = float(weight) if not isinstance(weight, bool) else math.nan
        except (TypeError, ValueError):
            value = math.nan
        if not (value > 0 and math.isfinite(value)):
            raise WorkloadError(
                f"tpch_mix: profile {name!r}: weight must be a positive number, got {weight!r}"
            )
        out[name] = value
    return out


def tpch_label(line: int, path: str | os.PathLike[str] = TPCH_JSON) -> str:
    """``"Q5@250g_maxCores_50"``: the query and profile of a TPC-H job's ``line`` (:data:`TPCH_LINE_STRIDE`),
    for the TPC-H file at ``path``. Raises :class:`~aviary.common.workload.WorkloadError` if the line
    names no query or profile of the file."""
    queries = list(_load_json(os.fspath(path)))
    profiles = tpch_profiles(path)
    at, position = divmod(line, TPCH_LINE_STRIDE)
    if not (1 <= position <= len(queries) and 0 <= at < len(profiles)):
        raise WorkloadError(f"line {line}: no query and profile of {os.fspath(path)} has it")
    return f"{queries[position - 1]}@{profiles[at]}"


def _tpch_jobs(
    path: str | os.PathLike[str],
    mix: str | Mapping[str, float],
    jobs: int,
    query_rng: random.Random,
    profile_rng: random.Random,
    task_scale: float = 1.0,
) -> list[DagTraceJob]:
    """``jobs`` TPC-H jobs: each a uniformly random query (``query_rng``, one ``choice`` per job, as
    before the mixes) at a profile drawn from ``mix`` (``profile_rng``: one ``choices`` call for all jobs,
    nothing drawn for a mix of one profile), named ``Q@PROFILE``, its line per :data:`TPCH_LINE_STRIDE`.
    Their tasks, merged at ``task_scale``, are checked against the limits before they are drawn."""
    profiles = tpch_profiles(path)
    weights = tpch_mix(mix, profiles)
    read = {p: read_tpch(path, p) for p in weights}
    queries = list(next(iter(read.values())))
    if not queries:
        raise WorkloadError("the trace has no queries")
    if len(queries) >= TPCH_LINE_STRIDE and any(profiles.index(p) for p in weights):
        raise WorkloadError(
            f"tpch_mix: {len(queries)} queries do not fit the line numbering of a mix "
            f"(at most {TPCH_LINE_STRIDE - 1}); use the first profile alone"
        )
    names = list(weights)
    sizes = {
        (q, p): sum(task_count(s.tasks, task_scale) for s in read[p][q].stages)
        for p in names
        for q in queries
    }
    check_counts(jobs, jobs * min(sizes.values()), at_least=True)  # before drawing anything
    picks = [query_rng.choice(queries) for _ in range(jobs)]
    drawn = (
        profile_rng.choices(names, weights=list(weights.values()), k=jobs) if len(names) > 1 else names * jobs
    )
    check_counts(jobs, sum(sizes[q, p] for q, p in zip(picks, drawn, strict=True)))
    out = []
    for query, profile in zip(picks, drawn, strict=True):
        tj = read[profile][query]
        out.append(
            replace(tj, name=f"{query}@{profile}", line=tj.line + TPCH_LINE_STRIDE * profiles.index(profile))
        )
    return out


def _stage_id(where: str, field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DagTraceError(f"{where}: field '{field}': stage must be an integer >= 0, got {value!r}")
    return value


def google_dag_jobs(trace_jobs: Sequence[TraceJob]) -> list[DagTraceJob]:
    """Flat trace jobs as one-stage DAG jobs, keeping per-task durations, submit, mean field, line, the
    source id, its dependencies (``after=``) and ``gang``."""
    return [
        DagTraceJob(
            name=f"line {tj.line}",
            stages=(
                DagTraceStage(
                    tj.tasks,
                    tj.mean,
                    durations=tuple(tj.durations),
                    mem_share=tj.mem,
                    cpu_share=tj.cpu,
                ),
            ),
            submit=tj.submit,
            line=tj.line,
            source=tj.name,
            after=tj.after,
            gang=tj.gang,
        )
        for tj in trace_jobs
    ]


# --- demands ------------------------------------------------------------------------------------------


def log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    """A draw whose logarithm is uniform in ``[log lo, log hi]`` (clamped against rounding)."""
    return min(hi, max(lo, math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def synthesize_demands(
    stages: Sequence[DagTraceStage],
    rng: random.Random,
    mode: DemandMode = "synth",
    machine: Resources = DEFAULT_MACHINE,
) -> list[Resources]:
    """One per-task demand per stage (the stage's tasks share it).

    ``"synth"`` (spec §6.2): cores, memory (GB), disk and network (shares of a machine's bandwidth)
    drawn independently, log-uniform in [:data:`DEMAND_MIN`, :data:`DEMAND_MAX`], in that order per stage.
    ``"alibaba-plan"``: the trace's own request, ``<plan_cpu/100, plan_mem/100 * machine.mem, 0, 0>``
    (no diversity: 0.5 or 1 core in nearly every stage); draws nothing.
    ``"trace"``: the trace's own request, whatever the trace: Alibaba's as ``"alibaba-plan"``, an Aviary
    trace's (``cpu=``, ``mem=``: shares of the largest machine, ``docs/traces.md``)
    ``<cpu * machine.cores, mem * machine.mem, 0, 0>``, a 0 read as :data:`MIN_SHARE`; draws nothing.
    Raises :class:`~aviary.common.workload.WorkloadError` if a stage lacks a trace request in
    ``"alibaba-plan"`` mode or a demand does not fit ``machine``.
    """
    if mode not in _DEMAND_MODES:
        raise WorkloadError(f"demands must be one of {', '.join(_DEMAND_MODES)}, got {mode!r}")
    out: list[Resources] = []
    for i, s in enumerate(stages):
        if mode == "synth":
            demand = Resources(
                *(log_uniform(rng, lo, hi) for lo, hi in zip(DEMAND_MIN, DEMAND_MAX, strict=True))
            )
        else:
            cores = s.cores
            if cores is None and mode == "trace" and s.cpu_share is not None:
                cores = max(s.cpu_share, MIN_SHARE) * machine.cores
            if cores is None or s.mem_share is None:
                raise WorkloadError(
                    f"stage {i}: demands={mode!r} needs the trace's own requests (cpu=, mem=)"
                )
            share = max(s.mem_share, MIN_SHARE) if mode == "trace" else s.mem_share
            demand = Resources(cores=cores, mem=share * machine.mem)
        if not demand.fits_in(machine):
            raise WorkloadError(
                f"stage {i}: demand <{demand.describe()}> does not fit the machine <{machine.describe()}>"
            )
        out.append(demand)
    return out


# --- offered load -------------------------------------------------------------------------------------


def resource_seconds(job: JobSpec) -> Resources:
    """``Σ over tasks of duration * demand`` per resource (a flat job's tasks take one core each)."""
    stages = job.dag()
    return vector_sum(
        s.demand.times(math.fsum(job.durations[at : at + s.tasks]))
        for s, at in zip(stages, stage_offsets(stages), strict=True)
    )


def _per_capacity(work: Resources, capacity_total: Resources) -> list[float]:
    out = []
    for name, w, c in zip(RESOURCES, work, capacity_total, strict=True):
        if c > 0:
            out.append(w / c)
        elif w > 0:
            raise WorkloadError(f"the jobs demand {name} but capacity_total has none")
        else:
            out.append(0.0)
    return out


def poisson_mean_gap(jobs: Sequence[JobSpec], capacity_total: Resources, load: float) -> float:
    """The mean inter-arrival gap at which ``jobs`` offer ``load`` on their dominant resource:
    ``max_r (mean per-job resource-seconds_r / capacity_total_r) / load``."""
    if not jobs:
        raise WorkloadError("no jobs")
    if not (load > 0 and math.isfinite(load)):
        raise WorkloadError(f"load must be a positive number, got {load}")
    mean_work = vector_sum(resource_seconds(j) for j in jobs).times(1.0 / len(jobs))
    return max(_per_capacity(mean_work, capacity_total)) / load


def offered_load(jobs: Sequence[JobSpec], capacity_total: Resources, span: float) -> Resources:
    """The realized offered load of ``jobs`` over ``span`` seconds, per resource:
    ``Σ resource-seconds_r / (capacity_total_r * span)``; its ``max`` is the dominant-resource load."""
    if not (span > 0 and math.isfinite(span)):
        raise WorkloadError(f"span must be a positive number, got {span}")
    work = vector_sum(resource_seconds(j) for j in jobs)
    return Resources(*(x / span for x in _per_capacity(work, capacity_total)))


# --- workloads ----------------------------------------------------------------------------------------


_Trace = (
    Sequence[DagTraceJob] | Sequence[TraceJob] | Mapping[str, DagTraceJob] | str | os.PathLike[str] | None
)


def _pool(kind: str, trace: _Trace) -> list[DagTraceJob]:
    if trace is None or isinstance(trace, (str, os.PathLike)):
        if kind == "alibaba":
            return read_alibaba(ALIBABA_CSV if trace is None else trace)
        if kind == "tpch":
            return list(read_tpch(TPCH_JSON if trace is None else trace).values())
        return google_dag_jobs(read_trace(GOOGLE_TRACE if trace is None else trace))
    items: list[Any] = list(trace.values()) if isinstance(trace, Mapping) else list(trace)
    flat = [x for x in items if isinstance(x, TraceJob)]
    if flat and (kind != "google" or len(flat) != len(items)):
        raise WorkloadError(f"kind {kind!r}: pass DagTraceJob jobs (TraceJob jobs are for kind 'google')")
    return google_dag_jobs(flat) if flat else cast(list[DagTraceJob], items)


def build_dag_workload(
    kind: DagKind,
    trace: _Trace = None,
    *,
    jobs: int | None = None,
    sample: Literal["consecutive", "random"] = "consecutive",
    start: int | None = None,
    seed: int = 0,
    time_scale: float = 1.0,
    task_scale: float = 1.0,
    load: float | None = None,
    capacity_total: Resources | None = None,
    keep_arrivals: bool = False,
    batch: bool = False,
    demands: DemandMode = "synth",
    machine: Resources = DEFAULT_MACHINE,
    cutoff: float = GOOGLE_CUTOFF,
    tpch_mix: str | Mapping[str, float] | None = None,
) -> list[JobSpec]:
    """A scaled replay of DAG jobs with per-stage demands (steps in the module docstring).

    ``trace``: the jobs to draw from (``None``: the bundled file of ``kind``; a path: that file, read by
    the kind's reader; ``"google"`` also takes :class:`~aviary.common.trace.TraceJob` jobs, ``"tpch"``
    the mapping :func:`read_tpch` returns, i.e. jobs of one profile; ``"tpcds"`` takes none: its jobs are
    drawn). ``jobs=None`` takes every job (from ``start``), except for ``"tpch"`` and ``"tpcds"``, which
    need ``jobs``; ``sample``/``start`` do not apply to them. ``tpch_mix`` (``"tpch"`` read from a file
    only; ``None``: :data:`TPCH_MIX`): the profiles the jobs' input sizes are drawn from (:func:`tpch_mix`);
    jobs already read (a mapping or list) keep their one profile and take no mix.
    Exactly one of ``load`` (Poisson, with ``capacity_total`` = the cluster's summed capacity),
    ``keep_arrivals`` and ``batch`` (every job at time 0: a backlog, the setting of makespan comparisons)
    must be chosen.
    Raises :class:`~aviary.common.workload.WorkloadError` on impossible parameters.
    """
    if kind not in _KINDS:
        raise WorkloadError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    if demands not in _DEMAND_MODES:
        raise WorkloadError(f"demands must be one of {', '.join(_DEMAND_MODES)}, got {demands!r}")
    for label, value in (("time_scale", time_scale), ("task_scale", task_scale)):
        if not (value > 0 and math.isfinite(value)):
            raise WorkloadError(f"{label} must be a positive number, got {value}")
    if not (cutoff >= 0 and math.isfinite(cutoff)):
        raise WorkloadError(f"cutoff must be a non-negative number, got {cutoff}")
    if keep_arrivals + batch + (load is not None) != 1:
        raise WorkloadError(
            "choose one arrival process: load=RHO (Poisson), keep_arrivals=True or batch=True (all at 0)"
        )
    if load is not None:
        if not (load > 0 and math.isfinite(load)):
            raise WorkloadError(f"load must be a positive number, got {load}")
        if capacity_total is None:
            raise WorkloadError("load needs capacity_total (the cluster's summed capacity)")

    if tpch_mix is not None and kind != "tpch":
        raise WorkloadError(f"tpch_mix applies to kind 'tpch', not {kind!r}")
    from_file = trace is None or isinstance(trace, (str, os.PathLike))
    if tpch_mix is not None and not from_file:
        raise WorkloadError(
            "tpch_mix: needs the TPC-H file (trace=None or a path), not jobs already read at one profile"
        )

    root = random.Random(seed)
    sample_rng, arrival_rng, demand_rng = (random.Random(root.getrandbits(64)) for _ in range(3))
    profile_rng = random.Random(root.getrandbits(64))  # a fourth stream: the first three stay as they were
    if kind in ("tpch", "tpcds"):
        what = "a random query" if kind == "tpch" else "a generated DAG"
        if jobs is None or jobs < 1:
            raise WorkloadError(f"kind {kind!r} needs jobs >= 1 (each job is {what}), got {jobs}")
        check_counts(jobs, 0)
        if start is not None or sample != "consecutive":
            raise WorkloadError(f"sample and start do not apply to kind {kind!r} (each job is {what})")
    if kind == "tpcds":
        if trace is not None:
            raise WorkloadError("kind 'tpcds' takes no trace (its jobs are drawn by the generator)")
        chosen = tpcds_like_jobs(sample_rng, cast(int, jobs))
    elif kind == "tpch" and from_file:
        path = TPCH_JSON if trace is None else cast(str, trace)
        mix = TPCH_MIX if tpch_mix is None else tpch_mix
        chosen = _tpch_jobs(path, mix, cast(int, jobs), sample_rng, profile_rng, task_scale)
    elif kind == "tpch":
        pool = _pool(kind, trace)
        if not pool:
            raise WorkloadError("the trace has no queries")
        chosen = [sample_rng.choice(pool) for _ in range(cast(int, jobs))]
    else:
        pool = _pool(kind, trace)
        # _sample only indexes and slices its sequence, so it samples DagTraceJob lists as well.
        chosen = cast(list[DagTraceJob], _sample(cast(list[TraceJob], pool), jobs, sample, start, sample_rng))
    for tj in chosen:
        if not tj.stages:
            raise WorkloadError(f"job {tj.name} (line {tj.line}): no stages (a job needs at least one)")
    check_counts(len(chosen), sum(task_count(s.tasks, task_scale) for tj in chosen for s in tj.stages))
    if keep_arrivals:
        if any(j.submit is None for j in chosen):
            raise WorkloadError(f"keep_arrivals needs submit times, and kind {kind!r} has none")
        chosen.sort(key=lambda j: j.submit or 0.0)

    specs: list[JobSpec] = []
    named: dict[str, int] = {}  # a job's source id -> its id here, for the after= of later jobs
    for job_id, tj in enumerate(chosen):
        durations: list[float] = []
        stages: list[Stage] = []
        try:
            drawn = synthesize_demands(tj.stages, demand_rng, demands, machine)
        except WorkloadError as exc:
            raise WorkloadError(f"job {job_id} ({tj.name}, line {tj.line}) {exc}") from None
        for s, demand in zip(tj.stages, drawn, strict=True):
            m = task_count(s.tasks, task_scale)
            if s.durations is not None:
                kept = [d / time_scale for d in merge_tasks(s.durations, m)]
            else:
                kept = [s.tasks / m * s.mean / time_scale] * m
            durations.extend(kept)
            stages.append(Stage(m, math.fsum(kept) / m, demand, s.parents))
        specs.append(
            JobSpec(
                job_id=job_id,
                submit=0.0,
                durations=durations,
                estimate=math.fsum(durations) / len(durations),
                long=tj.mean >= cutoff,
                line=tj.line,
                stages=stages,
                gang=tj.gang,
                after=tuple(named[n] for n in tj.after if n in named),
            )
        )
        if tj.source is not None:
            named[tj.source] = job_id

    if keep_arrivals:
        first = cast(float, chosen[0].submit)
        for spec, tj in zip(specs, chosen, strict=True):
            spec.submit = (cast(float, tj.submit) - first) / time_scale
    elif not batch:
        assert load is not None and capacity_total is not None
        gap = poisson_mean_gap(specs, capacity_total, load)
        t = 0.0
        for spec in specs[1:]:
            t += arrival_rng.expovariate(1.0 / gap) if gap > 0 else 0.0
            spec.submit = t
    check_scaled(specs)
    check_dag_workload(specs, machine)
    return specs


def check_dag_workload(specs: Sequence[JobSpec], machine: Resources = DEFAULT_MACHINE) -> None:
    """Raise :class:`~aviary.common.workload.WorkloadError` (one line) unless the workload is sane: job
    ids 0..K-1 in submit order from 0, :meth:`JobSpec.check` (parents are earlier stages, task counts
    add up), finite durations >= 0, and every stage's demand non-zero and fitting ``machine``."""
    last = 0.0
    for k, spec in enumerate(specs):
        if spec.job_id != k:
            raise WorkloadError(f"job {spec.job_id} is at position {k}: ids must be 0..K-1")
        if not (math.isfinite(spec.submit) and spec.submit >= last and (k or spec.submit == 0.0)):
            raise WorkloadError(f"job {k}: submit {spec.submit} is out of order (previous {last})")
        last = spec.submit
        try:
            spec.check()
        except ValueError as exc:
            raise WorkloadError(str(exc)) from None
        if not all(d >= 0 and math.isfinite(d) for d in spec.durations):
            raise WorkloadError(f"job {k}: durations must be finite and >= 0")
        for i, s in enumerate(spec.dag()):
            if s.demand == ZERO or not s.demand.fits_in(machine):
                raise WorkloadError(
                    f"job {k} stage {i}: demand <{s.demand.describe()}> is zero or does not fit the "
                    f"machine <{machine.describe()}>"
                )
