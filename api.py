"""Aviary from Python: replay and compare in a notebook or a script, with the parameters of the command line.

    from aviary import compare, replay

    drf = replay(policy="drf", workload="tpch", runtime="sim", jobs=40, nodes=20)
    tetris = replay(policy="tetris", workload="tpch", runtime="sim", jobs=40, nodes=20)
    tetris.summary["mean_jct"] / drf.summary["mean_jct"]      # below 1: Tetris is better
    [j.jct for j in tetris.jobs][:5]                          # the job table (jobs.csv)
    compare(drf, tetris)["rows"]                              # aviary compare --json, as data

:func:`replay` takes the fields of :class:`~aviary.launch.flags.spec.ReplaySpec` as keywords — the same names,
defaults and checks as ``aviary replay``'s flags, declared once there (``time_scale=`` for
``--time-scale``, ``params={"probe_ratio": 3}`` for a policy's parameters), or a ``ReplaySpec`` itself
for type checking. It writes the run's folder as the command does (``results/<workload>-<policy>-...``
unless ``out=``) and returns a :class:`Run`: its folder, ``summary.json`` as a dict, the job table and
its family's headline figures. :func:`compare` reads runs (or folders) as ``aviary compare`` does.
Bad values raise :class:`~aviary.launch.flags.spec.UsageError` with the command line's one-line messages;
a run stopped by a core's exception (a policy's bug) :class:`~aviary.launch.flags.spec.RunFailed`, after
its partial results are written.

A run that never reached its end (killed outright: its folder holds a journal and no ``summary.json``)
loads as a partial run: :attr:`Run.partial` is the one line that says so (``Run.load`` warns it too), its
summary and jobs are what its journal holds, and :func:`rebuild` writes its ``jobs.csv`` and
``summary.json`` from the journal.
"""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .common.results import (
    JobRecord,
    Metric,
    family_metrics,
    partial_note,
    read_jobs,
    read_summary,
    rebuild_results,
)
from .launch.flags.spec import ReplaySpec, RunFailed, UsageError
from .launch.replay.resolve import setup_replay
from .launch.replay.run import run_replay
from .launch.results.compare import comparison_data, load_comparison

__all__ = ["ReplaySpec", "Run", "RunFailed", "UsageError", "compare", "rebuild", "replay"]


@dataclass(frozen=True)
class Run:
    """A finished replay: its results folder and what it holds."""

    folder: Path
    summary: dict[str, Any] = field(repr=False)
    """``summary.json``: JCT percentiles by class, makespan, utilization, messages, counters, provenance."""

    @classmethod
    def load(cls, folder: str | Path) -> Run:
        """A run from its results folder (written by ``aviary replay`` or :func:`replay`); a partial run
        (cut short, interrupted, still running) is loaded with a warning, :attr:`partial`."""
        run = cls(Path(folder), read_summary(folder))
        if run.partial is not None:
            warnings.warn(f"{folder}: {run.partial}", stacklevel=2)
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

    @property
    def metrics(self) -> dict[str, float | None]:
        """The run's family figures by name (makespan, utilization, Jain's index, SLO attainment...)."""
        return {m.name: m.value for m in self.figures}

    @property
    def figures(self) -> list[Metric]:
        return family_metrics(self.summary)


SPEC_FIELDS = tuple(f.name for f in fields(ReplaySpec))


def replay(spec: ReplaySpec | None = None, /, *, quiet: bool = True, **values: Any) -> Run:
    """Run one replay, on the simulator or on real processes, and return its :class:`Run`.

    ``values`` are :class:`ReplaySpec` fields (``policy``, ``workload``, ``runtime``, ``nodes``, ``jobs``,
    ``load``, ``seed``, ``out``, ``params``...); or pass a ``ReplaySpec``. ``quiet``: no progress bar and
    no prediction on the console (the default here)."""
    if spec is not None and values:
        raise TypeError("replay() takes a ReplaySpec or keywords, not both")
    if spec is None:
        for name in values:
            if name not in SPEC_FIELDS:
                close = difflib.get_close_matches(name, SPEC_FIELDS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise TypeError(f"replay() got an unknown parameter {name!r}{hint}")
        for name in ("trace", "connect", "out"):
            if isinstance(values.get(name), str):
                values[name] = Path(values[name])
        spec = ReplaySpec(**values)
    setup = setup_replay(spec, quiet=quiet)
    run_replay(setup, quiet=quiet)
    return Run(setup.out, read_summary(setup.out))  # summary.json as written (run_replay's adds the timings)


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
