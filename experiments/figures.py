"""What the experiments' figures share beyond :mod:`aviary.launch.results.compare` (whose bars, log ticks
and file formats the sweeps use too): the seeds' range drawn over a figure's bars."""

from __future__ import annotations

from typing import Any


def whiskers(
    ax: Any, got: dict[str, list[list[float]]], medians: dict[str, list[float | None]], log: bool
) -> None:
    """The range over the seeds of each of :func:`~aviary.launch.results.compare.ratio_bars`' bars
    (at its bars' places), the axis widened to hold them."""
    width = 0.8 / max(1, len(got))
    tops = []
    for i, q in enumerate(got):
        for g, (vs, mid) in enumerate(zip(got[q], medians[q], strict=True)):
            if len(vs) < 2 or mid is None or (log and min(vs) <= 0):
                continue
            x = g - 0.4 + width * (i + 0.5)
            ax.errorbar([x], [mid], yerr=[[mid - min(vs)], [max(vs) - mid]], fmt="none", ecolor="black",
                        elinewidth=0.8, capsize=2)  # fmt: skip
            tops.append(max(vs))
    if tops and not log:
        low, high = ax.get_ylim()
        ax.set_ylim(low, max(high, 1.05 * max(tops)))
