"""Aviary from Python: replay and compare in a notebook or a script, with the parameters of the command line.

    from aviary import compare, replay

    drf = replay(policy="drf", workload="tpch", runtime="sim", jobs=40, nodes=20)
    tetris = replay(policy="tetris", workload="tpch", runtime="sim", jobs=40, nodes=20)
    tetris.summary["mean_jct"] / drf.summary["mean_jct"]      # below 1: Tetris is better
    [j.jct for j in tetris.jobs][:5]                          # the job table (jobs.csv)
    compare(drf, tetris)["rows"]                              # aviary compare --json, as data

:func:`replay` takes the fields of :class:`~aviary.launch.flags.spec.ReplaySpec` as keywords — the same names,
types, defaults and checks as ``aviary replay``'s flags, declared once there and written out in its
signature (``time_scale=`` for ``--time-scale``, ``params={"probe_ratio": 3}`` for a policy's parameters),
or a ``ReplaySpec`` itself. It writes the run's folder as the command does
(``results/<workload>-<policy>-...`` unless ``out=``), records the call in its summary, and returns a
:class:`Run`: its folder, ``summary.json`` as a dict, the job table and its family's headline figures.
:func:`compare` reads runs (or folders) as ``aviary compare`` does.

A value of the wrong type raises one ``TypeError`` naming its parameter; a bad value one
:class:`~aviary.launch.flags.spec.UsageError` (a ``ValueError``) with the command line's one-line message;
what the command line warns of is an :class:`~aviary.launch.flags.spec.AviaryWarning` (a ``UserWarning``);
a run stopped by a core's exception (a policy's bug) raises :class:`~aviary.launch.flags.spec.RunFailed`,
after its partial results are written.

A run that never reached its end (killed outright: its folder holds a journal and no ``summary.json``)
loads as a partial run: :attr:`Run.partial` is the one line that says so (``Run.load`` warns it too), its
summary and jobs are what its journal holds, and :func:`rebuild` writes its ``jobs.csv`` and
``summary.json`` from the journal.
"""

import difflib
import functools
import inspect
import re
import warnings
from argparse import Namespace
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from .common.dags import GOOGLE_TRACE
from .common.failures import LIVENESS_MISSES, LIVENESS_PERIOD
from .common.resources import Resources
from .common.results import (
    JobRecord,
    Metric,
    family_metrics,
    partial_note,
    read_jobs,
    read_summary,
    rebuild_results,
)
from .launch.flags.parser import check_flags
from .launch.flags.spec import (
    DEFAULT_MAX_WALL,
    AviaryWarning,
    Demands,
    Executor,
    ReplaySpec,
    RunFailed,
    Runtime,
    Sample,
    UsageError,
    Workload,
    check_field,
)
from .launch.replay.provenance import python_call
from .launch.replay.resolve import setup_replay
from .launch.replay.run import run_replay
from .launch.results.compare import comparison_data, load_comparison
from .launch.results.frames import table_frame

if TYPE_CHECKING:
    import pandas

__all__ = [
    "AviaryWarning",
    "ReplaySpec",
    "Run",
    "RunFailed",
    "UsageError",
    "compare",
    "rebuild",
    "replay",
]


@dataclass(frozen=True)
class Run:
    """A finished replay: its results folder and what it holds."""

    folder: Path
    summary: dict[str, Any] = field(repr=False)
    """``summary.json``: JCT percentiles by class, makespan, utilization, messages, counters, provenance."""

    @classmethod
    def load(cls, folder: str | Path) -> "Run":
        """A run from its results folder (written by ``aviary replay`` or :func:`replay`); a partial run
        (cut short, interrupted, still running) is loaded with a warning, :attr:`partial`."""
        run = cls(Path(folder), read_summary(folder))
        if run.partial is not None:
            warnings.warn(f"{folder}: {run.partial}", AviaryWarning, stacklevel=2)
        return run

    @property
    def partial(self) -> str | None:
        """One line saying that the run's results are partial and why (cut short, read from its journal;
        interrupted; still running), or None for a run that ran to its end."""
        return partial_note(self.summary)

    @property
    def jobs(self) -> list[JobRecord]:
        """The job table (``jobs.csv``): id, class, tasks, submit, first start, finish, and ``jct``."""
        return read_jobs(self.folder)

    def jobs_frame(self) -> "pandas.DataFrame":
        """The job table as a pandas frame: ``job_id``, ``class``, ``tasks``, the times in replay seconds
        (``submit_replay_s``, ``first_start_replay_s``, ``finish_replay_s``, ``jct_replay_s``; NaN where
        none) and ``policy``; integers ``int64``, times ``float64``, text categorical
        (:mod:`aviary.launch.results.frames`)."""
        return table_frame(self.folder, "jobs")

    def tasks_frame(self) -> "pandas.DataFrame":
        """The task table (``tasks.csv``, :mod:`aviary.common.tasktable`) as a pandas frame: one row per
        run of a task on a node, with ``job_id``, ``task``, ``stage``, ``node``, ``attempt``, ``outcome``,
        ``submit``, ``placed``, ``start``, ``finish`` and ``preemptions``."""
        return table_frame(self.folder, "tasks")

    @property
    def metrics(self) -> dict[str, float | None]:
        """The run's family figures by name (makespan, utilization, Jain's index, SLO attainment...)."""
        return {m.name: m.value for m in self.figures}

    @property
    def figures(self) -> list[Metric]:
        return family_metrics(self.summary)


SPEC_FIELDS = tuple(f.name for f in fields(ReplaySpec))
P = ParamSpec("P")
R = TypeVar("R")


def _suggesting_names(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` refusing an unknown keyword with the name it may have meant (``polcy``: ``policy``)."""
    names = [p.name for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY]

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        for name in kwargs:
            if name not in names:
                close = difflib.get_close_matches(name, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise TypeError(f"{function.__name__}() got an unknown parameter {name!r}{hint}")
        return function(*args, **kwargs)

    return call


@_suggesting_names
def replay(
    spec: ReplaySpec | None = None,
    /,
    *,
    # ReplaySpec's fields, in its order and with its types and defaults (tests/test_api_signature.py holds
    # them equal; AVIARY_UPDATE_API=1 writes them anew); a path may be a str, params None for none.
    # -- generated from ReplaySpec: begin
    policy: str = "sparrow",
    trace: str | Path = GOOGLE_TRACE,
    workload: Workload = "google",
    runtime: Runtime = "real",
    nodes: int = 10,
    nodes_per_process: int = 1,
    keys: bool = True,
    transport: str = "zmq",
    slots: int = 1,
    schedulers: int = 2,
    executor: Executor = "timer",
    seed: int = 0,
    jobs: int | None = None,
    sample: Sample = "consecutive",
    start: int | None = None,
    task_scale: float | None = None,
    reference_nodes: int = 10000,
    load: float | None = None,
    keep_arrivals: bool = False,
    batch: bool = False,
    cutoff: float | None = None,
    misestimate: tuple[float, float] | None = None,
    net_delay: float = 0.0005,
    stall_timeout: float | None = None,
    duration: float | None = None,
    max_wall: float | None = DEFAULT_MAX_WALL,
    yes: bool = False,
    connect: str | Path | None = None,
    out: str | Path | None = None,
    force: bool = False,
    task_table: bool = True,
    stream: bool | None = None,
    demands: Demands = "synth",
    capacity: Resources | None = None,
    time_scale: float | None = None,
    fail: str | None = None,
    liveness_period: float = LIVENESS_PERIOD,
    liveness_misses: int = LIVENESS_MISSES,
    dashboard: int | None = None,
    dashboard_address: str = "127.0.0.1",
    gshet: str | None = None,
    tpch_mix: str | None = None,
    params: dict[str, Any] | None = None,
    # -- generated from ReplaySpec: end
    quiet: bool = True,
) -> Run:
    """Run one replay, on the simulator or on real processes, and return its :class:`Run`.

    The keywords are the fields of :class:`~aviary.launch.flags.spec.ReplaySpec`, the flags of ``aviary
    replay`` (``time_scale`` for ``--time-scale``; ``params``: the policy's declared parameters), with
    their defaults and meanings; or pass a ``ReplaySpec`` (not both). ``quiet``: no progress bar and no
    prediction on the console (the default here).

    A value of the wrong type is one ``TypeError`` naming its parameter (a path may be a ``str``, a float
    an int, a pair a list, as the command line converts its text); a value the command line refuses is
    one :class:`~aviary.launch.flags.spec.UsageError`, a ``ValueError``, with its one-line message; what
    it warns of (an overloaded ``load``...) is an :class:`~aviary.launch.flags.spec.AviaryWarning`. The
    run's ``summary.json`` records the call (``extra.command``: ``aviary.replay(policy='drf', jobs=40)``,
    the keywords that differ from their defaults)."""
    values = {name: value for name, value in locals().items() if name in SPEC_FIELDS}
    if values["params"] is None:
        values["params"] = {}
    if spec is not None:
        if _given(values):
            raise TypeError("replay() takes a ReplaySpec or keywords, not both")
        if not isinstance(spec, ReplaySpec):
            raise TypeError(f"replay() argument 'spec' must be a ReplaySpec, not {type(spec).__name__}")
        values = {name: getattr(spec, name) for name in SPEC_FIELDS}
    checked = {name: check_field(name, value, caller="replay()") for name, value in values.items()}
    _check_bool("quiet", quiet)
    given = _given(checked)  # as converted: jobs=40 for numpy's 40, a Path for a str
    try:
        spec = ReplaySpec(**checked)
        # the command line's checks between flags, and its warnings: one source, in the grammar's module
        for warning in check_flags(Namespace(command="replay", given=set(given), **checked)):
            warnings.warn(_in_python(warning), AviaryWarning, stacklevel=3)  # at the caller (past call())
        setup = setup_replay(spec, quiet=quiet)
        setup.extra["command"] = python_call("aviary.replay", given)
        run_replay(setup, quiet=quiet)
    except UsageError as exc:
        raise UsageError(_in_python(str(exc))) from None
    return Run(setup.out, read_summary(setup.out))  # summary.json as written (run_replay's adds the timings)


DEFAULTS = {f.name: f.default for f in fields(ReplaySpec)} | {"params": {}}


def _given(values: dict[str, Any]) -> dict[str, Any]:
    """The values that are not their field's default (the same value of the same type)."""
    return {
        name: value
        for name, value in values.items()
        if not (type(value) is type(DEFAULTS[name]) and value == DEFAULTS[name])
    }


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"replay() argument {name!r} must be bool, not {type(value).__name__} {value!r}")


FLAG = re.compile(r"(?:argument )?--([a-z][a-z0-9-]*)(?: ([^\s:]+))?:")


def _in_python(message: str) -> str:
    """A message of the command line as it reads from Python: ``--load 1.5: ...`` -> ``load=1.5: ...``,
    ``argument --misestimate: ...`` -> ``misestimate: ...`` (the field's name for its flag's)."""
    m = FLAG.match(message)
    if m is None or m[1].replace("-", "_") not in SPEC_FIELDS:
        return message
    name = m[1].replace("-", "_")
    return (f"{name}={m[2]}:" if m[2] else f"{name}:") + message[m.end() :]


def rebuild(folder: str | Path) -> Run:
    """Write ``jobs.csv`` and ``summary.json`` of a run that never reached its end from its journal, and
    return it (:func:`~aviary.common.results.rebuild_results`; ``ResultsError`` when the folder has its
    summary already, no journal, or its run is still running)."""
    return Run(Path(folder), rebuild_results(folder))


def compare(*runs: Run | str | Path, force: bool = False) -> dict[str, Any]:
    """``aviary compare --json`` of ``runs`` (the first is the baseline) as a dict: ``rows`` (each with
    ``class``, ``figure``, the baseline's value and every other run's ratio to it, and whether higher is
    better), ``factors_of_improvement``, ``workload``, ``warnings``."""
    folders = [r.folder if isinstance(r, Run) else Path(r) for r in runs]
    return comparison_data(load_comparison(folders, force=force))
