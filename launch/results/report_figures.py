"""The figures of ``aviary report`` (:mod:`~aviary.launch.results.report`), as Bokeh models.

Every figure stretches to the width of its cell on the page (``sizing_mode="stretch_width"``), and its
legend sits outside the plot area, to the right of it, where a click on an entry hides that run's line:
a legend never covers data. Each figure has a ``name`` (``jobs-over-time``, ``jct-cdf-short``,
``utilization-disk``...), for the page's tests and for a reader of the page's models.

Utilization is one small plot per resource, each run a line, with a dashed reference at 100 % of the
cluster's capacity; a resource some run over-allocated (its tasks' demand held above the capacity on
average, or a window of its use above 100 %, as YARN-like baselines that count cores and memory allow)
is shaded above 100 % and says ``over-allocated`` above the plot, naming the runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

RESOURCES = ("cores", "mem", "disk", "net")
TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
OVER = "#b22222"
"""The colour of what says over-allocated."""

HEIGHT, SMALL = 320, 250
"""Heights (px) of a figure and of a small (per-resource) one; their width is their cell's."""
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"
OVER_ALLOCATED = "over-allocated"
"""The name of the band above 100 % and the first words of the note above a plot that has it."""


def run_color(i: int) -> str:
    """Run ``i``'s colour, as in ``aviary compare``'s figure: the baseline black, then matplotlib's."""
    return "black" if i == 0 else TAB10[(i - 1) % len(TAB10)]


def _float(row: Mapping[str, str], key: str) -> float | None:
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return None


def _figure(name: str, title: str, x_label: str, y_label: str, height: int = HEIGHT, **kw: Any) -> Any:
    from bokeh.models import HoverTool
    from bokeh.models.annotations import Title
    from bokeh.plotting import figure

    fig = figure(
        name=name,
        title=Title(text=title, text_font_size="13px"),
        x_axis_label=x_label,
        y_axis_label=y_label,
        tools=TOOLS,
        height=height,
        sizing_mode="stretch_width",
        min_width=300,
        toolbar_location="above",
        **kw,
    )
    fig.add_tools(HoverTool(tooltips=[("run", "$name"), ("x", "$x{0,0.[00]}"), ("y", "$y{0,0.[00]}")]))
    fig.toolbar.autohide = True
    return fig


def _legend(fig: Any, items: Sequence[tuple[str, list[Any]]]) -> None:
    """``items`` (label, renderers) as a legend to the right of ``fig``'s plot area, click to hide."""
    from bokeh.models.annotations import Legend, LegendItem

    if not items:
        return
    legend = Legend(
        items=[LegendItem(label=label, renderers=rs) for label, rs in items],
        location="top_left",
        click_policy="hide",
        border_line_alpha=0,
        label_text_font_size="12px",
        spacing=2,
        margin=4,
    )
    fig.add_layout(legend, "right")


def legend_places(fig: Any) -> dict[str, int]:
    """How many legends ``fig`` has in each of its places (``center`` is over the plot area)."""
    from bokeh.models.annotations import Legend

    places = ("center", "left", "right", "above", "below")
    return {p: sum(isinstance(m, Legend) for m in getattr(fig, p)) for p in places}


def jobs_over_time(names: Sequence[str], runs: Sequence[Sequence[Mapping[str, str]]]) -> Any:
    """Jobs submitted (dashed) and finished (solid) so far, per run, over the replay clock."""
    fig = _figure(
        "jobs-over-time", "jobs over time (dashed: submitted, solid: finished)", "replay time (s)", "jobs"
    )
    lines = (("submit_replay_s", "dashed"), ("finish_replay_s", "solid"))
    items = []
    for i, (name, rows) in enumerate(zip(names, runs, strict=True)):
        drawn = []
        for key, dash in lines:
            times = sorted(t for r in rows if (t := _float(r, key)) is not None)
            if times:
                ys = list(range(len(times) + 1))
                drawn.append(
                    fig.step([0.0, *times], ys, mode="after", color=run_color(i), line_dash=dash, name=name)
                )
        items.append((name, drawn))
    _legend(fig, [(n, rs) for n, rs in items if rs])
    return fig


CLASS_TITLE = {"all": "all jobs", "short": "short jobs", "long": "long jobs"}


def jct_cdf(
    names: Sequence[str], runs: Sequence[Sequence[Mapping[str, str]]], cls: str = "all"
) -> Any | None:
    """Each run's CDF of the completion times of its finished jobs of class ``cls`` (``all``: every job),
    log x when every JCT is positive; None when no run finished a job of that class."""
    from bokeh.models import Range1d

    jcts = [
        sorted(
            j
            for r in rows
            if (cls == "all" or r.get("class") == cls) and (j := _float(r, "jct_replay_s")) is not None
        )
        for rows in runs
    ]
    if not any(jcts):
        return None
    log = all(xs[0] > 0 for xs in jcts if xs)
    title = f"job completion time, CDF: {CLASS_TITLE.get(cls, cls)}"
    fig = _figure(
        f"jct-cdf-{cls}", title, "JCT (replay s)", "fraction of jobs", x_axis_type="log" if log else "linear"
    )
    fig.y_range = Range1d(start=0, end=1.02)
    items = []
    for i, (name, xs) in enumerate(zip(names, jcts, strict=True)):
        if xs:
            ys = [0.0, *((k + 1) / len(xs) for k in range(len(xs)))]  # rising from 0 at the first JCT
            step = fig.step([xs[0], *xs], ys, mode="after", color=run_color(i), name=name)
            items.append((f"{name} ({len(xs)})", [step]))
    _legend(fig, items)
    return fig


def over_allocated(summary: Mapping[str, Any], resource: str) -> tuple[float | None, float | None]:
    """A run's over-allocation of ``resource``: its mean allocation (``resource_allocation``, the demand
    its tasks held over the capacity) when above 1, and the peak of its utilization over time when above 1;
    None for each that is not."""
    held = (summary.get("resource_allocation") or {}).get(resource)
    series = (summary.get("utilization_over_time") or {}).get(resource) or []
    peak = max(series, default=0.0)
    return (held if isinstance(held, int | float) and held > 1.0 else None), (peak if peak > 1.0 else None)


def _over_note(names: Sequence[str], summaries: Sequence[Mapping[str, Any]], resource: str) -> str | None:
    """The note above a resource's plot that says which runs over-allocated it, or None."""
    parts = []
    for name, s in zip(names, summaries, strict=True):
        held, peak = over_allocated(s, resource)
        said = [
            f"held {100 * held:,.0f} % on average" if held else "",
            f"peak {100 * peak:,.0f} %" if peak else "",
        ]
        if held or peak:
            parts.append(f"{name} ({', '.join(x for x in said if x)})")
    return f"{OVER_ALLOCATED} above 100 %: {'; '.join(parts)}" if parts else None


def utilization(names: Sequence[str], summaries: Sequence[Mapping[str, Any]]) -> list[Any]:
    """One small figure per resource that some run used: each run's utilization over time (what its tasks
    delivered, % of the cluster's capacity), a dashed line at 100 %, and, where a run over-allocated the
    resource, a shaded band above 100 % and a note naming the runs (:func:`over_allocated`). Empty when no
    run logged its tasks' demands."""
    from bokeh.models import Range1d
    from bokeh.models.annotations import BoxAnnotation, Span, Title

    series = [s.get("utilization_over_time") or {} for s in summaries]
    figures = []
    for resource in RESOURCES:
        lines = [(i, s) for i, s in enumerate(series) if s.get(resource) and s.get("t")]
        if not any(max(s[resource]) > 0.001 for _, s in lines):
            continue
        peak = max(100 * max(s[resource]) for _, s in lines)
        fig = _figure(
            f"utilization-{resource}",
            f"{resource}: utilization over time",
            "replay time (s)",
            "% of capacity",
            SMALL,
        )
        fig.y_range = Range1d(start=0, end=max(110.0, 1.06 * peak))
        fig.add_layout(
            Span(location=100, dimension="width", line_color="gray", line_dash="dashed", line_width=1)
        )
        note = _over_note(names, summaries, resource)
        if note is not None:
            band = BoxAnnotation(
                bottom=100, fill_color=OVER, fill_alpha=0.08, line_alpha=0, name=OVER_ALLOCATED
            )
            fig.add_layout(band)
            fig.add_layout(
                Title(text=note, text_color=OVER, text_font_style="normal", name=OVER_ALLOCATED), "above"
            )
        else:  # every plot has a second line, so that they all keep one height of plot area
            fig.add_layout(Title(text=f"within capacity (peak {peak:,.0f} %)", text_color="gray",
                                 text_font_style="normal", name="within"), "above")  # fmt: skip
        items = []
        for i, s in lines:
            ys = [100 * x for x in s[resource]]
            items.append(
                (names[i], [fig.line(s["t"], ys, color=run_color(i), line_width=1.5, name=names[i])])
            )
        _legend(fig, items)
        figures.append(fig)
    return figures


def slo_bars(names: Sequence[str], summaries: Sequence[Mapping[str, Any]]) -> Any | None:
    """SLO attainment (all, accepted, no reservation) of each run; None unless every run has SLOs."""
    from bokeh.models import ColumnDataSource, FactorRange, Range1d

    kinds = ("all", "accepted", "no_reservation")
    values = [s.get("slo_attainment") for s in summaries]
    if not all(isinstance(v, dict) for v in values):
        return None
    factors = [(k, n) for k in kinds for n in names]
    heights = [100 * ((values[names.index(n)] or {}).get(k) or 0.0) for k, n in factors]
    colors = [run_color(names.index(n)) for _, n in factors]
    fig = _figure(
        "slo-attainment", "SLO attainment (%)", "", "% of SLO jobs", x_range=FactorRange(factors=factors)
    )
    fig.y_range = Range1d(start=0, end=100)
    fig.vbar(x="x", top="top", width=0.8, color="color",
             source=ColumnDataSource({"x": factors, "top": heights, "color": colors}))  # fmt: skip
    fig.xaxis.major_label_orientation = 0.8
    return fig
