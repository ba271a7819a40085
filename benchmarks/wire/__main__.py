"""``python -m aviary.benchmarks.wire WHAT [flags]``: one of :data:`WHATS`."""

from aviary.benchmarks.commands import run
from aviary.benchmarks.wire import WHATS

if __name__ == "__main__":
    raise SystemExit(run("aviary.benchmarks.wire", WHATS))
