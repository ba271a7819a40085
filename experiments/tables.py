"""What the experiment reports share: numbers as table cells, and ratios that tolerate gaps."""

from __future__ import annotations

import math


def num(x: float | None, digits: int = 0) -> str:
    """``x`` with thousands separators and ``digits`` decimals; ``n/a`` when missing or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:,.{digits}f}"


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, or None when either is missing or ``b`` is not positive."""
    return None if a is None or b is None or b <= 0 else a / b
