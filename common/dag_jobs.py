"""A DAG job as a trace gives it, before scaling (:mod:`aviary.common.dags` reads the traces,
:mod:`aviary.common.dag_shapes` generates TPC-DS-like ones): its own module so that both build on it
without importing each other."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DagTraceStage:
    """One stage as the trace gives it (trace seconds, unscaled)."""

    tasks: int
    mean: float
    """Mean task duration in seconds."""
    parents: tuple[int, ...] = ()
    """Indices of earlier stages of the same job (sorted)."""
    cores: float | None = None
    """The trace's own CPU request per task in cores (Alibaba ``plan_cpu / 100``); ``None``: none."""
    mem_share: float | None = None
    """The trace's own memory request per task as a share of a machine (Alibaba ``plan_mem / 100``)."""
    name: str = ""
    """The stage's label in the trace (Alibaba ``stage``, TPC-H stage number)."""
    durations: tuple[float, ...] | None = None
    """Per-task durations when the trace has them (Google); ``None``: every task runs ``mean``."""
    cpu_share: float | None = None
    """The trace's own CPU request per task as a share of the largest machine's cores (an Aviary
    trace's ``cpu=``, Google's normalized units); used when ``cores`` is ``None``."""

    @property
    def task_seconds(self) -> float:
        return math.fsum(self.durations) if self.durations is not None else self.tasks * self.mean


@dataclass(frozen=True, slots=True)
class DagTraceJob:
    """One DAG job as the trace gives it; ``stages`` are in a topological order."""

    name: str
    stages: tuple[DagTraceStage, ...]
    submit: float | None = None
    """Trace seconds (Alibaba: the job's first ``start_s``; Google: the submit time); TPC-H: ``None``."""
    line: int = 0
    """Source line: the CSV line of the job's first row, the trace line, or the TPC-H query's position."""
    source: str | None = None
    """The source's job id (a Google-format trace's ``job=``), which other jobs' ``after`` name."""
    after: tuple[str, ...] = ()
    """The source ids of the jobs this one waits for (``after=``)."""
    gang: bool = False
    """All tasks of a stage start together (``gang=1``)."""

    @property
    def tasks(self) -> int:
        return sum(s.tasks for s in self.stages)

    @property
    def task_seconds(self) -> float:
        return math.fsum(s.task_seconds for s in self.stages)

    @property
    def mean(self) -> float:
        """The job's mean task duration (a one-stage job: the stage's own mean, e.g. the Google field)."""
        if len(self.stages) == 1:
            return self.stages[0].mean
        return math.fsum(s.tasks * s.mean for s in self.stages) / self.tasks
