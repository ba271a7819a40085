"""The multi-resource policies' shared parts: a central :class:`~aviary.central.packing.PackingCore` around a
:class:`~aviary.central.packing.PlacementPolicy`, nodes with capacity vectors and the fluid contention
model (:mod:`aviary.worker.resource_node`). :func:`packing_policy` declares such a policy from the one
function that makes its placement policy: the built-in CS, DRF, SJF, Tetris, Carbyne, Graphene,
TetriSched and Rayon/CS, and a plug-in's (:mod:`aviary.policy`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...common.choices import CONTENTION
from ...common.core import Core
from ...common.declaration import Builder, Context, Policy
from ...common.params import Param

if TYPE_CHECKING:
    from ...central.packing import PlacementPolicy

CONTENTION_PARAMS = (
    Param(
        "contention",
        "fluid",
        "DAG policies: nodes over-allocate cores, disk and network, each task slowed by "
        "min(1, capacity / summed demand) on what it uses, memory a hard limit (fluid); or admit by "
        "whole-vector fit at full speed (off, the model before contention)",
        choices=CONTENTION,
    ),
    Param(
        "disk_loss",
        0.0,
        "DAG policies, fluid contention: share of a disk's goodput lost as its over-subscription grows "
        "(0: none, as Graphene's 'do not lose goodput when demand exceeds capacity')",
        low=0.0,
        high=1.0,
        open_high=True,
    ),
)

_highs_silenced = False


def silence_highs_banner() -> None:
    """HiGHS prints its banner on the process's standard output (from C++, past Python's ``sys.stdout``)
    when the process makes its first ``Highs()``, before any option can turn output off; later ones print
    nothing. Make that first one here, the descriptor pointed at /dev/null meanwhile, so that a run of
    TetriSched prints no banner (its cores stay pure: the launcher does this I/O); once per process."""
    global _highs_silenced
    if _highs_silenced:
        return
    _highs_silenced = True
    import highspy

    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


MakePlacement = Callable[[dict[str, Any]], "PlacementPolicy"]
"""Makes a central placement policy from the policy's parameter values (:attr:`Context.params`)."""


def packing_central(make: MakePlacement) -> Builder:
    """The builder of a :class:`~aviary.central.packing.PackingCore` around the placement policy ``make``
    returns; the values it gets hold ``account`` and ``overbook`` when the policy declares them."""

    def build(ctx: Context) -> Core:
        from ...central.packing import PackingCore

        values = ctx.params
        nodes = [(n.name, n.resources, n.attributes) for n in ctx.cluster.nodes]
        return PackingCore(
            ctx.name,
            nodes,
            make(values),
            seed=ctx.seed,
            account=values.get("account", "all"),
            overbook=values.get("overbook", 1.0),
        )

    return build


def resource_node(ctx: Context) -> Core:
    """The multi-resource node monitor: admission by memory, the fluid contention model."""
    from ...worker.resource_node import ResourceNodeCore

    contention, disk_loss = (p.held(ctx.cluster.params) for p in CONTENTION_PARAMS)
    return ResourceNodeCore(ctx.name, ctx.resources, contention, disk_loss)


FAMILY = "Multi-resource DAG"


def packing_policy(
    name: str,
    summary: str,
    make: MakePlacement,
    params: tuple[Param, ...] = (),
    *,
    family: str = "",
) -> Policy:
    """A multi-resource DAG policy: the shared central layer asks the placement policy ``make`` returns
    which task goes on which node; nodes have capacity vectors and the contention model (whose
    parameters are added to ``params``)."""
    return Policy(
        name,
        summary,
        central=packing_central(make),
        node=resource_node,
        params=(*params, *CONTENTION_PARAMS),
        dag=True,
        family=family,
    )
