"""The string choices of the policies' parameters, apart from the policies themselves: the launcher
declares its flags with them (:mod:`aviary.launch.policies.registry`) without importing a core, so a node
process loads no scheduler and a command that only reads its flags loads no core."""

from __future__ import annotations

LEFTOVER_ORDERS = ("srtf-first", "pack-first")
"""Carbyne: who gets the leftover resources first (:mod:`aviary.central.carbyne`)."""

BOOKINGS = ("preferred", "slowed")
"""Which reservation a GPU/MPI job tries first: d on its preferred partition, or d x slowdown anywhere
(:mod:`aviary.central.rayon_cs`)."""

WARM_STARTS = ("greedy", "previous", "off")
"""TetriSched's MIP start (:mod:`aviary.central.tetrisched`)."""

CONTENTION = ("fluid", "off")
"""A multi-resource node's contention model (:mod:`aviary.worker.resource_node`)."""
