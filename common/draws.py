"""Random draws of the hot cores: exactly ``random.Random``'s, so results do not change, but without the
interpreted frames of ``random.py`` where the cores are compiled (speedups.py)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

__all__ = ["below", "randbelow", "sample", "uses_getrandbits"]

# CPython's Random draws below n by rejection on getrandbits (random.py, _randbelow_with_getrandbits);
# where that is not so, randbelow asks the generator itself.
_GETRANDBITS = random.Random._randbelow is random.Random._randbelow_with_getrandbits  # type: ignore[attr-defined]


def uses_getrandbits(rng: random.Random) -> bool:
    """Whether :func:`randbelow` draws with ``rng.getrandbits`` (so a caller may do the same with the
    method bound once)."""
    return _GETRANDBITS and type(rng) is random.Random


def randbelow(rng: random.Random, n: int) -> int:
    """``rng.randrange(n)`` for ``n > 0``: the same number, and the generator left in the same state."""
    if not _GETRANDBITS or type(rng) is not random.Random:
        return int(rng._randbelow(n))  # type: ignore[attr-defined]
    return below(rng.getrandbits, n)


def below(getrandbits: Callable[[int], int], n: int) -> int:
    """CPython's draw below ``n > 0`` by rejection on ``getrandbits`` (random.py,
    ``_randbelow_with_getrandbits``): :func:`randbelow`'s, for a caller that bound the method once."""
    k = n.bit_length()
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


def sample(rng: random.Random, population: Sequence[str], k: int) -> list[str]:
    """``rng.sample(population, k)``: the same items in the same order, and the generator left in the
    same state (CPython 3.11's algorithm, random.py, on :func:`randbelow`)."""
    if not _GETRANDBITS or type(rng) is not random.Random:
        return rng.sample(population, k)
    n = len(population)
    if not 0 <= k <= n:
        raise ValueError("Sample larger than population or is negative")
    setsize = 21  # random.py: a small set's size minus an empty list's
    if k > 5:
        setsize += 4 ** math.ceil(math.log(k * 3, 4))
    result: list[str] = []
    if n <= setsize:  # a pool of what is left is smaller than a set of what was taken
        pool = list(population)
        for i in range(k):
            j = randbelow(rng, n - i)
            result.append(pool[j])
            pool[j] = pool[n - i - 1]
    else:
        selected: set[int] = set()
        for _ in range(k):
            j = randbelow(rng, n)
            while j in selected:
                j = randbelow(rng, n)
            selected.add(j)
            result.append(population[j])
    return result
