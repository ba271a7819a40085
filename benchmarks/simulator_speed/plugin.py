"""What a plug-in policy costs against the same policy built in, in one run (docs/measurements.md, "What a
plug-in policy costs").

Three pairs, each policy's run alternated with its twin's for ``--rounds`` rounds; printed: the plug-in's
best CPU time over the built-in's best (1.0: the same; the best of several runs is what the machine's
noise leaves alone) and the median of the rounds' ratios:

- ``declared``: Sparrow built in, and Sparrow declared from a file outside the package
  (``replace(builtin("sparrow"), name=...)``): the same compiled cores, so only the plug-in path differs
  (loading, the Context, the cluster file's ``policy_source``);
- ``interpreted``: the central FIFO built in (an interpreted core) and a copy of its source loaded from a
  file: the same Python code, one a plug-in;
- ``compiled``: Sparrow built in (in the compiled set, ``speedups.py``) and a copy of its scheduler's
  source from a file, which runs interpreted as every plug-in does: what the compiled build gives a
  built-in.

On the simulator: the bundled Google sample's first ``--jobs`` jobs on ``--nodes`` single-slot nodes at
their own arrival times (events per second). On real processes (``--real``): ``aviary bench``'s timer
figures (round trip, no-op throughput, 10 ms tasks) for the central FIFO and its plug-in copy.

    python -m aviary.benchmarks.simulator_speed plugin [--rounds 5] [--jobs 2000] [--nodes 1000] [--real]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

from aviary.benchmarks.simulator_speed.sample import TRACE, load_jobs
from aviary.launch.cli.bench import timer_figures
from aviary.launch.drivers.sim import simulate
from aviary.launch.policies.registry import get_policy, policy_cluster

ROOT = Path(__file__).resolve().parents[2]


def absolute(source: str, package: str) -> str:
    """A module's source with its relative imports made absolute (``from ..common`` -> ``aviary.common``)."""
    source = re.sub(r"^from \.\.(\w)", r"from aviary.\1", source, flags=re.M)
    return re.sub(r"^from \.(\w)", rf"from aviary.{package}.\1", source, flags=re.M)


def plugins(folder: Path) -> dict[str, tuple[str, str]]:
    """Each pair's (built-in name, plug-in source), the plug-ins written into ``folder``."""
    (folder / "declared_sparrow.py").write_text(
        "from dataclasses import replace\nfrom aviary.policy import builtin\n"
        "POLICY = replace(builtin('sparrow'), name='sparrow-declared')\n"
    )
    fifo = absolute((ROOT / "central" / "fifo.py").read_text(), "central")
    fifo += (
        "\n\nfrom aviary.policy import Policy, builtin\n\n"
        "def _build(ctx):\n"
        "    return CentralFifoCore(ctx.name, ctx.node_slots, int(ctx.params['fifo_queue']))\n\n"
        "POLICY = Policy('fifo-copy', 'a copy', central=_build, params=builtin('fifo').params)\n"
    )
    (folder / "fifo_copy.py").write_text(fifo)
    sparrow = absolute((ROOT / "distributed" / "sparrow.py").read_text(), "distributed")
    sparrow += (
        "\n\nfrom aviary.policy import Policy, builtin\n\n"
        "def _build(ctx):\n"
        "    return SparrowCore(ctx.name, ctx.nodes, probe_ratio=float(ctx.params['probe_ratio']),"
        " cancel=ctx.params['cancel_probes'] == 'on', seed=ctx.seed)\n\n"
        "POLICY = Policy('sparrow-copy', 'a copy', scheduler=_build, params=builtin('sparrow').params)\n"
    )
    (folder / "sparrow_copy.py").write_text(sparrow)
    return {
        "declared": ("sparrow", f"{folder / 'declared_sparrow.py'}:POLICY"),
        "interpreted": ("fifo", f"{folder / 'fifo_copy.py'}:POLICY"),
        "compiled": ("sparrow", f"{folder / 'sparrow_copy.py'}:POLICY"),
    }


def sim_run(policy: str, jobs: list, nodes: int) -> tuple[float, int]:
    """CPU seconds (of this process: what another process on the machine disturbs least) and events of
    one simulated replay."""
    cluster = policy_cluster(policy, nodes=nodes, slots=1, schedulers=2, bind_ports=False)
    started = time.process_time()
    outcome = simulate(cluster, jobs)
    assert not outcome.frontend.unfinished(), policy
    return time.process_time() - started, outcome.events


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--real", action="store_true", help="also the real runtime's bench figures (~2 min)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here too")
    args = ap.parse_args(argv)
    from aviary import speedups

    print(f"build: {speedups.ACTIVE} ({speedups.REASON})", flush=True)
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        pairs = plugins(Path(tmp))
        jobs = load_jobs(TRACE, args.jobs)
        for pair, (builtin, source) in pairs.items():
            get_policy(source)
            bases, plugs = [], []
            for r in range(args.rounds):  # each twin first in every other round
                if r % 2:
                    plugs.append(sim_run(source, jobs, args.nodes))
                bases.append(sim_run(builtin, jobs, args.nodes))
                if not r % 2:
                    plugs.append(sim_run(source, jobs, args.nodes))
            assert bases[0][1] == plugs[0][1], "the twins ran different numbers of events"
            out[f"sim_{pair}"] = {
                "plugin_over_builtin_best_cpu": round(min(p for p, _ in plugs) / min(b for b, _ in bases), 3),
                "median_ratio": round(
                    statistics.median(p / b for (p, _), (b, _) in zip(plugs, bases, strict=True)), 3
                ),
                "builtin_events_per_s": round(bases[0][1] / min(b for b, _ in bases)),
            }
            print(f"simulator, {pair} ({builtin} / its plug-in twin): {out[f'sim_{pair}']}", flush=True)
        if args.real:
            builtin, source = pairs["interpreted"]
            figures: dict[str, list[dict]] = {builtin: [], source: []}
            for r in range(max(1, args.rounds // 2)):
                for policy in (builtin, source) if r % 2 == 0 else (source, builtin):
                    work = Path(tmp) / f"real-{r}-{len(figures[policy])}-{policy[-12:].replace('/', '_')}"
                    figures[policy].append(asyncio.run(timer_figures(work, keys=False, policy=policy)))
            for key, lower_better in (
                ("roundtrip_p50_ms", True),
                ("noop_tasks_per_s", False),
                ("sleep10ms_efficiency", True),
            ):
                best = min if lower_better else max
                base = best(f[key] for f in figures[builtin])
                plug = best(f[key] for f in figures[source])
                cost = plug / base if lower_better else base / plug
                out.setdefault("real_interpreted", {})[key] = round(cost, 3)
            print(
                "real processes, fifo / its plug-in twin (> 1: the plug-in costs more):",
                out["real_interpreted"],
            )
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
