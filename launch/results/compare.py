"""``aviary compare``: job completion time percentiles of runs normalized to a baseline.

The form of the thesis' figures 2.5 and 3.2: for each run after the first, and for short and long jobs,
p50/p90/p99 of that run divided by the same percentile of the first (baseline) run; below 1.0 is
better than the baseline. The baseline's raw values (seconds of the replay clock) are shown too. A
class without finished jobs in either run shows ``n/a``. The makespan and the mean JCT over all
finished jobs are normalized the same way when the summaries have them.

Per-job factor of improvement (Carbyne §5.1, Graphene §7): for each job id that finished in both the
baseline and a run, ``baseline JCT / run JCT`` (above 1.0: the run finished that job sooner); the table
shows p10/p50/p90 and the mean of these factors and how many jobs they cover, the chart their CDF on a
log axis. Jobs come from each folder's ``jobs.csv``; a folder without one (summaries committed alone)
shows ``n/a``, runs with no common finished job say so. Jobs with a JCT of 0 in either run are left out
(no finite factor).

Only runs of one workload are compared: each summary's ``workload`` record
(:mod:`aviary.launch.replay.provenance`: trace and its hash, the jobs replayed, scaling, arrivals, load, seed,
nodes and slots) must match the baseline's, else :class:`CompareError` names the first difference;
``force=True`` compares anyway and labels the table and the figure with the differences. The policy and
its parameters may differ. Folders written before the record existed are compared with a warning that
their workload cannot be checked.

The figure's format follows its file name: ``.png`` (300 dpi), ``.pdf`` or ``.svg``. Its title names
the baseline and the workload; a log axis is used when the ratios span more than
:data:`LOG_SPAN` (max / min); a missing ratio is marked ``n/a`` instead of drawn as a bar.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from ...common.journal import JOURNAL
from ...common.results import (
    JOBS_CSV,
    Metric,
    ResultsError,
    family_metrics,
    job_classes,
    partial_note,
    percentile,
    read_jobs,
    read_summary,
    time_scale_of,
    units_note,
)
from ..replay.provenance import describe_workload, workload_differences

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "FIGURE_FORMATS",
    "FOI_STATS",
    "LOG_SPAN",
    "PERCENTILES",
    "TOTALS",
    "CompareError",
    "Comparison",
    "FactorStats",
    "compare",
    "comparison_data",
    "comparison_figure",
    "comparison_rows",
    "comparison_table",
    "factor_stats",
    "factors_of_improvement",
    "figure_format",
    "load_comparison",
    "needs_log_axis",
    "plain_log_ticks",
    "plot_comparison",
    "ratio_bars",
    "save_figure",
]

COMPARED_CLASSES = ("short", "long")
PERCENTILES = ("p50", "p90", "p99")
TOTALS = ("makespan", "mean_jct")
"""Whole-run figures normalized to the baseline, from the summaries."""
FOI_STATS = ("p10", "p50", "p90", "mean")
FIGURE_FORMATS = ("png", "pdf", "svg")
"""Figure formats by file extension."""
PNG_DPI = 300
LOG_SPAN = 30.0
"""Ratios whose max / min exceeds this are drawn on a log axis."""


class CompareError(ResultsError):
    """Results folders that cannot be compared; the message is one line."""


Values = dict[str, dict[str, float | None]]
"""class -> percentile name -> value (None: no finished job of that class)."""


@dataclass(slots=True)
class FactorStats:
    """Per-job factors of improvement of one run over the baseline."""

    count: int
    """Jobs finished (with a JCT > 0) in both runs."""
    p10: float | None = None
    p50: float | None = None
    p90: float | None = None
    mean: float | None = None
    note: str = ""
    """Why there are no factors (``no jobs.csv``, ``no common jobs``), or empty."""

    def get(self, name: str) -> float | None:
        return {"p10": self.p10, "p50": self.p50, "p90": self.p90, "mean": self.mean}[name]


def factors_of_improvement(base: Mapping[int, float], other: Mapping[int, float]) -> list[float]:
    """Sorted ``base[j] / other[j]`` for every job id in both maps of JCTs (s), both > 0."""
    return sorted(base[j] / other[j] for j in base.keys() & other.keys() if base[j] > 0 and other[j] > 0)


def factor_stats(factors: Sequence[float], note: str = "") -> FactorStats:
    """p10/p50/p90 (linear interpolation, as everywhere in the results) and mean of sorted factors."""
    if not factors:
        return FactorStats(count=0, note=note or "no common jobs")
    return FactorStats(
        count=len(factors),
        p10=percentile(factors, 0.10),
        p50=percentile(factors, 0.50),
        p90=percentile(factors, 0.90),
        mean=math.fsum(factors) / len(factors),
    )


@dataclass(slots=True)
class Comparison:
    """Plain data of a comparison: raw baseline percentiles and each other run's ratios to them."""

    dirs: list[Path]
    labels: list[str]
    """One per run, the first is the baseline: the folder name (its full path if names collide)."""
    policies: list[str]
    raw: list[Values]
    """Raw percentiles (s) of every run, baseline first."""
    ratios: dict[str, Values] = field(default_factory=dict)
    """Run label (runs after the first) -> class -> percentile -> other/base, None if n/a."""
    totals: list[dict[str, float | None]] = field(default_factory=list)
    """Every run's ``makespan`` and ``mean_jct`` (s), None when its summary lacks them."""
    total_ratios: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """Run label (runs after the first) -> ``makespan``/``mean_jct`` -> other/base, None if n/a."""
    factors: dict[str, list[float]] = field(default_factory=dict)
    """Run label (runs after the first) -> sorted per-job factors of improvement over the baseline."""
    foi: dict[str, FactorStats] = field(default_factory=dict)
    """Run label (runs after the first) -> percentiles of :attr:`factors`."""
    workloads: list[dict[str, Any] | None] = field(default_factory=list)
    """Every run's workload record (``summary.json``'s ``workload``), None for a folder without one."""
    differs: list[tuple[str, str]] = field(default_factory=list)
    """How the workloads differ (compared anyway, ``force``): what (``seed``) and how (``seed 1 (a) vs
    2 (b)``), in the order of :data:`~aviary.launch.replay.provenance.CHECKED`; empty if they do not."""
    warnings: list[str] = field(default_factory=list)
    """What could not be checked (folders written before the workload record), and interrupted runs."""
    time_scale: float | None = None
    """The baseline's time scale (trace seconds per replay second), None if unrecorded."""
    classes: tuple[str, ...] = COMPARED_CLASSES
    """The job classes compared: short and long for the Google trace, all alone for the DAG and SLO
    workloads (:func:`~aviary.common.results.job_classes` of the baseline)."""
    metrics: list[list[Metric]] = field(default_factory=list)
    """Every run's family figures (:func:`~aviary.common.results.family_metrics`), baseline first."""
    jcts: list[list[float]] = field(default_factory=list)
    """Every run's finished jobs' JCTs (s), sorted (empty without ``jobs.csv``), baseline first."""
    usage: list[dict[str, list[float]] | None] = field(default_factory=list)
    """Every run's ``utilization_over_time`` (runs that log their tasks' demands), baseline first."""

    @property
    def base(self) -> Values:
        return self.raw[0]

    def name(self, i: int) -> str:
        """Label of run ``i`` with its policy when the label does not already say it."""
        label, policy = self.labels[i], self.policies[i]
        return label if label == policy else f"{label} ({policy})"

    def workload(self) -> str:
        """One line naming the baseline's workload (``workload not recorded`` without a record)."""
        record = self.workloads[0] if self.workloads else None
        return "workload not recorded" if record is None else describe_workload(record)

    def differs_note(self) -> str:
        """``workloads differ (compared anyway, --force): <first difference>; also <what else>``, or
        empty."""
        if not self.differs:
            return ""
        also = list(dict.fromkeys(name for name, _ in self.differs[1:]))
        more = f"; also {', '.join(also)}" if also else ""
        return f"workloads differ (compared anyway, --force): {self.differs[0][1]}{more}"


def _ratio(other: float | None, base: float | None) -> float | None:
    if other is None or base is None or not base > 0:
        return None
    return other / base


def _totals(summary: Mapping[str, Any]) -> dict[str, float | None]:
    mean = summary.get("mean_jct")
    if mean is None:  # summaries written before mean_jct was repeated at the top level
        mean = ((summary.get("jct") or {}).get("all") or {}).get("mean")
    return {"makespan": summary.get("makespan"), "mean_jct": mean}


def _finished_jcts(folder: Path) -> dict[int, float] | None:
    """Job id -> JCT of the finished jobs in ``jobs.csv`` (or, without one, its journal's); None when the
    folder has neither."""
    if not (folder / JOBS_CSV).is_file() and not (folder / JOURNAL).is_file():
        return None
    try:
        records = read_jobs(folder)
    except ResultsError as exc:
        raise CompareError(str(exc)) from None
    return {r.job_id: jct for r in records if (jct := r.jct) is not None}


def check_workloads(
    records: Sequence[Mapping[str, Any] | None], labels: Sequence[str], *, force: bool = False
) -> tuple[list[tuple[str, str]], list[str]]:
    """The differences between the runs' workloads and the warnings about folders without a record.

    Raises :class:`CompareError` naming the first difference unless ``force``."""
    warnings = [
        f"{label}: no workload record (written before aviary kept one): its workload cannot be checked"
        for label, r in zip(labels, records, strict=True)
        if r is None
    ]
    kept = [(r, label) for r, label in zip(records, labels, strict=True) if r is not None]
    differs = (
        workload_differences([r for r, _ in kept], [label for _, label in kept]) if len(kept) > 1 else []
    )
    if differs and not force:
        raise CompareError(f"runs differ in workload: {differs[0][1]} (--force compares them anyway)")
    return differs, warnings


def load_comparison(dirs: Sequence[Path], *, force: bool = False) -> Comparison:
    """Read each folder's ``summary.json`` (and ``jobs.csv``) and compute the ratios to the first one.

    Raises :class:`CompareError` when the runs' workloads differ, unless ``force``
    (:func:`check_workloads`)."""
    if not dirs:
        raise CompareError("nothing to compare: give at least one results folder")
    paths = [Path(d) for d in dirs]
    summaries = []
    for p in paths:
        try:
            summaries.append(read_summary(p))
        except ResultsError as exc:
            raise CompareError(str(exc)) from None
    names = [p.name or str(p) for p in paths]
    labels = [str(p) if names.count(n) > 1 else n for p, n in zip(paths, names, strict=True)]
    classes = tuple(c for c in job_classes(summaries[0]) if c != "all") or ("all",)
    raw: list[Values] = []
    for s in summaries:
        jct = s.get("jct") or {}
        raw.append({c: {q: (jct.get(c) or {}).get(q) for q in PERCENTILES} for c in classes})
    records = [w if isinstance(w := s.get("workload"), dict) else None for s in summaries]
    differs, warnings = check_workloads(records, labels, force=force)
    for label, s in zip(labels, summaries, strict=True):
        if (note := partial_note(s)) is not None:
            warnings.append(f"{label}: {note}")
    comp = Comparison(
        dirs=paths,
        labels=labels,
        policies=[str(s.get("policy", "?")) for s in summaries],
        raw=raw,
        workloads=records,
        differs=differs,
        warnings=warnings,
        time_scale=time_scale_of(summaries[0]),
        classes=classes,
        metrics=[family_metrics(s) for s in summaries],
        usage=[u if isinstance(u := s.get("utilization_over_time"), dict) else None for s in summaries],
    )
    for label, values in zip(labels[1:], raw[1:], strict=True):
        comp.ratios[label] = {
            c: {q: _ratio(values[c][q], raw[0][c][q]) for q in PERCENTILES} for c in classes
        }
    comp.totals = [_totals(s) for s in summaries]
    for label, totals in zip(labels[1:], comp.totals[1:], strict=True):
        comp.total_ratios[label] = {k: _ratio(totals[k], comp.totals[0][k]) for k in TOTALS}
    finished = [_finished_jcts(p) for p in paths]
    comp.jcts = [sorted(j.values()) if j else [] for j in finished]
    if len(paths) > 1:
        base_jcts = finished[0]
        for label, p, jcts in zip(labels[1:], paths[1:], finished[1:], strict=True):
            if base_jcts is None or jcts is None:
                missing = paths[0] if base_jcts is None else p
                comp.factors[label] = []
                comp.foi[label] = factor_stats([], note=f"no {JOBS_CSV} in {missing.name or missing}")
                continue
            comp.factors[label] = factors_of_improvement(base_jcts, jcts)
            comp.foi[label] = factor_stats(comp.factors[label])
    return comp


def _cell(x: float | None, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def comparison_table(comp: Comparison) -> Table:
    """Rich table: one row per class and percentile, the baseline's replay seconds, then each run's ratio.

    Then the makespan and the mean JCT (same form), and the per-job factors of improvement (each run's
    p10/p50/p90/mean of baseline JCT / run JCT, and the number of jobs they cover). The title names the
    workload, and says so in red when the workloads differ (compared anyway)."""
    base_label = comp.labels[0]
    title = f"Job completion time normalized to {comp.name(0)}\n{escape(comp.workload())}"
    if comp.differs:
        title += f"\n[bold red]{escape(comp.differs_note())}[/]"
    table = Table(title=title)
    table.add_column("class")
    table.add_column("pct")
    table.add_column(f"{base_label} (replay s)", justify="right")
    for i in range(1, len(comp.labels)):
        table.add_column(f"{comp.name(i)} / base", justify="right")
    others = comp.labels[1:]
    names = {"mean_jct": "mean"}
    family = False
    for row in comparison_rows(comp):
        if row.family and not family:
            table.add_section()
            family = True
        name = names.get(row.figure, row.figure) + (" ↑" if row.higher else "")
        table.add_row(row.cls, name, row.shown, *(_cell(r, ".2f") for r in row.ratios))
    caption = [units_note(comp.time_scale)]
    if others:
        caption.append("run / base: below 1 is better (↑: above 1 is)")
    if comp.foi:
        table.add_section()
        for q in FOI_STATS:
            table.add_row("FoI", q, "", *(_cell(comp.foi[label].get(q), ".2f") for label in others))
        table.add_row(
            "FoI",
            "jobs",
            "",
            *(str(st.count) if st.count else st.note for st in (comp.foi[label] for label in others)),
        )
        caption.append(
            "FoI (factor of improvement) = base JCT / run JCT per job finished in both: above 1 is better"
        )
    table.caption = "; ".join(caption)
    return table


@dataclass(frozen=True, slots=True)
class Row:
    """One figure compared: the baseline's value (and as shown), each other run's ratio to it."""

    cls: str
    figure: str
    base: float | None
    shown: str
    ratios: list[float | None]
    higher: bool = False
    """Higher is better (utilization, Jain's index, SLO attainment); else lower is."""
    family: bool = False
    """One of the run's family figures (:func:`~aviary.common.results.family_metrics`)."""


def comparison_rows(comp: Comparison) -> list[Row]:
    """The rows of the comparison, table and JSON alike: JCT percentiles per class, the makespan and mean
    JCT, then the baseline's family figures but the makespan (a total already)."""
    others = comp.labels[1:]
    rows = [
        Row(
            c,
            q,
            comp.base[c][q],
            _cell(comp.base[c][q], ".3f"),
            [comp.ratios[label][c][q] for label in others],
        )
        for c in comp.classes
        for q in PERCENTILES
    ]
    for k in TOTALS:
        if comp.totals and any(t[k] is not None for t in comp.totals):
            base = comp.totals[0][k]
            rows.append(
                Row("all", k, base, _cell(base, ".3f"), [comp.total_ratios[label][k] for label in others])
            )
    other_metrics = [{m.name: m for m in metrics} for metrics in comp.metrics[1:]]
    for m in comp.metrics[0] if comp.metrics else []:
        if m.name != "makespan":
            ratios = [_ratio(o[m.name].value if m.name in o else None, m.value) for o in other_metrics]
            rows.append(Row("all", m.name, m.value, m.shown(), ratios, m.higher_better, family=True))
    return rows


def comparison_data(comp: Comparison) -> dict[str, Any]:
    """The comparison table as plain data (``aviary compare --json``): every row's baseline value and
    each run's ratio to it, the factors of improvement, the workload and the warnings."""
    others = comp.labels[1:]
    rows = [
        {
            "class": r.cls,
            "figure": r.figure,
            "base": r.base,
            "higher_is_better": r.higher,
            "ratios": dict(zip(others, r.ratios, strict=True)),
        }
        for r in comparison_rows(comp)
    ]
    runs = zip(comp.labels, comp.policies, comp.dirs, strict=True)
    return {
        "baseline": comp.labels[0],
        "runs": [{"label": label, "policy": policy, "folder": str(d)} for label, policy, d in runs],
        "workload": comp.workload(),
        "time_scale": comp.time_scale,
        "rows": rows,
        "factors_of_improvement": {label: asdict(st) for label, st in comp.foi.items()},
        "workloads_differ": comp.differs_note() or None,
        "warnings": comp.warnings,
    }


def figure_format(path: Path) -> str:
    """The figure format of a file name's extension (:data:`FIGURE_FORMATS`); :class:`CompareError`
    (one line) for another one."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in FIGURE_FORMATS:
        shown = f"'.{ext}'" if ext else "none"
        raise CompareError(f"{path}: figure format {shown} not supported (name it .png, .pdf or .svg)")
    return ext


def needs_log_axis(values: Iterable[float | None]) -> bool:
    """Whether the positive values span more than :data:`LOG_SPAN` (max / min)."""
    xs = [x for x in values if x is not None and x > 0]
    return bool(xs) and max(xs) / min(xs) > LOG_SPAN


def plain_log_ticks(axis: Any) -> None:
    """Label a log axis' ticks as plain numbers (0.01, 1, 300, and 0.6 between decades when it spans
    few of them) rather than powers of ten."""
    from matplotlib.ticker import LogFormatter

    class Plain(LogFormatter):
        def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
            return f"{x:,.6g}"

    axis.set_major_formatter(Plain())
    axis.set_minor_formatter(Plain())


def ratio_bars(ax: Any, series: Mapping[str, Sequence[float | None]], ticks: Sequence[str]) -> bool:
    """Grouped bars of ratios to a baseline on ``ax``: one group per tick, one bar per series (label ->
    one ratio per tick, None when missing), the baseline's 1.0 dashed. A log axis, with the bars drawn
    from 1.0, when the ratios span more than :data:`LOG_SPAN`; a missing ratio is marked ``n/a`` (a 0 on
    a log axis ``0``), not drawn as an empty bar. Returns whether the axis is logarithmic."""
    log = needs_log_axis(h for hs in series.values() for h in hs)
    width = 0.8 / max(1, len(series))
    for i, (label, heights) in enumerate(series.items()):
        xs = [g - 0.4 + width * (i + 0.5) for g in range(len(ticks))]
        hs = [math.nan if h is None or (log and h <= 0) else h for h in heights]
        if log:  # up from 1.0 when worse, down when better
            ax.bar(xs, [h - 1.0 for h in hs], width, bottom=1.0, label=label, color=f"C{i}")
        else:
            ax.bar(xs, hs, width, label=label, color=f"C{i}")
        for x, h in zip(xs, heights, strict=True):
            if h is None or (log and h <= 0):
                ax.annotate("n/a" if h is None else "0", (x, 1.0 if log else 0.0), xytext=(0, 3),
                            textcoords="offset points", ha="center", va="bottom", rotation=90, fontsize=8,
                            color="dimgray")  # fmt: skip
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(ticks)), list(ticks))
    if log:
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
    else:  # the baseline's line in view, below the top of the frame
        top = max([h for hs in series.values() for h in hs if h is not None], default=1.0)
        ax.set_ylim(0, max(1.1, 1.08 * top))
    return log


def save_figure(fig: Figure, path: Path) -> None:
    """Write ``fig`` to ``path`` in the format of its extension (:func:`figure_format`; PNG at
    :data:`PNG_DPI` dpi), cropped to what it draws so that no label is clipped."""
    fmt = figure_format(path)
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format=fmt, dpi=PNG_DPI if fmt == "png" else "figure", bbox_inches="tight")
    except OSError as exc:
        raise CompareError(f"{path}: cannot write the figure: {exc.strerror or exc}") from None


def comparison_figure(comp: Comparison) -> Figure:
    """Grouped bar chart of the ratios (one group per class and percentile, one bar per run; a log axis
    when they span more than :data:`LOG_SPAN`, ``n/a`` where one is missing), beside the CDF of the
    per-job factors of improvement when there are some; titled with the baseline and the workload (in
    red, first, how the workloads differ when they were compared anyway)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    others = comp.labels[1:]
    if not others:
        raise CompareError("a chart needs at least two results folders (a baseline and one more)")
    groups = [(c, q) for c in comp.classes for q in PERCENTILES]
    totals = [k for k in TOTALS if any(comp.total_ratios[label][k] is not None for label in others)]
    groups += [("all", k) for k in totals]
    heights = {
        label: [comp.total_ratios[label][q] if q in TOTALS else comp.ratios[label][c][q] for c, q in groups]
        for label in others
    }
    with_cdf = any(comp.factors.get(label) for label in others)
    with_jcts = all(comp.jcts)
    slo = [[m for m in metrics if m.group == "SLO attainment"] for metrics in comp.metrics]
    with_slo = bool(slo) and all(slo)
    with_usage = all(comp.usage)
    bars_width = max(6.0, 1.5 + len(groups) * (0.55 + 0.35 * len(others)))  # room for each tick's label
    widths = [bars_width] + [6.0] * (with_jcts + with_cdf + with_usage) + [4.5] * with_slo
    fig = Figure(figsize=(sum(widths), 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    panels = list(fig.subplots(1, len(widths), width_ratios=widths, squeeze=False)[0])
    ax = panels.pop(0)
    if with_jcts:
        jct_cdf(panels.pop(0), comp)
    log = ratio_bars(
        ax,
        {comp.name(i + 1): heights[label] for i, label in enumerate(others)},
        [f"{c}\n{q.replace('_', ' ')}" for c, q in groups],
    )
    ax.set_ylabel(f"run / {comp.name(0)}" + (" (log scale)" if log else "") + ", below 1 is better")
    ax.legend()
    if with_cdf:
        cdf = panels.pop(0)
        for i, label in enumerate(others):
            xs = comp.factors.get(label) or []
            if xs:
                ys = [(k + 1) / len(xs) for k in range(len(xs))]
                cdf.step([xs[0], *xs], [0.0, *ys], where="post", color=f"C{i}", label=comp.name(i + 1))
        cdf.axvline(1.0, color="black", linestyle="--", linewidth=1)
        cdf.set_xscale("log")
        plain_log_ticks(cdf.xaxis)
        cdf.set_ylim(0.0, 1.0)
        cdf.set_xlabel(f"factor of improvement ({comp.name(0)} JCT / run JCT, log scale)")
        cdf.set_ylabel("fraction of jobs")
        cdf.legend()
    if with_usage:
        usage_lines(panels.pop(0), comp)
    if with_slo:
        slo_bars(panels.pop(0), comp, slo)
    title = f"Job completion time of each run / {comp.name(0)}'s (below 1 is better)\n{comp.workload()}"
    if comp.differs:
        title = f"{comp.differs_note()}\n{title}"
    fig.suptitle(title, color="firebrick" if comp.differs else "black", fontsize=11)
    return fig


def run_color(i: int) -> str:
    """Run ``i``'s colour in every panel: the baseline black, the others as in the ratio bars."""
    return "black" if i == 0 else f"C{i - 1}"


def jct_cdf(ax: Any, comp: Comparison) -> None:
    """Each run's CDF of job completion times (finished jobs, replay seconds), log x."""
    for i, xs in enumerate(comp.jcts):
        ys = [(k + 1) / len(xs) for k in range(len(xs))]
        ax.step([xs[0], *xs], [0.0, *ys], where="post", color=run_color(i), label=comp.name(i))
    if min(x for xs in comp.jcts for x in xs) > 0:
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis)
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("job completion time (replay s, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.legend()


STYLES = {"cores": "-", "mem": ":", "disk": "--", "net": "-."}
"""A resource's line style in the utilization panel (a run's is its colour)."""


def usage_lines(ax: Any, comp: Comparison) -> None:
    """Each run's utilization of each resource it uses over its run (per cent of the cluster's capacity,
    100 windows; a resource no run uses above 1 % is left out)."""
    for i, series in enumerate(comp.usage):
        assert series is not None
        for name, style in STYLES.items():
            if any(max(s.get(name) or [0.0]) > 0.01 for s in comp.usage if s):
                ax.plot(series["t"], [100 * x for x in series.get(name, [])], style, color=run_color(i))
    for i in range(len(comp.usage)):
        ax.plot([], [], color=run_color(i), label=comp.name(i))
    for name, style in STYLES.items():
        ax.plot([], [], style, color="grey", label=name)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("replay time (s)")
    ax.set_ylabel("utilization (% of capacity)")
    ax.legend(fontsize="small", ncol=2)


def slo_bars(ax: Any, comp: Comparison, slo: list[list[Metric]]) -> None:
    """SLO attainment of each run (all, accepted, no reservation), in per cent, side by side."""
    kinds = [m.name[len("SLO attainment ") :] for m in slo[0]]
    width = 0.8 / len(slo)
    for i, metrics in enumerate(slo):
        values = {m.name[len("SLO attainment ") :]: m.value for m in metrics}
        heights = [100.0 * (values.get(k) or 0.0) for k in kinds]
        xs = [j + (i - (len(slo) - 1) / 2) * width for j in range(len(kinds))]
        ax.bar(xs, heights, width, color=run_color(i), label=comp.name(i))
    ax.set_xticks(range(len(kinds)), kinds)
    ax.set_ylim(0, 100)
    ax.set_ylabel("SLO attainment (%), higher is better")
    ax.legend(fontsize="small")


def plot_comparison(comp: Comparison, path: Path) -> None:
    """Write :func:`comparison_figure` to ``path`` (:func:`save_figure`: the format of its extension)."""
    figure_format(path)
    save_figure(comparison_figure(comp), path)


def compare(
    dirs: Sequence[Path], plot: Path | None = None, *, force: bool = False, png: Path | None = None
) -> tuple[Table, Comparison]:
    """Compare results folders (the first is the baseline); optionally write a figure to ``plot``
    (``png``: its former name), in the format of its extension (bars of the ratios, and the CDF of the
    per-job factors of improvement when there are some).

    Returns the rich table to print and the plain data behind it. Raises :class:`CompareError` (one
    line) when a folder has no readable ``summary.json``, when the workloads differ (unless ``force``),
    when the figure's extension is not one of :data:`FIGURE_FORMATS`, or when a chart is asked of a
    single run.
    """
    plot = plot if plot is not None else png
    if plot is not None:
        figure_format(plot)
    comp = load_comparison(dirs, force=force)
    if plot is not None:
        plot_comparison(comp, plot)
    return comparison_table(comp), comp
