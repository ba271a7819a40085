"""What the experiment reports share: numbers as table cells, ratios that tolerate gaps, and values over
several seeds (their median [min, max], how many seeds a row has, where the seeds disagree)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence


def num(x: float | None, digits: int = 0) -> str:
    """``x`` with thousands separators and ``digits`` decimals; ``n/a`` when missing or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:,.{digits}f}"


def median(values: Iterable[float | None]) -> float | None:
    """The median of ``values`` (None: missing, left out); None without any."""
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, or None when either is missing or ``b`` is not positive."""
    return None if a is None or b is None or b <= 0 else a / b


def spread(values: Iterable[float | None], fmt: str = "{:,.2f}", each: bool = False) -> str:
    """The median of ``values`` (None: missing, left out) and, over several, their range, each formatted
    with ``fmt``: ``0.85 [0.80, 0.90]``; with ``each``, every value too, in order: ``71 [65, 80]
    (71/80/65)``; ``n/a`` without any."""
    got = [v for v in values if v is not None]
    if not got:
        return "n/a"
    mid, low, high = (fmt.format(f(got)) for f in (statistics.median, min, max))
    text = mid if len(got) == 1 else f"{mid} [{low}, {high}]"
    return f"{text} ({'/'.join(fmt.format(v) for v in got)})" if each else text


def over_seeds(values: Sequence[float | None], fmt: str = "{:,.2f}") -> str:
    """The median of ``values`` (one per seed) [min, max], as :func:`spread`; just the value when every
    seed gives the same."""
    got = [v for v in values if v is not None]
    return fmt.format(got[0]) if got and min(got) == max(got) else spread(got, fmt)


def which_seeds(got: Sequence[int]) -> str:
    """``seed 0 only``, ``seeds 0, 2 only``: the seeds a row has, when it lacks some."""
    return f"{'seed' if len(got) == 1 else 'seeds'} {', '.join(map(str, got))} only"


def seeds_cell(got: Sequence[int], seeds: Sequence[int]) -> str:
    """The *seeds* column: how many seeds a row has, and which when fewer than ``seeds``."""
    return str(len(got)) if len(got) >= len(seeds) else f"**{len(got)}** ({which_seeds(got)})"


def both_sides(values: Sequence[float | None]) -> str | None:
    """``(0.95-1.04)`` when the seeds' ratios ``values``, as the tables show them (2 decimals), fall on
    both sides of 1 (the seeds disagree on which policy is better); None when they agree."""
    shown = [round(v, 2) for v in values if v is not None]
    return f"({min(shown):.2f}-{max(shown):.2f})" if shown and min(shown) < 1 < max(shown) else None


def disagreement(split: Sequence[str]) -> str:
    """The line under a table of ratios over several seeds: the cells (``split``) where the seeds
    disagree on which policy is better, or that they agree everywhere."""
    if split:
        return (
            "The seeds disagree on which policy is better (their ratios fall on both sides of 1) in: "
            + "; ".join(split)
            + "; everywhere else every seed agrees."
        )
    return "Every seed agrees on which policy is better in every cell (its ratios on one side of 1)."


Judge = Callable[[Sequence[float | None]], bool]
"""Whether some ratios (one per list of a claim's row) satisfy the claim."""


def below(limit: float = 1.0) -> Judge:
    """A claim that every ratio is below ``limit`` (1: the first policy better)."""
    return lambda vals: all(v is not None and v < limit for v in vals)


def in_range(lo: float, hi: float) -> Judge:
    """A claim that every ratio lies in (``lo``, ``hi``]."""
    return lambda vals: all(v is not None and lo < v <= hi for v in vals)


def claim_verdict(
    rows: Sequence[tuple[str, Sequence[int], Sequence[Sequence[float | None]]]],
    ok: Judge,
    seeds: Sequence[int],
) -> str:
    """Where a claim holds, judged on the medians over the seeds: ``rows`` are the settings, each
    ``(where, the seeds it has, the ratios the claim rests on: one list per ratio, a value per seed)``,
    and ``ok`` says whether some ratios (one per list) satisfy the claim. ``holds at A (0.41 / 0.85), ...;
    not at ...``, a setting with fewer seeds than ``seeds`` saying which it has; with several seeds, then
    where the seeds' own verdicts differ (which seeds hold, the ratios' median [min, max]) or that they
    agree everywhere."""
    holds: list[str] = []
    fails: list[str] = []
    differ: list[str] = []
    for where, got, values in rows:
        mids = [median(vs) for vs in values]
        fewer = "" if len(got) >= len(seeds) else f"; **{which_seeds(got)}**"
        (holds if ok(mids) else fails).append(f"{where} ({' / '.join(num(v, 2) for v in mids)}{fewer})")
        oks = [ok([vs[i] for vs in values]) for i in range(len(got))]
        if len(set(oks)) > 1:
            yes = [str(s) for s, y in zip(got, oks, strict=True) if y]
            no = [str(s) for s, y in zip(got, oks, strict=True) if not y]
            differ.append(
                f"{where} (holds in seed{'s' * (len(yes) > 1)} {', '.join(yes)}, not in {', '.join(no)}: "
                f"{' / '.join(spread(vs) for vs in values)})"
            )
    return verdict_text(holds, fails, differ, seeds)


def verdict_text(holds: list[str], fails: list[str], differ: list[str], seeds: Sequence[int]) -> str:
    """``holds at ...; not at ...``, then, over several seeds, where the seeds' own verdicts differ or
    that they give the same everywhere."""
    text = f"holds at {', '.join(holds) or 'none'}; not at {', '.join(fails) or 'none'}"
    if len(seeds) > 1:
        text += (
            "; **the seeds' verdicts differ** at " + "; ".join(differ)
            if differ
            else "; every seed gives the same verdict everywhere"
        )
    return text
