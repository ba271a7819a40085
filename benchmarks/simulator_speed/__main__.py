"""``python -m aviary.benchmarks.simulator_speed WHAT [flags]``: one of :data:`WHATS`."""

from aviary.benchmarks.commands import run
from aviary.benchmarks.simulator_speed import WHATS

if __name__ == "__main__":
    raise SystemExit(run("aviary.benchmarks.simulator_speed", WHATS))
