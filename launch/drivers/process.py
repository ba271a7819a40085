"""Entry point of one testbed OS process:
``python -m aviary.launch.drivers.process CLUSTER.toml UNIT [--recover]``.

``--recover``: a central scheduler restarted after a death, which rebuilds its state before it schedules
(:mod:`aviary.central.recovery`).

``UNIT`` names a process of the cluster description, or a pack of node monitors (``pack-0``: the
description's ``nodes_per_process``, :meth:`Cluster.units`). Each member gets its own core, ZeroMQ
socket, address and name, driven by its own :class:`Runtime` on the one event loop, so no peer can tell a
packed node from a lone one. The process runs until every member has stopped (a ``Shutdown`` each), or
SIGTERM or SIGINT stops them all.

A launcher can fail one member of a pack alone by writing ``kill NAME`` on the process's standard input
(when it is a pipe: a local testbed's and ``aviary host``'s; a container's is not):
that member stops at once as a SIGKILL would stop it — no reply, its timers and tasks gone, its socket
closed without lingering — and the others run on. ``stop NAME`` freezes it as a SIGSTOP would (it reads
nothing, no timer fires, its tasks' exits wait) until ``cont NAME``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import stat
import sys
from functools import partial
from typing import Any

from ...common.addresses import AddressInUse, raise_open_files
from ...common.cluster import ClusterError, load_cluster
from ...common.hoplog import make_runtime
from ...common.runtime import Runtime
from ...common.wire import open_transport
from ...worker.executors import make_executor
from ..policies.registry import build_core

log = logging.getLogger("aviary.process")

KILL = "kill"
"""The standard-input command that fails one member of the process (``kill NAME``)."""
STOP, CONT = "stop", "cont"
"""The standard-input commands that freeze one member as SIGSTOP would (``stop NAME``) and let it go on
(``cont NAME``): :meth:`Runtime.pause`, :meth:`Runtime.resume`."""


RECOVER = "--recover"


async def serve(cluster_path: str, unit: str, recover: bool = False) -> None:
    cluster = load_cluster(cluster_path)
    units = cluster.units()
    if unit not in units:
        raise ClusterError(f"no process named {unit!r} in the cluster (nor a pack of nodes)")
    runtimes: dict[str, Runtime] = {}
    try:
        for spec in units[unit]:
            transport = open_transport(spec.name, spec.bind_address, spec.address, cluster.addresses())
            core = build_core(spec, cluster, recover=recover)
            # a Kairos node's suspended tasks may keep a share of a core (--suspended-share)
            share = float(getattr(core, "suspended_share", 0.0))
            executor = (
                partial(make_executor, cluster.executor, suspended_share=share)
                if spec.role == "node"
                else None
            )
            rebuild = partial(build_core, spec, cluster)
            runtimes[spec.name] = make_runtime(core, transport, executor, rebuild=rebuild)
        loop = asyncio.get_running_loop()

        def stop_all() -> None:
            for runtime in runtimes.values():
                runtime.stop()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop_all)
        if len(runtimes) > 1 and _pipe(sys.stdin):  # a launcher's (docker and a terminal give none)
            loop.add_reader(sys.stdin.fileno(), _command, runtimes)
        await asyncio.gather(*(_run(r) for r in runtimes.values()))
    finally:
        for runtime in runtimes.values():
            runtime.transport.close()  # closing twice is harmless


async def _run(runtime: Runtime) -> None:
    try:
        await runtime.run()
    finally:
        runtime.transport.close(linger=0 if runtime.crashed else None)


def _pipe(stream: Any) -> bool:
    """Whether ``stream`` is a pipe or a socket (what an event loop can watch; /dev/null is not)."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _command(runtimes: dict[str, Runtime]) -> None:
    """One line of standard input: ``kill NAME`` fails that member, ``stop NAME`` / ``cont NAME`` freeze
    it and let it go on; end of input is ignored."""
    line = sys.stdin.readline()
    if not line:
        asyncio.get_running_loop().remove_reader(sys.stdin.fileno())
        return
    verb, _, name = line.strip().partition(" ")
    runtime = runtimes.get(name)
    if runtime is not None and verb in (KILL, STOP, CONT):
        done = {KILL: "killed", STOP: "stopped", CONT: "continued"}[verb]
        log.warning("%s: %s (a failure injected by the launcher)", name, done)
        {KILL: runtime.crash, STOP: runtime.pause, CONT: runtime.resume}[verb]()
    else:
        log.warning("ignored the command %r (known: %s, %s, %s NAME)", line.strip(), KILL, STOP, CONT)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    recover = RECOVER in args
    args = [a for a in args if a != RECOVER]
    if len(args) != 2:
        print(
            f"usage: python -m aviary.launch.drivers.process CLUSTER.toml NAME [{RECOVER}]", file=sys.stderr
        )
        return 2
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args[1]} %(levelname)s %(message)s")
    raise_open_files()
    try:
        import uvloop

        uvloop.run(serve(args[0], args[1], recover))
    except (ClusterError, AddressInUse) as exc:
        print(f"aviary: {args[1]}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
