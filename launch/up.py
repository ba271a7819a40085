"""``aviary up``: a local testbed that keeps running until Ctrl-C or SIGTERM.

The command's own control socket (a frontend named ``control`` on a free port, not in the cluster
file) waits for every process to register; another frontend (``aviary replay --connect``) can then
use the cluster's ``frontend`` address. On Ctrl-C or SIGTERM every process is asked to shut down,
and any still alive after a grace period is terminated, then killed.
"""

from __future__ import annotations

import asyncio
import signal
import tempfile
from pathlib import Path

import uvloop
from rich.console import Console
from rich.table import Table

from ..common.cluster import Cluster, ProcessSpec, free_ports
from .local import LocalTestbed
from .real import FrontendSession


def cluster_table(cluster: Cluster, names: set[str] | None = None) -> Table:
    scale = cluster.params.get("time_scale")
    title = f"testbed: policy {cluster.policy}, executor {cluster.executor}"
    table = Table(title=title + (f", time scale {scale:g}" if scale else ""))
    for col in ("name", "role", "address", "slots", "partition"):
        table.add_column(col)
    for p in cluster.processes:
        if names is not None and p.name not in names:
            continue
        table.add_row(p.name, p.role, p.address, str(p.slots or ""), p.partition if p.role == "node" else "")
    return table


async def _hold(cluster: Cluster, bed: LocalTestbed, console: Console) -> None:
    control = ProcessSpec("control", "frontend", "127.0.0.1", free_ports(1)[0])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    members = [p.name for p in bed.members]
    async with FrontendSession(cluster, [], frontend=control, members=members, dead=bed.dead) as session:
        await session.registered()
        console.print(cluster_table(cluster, set(members)))
        console.print(
            f"all {len(session.members)} processes registered; cluster description: {bed.cluster_file}"
        )
        console.print(f"logs: {bed.logs}/   replay against it: aviary replay --connect {bed.cluster_file}")
        console.print("Ctrl-C stops the testbed.")
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), 1.0)
            except TimeoutError:
                for name, code in sorted(bed.dead().items()):
                    if name not in session.lost:
                        session.lost.add(name)
                        console.print(f"[red]process {name} exited with code {code}[/red]")
        console.print("stopping ...")
        await session.collect(shutdown=True, timeout=5.0)


def run_up(cluster: Cluster, workdir: Path | None, names: list[str] | None = None) -> int:
    """Run the cluster's processes (or those in ``names``: ``aviary host``) until Ctrl-C or SIGTERM."""
    console = Console()
    workdir = workdir or Path(tempfile.mkdtemp(prefix="aviary-up-"))
    bed = LocalTestbed(cluster, workdir, names)
    clean = False
    try:
        bed.start()
        uvloop.run(_hold(cluster, bed, console))
        clean = bed.wait(5.0)
    finally:
        bed.stop()
    console.print("stopped: " + ("every process exited cleanly" if clean else "stragglers were terminated"))
    return 0
