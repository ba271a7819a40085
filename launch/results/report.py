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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...common.journal import JOURNAL
from ...common.results import (
    CLASSES,
    JOBS_CSV,
    JOBS_HEADER,
    RUNNING,
    SUMMARY_JSON,
    JobRecord,
    ResultsError,
    family_metrics,
    job_classes,
    partial_note,
    read_jobs,
    read_summary,
    rebuild_results,
)
from ..flags.spec import UsageError
from ..replay.provenance import describe_workload
from .compare import CompareError, comparison_rows, load_comparison
from .report_figures import OVER, OVER_ALLOCATED, jct_cdf, jobs_over_time, run_color, slo_bars, utilization

WIDE = 560
"""The least width (px) of a figure's cell on the page; a small (per-resource) one's is :data:`NARROW`."""
NARROW = 440


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


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{c if isinstance(c, Markup) else html.escape(c)}</td>" for c in row) + "</tr>"
        for row in rows
    )
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


class Markup(str):
    """A table cell's HTML, written as is (every other cell is escaped)."""


STYLE = f"""<style>
body{{font-family:system-ui,sans-serif;margin:1em 1.5em;color:#222}}
h1{{font-size:1.5em;margin:.2em 0}} h2{{font-size:1.2em;margin:1.2em 0 .3em}}
p{{margin:.3em 0;max-width:110ch}} .note{{color:#555}}
table{{border-collapse:collapse;margin:.3em 0}}
caption{{text-align:left;font-weight:bold;padding:2px 0;white-space:nowrap}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}} th{{background:#eee}}
td:first-child,th:first-child{{text-align:left}}
code{{background:#f4f4f4;padding:1px 4px;overflow-wrap:anywhere}}
.over{{color:{OVER};font-weight:bold}}
.swatch{{display:inline-block;width:.9em;height:.9em;vertical-align:-.1em;margin-right:.3em;border-radius:2px}}
.grid{{display:grid;gap:12px 20px;grid-template-columns:repeat(auto-fit,minmax(min({WIDE}px,100%),1fr))}}
.grid.small{{grid-template-columns:repeat(auto-fit,minmax(min({NARROW}px,100%),1fr))}}
.grid>div{{min-width:0}}
.runs{{display:grid;gap:0 3em;grid-template-columns:repeat(auto-fit,minmax(min(780px,100%),1fr))}}
.tables{{display:flex;flex-wrap:wrap;gap:0 2.5em;align-items:flex-start}}
</style>"""


def _swatch(i: int) -> str:
    return f'<span class="swatch" style="background:{run_color(i)}"></span>'


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:,.1f} %"


def jct_table(summary: dict[str, Any]) -> str:
    """A run's JCT percentiles per job class of its workload (short, long and all where it has classes,
    :func:`~aviary.common.results.job_classes`)."""
    rows = []
    for cls in job_classes(summary):
        st = (summary.get("jct") or {}).get(cls) or {}
        cells = ("n/a" if st.get(k) is None else f"{st[k]:,.3f}" for k in ("p50", "p90", "p99", "mean"))
        rows.append([cls, f"{st.get('count', 0):,}", *cells])
    return _table(["class", "jobs", "p50", "p90", "p99", "mean"], rows, "job completion time (replay s)")


def resource_table(summary: dict[str, Any]) -> str:
    """Each resource's utilization (what the tasks delivered over the capacity and the makespan) and
    allocation (what they held), the allocation flagged over-allocated above 100 %; "" without them."""
    used, held = summary.get("resource_utilization"), summary.get("resource_allocation")
    if not isinstance(used, dict) or not isinstance(held, dict):
        return ""
    over = {r for r, h in held.items() if isinstance(h, int | float) and h > 1.0}
    flag = Markup(f'<span class="over">{OVER_ALLOCATED}</span>')
    rows = [
        [r, _pct(used[r]), _pct(held.get(r)), *([flag if r in over else ""] if over else [])] for r in used
    ]
    head = ["resource", "used", "held", *([""] if over else [])]
    return _table(head, rows, "resources (mean over the makespan)")


def run_section(i: int, name: str, summary: dict[str, Any]) -> str:
    """Run ``i``'s tables (JCT per job class, its resources, its family's figures), its workload and the
    command, as HTML."""
    by_resource = isinstance(summary.get("resource_allocation"), dict)
    figures = [
        ("jobs finished", f"{summary.get('finished')}/{summary.get('jobs')}"),
        *(
            (m.name, m.shown())
            for m in family_metrics(summary)
            if not (by_resource and m.group == "utilization")
        ),
    ]
    record = summary.get("workload")
    workload = describe_workload(record) if isinstance(record, dict) else "workload not recorded"
    versions = (record or {}).get("versions") or {}
    git = versions.get("git") or {}
    built = ", ".join(f"{k} {v}" for k, v in versions.items() if k != "git")
    commit = f"{git.get('commit', '?')[:12]}{' (with changes)' if git.get('dirty') else ''}" if git else "?"
    note = partial_note(summary)
    tables = jct_table(summary) + resource_table(summary) + _table(["figure", "value"], figures, "run")
    return (
        f'<h2 id="run-{i}">{_swatch(i)}{html.escape(name)}: {html.escape(str(summary.get("policy")))}, '
        f"{html.escape(str(summary.get('runtime')))}</h2>"
        + (f"<p><b>partial run</b>: {html.escape(note)}</p>" if note else "")
        + f'<div class="tables">{tables}</div>'
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


@dataclass
class Page:
    """A report page before it is written: its title, and its parts in order, each HTML or a group of
    Bokeh figures (``(class, figures)``: a grid of ``class`` ``"grid"`` or ``"grid small"``)."""

    title: str
    parts: list[str | tuple[str, list[Any]]] = field(default_factory=list)

    def figures(self) -> list[Any]:
        """Every figure of the page, in order."""
        return [f for p in self.parts if isinstance(p, tuple) for f in p[1]]


def _classes(summaries: Sequence[dict[str, Any]]) -> list[str]:
    """The job classes the runs' figures are drawn for: every class some run has, ``all`` first."""
    seen = {c for s in summaries for c in job_classes(s)}
    return ["all", *(c for c in CLASSES if c != "all" and c in seen)]


def runs_page(folders: list[Path]) -> Page:
    """The page of runs side by side: a key of their colours, the jobs over time and the JCT CDFs (all
    jobs, then each class where the workload has classes), one small utilization plot per resource, SLO
    attainment where every run has SLOs, the comparison table and each run's tables."""
    read = [_read(f) for f in folders]
    summaries, rows = [s for s, _ in read], [r for _, r in read]
    names = [f.name or str(f) for f in folders]
    if len(set(names)) < len(names):
        names = [str(f) for f in folders]
    page = Page(f"Aviary report: {', '.join(names)}")
    key = ", ".join(
        f'<a href="#run-{i}">{_swatch(i)}{html.escape(n)}</a> ({html.escape(str(s.get("policy")))}'
        + (", the baseline)" if i == 0 and len(names) > 1 else ")")
        for i, (n, s) in enumerate(zip(names, summaries, strict=True))
    )
    page.parts.append(f"<p><b>runs</b>: {key}</p>")
    classes = _classes(summaries)
    split = (
        " Short and long jobs (the trace's cutoff) have a plot each."
        if len(classes) > 1
        else " The workload has no short/long classes: all jobs in one plot."
    )
    page.parts.append(
        "<h2>Jobs</h2><p class=note>Click a legend entry to hide that run's line; drag to pan, scroll "
        f"to zoom (tools at the top right of each plot).{split}</p>"
    )
    cdfs = [jct_cdf(names, rows, c) for c in classes]
    page.parts.append(("grid", [jobs_over_time(names, rows), *(f for f in cdfs if f is not None)]))
    usage = utilization(names, summaries)
    if usage:
        over = any(p.name == OVER_ALLOCATED for f in usage for p in f.above)
        page.parts.append(
            "<h2>Utilization by resource</h2><p class=note>What the tasks delivered in each of 100 windows "
            "of the run, as a share of the cluster's capacity; the dashed line is 100 %. Each run's "
            "resources table gives the means: <i>used</i>, what the tasks delivered, and <i>held</i>, the "
            "demand they held while they ran (above <i>used</i> where tasks ran slowed down)."
            + (
                f' <span class="over">Shaded above 100 %: {OVER_ALLOCATED}</span>: the nodes gave tasks more '
                "of the resource than they have (a baseline that counts only cores and memory, as YARN "
                "does, lets them), and those tasks ran slowed down."
                if over
                else ""
            )
            + "</p>"
        )
        page.parts.append(("grid small", usage))
    slo = slo_bars(names, summaries)
    if slo is not None:
        page.parts += ["<h2>SLO attainment</h2>", ("grid", [slo])]
    sections = [comparison_section(folders)]
    sections += [run_section(i, n, s) for i, (n, s) in enumerate(zip(names, summaries, strict=True))]
    page.parts.append('<div class="runs">' + "".join(f"<div>{s}</div>" for s in sections if s) + "</div>")
    return page


def sweep_page(folder: Path) -> Page:
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
    return Page(f"Aviary report: sweep {folder.name}", [text])


def build_report(paths: Sequence[Path]) -> Page:
    """The page for ``paths`` (results folders, or one sweep folder), not yet written."""
    folders = [Path(p) for p in paths]
    if not folders:
        raise UsageError("report: name at least one results folder")
    if len(folders) == 1 and (folders[0] / "sweep.csv").is_file():
        return sweep_page(folders[0])
    return runs_page(folders)


def render(page: Page) -> str:
    """``page`` as one self-contained HTML document (Bokeh's JavaScript inlined)."""
    from bokeh.embed import components
    from bokeh.resources import INLINE

    figures = page.figures()
    script, divs = components(figures) if figures else ("", ())
    cells = iter(divs)
    body = "".join(
        p
        if isinstance(p, str)
        else f'<div class="{p[0]}">' + "".join(f"<div>{next(cells)}</div>" for _ in p[1]) + "</div>"
        for p in page.parts
    )
    head = INLINE.render_js() + INLINE.render_css() if figures else ""
    title = html.escape(page.title)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title>{head}{STYLE}</head>\n<body><h1>{title}</h1>{body}{script}</body></html>\n"
    )


def write_report(paths: Sequence[Path], out: Path) -> Path:
    """Write the page for ``paths`` (results folders, or one sweep folder) to ``out``; return it."""
    page = render(build_report(paths))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page)
    except OSError as exc:
        raise UsageError(f"{out}: cannot write the report: {exc.strerror or exc}") from None
    return out
