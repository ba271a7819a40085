"""``aviary sweep SPEC.toml``: a grid of simulated replays, one results folder per cell, resumable, on
every local core or on a Dask distributed cluster, then one combined table and normalized figures.

The spec (:mod:`.spec`) names the flags every cell shares and the axes to vary. Each cell is one ``aviary
replay --runtime sim`` (:func:`run_cell`: :func:`~aviary.launch.replay.resolve.setup_replay` and
:func:`~aviary.launch.replay.run.run_replay` in a worker process, into a scratch folder); its ``jobs.csv``
and ``summary.json`` come back to this process as text and are written into ``OUT/<cell>/`` atomically,
``jobs.csv`` first (:func:`write_cell`), so the workers of a cluster need no shared filesystem and a cell
cut short (Ctrl-C, a crash, a killed worker) leaves nothing behind. The summary's ``extra.sweep`` records
the cell's flags: a cell whose ``summary.json`` holds the same flags (and was not interrupted) is done and
skipped (:func:`cell_done`), so re-running the command resumes the sweep.

Locally the cells run in a pool of ``--workers`` processes (default: every core); with ``--cluster
ADDRESS`` they are submitted to a running Dask distributed scheduler instead (:func:`run_on_cluster`).
The end: ``OUT/sweep.csv`` and ``OUT/sweep.md`` (one row per cell: its values, p50/p90/p99 per class,
mean JCT, makespan, utilization, SLO attainment where present) and, with a ``baseline`` policy,
``OUT/normalized.csv`` and the figure (each metric of a cell / the baseline cell's at the same other
values, as ``aviary compare``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ...common.results import JOBS_CSV, SUMMARY_JSON, ResultsError, atomic_write
from ..flags.spec import UsageError
from .estimate import SECONDS_PER_TASK, Estimates, cell_tasks, duration, summary_seconds
from .spec import Cell, Sweep, load_sweep, shown

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "CellOutput",
    "SweepReport",
    "cell_done",
    "dask_distributed",
    "run_cell",
    "run_sweep",
    "write_cell",
]

ROOT = Path(__file__).resolve().parents[2]
CLASSES = ("short", "long", "all")
PCTS = ("p50", "p90", "p99")
LOWER_BETTER = (*(f"{c}_{q}" for c in CLASSES for q in PCTS), "mean_jct", "makespan")
"""The metrics normalized to the baseline (below 1 is better)."""
COLUMNS = ("finished", "jobs", *LOWER_BETTER, "utilization", "slo_attainment", "be_mean_latency", "wall_s")


@dataclass
class CellOutput:
    """What a worker sends back: the cell's results files, as text."""

    name: str
    jobs_csv: str
    summary_json: str
    seconds: float


def run_cell(cell: Cell, scratch: Path | None = None) -> CellOutput:
    """Run one cell (a simulated replay, quiet) in a scratch folder (under ``scratch``, else the
    system's); return its results files. The summary's ``extra.sweep`` records the cell (its name,
    values and flags)."""
    from rich.console import Console

    from ..flags.parser import build_parser, preload_policy
    from ..flags.spec import ReplaySpec
    from ..replay.resolve import setup_replay
    from ..replay.run import run_replay

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="aviary-sweep-", dir=scratch) as tmp:
        preload_policy(cell.flags)  # a plug-in's parameters are flags of this worker's parser too
        args = build_parser().parse_args(["replay", *cell.flags, "--quiet", "--out", tmp])
        setup = setup_replay(ReplaySpec.from_args(args), quiet=True)
        setup.extra["sweep"] = {"cell": cell.name, "values": cell.values, "flags": cell.flags}
        setup.task_table = False  # a cell's jobs.csv and summary.json come back; its task table would not
        run_replay(setup, quiet=True, console=Console(file=io.StringIO()))
        jobs = (Path(tmp) / JOBS_CSV).read_text()
        summary = (Path(tmp) / SUMMARY_JSON).read_text()
    return CellOutput(cell.name, jobs, summary, time.perf_counter() - started)


def write_cell(folder: Path, out: CellOutput) -> None:
    """Write a cell's results into ``folder``: ``jobs.csv`` then ``summary.json``, each atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / JOBS_CSV, out.jobs_csv)
    atomic_write(folder / SUMMARY_JSON, out.summary_json)


def read_cell(folder: Path) -> dict[str, Any] | None:
    """The cell's summary, None when it has none (or an unreadable one)."""
    try:
        summary = json.loads((folder / SUMMARY_JSON).read_text())
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def cell_done(folder: Path, cell: Cell) -> bool:
    """Whether ``folder`` holds the finished results of ``cell``: a ``summary.json`` recording the same
    flags, not interrupted, beside a ``jobs.csv``."""
    summary = read_cell(folder)
    if summary is None or not (folder / JOBS_CSV).is_file():
        return False
    extra = summary.get("extra") or {}
    return (extra.get("sweep") or {}).get("flags") == cell.flags and not extra.get("interrupted")


def dask_distributed() -> ModuleType:
    """Dask's ``distributed`` package. The repository's own ``distributed/`` folder (the probe-based
    schedulers, ``aviary.distributed``) would shadow it when the repository root is on ``sys.path``
    (``python -m ...`` run from the root): such entries are dropped from ``sys.path`` first, for good,
    since the processes a local Dask cluster spawns inherit it."""
    loaded = sys.modules.get("distributed")
    if loaded is not None and hasattr(loaded, "Client"):
        return loaded
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
    if loaded is not None:
        del sys.modules["distributed"]
    try:
        import distributed
    except ImportError:
        raise UsageError(
            "--cluster needs Dask distributed: pip install 'dask[distributed]' (scripts/setup.sh installs it)"
        ) from None
    return distributed


OnResult = Callable[[Cell, "CellOutput | BaseException"], None]


def _init_worker() -> None:
    """Pool workers: Ctrl-C stops the cell a worker runs (the replay's own handler), not an idle one;
    what an interrupted replay prints goes nowhere (its results are dropped)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the worker's for its life)


def run_local(cells: Sequence[Cell], workers: int, on_result: OnResult, scratch: Path | None = None) -> None:
    """Run the cells in a pool of ``workers`` processes; ``on_result`` gets each one's output (or the
    exception it raised) as it finishes. Interrupted (KeyboardInterrupt), the running cells are killed at
    once (their results would be dropped anyway: a cell counts only once its output is written here) and
    the queued ones cancelled; the cells' scratch folders live under ``scratch`` (made here, removed at
    the end), so a killed cell leaves nothing behind."""
    ctx = multiprocessing.get_context("spawn")  # no fork of a process with threads (rich's refresh)
    root = Path(tempfile.mkdtemp(prefix="aviary-sweep-", dir=scratch))
    pool = ProcessPoolExecutor(min(workers, len(cells)), mp_context=ctx, initializer=_init_worker)
    try:
        pending: dict[Future[CellOutput], Cell] = {pool.submit(run_cell, c, root): c for c in cells}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                cell = pending.pop(fut)
                exc = fut.exception()
                on_result(cell, fut.result() if exc is None else exc)
        pool.shutdown(wait=True)
    except BaseException:
        procs = [p for p in list(getattr(pool, "_processes", {}).values()) if p.is_alive()]
        for proc in procs:
            proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.join()
        raise
    finally:
        shutil.rmtree(root, ignore_errors=True)


CONNECT_TIMEOUT = "10s"
"""How long :func:`connect` tries to reach a Dask scheduler."""


def connect(address: str) -> Any:
    """A Dask distributed client of the scheduler at ``address`` (one line if there is none)."""
    distributed = dask_distributed()
    try:
        return distributed.Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"--cluster {address}: cannot reach a Dask scheduler there: {exc}") from None


def policy_problems(refs: Sequence[str]) -> list[str]:
    """Why each policy of ``refs`` cannot be loaded in this process (one line each; none when all can)."""
    from ..policies.registry import PolicyError, get_policy

    problems = []
    for ref in refs:
        try:
            get_policy(ref)
        except PolicyError as exc:
            problems.append(str(exc))
    return problems


def check_workers(client: Any, cells: Sequence[Cell]) -> None:
    """Every worker of the Dask cluster can load every policy of the cells (a plug-in must be installed
    on each machine), or one line naming the worker, the policy and what is missing, before any cell
    runs."""
    refs = sorted({c.flags[c.flags.index("--policy") + 1] for c in cells if "--policy" in c.flags})
    for worker, problems in sorted(client.run(policy_problems, refs).items()):
        if problems:
            raise UsageError(f"Dask worker {worker}: {problems[0]}")


def run_on_cluster(cells: Sequence[Cell], client: Any, on_result: OnResult) -> None:
    """Submit the cells to the Dask distributed scheduler of ``client`` (:func:`connect`); ``on_result``
    as :func:`run_local`. Interrupted, the cells not finished are cancelled."""
    distributed = dask_distributed()
    with client:
        run = uuid.uuid4().hex[:8]
        futures = {
            client.submit(run_cell, c, key=f"aviary-sweep-{run}-{c.name}", pure=False, retries=1): c
            for c in cells
        }
        try:
            for fut in distributed.as_completed(futures):
                cell = futures[fut]
                try:
                    result: CellOutput | BaseException = fut.result()
                except Exception as exc:
                    result = exc
                on_result(cell, result)
        except BaseException:
            client.cancel(list(futures))
            raise


@dataclass
class SweepReport:
    """What a sweep did: the cells run, skipped (done before), failed (cell name -> one line)."""

    sweep: Sweep
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    interrupted: str | None = None
    written: list[Path] = field(default_factory=list)


def _progress(total: int, done: int, name: str, enabled: bool) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=30),
        MofNCompleteColumn(),
        TextColumn("cells" + (f" ({done} done before)" if done else "")),
        TextColumn("ETA {task.fields[eta]}"),
        TimeElapsedColumn(),
        disable=not enabled,
        console=Console(stderr=True),
    )
    return progress


def run_sweep(
    sweep: Sweep,
    *,
    workers: int | None = None,
    cluster: str | None = None,
    force: bool = False,
    quiet: bool = False,
) -> SweepReport:
    """Run the sweep's cells not done yet (all of them with ``force``), then write its tables and
    figure. Interrupted (SIGINT, SIGTERM), it stops the running cells and returns with ``interrupted``
    set (the tables are written for the cells done)."""
    from ..replay.progress import StopSignals

    report = SweepReport(sweep)
    todo = []
    estimates = Estimates()  # the ETA: the cells left, each as long as the cells of its kind took
    for cell in sweep.cells:
        if not force and cell_done(sweep.out / cell.name, cell):
            report.skipped.append(cell.name)
            if (seconds := summary_seconds(read_cell(sweep.out / cell.name))) is not None:
                estimates.record(cell, seconds)
        else:
            todo.append(cell)
    left = {cell.name: cell for cell in todo}
    workers = workers or os.cpu_count() or 1

    def eta() -> str:
        seconds = estimates.left(left.values(), workers)
        return "-:--:--" if seconds is None else duration(seconds)

    try:
        sweep.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # load_sweep found it writable; it no longer is
        raise UsageError(f"{sweep.out}: cannot make the sweep's folder: {exc.strerror or exc}") from None
    client = connect(cluster) if cluster is not None and todo else None
    if client is not None:
        try:
            check_workers(client, todo)
        except UsageError:
            client.close()
            raise
    progress = _progress(len(todo), len(report.skipped), f"sweep {sweep.name}", not quiet)
    task = progress.add_task(f"sweep {sweep.name}", total=len(todo), eta=eta())

    def on_result(cell: Cell, result: CellOutput | BaseException) -> None:
        left.pop(cell.name, None)
        if isinstance(result, CellOutput):
            estimates.record(cell, result.seconds)
            write_cell(sweep.out / cell.name, result)
            report.ran.append(cell.name)
            s = json.loads(result.summary_json)
            line = (
                f"{cell.name}: {s.get('finished')}/{s.get('jobs')} jobs, mean JCT {_num(s.get('mean_jct'))}, "
                f"makespan {_num(s.get('makespan'))} ({result.seconds:.1f} s)"
            )
        elif isinstance(result, Exception):
            report.failed[cell.name] = f"{type(result).__name__}: {result}".splitlines()[0]
            line = f"[red]{cell.name}: failed: {report.failed[cell.name]}[/red]"
        else:
            raise result  # KeyboardInterrupt or SystemExit of a worker: the sweep stops
        if not quiet:
            progress.console.print(line, markup=True, highlight=False, soft_wrap=True)
        progress.update(task, advance=1, eta=eta())

    with StopSignals(raise_first=True) as stop, progress:
        try:
            if not todo:
                pass
            elif client is not None:
                run_on_cluster(todo, client, on_result)
            else:
                run_local(todo, workers, on_result)
        except (KeyboardInterrupt, SystemExit):
            report.interrupted = stop.reason or "SIGINT"
    report.written = write_tables(sweep)
    return report


def _num(x: Any, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.{digits}f}"


def metrics(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The table's columns of one cell's summary (None where it has no value)."""
    jct = summary.get("jct") or {}
    row: dict[str, Any] = {"finished": summary.get("finished"), "jobs": summary.get("jobs")}
    for c in CLASSES:
        for q in PCTS:
            row[f"{c}_{q}"] = (jct.get(c) or {}).get(q)
    row["mean_jct"] = summary.get("mean_jct")
    row["makespan"] = summary.get("makespan")
    row["utilization"] = summary.get("utilization")
    row["slo_attainment"] = (summary.get("slo_attainment") or {}).get("all")
    row["be_mean_latency"] = summary.get("be_mean_latency")
    row["wall_s"] = summary.get("wall_seconds")
    return row


def _ratio(a: Any, b: Any) -> float | None:
    return None if a is None or b is None or not b > 0 else a / b


def collect(sweep: Sweep) -> list[tuple[Cell, dict[str, Any]]]:
    """The cells done, in grid order, with their summaries."""
    out = []
    for cell in sweep.cells:
        folder = sweep.out / cell.name
        if cell_done(folder, cell):
            summary = read_cell(folder)
            if summary is not None:
                out.append((cell, summary))
    return out


def normalized(
    sweep: Sweep, rows: Sequence[tuple[Cell, dict[str, Any]]]
) -> list[tuple[Cell, dict[str, Any]]]:
    """Each cell of another policy than the baseline with its :data:`LOWER_BETTER` metrics divided by
    the baseline cell's at the same other values (None: either is missing)."""
    if sweep.baseline is None:
        return []
    base = {cell.others(): metrics(s) for cell, s in rows if shown(cell.values["policy"]) == sweep.baseline}
    out = []
    for cell, s in rows:
        if shown(cell.values["policy"]) == sweep.baseline:
            continue
        b = base.get(cell.others())
        m = metrics(s)
        out.append((cell, {k: None if b is None else _ratio(m[k], b[k]) for k in LOWER_BETTER}))
    return out


def _csv(path: Path, head: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for row in rows:
        w.writerow(["" if v is None else v for v in row])
    atomic_write(path, buf.getvalue())


def write_tables(sweep: Sweep) -> list[Path]:
    """``sweep.csv`` and ``sweep.md`` (and with a baseline ``normalized.csv`` and the figure) of the cells
    done; returns the files written."""
    rows = collect(sweep)
    axes = list(sweep.axes)
    table = [(cell, metrics(s)) for cell, s in rows]
    cols = [c for c in COLUMNS if any(m[c] is not None for _, m in table)]
    written = [sweep.out / "sweep.csv", sweep.out / "sweep.md"]
    values = {c.name: [c.name, *map(shown, c.values.values())] for c in sweep.cells}
    _csv(written[0], ["cell", *axes, *cols], ([*values[c.name], *(m[k] for k in cols)] for c, m in table))
    ratios = normalized(sweep, rows)
    rcols = [k for k in LOWER_BETTER if any(r[k] is not None for _, r in ratios)]
    if ratios:
        path = sweep.out / "normalized.csv"
        _csv(path, ["cell", *axes, *rcols], ([*values[c.name], *(r[k] for k in rcols)] for c, r in ratios))
        written.append(path)
    lines = [
        f"# Sweep {sweep.name}",
        "",
        f"`aviary sweep {sweep.path.name}`: {len(rows)} of {len(sweep.cells)} cells done. Every cell: "
        f"`aviary replay --runtime sim` with {sweep.describe()}; times in seconds of the replay clock.",
        "",
        "| " + " | ".join([*axes, *cols]) + " |",
        "|" + "---|" * (len(axes) + len(cols)),
    ]
    for cell, m in table:
        cells = [shown(v) for v in cell.values.values()]
        cells += [_num(m[k], 3 if k in ("utilization", "slo_attainment") else 1) for k in cols]
        lines.append("| " + " | ".join(cells) + " |")
    if ratios:
        lines += ["", f"## Normalized to {sweep.baseline} at the same other values (below 1 is better)", ""]
        lines += ["| " + " | ".join([*axes, *rcols]) + " |", "|" + "---|" * (len(axes) + len(rcols))]
        for cell, r in ratios:
            shown_r = ["n/a" if r[k] is None else f"{r[k]:.2f}" for k in rcols]
            lines.append("| " + " | ".join([*map(shown, cell.values.values()), *shown_r]) + " |")
        figure = sweep.out / sweep.figure
        fig = normalized_figure(sweep, ratios)
        if fig is not None:
            from ..results.compare import save_figure

            save_figure(fig, figure)
            written.append(figure)
            lines += ["", f"![normalized]({sweep.figure})"]
    atomic_write(written[1], "\n".join(lines) + "\n")
    return written


def _gmean(xs: Sequence[float | None]) -> float | None:
    """Geometric mean of the ratios (None when one is missing)."""
    if not xs or any(x is None or not x > 0 for x in xs):
        return None
    return math.exp(math.fsum(math.log(x) for x in xs if x is not None) / len(xs))


def normalized_figure(sweep: Sweep, ratios: Sequence[tuple[Cell, dict[str, Any]]]) -> Figure | None:
    """One row of panels per policy other than the baseline, one panel per class of jobs with finished
    ones (short, long: p50/p90/p99; all: mean JCT and makespan); on the x axis the values of the other
    axes that vary (the geometric mean over seeds when ``seed`` is an axis); bars of ratios to the
    baseline (:func:`~aviary.launch.results.compare.ratio_bars`: a log axis when they span orders of
    magnitude, ``n/a`` where missing). None when there is nothing to draw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..results.compare import ratio_bars

    policies = list(dict.fromkeys(shown(c.values["policy"]) for c, _ in ratios))
    varying = [k for k, vs in sweep.axes.items() if k not in ("policy", "seed") and len(vs) > 1]
    groups = list(dict.fromkeys(tuple(shown(c.values[k]) for k in varying) for c, _ in ratios))
    panels = [
        (
            cls,
            [k for k in LOWER_BETTER if k.startswith(cls + "_")]
            if cls != "all"
            else ["mean_jct", "makespan"],
        )
        for cls in ("short", "long", "all")
    ]
    panels = [(cls, ks) for cls, ks in panels if any(r[k] is not None for _, r in ratios for k in ks)]
    if not panels or not policies:
        return None
    longest = max((len(f"{a} {v}") for g in groups for a, v in zip(varying, g, strict=True)), default=8)
    per_group = max(0.3 * max(len(ks) for _, ks in panels), 0.07 * longest + 0.2)  # inches: bars, label
    width = max(4.0, 1.5 + per_group * len(groups))
    fig = Figure(figsize=(width * len(panels), 3.6 * len(policies)), layout="constrained")
    FigureCanvasAgg(fig)
    axs = fig.subplots(len(policies), len(panels), squeeze=False)
    seeds = len(sweep.axes.get("seed", [])) > 1
    for i, policy in enumerate(policies):
        mine = [(c, r) for c, r in ratios if shown(c.values["policy"]) == policy]
        for j, (cls, keys) in enumerate(panels):
            series: dict[str, list[float | None]] = {}
            for k in keys:
                label = {"mean_jct": "mean JCT", "makespan": "makespan"}.get(k) or k.split("_")[-1]
                series[label] = [
                    _gmean([r[k] for c, r in mine if tuple(shown(c.values[a]) for a in varying) == g])
                    for g in groups
                ]
            ticks = [
                "\n".join(f"{a} {v}" for a, v in zip(varying, g, strict=True)) or "all cells" for g in groups
            ]
            ax = axs[i][j]
            log = ratio_bars(ax, series, ticks)
            if not log:  # room for the legend above the bars
                ax.set_ylim(0, 1.25 * ax.get_ylim()[1])
            ax.set_title(
                f"{policy} / {sweep.baseline}: {cls} jobs"
                if cls != "all"
                else f"{policy} / {sweep.baseline}: all jobs"
            )
            ax.set_ylabel(f"ratio to {sweep.baseline}" + (" (log scale)" if log else ""))
            ax.legend(fontsize=8, loc="upper center", ncol=len(series))
    over = " (geometric mean over seeds)" if seeds else ""
    fig.suptitle(
        f"Sweep {sweep.name}: each policy / {sweep.baseline} at the same other values{over}, below 1 is "
        f"better\n{sweep.describe()}",
        fontsize=11,
    )
    return fig


def print_plan(sweep: Sweep, workers: int, force: bool = False) -> None:
    """``--dry-run``: each cell, done or to run, with its wall time (taken, or estimated:
    :mod:`aviary.launch.sweep.estimate`), then the whole sweep's estimate on ``workers`` workers."""
    estimates, taken = Estimates(), {}
    for cell in sweep.cells:
        folder = sweep.out / cell.name
        if not force and cell_done(folder, cell):
            seconds = summary_seconds(read_cell(folder))
            taken[cell.name] = seconds
            if seconds is not None:
                estimates.record(cell, seconds)
    total, todo = 0.0, 0
    for cell in sweep.cells:
        command = f"{sweep.out / cell.name}: aviary replay {' '.join(cell.flags)}"
        if cell.name in taken:
            seconds = taken[cell.name]
            print(f"done    {'' if seconds is None else duration(seconds):>9}  {command}")
            continue
        guess = estimates.guess(cell)
        if guess is None:  # no cell of its kind ran: count its tasks
            guess = cell_tasks(cell) * SECONDS_PER_TASK
        total += guess
        todo += 1
        print(f"to run ~{duration(guess):>8}  {command}")
    rate = f"{SECONDS_PER_TASK * 1e6:.0f} µs a task"
    print(
        f"{todo} of {len(sweep.cells)} cells to run: about {duration(total / workers)} on {workers} "
        f"worker{'s' if workers > 1 else ''} (estimated from the cells done, else {rate})"
    )


def main_sweep(
    spec: Path,
    *,
    out: Path | None = None,
    workers: int | None = None,
    cluster: str | None = None,
    force: bool = False,
    quiet: bool = False,
    dry_run: bool = False,
) -> int:
    """``aviary sweep``: returns the exit status (0 all cells done, 1 some failed, 130/143 interrupted)."""
    sweep = load_sweep(spec, out)
    sweep.check_files()
    if dry_run:
        print_plan(sweep, workers or os.cpu_count() or 1, force)
        return 0
    try:
        report = run_sweep(sweep, workers=workers, cluster=cluster, force=force, quiet=quiet)
    except ResultsError as exc:  # a figure or table that cannot be written
        raise UsageError(str(exc)) from None
    except OSError as exc:  # a cell's results that cannot be written (a full disk, a folder gone)
        raise UsageError(f"{exc.filename or sweep.out}: cannot write: {exc.strerror or exc}") from None
    err = sys.stderr
    print(
        f"sweep {sweep.name}: {len(report.ran)} cells run, {len(report.skipped)} already done, "
        f"{len(report.failed)} failed, of {len(sweep.cells)}",
        file=err,
    )
    for name, why in report.failed.items():
        print(f"aviary sweep: error: cell {name}: {why}", file=err)
    print("written: " + ", ".join(str(p) for p in report.written))
    if report.interrupted is not None:
        print(f"aviary sweep: interrupted by {report.interrupted}: run the command again to resume", file=err)
        return 143 if report.interrupted == "SIGTERM" else 130
    return 1 if report.failed else 0
