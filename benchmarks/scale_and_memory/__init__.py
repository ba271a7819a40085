"""Scale and memory (``docs/measurements.md``, "Scale and memory"):
``python -m aviary.benchmarks.scale_and_memory WHAT [flags]``."""

WHATS = {
    "nodes": "a thousand real node monitors on one machine, against the simulator",
    "soak": "memory over a 30-minute real replay with failures",
}
