"""Entry point of one testbed process: ``python -m aviary.launch.process CLUSTER.toml NAME``.

It builds the named process's core from the cluster description and runs it on the real runtime
until a ``Shutdown`` message, SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from functools import partial

from ..common.cluster import ClusterError, load_cluster
from ..common.runtime import Runtime
from ..common.transport import AddressInUse, Transport
from ..worker.executors import make_executor
from .registry import build_core


async def serve(cluster_path: str, name: str) -> None:
    cluster = load_cluster(cluster_path)
    spec = cluster.get(name)
    core = build_core(spec, cluster)
    transport = Transport(spec.name, spec.bind_address, spec.address, cluster.addresses())
    executor = partial(make_executor, cluster.executor) if spec.role == "node" else None
    runtime = Runtime(core, transport, executor, rebuild=lambda: build_core(spec, cluster))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, runtime.stop)
    try:
        await runtime.run()
    finally:
        transport.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m aviary.launch.process CLUSTER.toml NAME", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args[1]} %(levelname)s %(message)s")
    try:
        import uvloop

        uvloop.run(serve(*args))
    except (ClusterError, AddressInUse) as exc:
        print(f"aviary: {args[1]}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
