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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from ..common.results import JOBS_CSV, ResultsError, percentile, read_jobs, read_summary

__all__ = [
    "FOI_STATS",
    "PERCENTILES",
    "TOTALS",
    "CompareError",
    "Comparison",
    "FactorStats",
    "compare",
    "comparison_table",
    "factor_stats",
    "factors_of_improvement",
    "load_comparison",
    "plot_comparison",
]

COMPARED_CLASSES = ("short", "long")
PERCENTILES = ("p50", "p90", "p99")
TOTALS = ("makespan", "mean_jct")
"""Whole-run figures normalized to the baseline, from the summaries."""
FOI_STATS = ("p10", "p50", "p90", "mean")


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

    @property
    def base(self) -> Values:
        return self.raw[0]

    def name(self, i: int) -> str:
        """Label of run ``i`` with its policy when the label does not already say it."""
        label, policy = self.labels[i], self.policies[i]
        return label if label == policy else f"{label} ({policy})"


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
    """Job id -> JCT of the finished jobs in ``jobs.csv``; None when the folder has no ``jobs.csv``."""
    if not (folder / JOBS_CSV).is_file():
        return None
    try:
        records = read_jobs(folder)
    except ResultsError as exc:
        raise CompareError(str(exc)) from None
    return {r.job_id: jct for r in records if (jct := r.jct) is not None}


def load_comparison(dirs: Sequence[Path]) -> Comparison:
    """Read each folder's ``summary.json`` (and ``jobs.csv``) and compute the ratios to the first one."""
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
    raw: list[Values] = []
    for s in summaries:
        jct = s.get("jct") or {}
        raw.append({c: {q: (jct.get(c) or {}).get(q) for q in PERCENTILES} for c in COMPARED_CLASSES})
    comp = Comparison(
        dirs=paths, labels=labels, policies=[str(s.get("policy", "?")) for s in summaries], raw=raw
    )
    for label, values in zip(labels[1:], raw[1:], strict=True):
        comp.ratios[label] = {
            c: {q: _ratio(values[c][q], raw[0][c][q]) for q in PERCENTILES} for c in COMPARED_CLASSES
        }
    comp.totals = [_totals(s) for s in summaries]
    for label, totals in zip(labels[1:], comp.totals[1:], strict=True):
        comp.total_ratios[label] = {k: _ratio(totals[k], comp.totals[0][k]) for k in TOTALS}
    if len(paths) > 1:
        base_jcts = _finished_jcts(paths[0])
        for label, p in zip(labels[1:], paths[1:], strict=True):
            jcts = _finished_jcts(p)
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
    """Rich table: one row per class and percentile, the baseline's seconds, then each run's ratio.

    Then the makespan and the mean JCT (same form), and the per-job factors of improvement (each run's
    p10/p50/p90/mean of baseline JCT / run JCT, and the number of jobs they cover)."""
    base_label = comp.labels[0]
    table = Table(title=f"Job completion time normalized to {comp.name(0)}")
    table.add_column("class")
    table.add_column("pct")
    table.add_column(f"{base_label} (s)", justify="right")
    for i in range(1, len(comp.labels)):
        table.add_column(f"{comp.name(i)} / base", justify="right")
    for c in COMPARED_CLASSES:
        for q in PERCENTILES:
            base = comp.base[c][q]
            cells = ["n/a" if base is None else f"{base:.3f}"]
            for label in comp.labels[1:]:
                r = comp.ratios[label][c][q]
                cells.append("n/a" if r is None else f"{r:.2f}")
            table.add_row(c, q, *cells)
    others = comp.labels[1:]
    names = {"makespan": "makespan", "mean_jct": "mean"}
    for k in TOTALS:
        if comp.totals and any(t[k] is not None for t in comp.totals):
            cells = [_cell(comp.totals[0][k], ".3f")]
            cells += [_cell(comp.total_ratios[label][k], ".2f") for label in others]
            table.add_row("all", names[k], *cells)
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
        table.caption = (
            "run / base: below 1 is better; FoI (factor of improvement) = base JCT / run JCT per job "
            "finished in both: above 1 is better"
        )
    return table


def plot_comparison(comp: Comparison, png: Path) -> None:
    """Grouped bar chart of the ratios (one group per class and percentile, one bar per run)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    others = comp.labels[1:]
    if not others:
        raise CompareError("a chart needs at least two results folders (a baseline and one more)")
    groups = [(c, q) for c in COMPARED_CLASSES for q in PERCENTILES]
    totals = [k for k in TOTALS if any(comp.total_ratios[label][k] is not None for label in others)]
    groups += [("all", k) for k in totals]
    with_cdf = any(comp.factors.get(label) for label in others)
    bars_width = max(6.0, 2.0 + 0.5 * len(groups) * len(others))
    fig = Figure(figsize=(bars_width + (6.0 if with_cdf else 0.0), 4.0))
    FigureCanvasAgg(fig)
    if with_cdf:
        ax, cdf = fig.subplots(1, 2, width_ratios=[bars_width, 6.0])
    else:
        ax = fig.add_subplot()
    width = 0.8 / len(others)
    for i, label in enumerate(others):
        heights = [comp.total_ratios[label][q] if c == "all" else comp.ratios[label][c][q] for c, q in groups]
        xs = [g - 0.4 + width * (i + 0.5) for g in range(len(groups))]
        ax.bar(xs, [math.nan if h is None else h for h in heights], width, label=comp.name(i + 1))
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(groups)), [f"{c}\n{q.replace('_', ' ')}" for c, q in groups])
    ax.set_ylabel(f"normalized to {comp.name(0)}")
    ax.set_ylim(bottom=0)
    ax.legend()
    if with_cdf:
        for i, label in enumerate(others):
            xs = comp.factors.get(label) or []
            if xs:
                ys = [(k + 1) / len(xs) for k in range(len(xs))]
                cdf.step([xs[0], *xs], [0.0, *ys], where="post", color=f"C{i}", label=comp.name(i + 1))
        cdf.axvline(1.0, color="black", linestyle="--", linewidth=1)
        cdf.set_xscale("log")
        cdf.set_ylim(0.0, 1.0)
        cdf.set_xlabel(f"factor of improvement ({comp.name(0)} JCT / run JCT)")
        cdf.set_ylabel("fraction of jobs")
        cdf.legend()
    fig.tight_layout()
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, format="png", dpi=100)


def compare(dirs: Sequence[Path], png: Path | None = None) -> tuple[Table, Comparison]:
    """Compare results folders (the first is the baseline); optionally write a PNG chart (bars of the
    ratios, and the CDF of the per-job factors of improvement when there are some).

    Returns the rich table to print and the plain data behind it. Raises :class:`CompareError` (one
    line) when a folder has no readable ``summary.json``, or when a chart is asked of a single run.
    """
    comp = load_comparison(dirs)
    if png is not None:
        plot_comparison(comp, png)
    return comparison_table(comp), comp
