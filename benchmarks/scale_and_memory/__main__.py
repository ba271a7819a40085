"""``python -m aviary.benchmarks.scale_and_memory WHAT [flags]``: one of :data:`WHATS`."""

from aviary.benchmarks.commands import run
from aviary.benchmarks.scale_and_memory import WHATS

if __name__ == "__main__":
    raise SystemExit(run("aviary.benchmarks.scale_and_memory", WHATS))
