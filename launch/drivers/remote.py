"""A testbed over several hosts started in one command, over SSH (``aviary up --cluster``,
``aviary replay --cluster``).

For every host that runs processes of the cluster description (the frontend excepted: it is this
machine's), the launcher connects with asyncssh, copies the description and only that host's secret
keys (with the launchers' ``control`` key) into a new private folder on the host (``mktemp -d``), and
runs ``aviary host FILE --host ADDRESS --lifeline`` there. Each host says when all its processes
registered; the launcher waits for every host, relays what they print into ``DIR/hosts/ADDRESS.log``
and, when it stops, fetches each host's process logs into ``DIR/logs/ADDRESS/`` and removes the folder
(a host whose connection was lost keeps it, secret keys included, in a folder only its user can read).

Credentials are the user's, never the cluster file's: asyncssh reads ``~/.ssh/config`` (``User``,
``Port``, ``IdentityFile``, ...), offers the keys of the SSH agent and of ``~/.ssh``, and checks host
keys against ``~/.ssh/known_hosts``: an unknown host is refused, not trusted on first use.

Nothing outlives the launcher: ``--lifeline`` stops a host's processes when the SSH channel's standard
input closes, which is how the launcher stops them and what a lost connection does too; a host that
does not stop in time gets SIGTERM, then SIGKILL, by its process id; its processes die with it
(``PR_SET_PDEATHSIG``). A host that cannot be reached, refuses the key, or whose ``aviary host`` exits
at its start is one line naming the host and the reason, after every other host was stopped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import re
import shlex
import shutil
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import IO, Any

import asyncssh

from ...common.cluster import CONTROL, Cluster, load_cluster, write_cluster
from ...common.keys import SECRET_SUFFIX
from ..flags.spec import UsageError

REGISTERED = re.compile(r"all (\d+) processes registered")
"""What ``aviary host`` prints once every process of its share answered."""


def default_aviary() -> str:
    """The ``aviary`` to run on the hosts: this installation's (the same path on every host, as with a
    shared home or the same checkout everywhere), else the one on the remote PATH."""
    here = Path(sys.executable).with_name("aviary")
    return str(here) if here.exists() else "aviary"


class HostFailure(Exception):
    """A host that could not start its share or stopped on its own; str() is one line."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"host {host}: {reason}")
        self.host = host


@dataclasses.dataclass(eq=False)
class Share:
    """One host's part of the testbed and the SSH session that runs it."""

    host: str
    names: list[str]
    log: IO[str]
    conn: asyncssh.SSHClientConnection | None = None
    proc: asyncssh.SSHClientProcess[str] | None = None
    pid: int | None = None
    folder: str | None = None
    tail: deque[str] = dataclasses.field(default_factory=lambda: deque(maxlen=20))
    registered: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    ended: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    pump: asyncio.Future[None] | None = None
    reason: str | None = None
    """Why the share ended (None while it runs, or when the launcher stopped it)."""

    def last_said(self) -> str:
        return next((line for line in reversed(self.tail) if line.strip()), "")


def connect_problem(exc: BaseException, timeout: float) -> str:
    """Why an SSH connection failed, in a few words, with what to do."""
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return (
            f"its host key is not in ~/.ssh/known_hosts ({exc.reason}); check its fingerprint and add it "
            "(ssh-keyscan), host keys are never trusted blindly"
        )
    if isinstance(exc, asyncssh.PermissionDenied):
        return "SSH refused every key of your agent and ~/.ssh (permission denied); ssh-copy-id may help"
    if isinstance(exc, asyncssh.Error):
        return f"SSH: {exc.reason}"
    if isinstance(exc, TimeoutError):
        return f"its SSH server did not answer within {timeout:g} s"
    if isinstance(exc, OSError):
        return f"cannot reach its SSH server: {exc.strerror or exc}"
    return f"SSH: {exc}"


class RemoteTestbed:
    """The processes of ``cluster_file`` on their hosts over SSH; a context manager that starts them
    (returning once every process registered, or raising a one-line :class:`UsageError`) and stops them.

    asyncssh runs on an event loop of its own in a background thread, so the caller may run a replay
    (which has its own loop) meanwhile."""

    def __init__(
        self,
        cluster_file: Path,
        out: Path,
        *,
        aviary: str | None = None,
        connect_timeout: float = 10.0,
        start_timeout: float = 120.0,
        grace: float = 15.0,
        say: Any = print,
    ) -> None:
        self.cluster: Cluster = load_cluster(cluster_file)
        self.out = Path(out)
        self.aviary = aviary or default_aviary()
        self.connect_timeout = connect_timeout
        self.start_timeout = start_timeout
        self.grace = grace
        self.say = say
        hosts: dict[str, list[str]] = {}
        for p in self.cluster.processes:
            if p.role != "frontend":
                hosts.setdefault(p.host, []).append(p.name)
        self.hosts = hosts
        self.shares: list[Share] = []
        self._abort = asyncio.Event()  # set on Ctrl-C while starting: no further step starts
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="aviary-ssh", daemon=True)

    # --- the caller's side (any thread but the loop's) ---

    def start(self, cancel: threading.Event | None = None) -> None:
        """Start every share and wait until every process registered; on a failure stop them all and
        raise its one line as a :class:`UsageError`; when ``cancel`` is set meanwhile, stop them all and
        raise KeyboardInterrupt."""
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        try:
            while not started.done():
                if cancel is not None and cancel.is_set():
                    raise KeyboardInterrupt
                concurrent.futures.wait([started], timeout=0.2)
            started.result()
        except HostFailure as exc:
            self.close()
            raise UsageError(str(exc)) from None
        except BaseException:  # Ctrl-C: the steps under way end, then what started stops
            self._loop.call_soon_threadsafe(self._abort.set)
            concurrent.futures.wait([started], timeout=self.connect_timeout + 30)
            self.close()
            raise

    def failure(self) -> str | None:
        """One line for the first host whose share ended on its own (died, lost), else None."""
        return next((f"host {s.host}: {s.reason}" for s in self.shares if s.reason), None)

    def close(self) -> None:
        """Stop every host's share, fetch the logs, remove the hosts' folders; idempotent."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._stop_all(), self._loop).result()
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        for share in self.shares:
            share.log.close()

    def __enter__(self) -> RemoteTestbed:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- on the loop ---

    async def _start(self) -> None:
        (self.out / "hosts").mkdir(parents=True, exist_ok=True)
        for host, names in self.hosts.items():
            log = open(self.out / "hosts" / f"{host}.log", "w", encoding="utf-8")  # noqa: SIM115 (close())
            self.shares.append(Share(host, names, log))
        count = sum(len(names) for names in self.hosts.values())
        self.say(f"starting {count} processes on {len(self.shares)} hosts over SSH ...")
        started = await asyncio.gather(*(self._start_share(s) for s in self.shares), return_exceptions=True)
        failed = next((e for e in started if isinstance(e, BaseException)), None)
        if failed is None:
            waits = [asyncio.ensure_future(self._registered(s)) for s in self.shares]
            try:
                await asyncio.wait_for(asyncio.gather(*waits), self.start_timeout)
            except HostFailure as exc:
                failed = exc
            except TimeoutError:
                late = next(s.host for s in self.shares if not s.registered.is_set())
                failed = HostFailure(late, f"its processes did not register within {self.start_timeout:g} s")
            for w in waits:
                w.cancel()
        if failed is not None:
            raise failed
        if self._abort.is_set():
            return
        self.say(f"all {count} processes registered on {len(self.shares)} hosts: {', '.join(self.hosts)}")

    async def _registered(self, share: Share) -> None:
        events = [share.ended, share.registered, self._abort]
        waits = [asyncio.ensure_future(e.wait()) for e in events]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if not share.registered.is_set() and not self._abort.is_set():
            raise HostFailure(share.host, share.reason or "its share ended before its processes registered")

    def _stage(self, share: Share, folder: Path) -> None:
        """Write the host's copy of the description, with only its own secret keys, into ``folder``."""
        cluster = self.cluster
        if cluster.keys is not None:
            keys = folder / "cluster.keys"
            keys.mkdir(mode=0o700)
            for name in [CONTROL, *share.names]:
                shutil.copy2(cluster.keys / f"{name}{SECRET_SUFFIX}", keys / f"{name}{SECRET_SUFFIX}")
            cluster = dataclasses.replace(cluster, keys=keys)
        write_cluster(cluster, folder / "cluster.toml")

    async def _start_share(self, share: Share) -> None:
        try:
            share.conn = await asyncio.wait_for(
                asyncssh.connect(share.host, connect_timeout=self.connect_timeout), self.connect_timeout + 5
            )
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            raise HostFailure(share.host, connect_problem(exc, self.connect_timeout)) from None
        if self._abort.is_set():
            return
        try:
            made = await share.conn.run("mktemp -d /tmp/aviary-XXXXXX", check=True)
            share.folder = str(made.stdout).strip()
            with tempfile.TemporaryDirectory(prefix="aviary-stage-") as stage:
                self._stage(share, Path(stage))
                async with share.conn.start_sftp_client() as sftp:
                    await sftp.put([str(p) for p in Path(stage).iterdir()], share.folder, recurse=True)
        except (OSError, asyncssh.Error) as exc:
            raise HostFailure(share.host, f"cannot copy the cluster description: {exc}") from None
        if self._abort.is_set():
            return
        at = share.folder
        command = [self.aviary, "host", f"{at}/cluster.toml", "--host", share.host, "--dir", f"{at}/run"]
        line = f"echo $$; exec env PYTHONUNBUFFERED=1 {shlex.join([*command, '--lifeline'])} 2>&1"
        share.proc = await share.conn.create_process(line)
        share.pump = asyncio.ensure_future(self._pump(share))

    async def _pump(self, share: Share) -> None:
        """Relay the host's output into its log until its ``aviary host`` ends; say why it ended."""
        assert share.proc is not None
        proc = share.proc
        try:
            first = await proc.stdout.readline()
            share.pid = int(first) if first.strip().isdigit() else None
            while line := await proc.stdout.readline():
                share.log.write(line)
                share.log.flush()
                share.tail.append(line.rstrip("\n"))
                if REGISTERED.search(line):
                    share.registered.set()
            done = await proc.wait()
            status, signal = done.exit_status, done.exit_signal
        except (OSError, asyncssh.Error) as exc:
            status, signal, lost = None, None, str(exc)
        else:
            lost = ""
        if not share.ended.is_set():  # not stopped by the launcher
            share.reason = self._ended(share, status, signal, lost)
        share.ended.set()

    def _ended(self, share: Share, status: int | None, signal: Any, lost: str) -> str:
        said = lost or share.last_said()
        when = "at its start" if not share.registered.is_set() else "while running"
        if status == 127:
            return f"{self.aviary} is not installed there ({said}); give its path with --remote-aviary"
        if status is not None and status >= 0:
            return f"aviary host exited with status {status} {when}" + (f": {said}" if said else "")
        if signal:
            return f"aviary host was killed by signal {signal[0]} {when}"
        return f"the SSH connection was lost {when}" + (f" ({said})" if said else "")

    async def _stop_all(self) -> None:
        await asyncio.gather(*(self._stop(s) for s in self.shares), return_exceptions=True)

    async def _stop(self, share: Share) -> None:
        proc = None if share.ended.is_set() else share.proc  # still running
        share.ended.set()  # what follows is the launcher's doing, not a failure
        if proc is not None:
            proc.stdin.write_eof()  # --lifeline: the host shuts its processes down
            if not await self._exited(proc, self.grace):
                for sig in ("TERM", "KILL"):
                    await self._signal(share, sig)
                    if await self._exited(proc, 5.0):
                        break
        if share.conn is None or share.conn.is_closed():  # a lost host keeps its folder
            return
        with contextlib.suppress(OSError, asyncssh.Error):
            if share.folder:
                await self._fetch_logs(share)
                await share.conn.run(f"rm -rf {shlex.quote(share.folder)}")
            share.conn.close()
            await share.conn.wait_closed()

    @staticmethod
    async def _exited(proc: asyncssh.SSHClientProcess[str], timeout: float) -> bool:
        try:
            await asyncio.wait_for(proc.wait_closed(), timeout)
            return True
        except TimeoutError:
            return False

    async def _signal(self, share: Share, sig: str) -> None:
        if share.conn is None or share.pid is None:
            return
        with contextlib.suppress(OSError, asyncssh.Error):
            await share.conn.run(f"kill -{sig} {share.pid}")

    async def _fetch_logs(self, share: Share) -> None:
        assert share.conn is not None
        local = self.out / "logs" / share.host
        local.mkdir(parents=True, exist_ok=True)
        try:
            async with share.conn.start_sftp_client() as sftp:
                await sftp.mget(f"{share.folder}/run/logs/*.log", str(local))
        except (OSError, asyncssh.Error) as exc:
            share.log.write(f"aviary: could not fetch the logs of {share.host}: {exc}\n")


def hold(cluster_file: Path, out: Path, aviary: str | None) -> int:
    """``aviary up --cluster``: start every host's share, keep it running until Ctrl-C, SIGTERM or a
    host that ends on its own (then every other host is stopped too, and the exit status is 1)."""
    import signal

    from rich.console import Console

    from .up import cluster_table

    console = Console()
    stop = threading.Event()
    old = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    failure = None
    try:
        bed = RemoteTestbed(cluster_file, out, aviary=aviary, say=console.print)
        bed.start(stop)
        console.print(cluster_table(bed.cluster))
        console.print(f"replay against it: aviary replay --connect {cluster_file}   logs: {out}/")
        console.print("Ctrl-C stops every host.")
        while not stop.wait(0.5) and failure is None:
            failure = bed.failure()
        console.print("stopping every host ...")
        bed.close()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if failure is not None:
        print(f"aviary up: {failure}; every other host was stopped (logs: {out}/)", file=sys.stderr)
        return 1
    console.print(f"stopped: every host's processes exited; logs in {out}/logs/")
    return 0
