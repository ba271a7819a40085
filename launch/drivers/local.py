"""A local testbed: every process of a cluster description (but the frontend) as a child process.

Children get SIGTERM if the launcher dies (``PR_SET_PDEATHSIG``), and :meth:`LocalTestbed.stop`
terminates, then kills, whatever is still alive, so no process outlives the testbed. They run in a
process group of their own, so a Ctrl-C in the terminal reaches only the launcher, which stops them in
order (an interrupted replay first collects their counters, then shuts them down).

Secure by default (issue 26): a testbed whose description has no keys gets CurveZMQ keys of its own at
its start (:func:`aviary.common.keys.make_keys`: ``cluster.keys/`` next to its ``cluster.toml``, files
0600 in a 0700 folder), loopback included, since a shared machine's other users reach loopback too;
``keys=False`` (``--no-keys``) runs without. The secrets it made are removed when it stops.
"""

from __future__ import annotations

import ctypes
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from ...common.cluster import Cluster, ProcessSpec, write_cluster
from ...common.failures import Failure
from .process import CONT, KILL, RECOVER, STOP

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class LocalTestbed:
    """Starts the cluster's processes (or those in ``names``) on this host; use as a context manager.

    With ``nodes_per_process`` above 1 a child hosts a pack of node monitors (:meth:`Cluster.units`):
    what is said here of a process (its death, its log, a kill) is said of each member, and a member can
    be killed alone (``kill NAME`` on the child's standard input, :mod:`.process`)."""

    def __init__(
        self, cluster: Cluster, workdir: Path, names: list[str] | None = None, *, keys: bool = True
    ) -> None:
        self.cluster = cluster
        self.keys = keys and cluster.keys is None
        """Make keys at the start (the description has none, and they are not refused)."""
        self.made_keys: Path | None = None
        self.names = None if names is None else set(names)
        self.workdir = Path(workdir)
        self.cluster_file = self.workdir / "cluster.toml"
        self.logs = self.workdir / "logs"
        self.units = {
            unit: members
            for unit, members in cluster.units().items()
            if members[0].role != "frontend" and (self.names is None or members[0].name in self.names)
        }
        self.unit_of = {p.name: unit for unit, members in self.units.items() for p in members}
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        """The child of each unit, by the unit's name (a lone process's own name)."""
        self.killed: dict[str, int] = {}
        """Members of a pack killed alone: their 'exit code' (-SIGKILL)."""
        self.restarts = 0

    @property
    def members(self) -> list[ProcessSpec]:
        return [p for members in self.units.values() for p in members]

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        if self.keys and self.made_keys is None:
            from ...common.keys import make_keys

            self.made_keys = make_keys(self.cluster, self.cluster_file)  # writes the description too
        else:
            write_cluster(self.cluster, self.cluster_file)
        for unit in self.units:
            self._spawn(unit)

    def _spawn(self, unit: str, *flags: str) -> None:
        with open(self.logs / f"{unit}.log", "ab" if flags else "wb") as log:
            self.children[unit] = subprocess.Popen(
                [sys.executable, "-m", "aviary.launch.drivers.process", str(self.cluster_file), unit, *flags],
                stdin=subprocess.PIPE if len(self.units[unit]) > 1 else subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
                process_group=0,  # the terminal's SIGINT is the launcher's to handle
            )

    def restart(self, name: str) -> bool:
        """Start again the central scheduler ``name`` that exited (issue 26: it rebuilds its state,
        :mod:`aviary.central.recovery`); False if it is no central scheduler of this testbed or still
        runs."""
        child = self.children.get(name)
        if child is None or child.poll() is None or self.units[name][0].role != "central":
            return False
        self._spawn(name, RECOVER)
        self.restarts += 1
        return True

    def dead(self) -> dict[str, int]:
        """Processes that have exited (every member of an exited pack), with their exit codes."""
        out = dict(self.killed)
        for unit, child in self.children.items():
            if child.poll() is not None:
                out.update((p.name, child.returncode) for p in self.units[unit])
        return out

    def log_file(self, name: str) -> Path:
        """The log of the process ``name`` (its pack's, for a packed node)."""
        return self.logs / f"{self.unit_of.get(name, name)}.log"

    def log_tail(self, name: str, lines: int = 5) -> str:
        try:
            return "\n".join(self.log_file(name).read_text(errors="replace").splitlines()[-lines:])
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

    def _target(self, name: str) -> tuple[subprocess.Popen[bytes], bool] | None:
        """The live child that runs ``name`` and whether ``name`` is that whole child (a lone process, a
        pack by its name, a pack of one) rather than one member of a pack; None if it is not running."""
        unit = name if name in self.children else self.unit_of.get(name)
        child = None if unit is None else self.children.get(unit)
        if unit is None or child is None or child.poll() is not None:
            return None
        return child, unit == name or len(self.units[unit]) == 1

    def kill(self, name: str) -> None:
        """SIGKILL the named process (an injected failure, ``--fail``): a lone one or a whole pack by
        its name, a packed node alone by asking its pack; a name not started here is ignored."""
        if (target := self._target(name)) is None:
            return
        child, whole = target
        if whole:
            child.kill()
        elif name not in self.killed and _tell(child, f"{KILL} {name}"):  # else the pack died meanwhile
            self.killed[name] = -signal.SIGKILL

    def fail(self, failure: Failure) -> None:
        """Carry out an injected failure (``--fail``): :meth:`kill`, or :meth:`pause` for its stall."""
        if failure.stall:
            self.pause(failure.name, failure.stall)
        else:
            self.kill(failure.name)

    def pause(self, name: str, seconds: float) -> None:
        """Stop the named process for ``seconds`` (SIGSTOP, then SIGCONT: a stall), a whole pack by its
        name, or a packed node alone by asking its pack to freeze it (``stop NAME``, then ``cont NAME``)."""
        if (target := self._target(name)) is None:
            return
        child, whole = target
        if whole:
            begin: Callable[[], object] = partial(_signal, child, signal.SIGSTOP)
            end: Callable[[], object] = partial(_signal, child, signal.SIGCONT)
        else:
            begin, end = partial(_tell, child, f"{STOP} {name}"), partial(_tell, child, f"{CONT} {name}")
        begin()
        timer = threading.Timer(seconds, end)
        timer.daemon = True
        timer.start()

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
        if self.made_keys is not None:  # the secrets live as long as the testbed
            shutil.rmtree(self.made_keys, ignore_errors=True)

    def __enter__(self) -> LocalTestbed:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal(child: subprocess.Popen[bytes], sig: int) -> None:
    if child.poll() is None:
        child.send_signal(sig)


def _tell(child: subprocess.Popen[bytes], line: str) -> bool:
    """Write one command line on a pack's standard input; False if the pack is gone (dead() says so)."""
    if child.stdin is None or child.poll() is not None:
        return False
    try:
        child.stdin.write(f"{line}\n".encode())
        child.stdin.flush()
    except OSError:
        return False
    return True
