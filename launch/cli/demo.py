"""``aviary demo``: the quickstart. A small replay of the bundled Google sample on a local testbed,
with Sparrow and with Eagle, then Eagle normalized to Sparrow (under a minute).

300 consecutive jobs from the 4,500th (a window of moderate jobs whose tasks end soon after the last
arrival) on 10 node monitors x 4 slots (2 distributed schedulers, plus Eagle's central scheduler for long
jobs), durations divided by 15,000 and task counts by 5 (task-seconds kept), Poisson arrivals at 80 %
offered load: the utilization is the load asked for (78 % predicted and measured), about 17 s of replay
per policy. Short jobs stuck behind long tasks under Sparrow are what Eagle's partitions and succinct
state sharing avoid: its short-job p90 is a small fraction of Sparrow's (~0.006, on the simulator and on
real processes with these flags).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.console import Console

from ..flags.spec import ReplaySpec
from ..replay.resolve import setup_replay
from ..replay.run import print_summary, run_replay
from ..results.compare import compare

DEMO_FLAGS = [
    "--jobs", "300", "--start", "4500", "--nodes", "10", "--slots", "4", "--schedulers", "2",
    "--time-scale", "15000", "--task-scale", "0.2", "--load", "0.8", "--seed", "1", "--force",
]  # fmt: skip
"""The demo's replay as ``aviary replay`` flags (tests/test_spec.py checks :func:`demo_spec` agrees)."""


def demo_spec(policy: str, out: Path) -> ReplaySpec:
    """The demo's replay of ``policy``, results in ``out/policy`` (the demo's own: replaced each time)."""
    return ReplaySpec(
        policy=policy,
        jobs=300,
        start=4500,
        nodes=10,
        slots=4,
        schedulers=2,
        time_scale=15_000.0,
        task_scale=0.2,
        load=0.8,
        seed=1,
        out=out / policy,
        force=True,
    )


def demo_command(policy: str, out: Path) -> str:
    """The command that makes the demo's run of ``policy`` again, which its summary records
    (``extra.command``): ``aviary replay`` with :data:`DEMO_FLAGS`, the command line of :func:`demo_spec`."""
    return "aviary replay " + shlex.join(["--policy", policy, *DEMO_FLAGS, "--out", str(out / policy)])


def run_demo(out: Path, policies: tuple[str, ...] = ("sparrow", "eagle")) -> int:
    console = Console()
    dirs = []
    for policy in policies:
        setup = setup_replay(demo_spec(policy, out))
        setup.extra["command"] = demo_command(policy, out)
        console.rule(f"{policy}: {len(setup.jobs)} Google jobs on {len(setup.cluster.nodes)} nodes x 4 slots")
        summary = run_replay(setup)
        print_summary(summary, setup.out, console)
        dirs.append(setup.out)
    console.rule(f"{' and '.join(policies[1:])} normalized to {policies[0]}")
    table, _ = compare(dirs, out / "compare.png")
    console.print(table)
    console.print(f"chart: {out / 'compare.png'}")
    return 0
