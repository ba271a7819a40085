"""The workload model (DESIGN §4, §9): jobs are DAGs of stages whose tasks have real durations, one
scheduler-visible estimate and one multi-resource demand.

A flat job (every trace job of the Google sample) is one stage with no parents: ``JobSpec.stages``
stays empty and :meth:`JobSpec.dag` returns that one stage, so the probe-based policies, which see only
``durations`` and ``estimate``, are unchanged. Task indices are global across a job's stages: stage s
holds the tasks ``[offset_s, offset_s + tasks_s)`` of ``durations`` (stages in the order given, which
is a topological order: parents come first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .resources import ONE_CORE, Resources

GOOGLE_CUTOFF = 1129.532
"""Reference short/long cutoff of the Google trace, in trace seconds (Hawk/Eagle evaluation)."""

SLO_CLASSES = ("accepted", "noreserve", "be")
"""TetriSched's job classes (spec §1.6): an SLO job with an accepted reservation, an SLO job without
one, best effort. ``None`` on a job: no class (the probe-based policies' jobs)."""


@dataclass(slots=True, frozen=True)
class Stage:
    """Tasks that share an estimate, a demand and their parent stages (a barrier: the stage's tasks
    become runnable only when every task of every parent finished). ``tasks`` durations are in
    :attr:`JobSpec.durations` at this stage's offset."""

    tasks: int
    estimate: float
    demand: Resources = ONE_CORE
    parents: tuple[int, ...] = ()


@dataclass(slots=True)
class JobSpec:
    """One job of a replay, after scaling.

    ``submit`` is in seconds from the start of the replay; ``durations`` are what executors run, for
    all stages in stage order; ``estimate`` is the mean task estimate of the whole job (what the
    probe-based schedulers see); ``long`` is the class by the trace's reference cutoff (for reporting,
    whatever the policy does); ``line`` is the trace line it came from.

    DAG and multi-resource fields (optional; defaults describe a flat job of one-core tasks):
    ``stages`` (empty: one stage of all tasks), ``deadline`` (seconds after submit), ``slo`` (one of
    :data:`SLO_CLASSES`), ``gang`` (all tasks of a stage start together), ``preference`` (a node
    attribute such as ``gpu`` or ``rack``; see :func:`placement_slowdown`), ``slowdown`` (the factor
    by which a task runs longer when the preference is not met) and ``after`` (the ids of earlier jobs
    of the replay this one waits for: it is submitted once they finished, :mod:`aviary.common.frontend`).
    """

    job_id: int
    submit: float
    durations: list[float]
    estimate: float
    long: bool
    line: int = 0
    stages: list[Stage] = field(default_factory=list)
    deadline: float | None = None
    slo: str | None = None
    gang: bool = False
    preference: str | None = None
    slowdown: float = 1.0
    after: tuple[int, ...] = ()

    @property
    def tasks(self) -> int:
        return len(self.durations)

    @property
    def cls(self) -> str:
        return "long" if self.long else "short"

    def dag(self) -> list[Stage]:
        """The job's stages; a flat job is one stage of one-core tasks with the job's estimate."""
        return self.stages or [Stage(len(self.durations), self.estimate)]

    def check(self) -> None:
        """Raise ``ValueError`` (one line) if the stages do not describe the durations as a DAG."""
        stages = self.dag()
        if sum(s.tasks for s in stages) != len(self.durations):
            raise ValueError(
                f"job {self.job_id}: stages hold {sum(s.tasks for s in stages)} tasks, "
                f"durations {len(self.durations)}"
            )
        for i, s in enumerate(stages):
            if s.tasks < 1:
                raise ValueError(f"job {self.job_id} stage {i}: no tasks")
            if any(not (isinstance(p, int) and 0 <= p < i) for p in s.parents):
                raise ValueError(f"job {self.job_id} stage {i}: parents {s.parents} must be earlier stages")
            if not estimate_ok(s.estimate):
                raise ValueError(f"job {self.job_id} stage {i}: estimate {s.estimate}")
        if not slo_ok(self.slo):
            raise ValueError(f"job {self.job_id}: slo {self.slo!r} is not one of {', '.join(SLO_CLASSES)}")
        if not slowdown_ok(self.slowdown):
            limit = f"within 1-{MAX_SLOWDOWN:g}"
            raise ValueError(f"job {self.job_id}: slowdown must be {limit}, got {self.slowdown}")


def estimate_ok(estimate: float) -> bool:
    """A task estimate :meth:`JobSpec.check` accepts: finite and >= 0."""
    return estimate >= 0 and math.isfinite(estimate)


def slo_ok(slo: str | None) -> bool:
    """A job class :meth:`JobSpec.check` accepts: none, or one of :data:`SLO_CLASSES`."""
    return slo is None or slo in SLO_CLASSES


def slowdown_ok(slowdown: float) -> bool:
    """A placement slowdown :meth:`JobSpec.check` accepts: within 1 (below would be a speed-up) and
    :data:`MAX_SLOWDOWN`."""
    return 1.0 <= slowdown <= MAX_SLOWDOWN


MAX_SLOWDOWN = 1000.0
"""The largest placement slowdown a job may carry (TetriSched's are 1.5-3): a frame's 1e308 made its
plan-ahead durations infinite."""


def flat_ok(tasks: int, estimate: float, slo: str | None, slowdown: float) -> bool:
    """Whether :meth:`JobSpec.check` passes a flat job (no ``stages``) of these fields, without building
    the job or a message (a central scheduler's quick admission of a flat job)."""
    return tasks > 0 and estimate_ok(estimate) and slo_ok(slo) and slowdown_ok(slowdown)


def stage_offsets(stages: list[Stage]) -> list[int]:
    """The global index of each stage's first task."""
    offsets, at = [], 0
    for s in stages:
        offsets.append(at)
        at += s.tasks
    return offsets


def placement_slowdown(preference: str | None, slowdown: float, attributes: list[dict]) -> float:
    """The factor by which a job's tasks run longer on nodes with these ``attributes`` (one dict per
    task of a gang, or one for a single task): 1 when the preference is met, else ``slowdown``.

    ``gpu``: every node has a true ``gpu`` attribute. ``rack`` (an MPI job): every node has the same
    ``rack`` value. Any other preference names an attribute every node must have true. No preference: 1.
    """
    if preference is None or slowdown == 1.0 or not attributes:
        return 1.0
    if preference == "rack":
        racks = {a.get("rack") for a in attributes}
        met = len(racks) == 1 and None not in racks
    else:
        met = all(bool(a.get(preference)) for a in attributes)
    return 1.0 if met else slowdown
