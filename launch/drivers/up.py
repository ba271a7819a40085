"""``aviary up``: a local testbed that keeps running until Ctrl-C or SIGTERM.

The command's own control socket (a frontend named ``control`` on a free port, not in the cluster
file) waits for every process to register; another frontend (``aviary replay --connect``) can then
use the cluster's ``frontend`` address. On Ctrl-C or SIGTERM every process is asked to shut down,
and any still alive after a grace period is terminated, then killed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
from functools import partial
from pathlib import Path

import uvloop
from rich.console import Console
from rich.table import Table

from ...common.addresses import IN_USE, bind_problem, is_loopback
from ...common.cluster import Cluster, ClusterError, ProcessSpec, TomlLines, Where, free_ports
from ..flags.spec import UsageError
from .dashboard import serve
from .local import LocalTestbed
from .real import FrontendSession, ReplayError


def cluster_table(cluster: Cluster, names: set[str] | None = None) -> Table:
    """The processes with the address peers reach and, where it differs, the one bound."""
    scale = cluster.params.get("time_scale")
    title = f"testbed: policy {cluster.policy}, executor {cluster.executor}"
    title += f", time scale {scale:g}" if scale else ""
    wire, keys = ("tcp", "Noise") if cluster.transport == "tcp" else ("ZeroMQ", "CurveZMQ")
    table = Table(title=f"{title}, {wire}, " + (f"{keys} keys" if cluster.keys else "no keys"))
    for col in ("name", "role", "address", "slots", "partition"):
        table.add_column(col)
    for p in cluster.processes:
        if names is not None and p.name not in names:
            continue
        address = p.address if p.bind_address == p.address else f"{p.address} (bound {p.bind_address})"
        table.add_row(p.name, p.role, address, str(p.slots or ""), p.partition if p.role == "node" else "")
    return table


def exposure(cluster: Cluster, names: set[str] | None = None) -> str | None:
    """One warning when a process (of ``names``) binds a non-loopback address without keys."""
    if cluster.keys is not None:
        return None
    exposed = [
        p.bind_address
        for p in cluster.processes
        if (names is None or p.name in names) and not is_loopback(p.bind_address)
    ]
    if not exposed:
        return None
    more = f" and {len(exposed) - 1} more" if len(exposed) > 1 else ""
    return (
        f"warning: {exposed[0]}{more} listen without keys: anyone who can reach them can drive the "
        "testbed (aviary keys CLUSTER.toml makes keys)"
    )


def _on_eof(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set ``stop`` when standard input reaches its end (``--lifeline``)."""
    fd = sys.stdin.fileno()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            stop.set()

    loop.add_reader(fd, readable)


async def _hold(
    cluster: Cluster,
    bed: LocalTestbed,
    console: Console,
    lifeline: bool = False,
    dashboard: tuple[int, str] | None = None,
) -> None:
    control = ProcessSpec("control", "frontend", "127.0.0.1", free_ports(1)[0])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if lifeline:
        _on_eof(loop, stop)
    members = [p.name for p in bed.members]
    async with FrontendSession(cluster, [], frontend=control, members=members, dead=bed.dead) as session:
        await session.registered()
        console.print(cluster_table(cluster, set(members)))
        if (warning := exposure(cluster, set(members))) is not None:
            console.print(f"[yellow]{warning}[/yellow]")
        console.print(
            f"all {len(session.members)} processes registered; cluster description: {bed.cluster_file}"
        )
        console.print(f"logs: {bed.logs}/   replay against it: aviary replay --connect {bed.cluster_file}")
        board = None
        if dashboard is not None:
            say = partial(console.print, soft_wrap=True, markup=False, highlight=False)
            board = serve(session, cluster, *dashboard, say)
        console.print("Ctrl-C stops the testbed" + (", as does the end of its input." if lifeline else "."))
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), 1.0)
            except TimeoutError:
                for name, code in sorted(bed.dead().items()):
                    if bed.restart(name):  # a central scheduler: it rebuilds its state (issue 26)
                        console.print(f"[yellow]process {name} exited with code {code}: restarted[/yellow]")
                    elif name not in session.lost:
                        session.lost.add(name)
                        console.print(f"[red]process {name} exited with code {code}[/red]")
        console.print("stopping ...")
        if board is not None:
            board.stop()
        await session.collect(shutdown=True, timeout=5.0)


def check_ports(cluster: Cluster, names: list[str] | None = None, source: str | None = None) -> None:
    """One line naming the process, its host and port (and the line of ``source``, the cluster file)
    when one of the processes to start (``names``, default all but the frontend) could not listen on
    its address: before any process starts, not as a process that dies at its start."""
    for i, p in enumerate(cluster.processes):
        if p.role == "frontend" or (names is not None and p.name not in names):
            continue
        problem = bind_problem(p.bind or p.host, p.port)
        if problem is None:
            continue
        hint = " (is another testbed running?)" if problem == IN_USE else ""
        text = f"{p.name}: cannot listen on {p.bind or p.host}:{p.port}: {problem}{hint}"
        if source is None:
            raise ClusterError(text)
        where = Where(source, TomlLines.of(source), "process", i, f"[[process]] #{i + 1}")
        raise where.error("bind" if p.bind else "port", text)


def died_at_start(exc: ReplayError, bed: LocalTestbed) -> str:
    """One line for a testbed whose processes did not all register: the first dead one's last log line."""
    dead = sorted(bed.dead().items())
    if not dead:
        return str(exc)
    name, code = dead[0]
    last = next((line for line in reversed(bed.log_tail(name, 20).splitlines()) if line.strip()), "")
    more = f" (and {len(dead) - 1} more)" if len(dead) > 1 else ""
    said = f": {last.strip()}" if last else ""
    return f"process {name} exited with code {code} at its start{more}{said} (log: {bed.log_file(name)})"


def run_up(
    cluster: Cluster,
    workdir: Path | None,
    names: list[str] | None = None,
    source: str | None = None,
    lifeline: bool = False,
    keys: bool = True,
    dashboard: tuple[int, str] | None = None,
) -> int:
    """Run the cluster's processes (or those in ``names``: ``aviary host``, reading the cluster file
    ``source``) until Ctrl-C or SIGTERM, or with ``lifeline`` the end of standard input; ``dashboard``:
    serve the live dashboard at this (port, address)."""
    console = Console()
    check_ports(cluster, names, source)
    workdir = workdir or Path(tempfile.mkdtemp(prefix="aviary-up-"))
    bed = LocalTestbed(cluster, workdir, names, keys=keys and names is None)  # a host: its file decides
    clean = False
    try:
        bed.start()
        uvloop.run(_hold(cluster, bed, console, lifeline, dashboard))
        clean = bed.wait(5.0)
    except ReplayError as exc:
        raise UsageError(died_at_start(exc, bed)) from None
    finally:
        bed.stop()
    console.print("stopped: " + ("every process exited cleanly" if clean else "stragglers were terminated"))
    return 0
