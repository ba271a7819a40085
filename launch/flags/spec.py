"""What a replay is told, typed: :class:`ReplaySpec`.

``aviary replay`` (and ``up``, ``cluster``: the testbed part) builds one from its flags with
:meth:`ReplaySpec.from_args`; code builds one directly (``aviary demo``, experiments) and hands it to
:func:`aviary.launch.replay.resolve.setup_replay` or
:func:`~aviary.launch.replay.resolve.testbed_cluster`. The policy's own parameters go in ``params`` by
the names its registry entry declares (:attr:`aviary.launch.policies.registry.Policy.params`), in the
units their help names (trace seconds for the durations that follow the time scale); a name the policy
does not declare, or a bad value, is refused in one line.
"""

from __future__ import annotations

import argparse
import functools
import numbers
import os
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from ...common.cluster import TRANSPORTS
from ...common.dags import GOOGLE_TRACE
from ...common.failures import LIVENESS_MISSES, LIVENESS_PERIOD
from ...common.resources import Resources
from ..policies.registry import POLICIES, get_policy

__all__ = ["DEFAULT_MAX_WALL", "SHARED", "AviaryWarning", "ReplaySpec", "UsageError", "check_field"]

DEFAULT_MAX_WALL = 300.0
"""A real replay predicted to run longer than this (seconds of wall time) is refused unless ``yes``."""

DASHBOARD_PORT = 8789
"""``--dashboard`` without a port (Dask's is 8787)."""

REAL_TIME_SCALE = {"google": 1000.0, "alibaba": 10.0, "tpch": 1.0, "tpcds": 10.0, "gshet": 10.0}
"""Default time scale of a real replay per workload: Google tasks run minutes (seconds become ms),
Alibaba's seconds (p50 3 s, p90 52 s), TPC-H's stage runtimes are already 0.1-8 s, the generated
TPC-DS-like stages' mean task durations are p50 8 s, p95 41 s (:mod:`aviary.common.dag_shapes`), the
GS_HET-like tasks 10-120 s (:mod:`aviary.common.gshet`; 1-12 s at 10, TetriSched's 4 s cycle 0.4 s)."""


class UsageError(ValueError):
    """Bad input the user must fix: printed as one line by the CLI, exit status 2; from Python
    (:func:`aviary.replay`) a ``ValueError`` whose message names the parameter."""


class AviaryWarning(UserWarning):
    """What the command line prints as ``aviary replay: warning: ...`` (an overloaded ``--load``, say),
    warned from Python (:func:`aviary.replay`) as this category."""


class RunFailed(Exception):
    """A run that stopped on a bug of its policy (a core raised): its partial results are written; printed
    as one line by the CLI, exit status 1."""


SHARED = ("cutoff",)
"""Declared parameters that are also fields of the spec: the short/long cutoff sets every replay's
reporting classes, and the scheduling cutoff of the policies that declare it unless ``params`` gives
another."""

Runtime = Literal["real", "sim"]
Workload = Literal["google", "alibaba", "tpch", "tpcds", "gshet"]
Sample = Literal["consecutive", "random"]
Demands = Literal["synth", "alibaba-plan", "trace"]
Executor = Literal["timer", "process", "docker"]
CHOICES = {
    "runtime": get_args(Runtime),
    "workload": get_args(Workload),
    "sample": get_args(Sample),
    "demands": get_args(Demands),
    "executor": get_args(Executor),
    "transport": TRANSPORTS,
}


@dataclass
class ReplaySpec:
    """One replay (or testbed): the defaults are those of ``aviary replay``'s flags.

    ``trace``: a Google-format trace (or the ``workload``'s own format; the bundled Google sample by
    default, the workload's bundled jobs for alibaba and tpch; tpcds and gshet take none, their jobs are
    drawn; gshet: TetriSched's GS_HET-like mix, :mod:`aviary.common.gshet`, on nodes of ``slots``
    one-core slots labelled with ``rack`` and ``gpu`` attributes).
    ``time_scale``: ``None`` for the default (1 simulated; on real processes the one that fits
    ``duration``, or the default budget ``replay.DEFAULT_BUDGET``, on the simulator's prediction, at
    least the workload's :data:`REAL_TIME_SCALE`). ``jobs``: ``None`` for all (on real processes
    ``replay_jobs.DEFAULT_REAL_JOBS`` of a trace). ``duration``: the wall-clock budget (s) of a real replay,
    which picks the time scale. ``max_wall``: a real replay predicted to take longer is refused (None:
    no limit) unless ``yes``. ``load``: offered load of Poisson arrivals (``None``: 0.8; gshet 1.0) unless
    ``keep_arrivals`` or ``batch`` (DAG workloads: every job at time 0). ``cutoff``: short/long cutoff in
    trace seconds (``None``: the Google trace's). ``connect``: the cluster description of a running
    testbed (its own policy and parameters apply). ``params``: the policy's declared parameters."""

    policy: str = "sparrow"
    trace: Path = GOOGLE_TRACE
    workload: Workload = "google"
    runtime: Runtime = "real"
    nodes: int = 10
    nodes_per_process: int = 1
    """Real processes: node monitors hosted by one OS process, each its own endpoint (issue 27)."""
    keys: bool = True
    """Real processes: CurveZMQ keys made for the testbed (``--no-keys``: none; issue 26)."""
    transport: str = "zmq"
    """Real processes: what they speak, ZeroMQ or plain TCP (``--transport tcp``; issue 27)."""
    slots: int = 1
    schedulers: int = 2
    executor: Executor = "timer"
    seed: int = 0
    jobs: int | None = None
    sample: Sample = "consecutive"
    start: int | None = None
    task_scale: float | None = None
    reference_nodes: int = 10000
    load: float | None = None
    keep_arrivals: bool = False
    batch: bool = False
    cutoff: float | None = None
    misestimate: tuple[float, float] | None = None
    net_delay: float = 0.0005
    stall_timeout: float | None = None
    duration: float | None = None
    max_wall: float | None = DEFAULT_MAX_WALL
    yes: bool = False
    connect: Path | None = None
    out: Path | None = None
    force: bool = False
    """Write into ``out`` even when it holds another run's results (:mod:`aviary.launch.replay.folder`)."""
    task_table: bool = True
    """Write the task table, ``tasks.csv`` (each run of a task on a node: :mod:`aviary.common.tasktable`)."""
    stream: bool | None = None
    """The simulator: read the trace's jobs as the replay advances and forget each once written, with no
    task table (a trace of a whole month); None: when the trace file is larger than
    :data:`~aviary.launch.replay.jobs.STREAM_BYTES`."""
    demands: Demands = "synth"
    capacity: Resources | None = None
    time_scale: float | None = None
    fail: str | None = None
    """Processes to kill at replay times, ``NAME@TIME,...`` (:mod:`aviary.common.failures`)."""
    liveness_period: float = LIVENESS_PERIOD
    """Real processes: seconds between the frontend's liveness ``Hello``s."""
    liveness_misses: int = LIVENESS_MISSES
    """Real processes: heartbeats unanswered before a process is declared dead."""
    dashboard: int | None = None
    """Real processes: the port of the live dashboard (0: any free one), or None for none."""
    dashboard_address: str = "127.0.0.1"
    """The address the dashboard listens on (beyond loopback: with a warning)."""
    gshet: str | None = None
    """``--workload gshet``'s mix and sizes, ``KEY=VALUE,...`` (see ``gshet_replay.gshet_options``)."""
    tpch_mix: str | None = None
    """``--workload tpch``: the profiles (input sizes) its jobs are drawn from, a name of
    ``common.dags.TPCH_MIXES`` or ``PROFILE[:WEIGHT],...`` (``None``: ``common.dags.TPCH_MIX``;
    ``"50g"``: the single profile of replays before the mixes)."""
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.misestimate is not None:
            lo, hi = self.misestimate
            self.misestimate = (lo, hi)
        for name in ("duration", "max_wall"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise UsageError(f"{name} must be greater than 0 seconds, got {value}")
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise UsageError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        self.given()  # the policy exists, and its params are declared and valid

    def given(self) -> dict[str, Any]:
        """The given values of the policy's declared parameters (checked; ``params``, then the fields
        in :data:`SHARED`); a name it does not declare, or a bad value, is a one-line ``UsageError``."""
        policy = get_policy(self.policy)
        out = {}
        for name, value in self.params.items():
            p = policy.param(name)
            if p is None:
                raise UsageError(f"params: field '{name}': policy {policy.name!r} has no such parameter")
            if value is not None:
                try:
                    out[name] = p.check(value)
                except ValueError as exc:
                    raise UsageError(f"params: field '{name}': {exc}") from None
        for name in SHARED:
            p = policy.param(name)
            if p is not None and out.get(name) is None and getattr(self, name) is not None:
                try:
                    out[name] = p.check(getattr(self, name))
                except ValueError as exc:
                    raise UsageError(f"{name}: {exc}") from None
        return out

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ReplaySpec:
        """The spec of ``aviary replay``, ``up`` or ``cluster`` flags (a field the sub-command has no
        flag for keeps its default). The flags of the policy's declared parameters that were given go to
        ``params``. One of a parameter the policy does not declare is refused when the policy, or a
        policy declaring it, schedules DAG jobs; among the slot-based policies it is ignored, so that
        one command line runs several of them (``experiments/kairos_real.py`` gives FIFO Kairos'
        flags). With ``--connect`` the testbed's own parameters apply and these flags are ignored."""
        names = {f.name for f in fields(cls)} - {"params"}
        values = {name: getattr(args, name) for name in names if hasattr(args, name)}
        policy = get_policy(values.get("policy", cls.policy))
        params: dict[str, Any] = {}
        for other in POLICIES.values():
            for p in other.params:
                value = getattr(args, p.dest, None)
                if value is None or p.name in SHARED:
                    continue
                if policy.param(p.name) is not None:
                    params[p.name] = value
                elif (policy.dag or other.dag) and values.get("connect") is None:
                    raise UsageError(f"{p.flag}: policy {policy.name!r} has no such parameter")
        return cls(**values, params=params)


@functools.cache
def field_types() -> dict[str, Any]:
    """The type of each field of :class:`ReplaySpec`, evaluated (``Literal[...]`` for the choices)."""
    return get_type_hints(ReplaySpec)


class _Mismatch(Exception):
    """A value that is not of a type: :func:`check_field` names the field."""


def check_field(name: str, value: Any, *, caller: str = "ReplaySpec()") -> Any:
    """``value`` as field ``name`` of :class:`ReplaySpec` takes it, coerced as the command line coerces
    its text: a path from a ``str``, a float from an int, a tuple from a list, :class:`Resources` from
    up to four numbers. Any other type is one ``TypeError`` naming the field and the type it takes; a
    value of the right type but not allowed (a choice, a bound) is left to the spec's own checks
    (:class:`UsageError`, a ``ValueError``)."""
    hint = field_types()[name]
    try:
        return _coerce(hint, value)
    except _Mismatch:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise TypeError(
            f"{caller} argument {name!r} must be {describe_type(hint)}, not {type(value).__name__} {shown}"
        ) from None


def _coerce(hint: Any, value: Any) -> Any:
    """``value`` as type ``hint`` (the field types of :class:`ReplaySpec`), or :class:`_Mismatch`."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return value
    if hint is type(None):
        if value is None:
            return None
        raise _Mismatch
    if origin is Union or origin is types.UnionType:
        for arg in args:
            try:
                return _coerce(arg, value)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin is Literal:  # its choices are ReplaySpec's own check, a one-line UsageError
        if isinstance(value, str) and all(isinstance(a, str) for a in args):
            return value
        raise _Mismatch
    if isinstance(value, bool) and hint is not bool:  # True is no number of nodes
        raise _Mismatch
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise _Mismatch
    if hint is int:
        if isinstance(value, numbers.Integral):
            return int(value)
        raise _Mismatch
    if hint is float:
        if isinstance(value, numbers.Real):
            return float(value)
        raise _Mismatch
    if hint is Path:
        if isinstance(value, str | os.PathLike):
            return Path(value)
        raise _Mismatch
    if hint is Resources:
        if isinstance(value, Resources):
            return value
        if isinstance(value, tuple | list) and 0 < len(value) <= len(Resources._fields):
            numbers_ = [_coerce(float, x) for x in value]
            try:
                return Resources.of(numbers_)
            except ValueError as exc:  # a negative or non-finite amount: a value, not a type
                raise UsageError(f"capacity: {exc}") from None
        raise _Mismatch
    if origin is tuple or origin is list:
        if not isinstance(value, tuple | list):
            raise _Mismatch
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise _Mismatch
            return tuple(_coerce(a, x) for a, x in zip(args, value, strict=True))
        items = [_coerce(args[0], x) for x in value]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, Mapping):
            raise _Mismatch
        return {_coerce(args[0], k): _coerce(args[1], v) for k, v in value.items()}
    if isinstance(hint, type) and isinstance(value, hint):
        return value
    raise _Mismatch


def describe_type(hint: Any) -> str:
    """A field type as an error message names it: ``int or None``, ``one of 'real', 'sim'``."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is type(None):
        return "None"
    if origin is Union or origin is types.UnionType:
        return " or ".join(describe_type(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(map(repr, args))
    if hint is Path:
        return "a path (str or Path)"
    if hint is Resources:
        return "Resources (or up to 4 numbers: cores, mem, disk, net)"
    if hint is float:
        return "a number"
    if origin is tuple and args and args[-1] is not Ellipsis and len(set(args)) == 1:  # (lo, hi)
        each = "numbers" if args[0] is float else f"{args[0].__name__}s"
        return f"a tuple or list of {len(args)} {each}"
    if origin is dict:
        return f"a dict of {describe_type(args[0])} keys"
    if isinstance(hint, type) and origin is None:
        return hint.__name__
    return str(hint).replace("typing.", "")
