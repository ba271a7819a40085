"""The jobs of a GS_HET-like replay (``--workload gshet``): :func:`~aviary.common.gshet.gshet_jobs` with
the recipe's mix and sizes, changed by ``--gshet KEY=VALUE,...``, for the replay's cluster and flags."""

from __future__ import annotations

import inspect
from typing import Any

from ...common.cluster import Cluster
from ...common.dags import GOOGLE_TRACE
from ...common.gshet import gshet_jobs
from ...common.model import JobSpec
from ..flags.spec import ReplaySpec, UsageError

DEFAULT_GSHET_JOBS = 200
"""Jobs of a GS_HET-like replay without ``--jobs``."""

GSHET_FIXED = ("load", "nodes", "slots", "misestimate", "time_scale")
"""Keywords of :func:`~aviary.common.gshet.gshet_jobs` a replay sets from its own flags."""


def gshet_defaults() -> dict[str, Any]:
    """The mix, sizes and admission of :func:`~aviary.common.gshet.gshet_jobs` a replay uses by default
    (trace seconds), for the summary's ``extra``."""
    params = inspect.signature(gshet_jobs).parameters.items()
    return {
        k: p.default for k, p in params if p.default is not inspect.Parameter.empty and k not in GSHET_FIXED
    }


def gshet_options(text: str | None) -> dict[str, Any]:
    """``--gshet KEY=VALUE,...``: keywords of :func:`~aviary.common.gshet.gshet_jobs` (``LO:HI`` for a
    range); an unknown key or a bad value is a one-line ``UsageError`` naming it."""
    defaults = gshet_defaults()
    out: dict[str, Any] = {}
    for item in filter(None, (text or "").split(",")):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in defaults:
            raise UsageError(f"--gshet: field '{key}': not one of {', '.join(defaults)}")
        default = defaults[key]
        try:
            if isinstance(default, tuple):
                lo, hi = value.split(":")
                kind = type(default[0])
                out[key] = (kind(lo), kind(hi))
            elif isinstance(default, str):
                out[key] = value
            else:
                out[key] = type(default)(value)
        except ValueError:
            raise UsageError(f"--gshet: field '{key}': bad value {value!r} (default {default!r})") from None
    return out


def replay_gshet(spec: ReplaySpec, cluster: Cluster, scale: float, load: float | None) -> list[JobSpec]:
    """The GS_HET-like jobs (:func:`~aviary.common.gshet.gshet_jobs`, the recipe's mix and sizes) for the
    cluster: ``--jobs`` (default :data:`DEFAULT_GSHET_JOBS`), ``--seed``, ``--load`` in preferred-runtime
    slot-seconds of all the nodes' slots (one per core), ``--batch``, ``--misestimate``."""
    refused = [
        ("a trace file", spec.trace != GOOGLE_TRACE),
        ("--keep-arrivals", spec.keep_arrivals),
        ("--start", spec.start is not None),
        ("--task-scale", spec.task_scale is not None),
        ("--demands alibaba-plan", spec.demands != "synth"),
    ]
    for what, given in refused:
        if given:
            raise UsageError(f"--workload gshet takes no {what} (its jobs are drawn, one slot per task)")
    slots = [int(n.resources.cores) for n in cluster.nodes]
    if min(slots) < 1:
        raise UsageError("--workload gshet: every node needs at least one core (a task's slot)")
    return gshet_jobs(
        spec.seed,
        spec.jobs if spec.jobs is not None else DEFAULT_GSHET_JOBS,
        load=load,
        nodes=sum(slots),  # the generator counts only slots (nodes x slots)
        slots=1,
        misestimate=spec.misestimate,
        time_scale=scale,
        **gshet_options(spec.gshet),
    )
