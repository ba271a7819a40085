"""``python -m aviary.benchmarks.runtime_overhead WHAT [flags]``: one of :data:`WHATS`."""

from aviary.benchmarks.commands import run
from aviary.benchmarks.runtime_overhead import WHATS

if __name__ == "__main__":
    raise SystemExit(run("aviary.benchmarks.runtime_overhead", WHATS))
