"""A local testbed: every process of a cluster description (but the frontend) as a child process.

Children get SIGTERM if the launcher dies (``PR_SET_PDEATHSIG``), and :meth:`LocalTestbed.stop`
terminates, then kills, whatever is still alive, so no process outlives the testbed. They run in a
process group of their own, so a Ctrl-C in the terminal reaches only the launcher, which stops them in
order (an interrupted replay first collects their counters, then shuts them down).
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..common.cluster import Cluster, ProcessSpec, write_cluster

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class LocalTestbed:
    """Starts the cluster's processes (or those in ``names``) on this host; use as a context manager."""

    def __init__(self, cluster: Cluster, workdir: Path, names: list[str] | None = None) -> None:
        self.cluster = cluster
        self.names = None if names is None else set(names)
        self.workdir = Path(workdir)
        self.cluster_file = self.workdir / "cluster.toml"
        self.logs = self.workdir / "logs"
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def members(self) -> list[ProcessSpec]:
        return [
            p
            for p in self.cluster.processes
            if p.role != "frontend" and (self.names is None or p.name in self.names)
        ]

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        write_cluster(self.cluster, self.cluster_file)
        for spec in self.members:
            with open(self.logs / f"{spec.name}.log", "wb") as log:
                self.children[spec.name] = subprocess.Popen(
                    [sys.executable, "-m", "aviary.launch.process", str(self.cluster_file), spec.name],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent,
                    process_group=0,  # the terminal's SIGINT is the launcher's to handle
                )

    def dead(self) -> dict[str, int]:
        """Children that have exited, with their exit codes."""
        return {name: p.returncode for name, p in self.children.items() if p.poll() is not None}

    def log_tail(self, name: str, lines: int = 5) -> str:
        try:
            return "\n".join((self.logs / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait(self, timeout: float) -> bool:
        """Wait for every child to exit on its own; True if all did."""
        deadline = time.monotonic() + timeout
        for p in self.children.values():
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                return False
        return True

    def kill(self, name: str) -> None:
        """SIGKILL the named child (an injected failure, ``--fail``); a name not started here is ignored."""
        child = self.children.get(name)
        if child is not None and child.poll() is None:
            child.kill()

    def stop(self, grace: float = 5.0) -> None:
        alive = [p for p in self.children.values() if p.poll() is None]
        for p in alive:
            p.terminate()
        deadline = time.monotonic() + grace
        for p in alive:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def __enter__(self) -> LocalTestbed:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
