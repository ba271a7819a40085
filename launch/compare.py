"""``aviary compare``: job completion time percentiles of runs normalized to a baseline.

The form of the thesis' figures 2.5 and 3.2: for each run after the first, and for short and long jobs,
p50/p90/p99 of that run divided by the same percentile of the first (baseline) run; below 1.0 is
better than the baseline. The baseline's raw values (seconds of the replay clock) are shown too. A
class without finished jobs in either run shows ``n/a``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table

from ..common.results import ResultsError, read_summary

__all__ = [
    "PERCENTILES",
    "CompareError",
    "Comparison",
    "compare",
    "comparison_table",
    "load_comparison",
    "plot_comparison",
]

COMPARED_CLASSES = ("short", "long")
PERCENTILES = ("p50", "p90", "p99")


class CompareError(ResultsError):
    """Results folders that cannot be compared; the message is one line."""


Values = dict[str, dict[str, float | None]]
"""class -> percentile name -> value (None: no finished job of that class)."""


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


def load_comparison(dirs: Sequence[Path]) -> Comparison:
    """Read each folder's ``summary.json`` and compute the ratios to the first one."""
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
    return comp


def comparison_table(comp: Comparison) -> Table:
    """Rich table: one row per class and percentile, the baseline's seconds, then each run's ratio."""
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
    return table


def plot_comparison(comp: Comparison, png: Path) -> None:
    """Grouped bar chart of the ratios (one group per class and percentile, one bar per run)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    others = comp.labels[1:]
    if not others:
        raise CompareError("a chart needs at least two results folders (a baseline and one more)")
    groups = [(c, q) for c in COMPARED_CLASSES for q in PERCENTILES]
    fig = Figure(figsize=(max(6.0, 2.0 + 0.5 * len(groups) * len(others)), 4.0))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / len(others)
    for i, label in enumerate(others):
        heights = [comp.ratios[label][c][q] for c, q in groups]
        xs = [g - 0.4 + width * (i + 0.5) for g in range(len(groups))]
        ax.bar(xs, [math.nan if h is None else h for h in heights], width, label=comp.name(i + 1))
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(groups)), [f"{c}\n{q}" for c, q in groups])
    ax.set_ylabel(f"JCT normalized to {comp.name(0)}")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, format="png", dpi=100)


def compare(dirs: Sequence[Path], png: Path | None = None) -> tuple[Table, Comparison]:
    """Compare results folders (the first is the baseline); optionally write a PNG bar chart.

    Returns the rich table to print and the plain data behind it. Raises :class:`CompareError` (one
    line) when a folder has no readable ``summary.json``, or when a chart is asked of a single run.
    """
    comp = load_comparison(dirs)
    if png is not None:
        plot_comparison(comp, png)
    return comparison_table(comp), comp
