"""Random draws of the hot cores: exactly ``random.Random``'s, so results do not change, but without the
interpreted frames of ``random.py`` where the cores are compiled (speedups.py)."""

from __future__ import annotations

import random

__all__ = ["randbelow"]

# CPython's Random draws below n by rejection on getrandbits (random.py, _randbelow_with_getrandbits);
# where that is not so, randbelow asks the generator itself.
_GETRANDBITS = random.Random._randbelow is random.Random._randbelow_with_getrandbits  # type: ignore[attr-defined]


def randbelow(rng: random.Random, n: int) -> int:
    """``rng.randrange(n)`` for ``n > 0``: the same number, and the generator left in the same state."""
    if not _GETRANDBITS or type(rng) is not random.Random:
        return int(rng._randbelow(n))  # type: ignore[attr-defined]
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r
