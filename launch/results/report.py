"""``aviary report RUN [RUN ...] --html FILE``: a finished run, or several side by side, or a sweep, as
one self-contained HTML page to send a colleague (issue 29).

The page needs no server and no network to open: Bokeh's JavaScript is inlined (``bokeh.resources.INLINE``,
about 1 MB), the data are in the page. Bokeh is the library Dask's dashboard is built on, and the live
dashboard of a running testbed is meant to draw the same charts. For each run: jobs submitted and
finished over time, the JCT distribution (a CDF, log x), each resource's utilization over time where the
run logged its tasks' demands, SLO attainment where it has SLOs; its summary figures
(:func:`~aviary.common.results.family_metrics`), its workload's provenance
(:func:`~aviary.launch.replay.provenance.describe_workload`, the software versions) and the command that made
it. Several runs: the comparison table of ``aviary compare``, normalized to the first. A sweep's folder
(``sweep.csv``): its table, its figures and each setting's comparison.

A run that never reached its end (killed: a folder with a journal and no ``summary.json``) is read from its
journal as a partial run, said so in one line (on the page and on standard error), and its ``jobs.csv`` and
``summary.json`` are rebuilt from the journal into its folder
(:func:`~aviary.common.results.rebuild_results`) unless it is still running.
"""

from __future__ import annotations

import base64
import csv
import html
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...common.journal import JOURNAL
from ...common.results import (
    JOBS_CSV,
    JOBS_HEADER,
    RUNNING,
    SUMMARY_JSON,
    JobRecord,
    ResultsError,
    family_metrics,
    partial_note,
    read_jobs,
    read_summary,
    rebuild_results,
)
from ..flags.spec import UsageError
from ..replay.provenance import describe_workload
from .compare import CompareError, comparison_rows, load_comparison

RESOURCE_DASH = {"cores": "solid", "mem": "dotted", "disk": "dashed", "net": "dashdot"}
TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")


def run_color(i: int) -> str:
    """Run ``i``'s colour, as in ``aviary compare``'s figure: the baseline black, then matplotlib's."""
    return "black" if i == 0 else TAB10[(i - 1) % len(TAB10)]


WIDTH, HEIGHT = 560, 320
TOOLS = "pan,wheel_zoom,box_zoom,reset,save,hover"


def _say(line: str) -> None:
    print(f"aviary report: {line}", file=sys.stderr)


def _read(folder: Path, say: Callable[[str], None] = _say) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """A run's summary and ``jobs.csv`` rows; a run that never reached its end is read from its journal
    (and its files rebuilt, unless it still runs), with one line saying so."""
    cut = not (folder / SUMMARY_JSON).exists() and (folder / JOURNAL).is_file()
    try:
        summary = read_summary(folder)
    except ResultsError as exc:
        raise UsageError(f"{folder}: not a results folder ({exc})") from None
    note = partial_note(summary)
    if cut and summary["extra"].get("interrupted_by") != RUNNING:
        try:
            summary = rebuild_results(folder)
            note = f"{note}; rebuilt {JOBS_CSV} and {SUMMARY_JSON} from it"
        except (OSError, ResultsError) as exc:
            note = f"{note}; not rebuilt ({exc})"
    if note is not None:
        say(f"{folder}: {note}")
    if cut and not (folder / JOBS_CSV).is_file():  # still running: its journal's jobs
        return summary, [dict(zip(JOBS_HEADER, _row(r), strict=True)) for r in read_jobs(folder)]
    try:
        with open(folder / JOBS_CSV, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError:
        rows = []
    return summary, rows


def _row(r: JobRecord) -> list[str]:
    """A job's ``jobs.csv`` row."""
    times = ("" if x is None else f"{x:.6f}" for x in (r.submit, r.first_start, r.finish, r.jct))
    return [str(r.job_id), r.cls, str(r.tasks), *times, r.policy]


def command_of(summary: dict[str, Any]) -> str:
    """The command that made the run: recorded by ``aviary replay``, or a sweep cell's flags."""
    extra = summary.get("extra") or {}
    if extra.get("command"):
        return str(extra["command"])
    sweep = extra.get("sweep") or {}
    if sweep.get("flags"):
        return "aviary replay " + " ".join(map(str, sweep["flags"]))
    return "not recorded (a run made before aviary recorded its command, or through the Python API)"


def _float(row: dict[str, str], key: str) -> float | None:
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return None


def _figure(title: str, x_label: str, y_label: str, **kw: Any) -> Any:
    from bokeh.plotting import figure

    return figure(
        width=WIDTH, height=HEIGHT, title=title, x_axis_label=x_label, y_axis_label=y_label, tools=TOOLS, **kw
    )


def jobs_over_time(names: list[str], runs: list[list[dict[str, str]]]) -> Any:
    """Jobs submitted (dashed) and finished (solid) so far, per run, over the replay clock."""
    fig = _figure("jobs over time", "replay time (s)", "jobs")
    lines = (("submit_replay_s", "dashed", "submitted"), ("finish_replay_s", "solid", "finished"))
    for i, (name, rows) in enumerate(zip(names, runs, strict=True)):
        for key, dash, what in lines:
            times = sorted(t for r in rows if (t := _float(r, key)) is not None)
            if times:
                ys = list(range(len(times) + 1))
                label = f"{name} {what}"
                fig.step(
                    [0.0, *times], ys, mode="after", color=run_color(i), line_dash=dash, legend_label=label
                )
    fig.legend.location = "top_left"
    return fig


def jct_cdf(names: list[str], runs: list[list[dict[str, str]]]) -> Any:
    """Each run's CDF of job completion times (finished jobs), log x when every JCT is positive."""
    from bokeh.models import Range1d

    jcts = [sorted(j for r in rows if (j := _float(r, "jct_replay_s")) is not None) for rows in runs]
    log = all(j and j[0] > 0 for j in jcts)
    x_axis = "log" if log else "linear"
    fig = _figure("job completion time, CDF", "JCT (replay s)", "fraction of jobs", x_axis_type=x_axis)
    fig.y_range = Range1d(start=0, end=1)
    for i, (name, xs) in enumerate(zip(names, jcts, strict=True)):
        if xs:
            ys = [(k + 1) / len(xs) for k in range(len(xs))]
            fig.step(xs, ys, mode="after", color=run_color(i), legend_label=name)
    fig.legend.location = "bottom_right"
    return fig


def utilization(names: list[str], summaries: list[dict[str, Any]]) -> Any | None:
    """Each resource's utilization over time per run (click a legend entry to hide it); None when no
    run has it."""
    series = [s.get("utilization_over_time") for s in summaries]
    if not any(series):
        return None
    fig = _figure("utilization over time", "replay time (s)", "% of capacity")
    for i, (name, s) in enumerate(zip(names, series, strict=True)):
        for resource, dash in RESOURCE_DASH.items():
            if s and s.get(resource) and max(s[resource]) > 0.01:
                ys = [100 * x for x in s[resource]]
                fig.line(s["t"], ys, color=run_color(i), line_dash=dash, legend_label=f"{name} {resource}")
    fig.legend.location = "top_right"
    fig.legend.click_policy = "hide"
    return fig


def slo_bars(names: list[str], summaries: list[dict[str, Any]]) -> Any | None:
    """SLO attainment (all, accepted, no reservation) of each run; None unless every run has SLOs."""
    from bokeh.models import ColumnDataSource, FactorRange, Range1d

    kinds = ("all", "accepted", "no_reservation")
    values = [s.get("slo_attainment") for s in summaries]
    if not all(isinstance(v, dict) for v in values):
        return None
    factors = [(k, n) for k in kinds for n in names]
    heights = [100 * ((values[names.index(n)] or {}).get(k) or 0.0) for k, n in factors]
    colors = [run_color(names.index(n)) for _, n in factors]
    fig = _figure("SLO attainment (%)", "", "% of SLO jobs", x_range=FactorRange(factors=factors))
    fig.y_range = Range1d(start=0, end=100)
    fig.vbar(x="x", top="top", width=0.8, color="color",
             source=ColumnDataSource({"x": factors, "top": heights, "color": colors}))  # fmt: skip
    fig.xaxis.major_label_orientation = 0.8
    return fig


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


STYLE = (
    "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#eee}"
    "code{background:#f4f4f4;padding:1px 4px}</style>"
)


def run_section(name: str, summary: dict[str, Any]) -> str:
    """A run's summary figures, its workload and the command, as HTML."""
    jct = (summary.get("jct") or {}).get("all") or {}
    head = [
        ("jobs finished", f"{summary.get('finished')}/{summary.get('jobs')}"),
        *((f"JCT {q}", f"{jct[q]:,.3f} replay s") for q in ("p50", "p90", "p99") if jct.get(q) is not None),
    ]
    rows = head + [(m.name, m.shown()) for m in family_metrics(summary)]
    record = summary.get("workload")
    workload = describe_workload(record) if isinstance(record, dict) else "workload not recorded"
    versions = (record or {}).get("versions") or {}
    git = versions.get("git") or {}
    built = ", ".join(f"{k} {v}" for k, v in versions.items() if k != "git")
    commit = f"{git.get('commit', '?')[:12]}{' (with changes)' if git.get('dirty') else ''}" if git else "?"
    note = partial_note(summary)
    return (
        f"<h2>{html.escape(name)}: {html.escape(str(summary.get('policy')))}, "
        f"{html.escape(str(summary.get('runtime')))}</h2>"
        + (f"<p><b>partial run</b>: {html.escape(note)}</p>" if note else "")
        + _table(["figure", "value"], rows)
        + f"<p><b>workload</b>: {html.escape(workload)}</p>"
        + f"<p><b>command</b>: <code>{html.escape(command_of(summary))}</code></p>"
        + f"<p><b>software</b>: aviary at {html.escape(commit)}; {html.escape(built)}</p>"
    )


def comparison_section(folders: list[Path]) -> str:
    """``aviary compare``'s table, normalized to the first run (empty for one run)."""
    if len(folders) < 2:
        return ""
    try:
        comp = load_comparison(folders)
    except CompareError as exc:
        return f"<p>not compared: {html.escape(str(exc))}</p>"
    names = [comp.name(i) for i in range(len(folders))]
    rows = [
        [r.cls, r.figure, r.shown, *("n/a" if x is None else f"{x:.3f}" for x in r.ratios)]
        for r in comparison_rows(comp)
    ]
    return f"<h2>Each run over {html.escape(names[0])}</h2><p>{html.escape(comp.workload())}</p>" + _table(
        ["class", "figure", names[0], *(f"{n} / {names[0]}" for n in names[1:])], rows
    )


def runs_page(folders: list[Path]) -> tuple[str, list[Any]]:
    """The page's HTML and its figures for runs side by side."""
    read = [_read(f) for f in folders]
    summaries, rows = [s for s, _ in read], [r for _, r in read]
    names = [f.name or str(f) for f in folders]
    if len(set(names)) < len(names):
        names = [str(f) for f in folders]
    figures = [jobs_over_time(names, rows), jct_cdf(names, rows)]
    figures += [f for f in (utilization(names, summaries), slo_bars(names, summaries)) if f is not None]
    text = comparison_section(folders) + "".join(
        run_section(n, s) for n, s in zip(names, summaries, strict=True)
    )
    return text, figures


def sweep_page(folder: Path) -> tuple[str, list[Any]]:
    """A sweep's table (``sweep.csv``) and its figures (PNG, inlined)."""
    with open(folder / "sweep.csv", newline="") as f:
        table = list(csv.reader(f))
    images = "".join(
        f'<p><img alt="{html.escape(p.name)}" style="max-width:100%" '
        f'src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}"></p>'
        for p in sorted(folder.glob("*.png"))
    )
    text = (
        f"<h2>sweep {html.escape(folder.name)}</h2>" + (_table(table[0], table[1:]) if table else "") + images
    )
    return text, []


def write_report(paths: Sequence[Path], out: Path) -> Path:
    """Write the page for ``paths`` (results folders, or one sweep folder) to ``out``; return it."""
    from bokeh.embed import file_html
    from bokeh.layouts import column, gridplot
    from bokeh.models.widgets import Div
    from bokeh.resources import INLINE

    folders = [Path(p) for p in paths]
    if not folders:
        raise UsageError("report: name at least one results folder")
    sweep = len(folders) == 1 and (folders[0] / "sweep.csv").is_file()
    text, figures = sweep_page(folders[0]) if sweep else runs_page(folders)
    title = f"Aviary: {', '.join(f.name for f in folders)}"
    parts: list[Any] = [Div(text=STYLE + f"<h1>{html.escape(title)}</h1>", sizing_mode="stretch_width")]
    if figures:
        parts.append(gridplot(figures, ncols=2, toolbar_location="right"))
    parts.append(Div(text=STYLE + text, sizing_mode="stretch_width"))  # each Div is styled on its own
    page = file_html(column(*parts, sizing_mode="stretch_width"), INLINE, title)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page)
    except OSError as exc:
        raise UsageError(f"{out}: cannot write the report: {exc.strerror or exc}") from None
    return out
