"""``python -m aviary.benchmarks.central_policies WHAT [flags]``: one of :data:`WHATS`."""

from aviary.benchmarks.central_policies import WHATS
from aviary.benchmarks.commands import run

if __name__ == "__main__":
    raise SystemExit(run("aviary.benchmarks.central_policies", WHATS))
