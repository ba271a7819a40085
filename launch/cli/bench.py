"""``aviary bench``: the real runtime's overhead on this machine (issue: Foundation).

- ``roundtrip_p50_ms`` / ``roundtrip_p99_ms``: submit of a one-task job with a no-op task to its
  ``JobDone`` at the frontend, on an idle testbed (one job at a time), 300 samples;
- ``noop_tasks_per_s``: 5,000 no-op tasks in 50 jobs of 100 tasks, all submitted at once, on 4
  single-slot node monitors and 1 Sparrow scheduler: tasks / (last finish - first submit);
- ``sleep10ms_efficiency``: 400 tasks of 10 ms (4 jobs of 100) on the same 4 single-slot nodes:
  makespan / the ideal 1.0 s (1.0 is perfect), with the timer executor, and the same with the
  process executor (a real child process per task) as ``sleep10ms_efficiency_process``.

Messages per task are reported too. The testbed runs with CurveZMQ keys, as every testbed does by
default; the timer figures are measured again without keys (``no_keys``) in the same run, and
``keys_cost`` gives each keyed figure over the unkeyed one (> 1: keys cost that much). The comparison with
Dask (``--peer dask``) takes the unkeyed figures, Dask's workers having no encryption either. The
timer figures are measured again over the plain-TCP transport (``transport = "tcp"``: no ZeroMQ I/O
threads, :mod:`aviary.common.tcp_transport`), keyed (``tcp``) and not (``tcp_no_keys``);
``zmq_over_tcp`` gives what ZeroMQ costs over it, keyed both (> 1: ZeroMQ costs that much); Dask is
compared with both wires' unkeyed figures. The unkeyed tcp figures are measured once more with the
central FIFO scheduler instead of Sparrow (``central_tcp_no_keys``): a task then crosses four hops
(``SubmitJob``, ``PlaceTask``, ``TaskFinished``, ``JobDone``) instead of Sparrow's six (late binding adds
``Probe`` and ``GetTask`` / ``AssignTask``), the path closest to Dask's; and once more with one task
queued on each node beyond its slot (``central_queue_tcp_no_keys``: the FIFO's ``fifo_queue = 1``), the
hand-out of Dask's default ``worker-saturation`` (1.1: two tasks on a one-thread worker), so that a
node starts its next task without waiting for the scheduler. All figures come from one run
on one machine: compare ratios between runs, not bare times, on a shared machine.
"""

from __future__ import annotations

import json
import platform
import statistics
import tempfile
from pathlib import Path
from typing import Any

import uvloop

from ...common.model import JobSpec
from ..drivers.dashboard import Dashboard, node_slots
from ..drivers.local import LocalTestbed
from ..drivers.real import FrontendSession
from ..policies.registry import cluster_policy, policy_cluster


def _percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    pos = (len(values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


async def measure_replay(
    cluster: Any, jobs: list[JobSpec], dead: Any, dashboard: str | None = None
) -> tuple[FrontendSession, float]:
    """One replay of ``jobs``; ``dashboard``: with the dashboard served (``"idle"``: no page open;
    ``"page"``: a page computed every second, as a browser showing it makes the server do)."""
    route = cluster_policy(cluster).route(cluster)
    async with FrontendSession(cluster, jobs, route, dead=dead) as session:
        board = None
        if dashboard is not None:
            board = Dashboard(session.core, session.runtime.now, node_slots(cluster), port=0)
            if dashboard == "page":
                board.headless()
        try:
            await session.registered()
            await session.replay(stall_timeout=30.0, tick=0.005)
        finally:
            if board is not None:
                board.stop()
        if session.problems:
            raise RuntimeError("; ".join(session.problems))
        messages, _ = await session.collect(shutdown=False)
    makespan = max(t.finish or 0.0 for t in session.core.times.values())
    session.messages = messages  # type: ignore[attr-defined]
    return session, makespan


async def timer_figures(
    workdir: Path,
    keys: bool,
    dashboard: str | None = None,
    transport: str = "zmq",
    policy: str = "sparrow",
    **params: Any,
) -> dict[str, Any]:
    """Round trip, no-op throughput and 10 ms sleep efficiency with the timer executor (and the
    dashboard: :func:`measure_replay`), over ``transport``, scheduled by ``policy`` with ``params``."""
    results: dict[str, Any] = {}
    cluster = policy_cluster(policy, nodes=4, slots=1, schedulers=1, executor="timer")
    cluster.transport = transport
    cluster.params.update(params)
    with LocalTestbed(cluster, workdir, keys=keys) as bed:
        # Round trip: 300 one-task no-op jobs, 5 ms apart (each takes ~1 ms: the testbed stays idle).
        jobs = [JobSpec(i, 0.005 * i, [0.0], 0.0, False) for i in range(300)]
        session, _ = await measure_replay(cluster, jobs, bed.dead, dashboard)
        rtts = [(t.finish - t.submit) * 1000 for t in session.core.times.values()]  # type: ignore[operator]
        results["roundtrip_p50_ms"] = round(statistics.median(rtts), 3)
        results["roundtrip_p99_ms"] = round(_percentile(rtts, 0.99), 3)
        results["roundtrip_samples"] = len(rtts)

        jobs = [JobSpec(i, 0.0, [0.0] * 100, 0.0, False) for i in range(50)]
        session, makespan = await measure_replay(cluster, jobs, bed.dead, dashboard)
        results["noop_tasks_per_s"] = round(5000 / makespan, 1)
        results["noop_messages_per_task"] = round(sum(session.messages.values()) / 5000, 3)  # type: ignore[attr-defined]

        jobs = [JobSpec(i, 0.0, [0.010] * 100, 0.010, False) for i in range(4)]
        _, makespan = await measure_replay(cluster, jobs, bed.dead, dashboard)
        results["sleep10ms_efficiency"] = round(makespan / 1.0, 4)
    return results


def _cost(base: dict[str, Any], other: dict[str, Any]) -> dict[str, float]:
    """Each figure of ``other`` over ``base``'s, oriented so that > 1 means ``other`` costs that much."""
    return {
        "roundtrip_p50_ms": round(other["roundtrip_p50_ms"] / base["roundtrip_p50_ms"], 3),
        "noop_tasks_per_s": round(base["noop_tasks_per_s"] / other["noop_tasks_per_s"], 3),
        "sleep10ms_efficiency": round(other["sleep10ms_efficiency"] / base["sleep10ms_efficiency"], 4),
    }


async def _bench(executor_for_sleep: str, workdir: Path, dashboard: bool = False) -> dict[str, Any]:
    results = await timer_figures(workdir / "timer", keys=True)
    results["no_keys"] = unkeyed = await timer_figures(workdir / "timer-no-keys", keys=False)
    results["keys_cost"] = _cost(unkeyed, results)
    results["tcp"] = tcp = await timer_figures(workdir / "timer-tcp", keys=True, transport="tcp")
    results["tcp_no_keys"] = await timer_figures(workdir / "timer-tcp-no-keys", keys=False, transport="tcp")
    results["central_tcp_no_keys"] = await timer_figures(
        workdir / "timer-central-tcp-no-keys", keys=False, transport="tcp", policy="fifo"
    )
    results["central_queue_tcp_no_keys"] = await timer_figures(
        workdir / "timer-central-queue-tcp-no-keys", keys=False, transport="tcp", policy="fifo", fifo_queue=1
    )
    results["zmq_over_tcp"] = _cost(tcp, results)
    if dashboard:
        for mode in ("idle", "page"):
            figures = await timer_figures(workdir / f"timer-dashboard-{mode}", True, mode)
            results[f"dashboard_{mode}"] = figures
            results[f"dashboard_{mode}_cost"] = _cost(results, figures)
    cluster = policy_cluster("sparrow", nodes=4, slots=1, schedulers=1, executor=executor_for_sleep)
    with LocalTestbed(cluster, workdir / executor_for_sleep) as bed:
        jobs = [JobSpec(i, 0.0, [0.010] * 100, 0.010, False) for i in range(4)]
        _, makespan = await measure_replay(cluster, jobs, bed.dead)
        results[f"sleep10ms_efficiency_{executor_for_sleep}"] = round(makespan / 1.0, 4)
    return results


def run_bench(out: Path, peer: str | None = None, dashboard: bool = False) -> dict[str, Any]:
    """The figures above in ``out/bench.json``; with ``peer="dask"`` also Dask distributed's, measured
    the same way right after (:mod:`.bench_dask`), and Aviary's advantage on each as a ratio; with
    ``dashboard`` the keyed timer figures again with the live dashboard served, idle and with a page
    computed every second, and their cost over the plain ones."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="aviary-bench-") as tmp:
        results = uvloop.run(_bench("process", Path(tmp), dashboard))
    results["targets"] = {
        "roundtrip_p50_ms": "<= 0.5",
        "noop_tasks_per_s": ">= 20x Dask's",
        "sleep10ms_efficiency": "<= 1.03",
    }
    if peer == "dask":
        from .bench_dask import ratios, run_dask

        results["dask"] = run_dask(_percentile)
        results["aviary_over_dask"] = ratios(results["no_keys"], results["dask"])  # neither side keyed
        for name in ("tcp", "central_tcp", "central_queue_tcp"):
            results[f"aviary_{name}_over_dask"] = ratios(results[f"{name}_no_keys"], results["dask"])
    results["machine"] = {
        "python": platform.python_version(),
        "cpus": _cpus(),
        "platform": platform.platform(),
    }
    (out / "bench.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


CONFIGS = (
    ("", "Sparrow, ZeroMQ, keys"),
    ("no_keys", "Sparrow, ZeroMQ"),
    ("tcp", "Sparrow, tcp, keys"),
    ("tcp_no_keys", "Sparrow, tcp"),
    ("central_tcp_no_keys", "central FIFO, tcp"),
    ("central_queue_tcp_no_keys", "central FIFO + node queue, tcp"),
    ("dask", "Dask distributed"),
)
"""The figures' configurations in ``bench.json`` (``""``: its top level) and how the table names them."""

COLUMNS = (
    ("roundtrip_p50_ms", "round trip p50 ms", "low"),
    ("roundtrip_p99_ms", "p99 ms", "low"),
    ("noop_tasks_per_s", "no-op tasks/s", "high"),
    ("noop_messages_per_task", "msgs/task", None),
    ("sleep10ms_efficiency", "10 ms eff.", "low"),
)
"""The table's figures: key in ``bench.json``, header, and which way is better (None: no ratio to Dask)."""


def summary(results: dict[str, Any]) -> Any:
    """A table of ``results`` (:func:`run_bench`): each configuration's figures, with Dask's over
    Aviary's when Dask ran; under it each target against the best configuration."""
    from rich.console import Group
    from rich.table import Table

    dask = results.get("dask")
    title = "aviary bench, 4 single-slot timer nodes" + (
        " (in brackets: times better than Dask)" if dask else ""
    )
    table = Table(title=title)
    table.add_column("configuration")
    for _, header, _ in COLUMNS:
        table.add_column(header, justify="right")
    rows = [(label, results.get(key) if key else results) for key, label in CONFIGS]
    for label, figures in rows:
        if not figures:
            continue
        cells = []
        for figure, _, better in COLUMNS:
            value = figures.get(figure)
            cell = "-" if value is None else f"{value:,.3f}" if value < 100 else f"{value:,.0f}"
            if dask and figures is not dask and better and value:
                ratio = value / dask[figure] if better == "high" else dask[figure] / value
                cell += f" ({ratio:.1f}x)"
            cells.append(cell)
        table.add_row(label, *cells)
    aviary = [(label, f) for label, f in rows if f and f is not dask]
    best_rtt = min(aviary, key=lambda r: r[1]["roundtrip_p50_ms"])
    best_eff = min(aviary, key=lambda r: r[1]["sleep10ms_efficiency"])
    lines = [
        "targets, the best configuration's figure:",
        f"  round trip p50 <= 0.5 ms: {best_rtt[1]['roundtrip_p50_ms']:.3f} ms ({best_rtt[0]})",
        f"  10 ms efficiency <= 1.03: {best_eff[1]['sleep10ms_efficiency']:.3f} ({best_eff[0]})",
    ]
    if dask:
        best_noop = max(aviary, key=lambda r: r[1]["noop_tasks_per_s"])
        noop = best_noop[1]["noop_tasks_per_s"] / dask["noop_tasks_per_s"]
        lines.append(f"  no-op throughput >= 20x Dask's: {noop:.1f}x ({best_noop[0]})")
    return Group(table, *lines)
