"""STRL, TetriSched's Space-Time Request Language (Tumanov et al., EuroSys'16 §4.1; spec §1.2).

A STRL expression maps a space-time allocation to a scalar value ("positive value means the STRL
expression is satisfied", §4). Expressions are small immutable trees:

- leaves: :class:`NCk` ("n choose k": any ``k`` resources of an equivalence set, from quantum ``start``
  for ``dur`` quanta, worth ``value``) and its linear variant (``linear=True``, the paper's LnCk: up to
  ``k`` resources, worth ``value`` times the share of ``k`` granted);
- operators: :class:`Max` (OR: at most one child gets resources), :class:`Min` (AND: the smallest child
  value), :class:`Sum` (the children's values added: global scheduling), :class:`Scale` (the child's
  value times a factor) and :class:`Barrier` (``value`` if the child reaches ``value``, else nothing).

Time is in whole quanta counted from the planning cycle's "now" (quantum 0); an nCk occupies the half-open
interval ``[start, start + dur)`` (the §5.1 example: a 20 s job started at 0 is in the supply rows of
t = 0 and t = 10, not t = 20). An equivalence set is named by a string; what it contains is the
compiler's business (:mod:`aviary.central.strl_milp`), so the tree stays pure data.

:func:`value` is the reference semantics, used by the tests to check the MILP of Algorithm 1 against
brute force. Leaves compare by identity (``eq=False``): two equal-looking options of two jobs are two
different leaves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


class InvalidAllocation(ValueError):
    """An allocation that breaks a leaf's or an operator's structure (not merely worth nothing)."""


@dataclass(frozen=True, slots=True, eq=False)
class NCk:
    """``nCk(set, k, start, dur, value)`` [§4.1 item 1]; ``linear``: LnCk [§4.1, Algorithm 1].

    ``tag`` is an opaque, hashable label of the option (the policy's job, kind and absolute start): the
    plan is reported by tag, and the warm start finds last cycle's choice by it.
    """

    set: str
    k: int
    start: int
    dur: int
    value: float
    tag: Any = None
    linear: bool = False

    def __post_init__(self) -> None:
        if self.k < 1 or self.start < 0 or self.dur < 1:
            raise ValueError(
                f"nCk needs k >= 1, start >= 0, dur >= 1: got k={self.k}, {self.start}, {self.dur}"
            )

    @property
    def end(self) -> int:
        return self.start + self.dur


def LnCk(set: str, k: int, start: int, dur: int, value: float, tag: Any = None) -> NCk:
    """The linear nCk: up to ``k`` resources, worth ``value * granted / k``."""
    return NCk(set, k, start, dur, value, tag, linear=True)


@dataclass(frozen=True, slots=True, eq=False)
class Max:
    """``max(e1..en)``: OR; resources go to at most one child [§4.1 item 2]."""

    children: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Min:
    """``min(e1..en)``: AND; the value of the least valued child [§4.1 item 3]."""

    children: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Sum:
    """``sum(e1..en)``: the children's values added [§4.1 item 6]."""

    children: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Scale:
    """``scale(e, s)``: the child's value times ``s`` [§4.1 item 5]."""

    child: Expr
    factor: float


@dataclass(frozen=True, slots=True, eq=False)
class Barrier:
    """``barrier(e, v)``: ``v`` if the child is valued ``v`` or more, else 0 [§4.1 item 4]."""

    child: Expr
    threshold: float


Expr = NCk | Max | Min | Sum | Scale | Barrier


def children(expr: Expr) -> tuple[Expr, ...]:
    if isinstance(expr, NCk):
        return ()
    if isinstance(expr, Scale | Barrier):
        return (expr.child,)
    return expr.children


def leaves(expr: Expr) -> Iterator[NCk]:
    """The leaves of ``expr``, depth first, left to right."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, NCk):
            yield e
        else:
            stack.extend(reversed(children(e)))


def value(expr: Expr, grants: Mapping[NCk, int]) -> float:
    """The value of ``expr`` when each leaf gets ``grants[leaf]`` resources (missing: none) [§4.1].

    nCk: ``value`` when granted exactly ``k``, 0 when granted nothing; LnCk: ``value * g / k`` for
    0 <= g <= k; max: the one child holding resources (two such children are invalid); min: the least
    child value; sum: the total; scale: the child's value times the factor; barrier: ``threshold`` when
    the child reaches it, else 0. Raises :class:`InvalidAllocation` on any other grant.
    Supply (capacity per partition and quantum) is not this function's concern.
    """
    return _value(expr, grants)[0]


def _value(expr: Expr, grants: Mapping[NCk, int]) -> tuple[float, bool]:
    """(value, whether any leaf below holds resources)."""
    if isinstance(expr, NCk):
        g = grants.get(expr, 0)
        if expr.linear:
            if not 0 <= g <= expr.k:
                raise InvalidAllocation(f"LnCk with k={expr.k} granted {g}")
            return expr.value * g / expr.k, g > 0
        if g not in (0, expr.k):
            raise InvalidAllocation(f"nCk with k={expr.k} granted {g}")
        return (expr.value if g else 0.0), g > 0
    if isinstance(expr, Scale):
        v, held = _value(expr.child, grants)
        return expr.factor * v, held
    if isinstance(expr, Barrier):
        v, held = _value(expr.child, grants)
        return (expr.threshold if v >= expr.threshold - 1e-9 else 0.0), held
    results = [_value(c, grants) for c in expr.children]
    held = any(h for _, h in results)
    if isinstance(expr, Max):
        if sum(h for _, h in results) > 1:
            raise InvalidAllocation("max: resources for more than one child")
        return sum(v for v, _ in results), held
    if isinstance(expr, Min):
        return min((v for v, _ in results), default=0.0), held
    return sum(v for v, _ in results), held


def describe(expr: Expr) -> str:
    """The expression in the paper's notation (for logs and test messages)."""
    if isinstance(expr, NCk):
        name = "LnCk" if expr.linear else "nCk"
        return f"{name}({expr.set}, k={expr.k}, s={expr.start}, d={expr.dur}, v={expr.value:g})"
    if isinstance(expr, Scale):
        return f"scale({describe(expr.child)}, {expr.factor:g})"
    if isinstance(expr, Barrier):
        return f"barrier({describe(expr.child)}, {expr.threshold:g})"
    return f"{type(expr).__name__.lower()}({', '.join(describe(c) for c in expr.children)})"


__all__ = [
    "Barrier",
    "Expr",
    "InvalidAllocation",
    "LnCk",
    "Max",
    "Min",
    "NCk",
    "Scale",
    "Sum",
    "children",
    "describe",
    "leaves",
    "value",
]
