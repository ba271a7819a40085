"""What the experiment reports share: numbers as table cells, and ratios that tolerate gaps."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable


def num(x: float | None, digits: int = 0) -> str:
    """``x`` with thousands separators and ``digits`` decimals; ``n/a`` when missing or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:,.{digits}f}"


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
