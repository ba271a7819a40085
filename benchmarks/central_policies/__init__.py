"""Centralized policies (``docs/measurements.md``, "Centralized policies"):
``python -m aviary.benchmarks.central_policies WHAT [flags]``."""

WHATS = {
    "packing": "central decision cost per placed task; --graphene-offline: Graphene's offline schedules",
    "tetrisched": "TetriSched's solver time per cycle",
}
