"""Task executors: what carries out a node monitor's Launch / Suspend / Resume / Kill (DESIGN §2, §6).

A task is a sleep of its duration that makes progress only while it runs: a task suspended for X
seconds finishes X seconds later. The real runtime builds one executor per node monitor with
:func:`make_executor` and calls it from its event loop (uvloop in production):

- :class:`TimerExecutor` (``timer``): no process, each running task's end in a heap under one
  ``timerfd`` alarm (:mod:`.alarm`); suspend keeps the remaining running time, resume sets a new end.
  Cheap enough for many thousands of tasks per second.
- :class:`ProcessExecutor` (``process``): one child process per task running :mod:`sleeptask` (a sleep
  that counts only its running time, in 5 ms ticks); suspend/resume are SIGSTOP/SIGCONT sent through
  psutil, kill is SIGKILL, and the exit is seen by the process's ``wait()``.
- :class:`DockerExecutor` (``docker``): one container per task, without network, from a tiny image
  built locally (``FROM scratch`` + static busybox, :mod:`dockertask`); suspend/resume are docker
  pause/unpause (the cgroup freezer) through the docker SDK, whose blocking calls run in threads.
  With ``suspended_share`` (a Kairos node's ``--suspended-share``), a suspension lowers the
  container's CPU quota to that share of a core instead (``docker update``, as the Kairos testbed's
  ``--cpus 0.1``) and the task counts that share of its time as progress.

Contract shared by all executors: ``on_exit(task_id, ok)`` is called exactly once per launched task,
always from the event loop and never from inside ``launch``/``suspend``/``resume``/``kill`` (so a core
never sees an exit while its effects are being applied); ``ok`` is True when the task ran its whole
duration, False when it was killed or failed. Suspend, resume or kill of an unknown task id (or a
suspend of a suspended task, a resume of a running one) is ignored and counted in ``counters``. A
second launch of a task id that is still alive is ignored and counted. ``close()`` kills whatever is
still alive and, for processes, reaps it; after ``close()`` no ``on_exit`` is called any more (the
owner is shutting down and must not be fed new work).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import psutil  # imported where used: a node process with timer tasks never needs it (0.9 MiB)

from ..common.effects import TaskId
from .alarm import Alarm

log = logging.getLogger("aviary.executors")

OnExit = Callable[[TaskId, bool], None]


class Executor(Protocol):
    counters: Counter[str]

    def __init__(self, loop: asyncio.AbstractEventLoop, on_exit: OnExit) -> None: ...
    def launch(self, task_id: TaskId, duration: float) -> None: ...
    def suspend(self, task_id: TaskId) -> None: ...
    def resume(self, task_id: TaskId) -> None: ...
    def kill(self, task_id: TaskId) -> None: ...
    async def close(self) -> None: ...

    @property
    def running(self) -> int: ...


class _Base:
    """Counting and once-per-kind logging of ignored requests, and the guarded ``on_exit`` call."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_exit: OnExit) -> None:
        self.loop = loop
        self.on_exit = on_exit
        self.counters: Counter[str] = Counter()
        self.closed = False

    def _ignore(self, kind: str, task_id: TaskId) -> None:
        self._note(kind, f"{kind.replace('_', ' ')} of task {task_id} ignored")

    def _note(self, kind: str, text: str) -> None:
        """Count ``kind``; log its first occurrence only."""
        self.counters[kind] += 1
        if self.counters[kind] == 1:
            log.warning("%s: %s (further ones of this kind are only counted)", type(self).__name__, text)

    def _report(self, task_id: TaskId, ok: bool) -> None:
        if self.closed:
            return
        self.counters["completed" if ok else "not_ok"] += 1
        try:
            self.on_exit(task_id, ok)
        except Exception:  # the owner's bug must not take the executor down
            self.counters["on_exit_error"] += 1
            log.exception("on_exit(%s, %s) raised", task_id, ok)


# --- timer -----------------------------------------------------------------------------------------


class _Timer:
    __slots__ = ("end", "rate", "remaining", "started")

    def __init__(self, remaining: float, started: float) -> None:
        self.end: float | None = None  # when it finishes; None while suspended (without a share)
        self.remaining = remaining  # running time left as of ``started``
        self.started = started  # monotonic time when it last started running (or was suspended)
        self.rate = 1.0  # its progress per second: 1 running, the executor's share while suspended


class TimerExecutor(_Base):
    """Virtual tasks: no process, a heap of running tasks' ends and one :class:`~.alarm.Alarm` (a
    ``timerfd``) at the earliest (DESIGN §6 ``timer``). The loop's own millisecond timers woke a 10 ms
    task ~0.2 ms late and at times early (then waited again); the alarm is never early and ~0.08 ms
    late. A zero-length task ends at the loop's next turn.

    ``suspended_share`` s > 0: a suspended task still progresses at s seconds per second (as the Kairos
    testbed's containers kept ``--cpus 0.1``, ``worker/las.py``), so it can end while suspended."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, on_exit: OnExit, suspended_share: float = 0.0
    ) -> None:
        super().__init__(loop, on_exit)
        if not 0.0 <= suspended_share < 1.0:
            raise ValueError(f"suspended_share must be in [0, 1), got {suspended_share}")
        self.share = float(suspended_share)
        self._tasks: dict[TaskId, _Timer] = {}
        self._ends: list[tuple[float, int, TaskId]] = []
        """(end, launch order, task): a task's entry counts while its :attr:`_Timer.end` is that end."""
        self._order = itertools.count()
        self._alarm = Alarm(loop, self._ring)

    @property
    def running(self) -> int:
        return len(self._tasks)

    def _arm(self, task_id: TaskId, entry: _Timer) -> None:
        entry.end = end = entry.started + entry.remaining / entry.rate
        if entry.remaining <= 0.0:
            self.loop.call_soon(self._due, task_id, end)
            return
        heapq.heappush(self._ends, (end, next(self._order), task_id))
        if self._ends[0][0] == end:
            self._alarm.at(end)

    def _ring(self) -> None:
        """The alarm: every task whose end has come finishes, and the alarm is set for the next."""
        ends, now = self._ends, time.monotonic()
        while ends and ends[0][0] <= now:
            end, _, task_id = heapq.heappop(ends)
            self._due(task_id, end)
        if ends and not self.closed:
            self._alarm.at(ends[0][0])

    def _due(self, task_id: TaskId, end: float) -> None:
        entry = self._tasks.get(task_id)
        if entry is None or entry.end != end:  # killed, or suspended (and maybe resumed) since
            return
        del self._tasks[task_id]
        self._report(task_id, True)

    def launch(self, task_id: TaskId, duration: float) -> None:
        if self.closed:
            self._ignore("launch_after_close", task_id)
            return
        if task_id in self._tasks:
            self._ignore("duplicate_launch", task_id)
            return
        entry = self._tasks[task_id] = _Timer(max(0.0, float(duration)), time.monotonic())
        self._arm(task_id, entry)

    def suspend(self, task_id: TaskId) -> None:
        entry = self._tasks.get(task_id)
        if entry is None:
            self._ignore("unknown_suspend", task_id)
        elif entry.end is None or entry.rate != 1.0:
            self._ignore("redundant_suspend", task_id)
        else:
            now = time.monotonic()
            entry.end = None
            entry.remaining = max(0.0, entry.remaining - (now - entry.started))
            if self.share > 0.0:  # it goes on slowly: a later end
                entry.started, entry.rate = now, self.share
                self._arm(task_id, entry)

    def resume(self, task_id: TaskId) -> None:
        entry = self._tasks.get(task_id)
        if entry is None:
            self._ignore("unknown_resume", task_id)
        elif entry.end is not None and entry.rate == 1.0:
            self._ignore("redundant_resume", task_id)
        else:
            now = time.monotonic()
            if entry.rate != 1.0:  # what it did at its share while suspended
                entry.remaining = max(0.0, entry.remaining - (now - entry.started) * entry.rate)
                entry.rate = 1.0
            entry.started = now
            self._arm(task_id, entry)

    def kill(self, task_id: TaskId) -> None:
        if self._tasks.pop(task_id, None) is None:
            self._ignore("unknown_kill", task_id)
            return
        self.counters["killed"] += 1
        self.loop.call_soon(self._report, task_id, False)

    async def close(self) -> None:
        self.closed = True
        self._alarm.close()
        self._tasks.clear()
        self._ends.clear()


# --- process ---------------------------------------------------------------------------------------

SLEEPTASK = str(Path(__file__).with_name("sleeptask.py"))
"""The child program; run by path so that no package import is needed in the child."""

INTERPRETER_FLAGS = ("-I", "-S")
"""Isolated mode without site-packages: the interpreter starts in ~10 ms instead of ~50 ms."""


class _Proc:
    __slots__ = ("killed", "polls", "proc", "ps", "ready", "runner", "stopped", "suspended", "wake")

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None  # None until spawned
        self.ps: psutil.Process | None = None  # made on the first signal
        self.runner: asyncio.Task[None] | None = None
        self.wake: asyncio.Future[None] | None = None  # set while suspended before being spawned
        self.suspended = False  # what the owner asked for
        self.stopped = False  # whether the child was sent SIGSTOP (and no SIGCONT since)
        self.ready = False  # the child has finished its set-up (it leads its own process group)
        self.polls = 0
        self.killed = False

    def poke(self) -> None:
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)


class ProcessExecutor(_Base):
    """A real child process per task running :mod:`sleeptask` (DESIGN §6 ``process``).

    The child's start-up counts towards its duration (it is given the launch time), so a task holds
    its slot for its duration plus ~1-2 ms (exit and reaping), not plus the ~10-20 ms interpreter
    start. A task suspended before its child was spawned is spawned only when resumed (its launch
    time shifted by the wait); a kill before the spawn spawns nothing. A suspend that lands during
    the child's interpreter start (its first ~10 ms) takes effect when the child's set-up is done
    (the child then has run, and counted, its start-up: it finishes that much earlier). Children die
    with their parent, stopped or not (see :mod:`sleeptask`), so a crashed node monitor leaves no
    task behind.
    """

    tick = 0.005
    """The child's tick: a suspension shifts the finish by at most ±tick/2."""
    ready_poll = 0.002
    ready_polls = 250
    """A SIGSTOP waits (polling every ``ready_poll`` s, at most this many times) for the child's set-up."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_exit: OnExit) -> None:
        super().__init__(loop, on_exit)
        self._tasks: dict[TaskId, _Proc] = {}
        self._dying: set[_Proc] = set()  # killed, not reaped yet (their ids may be launched again)
        self._pid = str(os.getpid())

    @property
    def running(self) -> int:
        return len(self._tasks) + len(self._dying)

    def pid(self, task_id: TaskId) -> int | None:
        """The child's pid (None if unknown or not spawned yet); for tests and diagnostics."""
        entry = self._tasks.get(task_id)
        return None if entry is None or entry.proc is None else entry.proc.pid

    def launch(self, task_id: TaskId, duration: float) -> None:
        if self.closed:
            self._ignore("launch_after_close", task_id)
            return
        if task_id in self._tasks:
            self._ignore("duplicate_launch", task_id)
            return
        entry = self._tasks[task_id] = _Proc()
        entry.runner = self.loop.create_task(
            self._run(task_id, entry, max(0.0, float(duration)), time.monotonic())
        )

    async def _run(self, task_id: TaskId, entry: _Proc, duration: float, launched: float) -> None:
        ok = False
        try:
            if entry.suspended and not entry.killed:  # nothing to stop yet: start it when resumed
                waited = time.monotonic()
                entry.wake = self.loop.create_future()
                await entry.wake
                launched += time.monotonic() - waited
            if entry.killed:
                return
            argv = (
                sys.executable,
                *INTERPRETER_FLAGS,
                SLEEPTASK,
                repr(duration),
                repr(launched),
                self._pid,
                repr(self.tick),
            )
            try:
                proc = entry.proc = await asyncio.create_subprocess_exec(
                    *argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
                )
            except OSError as exc:  # EAGAIN, EMFILE, ENOMEM...: the task fails, the node lives on
                self._note("spawn_failed", f"could not start task {task_id}: {exc}")
                return
            if entry.killed:  # killed or suspended while being spawned
                self._sigkill(entry)
            elif entry.suspended:
                self._stop(entry)
            try:
                returncode = await proc.wait()
            except asyncio.CancelledError:  # the loop is going away: leave no child behind
                entry.killed = True
                self._sigkill(entry)
                raise
            ok = returncode == 0 and not entry.killed
            if returncode != 0 and not entry.killed:
                self._note("task_failed", f"task {task_id} exited with code {returncode}")
        finally:
            if self._tasks.get(task_id) is entry:
                del self._tasks[task_id]
            self._dying.discard(entry)
            self._report(task_id, ok)

    def _signal(self, entry: _Proc, sig: int) -> None:
        """Send ``sig`` through psutil, which checks that the pid still names our child."""
        import psutil

        proc = entry.proc
        if proc is None or proc.returncode is not None:
            return  # not spawned yet (the spawn applies the state) or already exited
        try:
            if entry.ps is None:
                entry.ps = psutil.Process(proc.pid)
            entry.ps.send_signal(sig)
        except (psutil.Error, ProcessLookupError):  # exited in the meantime: its wait() reports it
            pass

    def _stop(self, entry: _Proc) -> None:
        """SIGSTOP the child once its set-up is done (see :mod:`sleeptask`): stopped earlier, it would
        count the stop as start-up time and would have no orphan guard yet. Until then it runs on (at
        most its start-up, ~10 ms), which it counts as running time, as it is."""
        proc = entry.proc
        if not entry.suspended or entry.stopped or entry.killed:
            return
        if proc is None or proc.returncode is not None:  # not spawned yet (the spawn calls us) or gone
            return
        if not entry.ready:
            try:
                entry.ready = os.getpgid(proc.pid) == proc.pid
            except OSError:  # gone: its wait() reports it
                return
            if not entry.ready:
                if entry.polls < self.ready_polls:
                    entry.polls += 1
                    self.loop.call_later(self.ready_poll, self._stop, entry)
                    return
                self.counters["stopped_unready"] += 1
        entry.stopped = True
        self._signal(entry, signal.SIGSTOP)

    def _sigkill(self, entry: _Proc) -> None:
        entry.poke()
        proc = entry.proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()  # SIGKILL; works on a stopped child too

    def suspend(self, task_id: TaskId) -> None:
        entry = self._tasks.get(task_id)
        if entry is None:
            self._ignore("unknown_suspend", task_id)
        elif entry.suspended:
            self._ignore("redundant_suspend", task_id)
        else:
            entry.suspended = True
            self._stop(entry)

    def resume(self, task_id: TaskId) -> None:
        entry = self._tasks.get(task_id)
        if entry is None:
            self._ignore("unknown_resume", task_id)
        elif not entry.suspended:
            self._ignore("redundant_resume", task_id)
        else:
            entry.suspended = False
            entry.poke()
            if entry.stopped:
                entry.stopped = False
                self._signal(entry, signal.SIGCONT)

    def kill(self, task_id: TaskId) -> None:
        entry = self._tasks.pop(task_id, None)
        if entry is None:
            self._ignore("unknown_kill", task_id)
            return
        self._dying.add(entry)
        entry.killed = True
        self.counters["killed"] += 1
        self._sigkill(entry)  # on_exit(False) comes from the runner once the child is reaped

    async def close(self) -> None:
        """Kill every child still alive and reap it; no on_exit is called from here on."""
        self.closed = True
        runners = []
        for entry in [*self._tasks.values(), *self._dying]:
            entry.killed = True
            self._sigkill(entry)
            if entry.runner is not None:
                runners.append(entry.runner)
        if runners:
            await asyncio.gather(*runners, return_exceptions=True)
        self._tasks.clear()
        self._dying.clear()


# --- docker ----------------------------------------------------------------------------------------


_PENDING, _LIVE = 0, 1


class _Box:
    """One task of the docker executor; its runner coroutine alone calls the engine about it."""

    __slots__ = (
        "changed",
        "cid",
        "duration",
        "killed",
        "launched",
        "outbox",
        "paused",
        "phase",
        "removed",
        "since",
        "sock",
        "suspended",
    )

    def __init__(self, duration: float, launched: float) -> None:
        self.duration = duration
        self.launched = launched  # monotonic; shifted by suspensions that end before the container exists
        self.phase = _PENDING  # _LIVE from the moment its container is being created
        self.cid: str | None = None  # set (by the engine thread) as soon as the container exists
        self.sock: Any = None  # the attached socket: the task's stdin and its multiplexed output
        self.outbox: list[bytes] = []  # messages for the task until it is attached
        self.suspended = False  # what the owner asked for
        self.since = 0.0  # monotonic time of the last suspend request
        self.paused = False  # whether the container is paused (or a pause call is under way)
        self.killed = False
        self.removed = False
        self.changed = asyncio.Event()  # set by suspend/resume/kill: the runner re-reads the state


class DockerExecutor(_Base):
    """A container per task, paused and unpaused through the docker SDK (DESIGN §6 ``docker``).

    Each task runs :file:`sleeptask.sh` in the ``FROM scratch`` + busybox image of :mod:`dockertask`
    (built once per machine, on first use, under a content tag; never pulled), with no network
    (``network_mode="none"``), labelled ``aviary.sleeptask`` = the task id and ``aviary.owner`` = this
    process. The SDK blocks, so its calls run in a thread pool (``ops_threads``) and each container's
    output is read in a thread of its own; the event loop only awaits their futures. One runner
    coroutine per task makes that task's calls one after the other (create, attach, start, then pause /
    unpause / remove as the owner's requests come), so requests apply in order: a suspend or kill that
    arrives while the container is being created takes effect once it exists.

    Timing:

    - Start-up (launch to the task's first instruction, ~0.2-0.3 s here) counts as running time, as
      in the process executor: a task holds its slot for its duration as long as its start-up is
      shorter than that. A task suspended before its container is created is created only when
      resumed, its launch time shifted by the wait.
    - Suspensions: besides pausing the container, the executor writes ``s T`` / ``r T`` to the task's
      standard input (T: when the owner asked, on the host's realtime clock, which containers share),
      and the task subtracts exactly those intervals from its running time, whenever the messages
      and the engine's freeze and thaw (15-30 ms each, jittery) reach it. So a task suspended for X s
      finishes X s later to ~1 ms, including a suspend that came while its container was being
      created (it was paused later, but the task counts from the request). A freeze without a message
      (a manual ``docker pause`` longer than ``slack``) is still seen by the task, to +-``tick``/2.
    - The end is seen on the task's output: it prints ``done`` and the executor reports at once
      (~1 ms), without waiting for the container's teardown (~40-60 ms, after which the engine would
      report the exit); the container is removed right after the report.

    A task whose container fails (no engine, no image, an error from the engine, an exit without
    ``done``) reports ``ok=False``; the reason is counted and logged once per kind. If the executor's
    process dies, the engine closes its tasks' standard input and they exit (paused ones stay paused);
    the next executor to connect on this host removes the containers of dead owners.
    """

    tick = 0.01
    """The task's tick (s): how often it looks for a freeze it was not told of (its precision then is
    +-tick/2); messages cut a tick short, so suspensions through the executor do not depend on it. Each
    tick costs ~0.1-0.2 ms of CPU (busybox shell): ~2 % of a core per running task at 10 ms."""
    slack = 0.02
    """A tick that took longer than planned by more than this (s), not counting the time the task waited
    for a CPU, and brought no message, was frozen by someone else (see :file:`sleeptask.sh`)."""
    ops_threads = 8
    stream_threads = 256

    def __init__(
        self, loop: asyncio.AbstractEventLoop, on_exit: OnExit, suspended_share: float = 0.0
    ) -> None:
        super().__init__(loop, on_exit)
        if not 0.0 <= suspended_share < 1.0:
            raise ValueError(f"suspended_share must be in [0, 1), got {suspended_share}")
        self.share = float(suspended_share)
        self._tasks: dict[TaskId, _Box] = {}
        self._dying: set[_Box] = set()  # killed, not reported yet
        self._runners: set[asyncio.Task[None]] = set()
        self._ops = ThreadPoolExecutor(self.ops_threads, thread_name_prefix="aviary-docker")
        self._streams = ThreadPoolExecutor(self.stream_threads, thread_name_prefix="aviary-docker-out")
        self._client: Any = None
        self.image: str | None = None
        import psutil

        me = psutil.Process()
        self._owner = f"{socket.gethostname()}:{me.pid}:{me.create_time()!r}"
        self._ready = loop.run_in_executor(self._ops, self._connect)
        self._ready.add_done_callback(lambda fut: fut.cancelled() or fut.exception())

    @property
    def running(self) -> int:
        return len(self._tasks) + len(self._dying)

    def container_id(self, task_id: TaskId) -> str | None:
        """The task's container id (None if unknown or not created yet); for tests and diagnostics."""
        box = self._tasks.get(task_id)
        return None if box is None else box.cid

    @staticmethod
    def _realtime_us(mono: float) -> int:
        """Monotonic time ``mono`` on the realtime clock, in microseconds (what the task reads)."""
        return time.time_ns() // 1000 - round((time.monotonic() - mono) * 1e6)

    # --- the owner's requests (event loop; they never block and never report) -----------------------

    def launch(self, task_id: TaskId, duration: float) -> None:
        if self.closed:
            self._ignore("launch_after_close", task_id)
            return
        if task_id in self._tasks:
            self._ignore("duplicate_launch", task_id)
            return
        box = self._tasks[task_id] = _Box(max(0.0, float(duration)), time.monotonic())
        runner = self.loop.create_task(self._run(task_id, box))
        self._runners.add(runner)
        runner.add_done_callback(self._runners.discard)

    def suspend(self, task_id: TaskId) -> None:
        box = self._tasks.get(task_id)
        if box is None:
            self._ignore("unknown_suspend", task_id)
        elif box.suspended:
            self._ignore("redundant_suspend", task_id)
        else:
            box.suspended = True
            box.since = time.monotonic()
            if box.phase == _LIVE:
                at = self._realtime_us(box.since)
                if self.share > 0.0:  # throttled, not paused: it goes on at its share
                    self._tell(box, b"q %d %d\n" % (at, round(self.share * 1e6)))
                else:
                    self._tell(box, b"s %d\n" % at)
            box.changed.set()

    def resume(self, task_id: TaskId) -> None:
        box = self._tasks.get(task_id)
        if box is None:
            self._ignore("unknown_resume", task_id)
        elif not box.suspended:
            self._ignore("redundant_resume", task_id)
        else:
            box.suspended = False
            now = time.monotonic()
            if box.phase == _PENDING:  # held back before its creation: it starts that much later
                box.launched += now - box.since
            else:
                self._tell(box, b"r %d\n" % self._realtime_us(now))
            box.changed.set()

    def kill(self, task_id: TaskId) -> None:
        box = self._tasks.pop(task_id, None)
        if box is None:
            self._ignore("unknown_kill", task_id)
            return
        self._dying.add(box)
        box.killed = True
        self.counters["killed"] += 1
        box.changed.set()  # on_exit(False) comes from the runner once the container is removed

    async def close(self) -> None:
        """Kill and remove every container still there; no on_exit is called from here on."""
        self.closed = True
        for box in [*self._tasks.values(), *self._dying]:
            box.killed = True
            box.changed.set()
        while self._runners:
            await asyncio.gather(*list(self._runners), return_exceptions=True)
        self._tasks.clear()
        self._dying.clear()
        if self._ready.done():
            self._close_client()
        else:  # still connecting (an engine that does not answer): do not wait for it
            self._ready.add_done_callback(lambda _: self._close_client())
        self._ops.shutdown(wait=False, cancel_futures=True)
        self._streams.shutdown(wait=False, cancel_futures=True)

    def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def _tell(self, box: _Box, message: bytes) -> None:
        """Write ``message`` to the task's standard input (queued until the task is attached)."""
        if box.sock is None:
            box.outbox.append(message)
            return
        try:  # a few bytes into a local socket: never blocks in practice, and must not
            sent = box.sock._sock.send(message, socket.MSG_DONTWAIT)
            if sent != len(message):
                raise BlockingIOError(f"sent {sent} of {len(message)} bytes")
        except OSError as exc:  # the task has just ended, or the engine is stuck: it runs on untold
            self._note("tell_failed", f"could not tell container {(box.cid or '?')[:12]} {message!r}: {exc}")

    # --- the runner of one task (event loop) --------------------------------------------------------

    async def _run(self, task_id: TaskId, box: _Box) -> None:
        ok = False
        try:
            ok = await self._life(task_id, box)
        except asyncio.CancelledError:  # the loop is going away: leave no container behind
            box.killed = True
            self._hang_up(box)
            self._remove(box)
            raise
        except Exception as exc:  # an unexpected error from the engine or the SDK: the task fails
            self._note("task_error", f"task {task_id}: {exc!r}")
        finally:
            if self._tasks.get(task_id) is box:
                del self._tasks[task_id]
            self._dying.discard(box)
            self._report(task_id, ok)
        self._hang_up(box)
        if box.cid is not None and not box.removed:
            await self.loop.run_in_executor(self._ops, self._remove, box)

    async def _until(self, box: _Box, *futures: asyncio.Future[Any]) -> None:
        """Wait until the owner changes the task's state or one of ``futures`` is done."""
        changed = self.loop.create_task(box.changed.wait())
        try:
            await asyncio.wait([changed, *futures], return_when=asyncio.FIRST_COMPLETED)
        finally:
            changed.cancel()

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await self.loop.run_in_executor(self._ops, fn, *args)

    async def _life(self, task_id: TaskId, box: _Box) -> bool:
        """Carry the task through; True once it has run its whole duration (its container may remain)."""
        # 1. The engine and the image (connected to and built once per executor, at its creation).
        while True:
            box.changed.clear()
            if box.killed:
                return False
            if self._ready.done():
                break
            await self._until(box, self._ready)
        if self._ready.exception() is not None:
            self._note("docker_unavailable", f"task {task_id} cannot run: {self._ready.exception()}")
            return False
        # 2. Held back while suspended: nothing to pause yet (resume() shifts the launch time).
        while True:
            box.changed.clear()
            if box.killed:
                return False
            if not box.suspended:
                break
            await self._until(box)
        # 3. Create, attach, start. The task counts its running time from its launch on.
        box.phase = _LIVE
        origin = self._realtime_us(box.launched)
        try:
            sock = box.sock = await self._call(self._create, box, task_id, origin)
            for message in box.outbox:  # suspend / resume requests made while it was being created,
                self._tell(box, message)  # and "go": the task reads them all before it counts
            box.outbox.clear()
            self._tell(box, b"g\n")
            if not box.killed:  # (killed while it was being created: removed below, never started)
                await self._call(self._start, box)
        except Exception as exc:
            self._note("start_failed", f"task {task_id} could not start: {exc}")
            box.killed = True
        if box.killed:
            self._hang_up(box)
            if box.cid is not None:
                await self._call(self._remove, box)
            return False
        reader = self.loop.run_in_executor(self._streams, self._read, sock._sock)
        # 4. Apply the owner's requests, in order, until the task ends or is killed.
        while True:
            box.changed.clear()
            if box.killed:
                await self._call(self._remove, box)  # a kill, even of a paused container
                with contextlib.suppress(Exception):
                    await reader
                return False
            if reader.done():
                break
            if box.suspended != box.paused:
                box.paused = box.suspended
                await self._call(self._throttle if self.share > 0.0 else self._freeze, box, box.paused)
            else:
                await self._until(box, reader)
        try:
            finished, output = reader.result()
        except Exception as exc:
            self._note("stream_failed", f"lost the output of task {task_id}: {exc!r}")
            return False
        if not finished:
            text = output.decode(errors="replace").strip()[-300:]
            self._note("task_failed", f"task {task_id} ended without finishing; its output: {text!r}")
        return finished

    @staticmethod
    def _hang_up(box: _Box) -> None:
        sock, box.sock = box.sock, None
        if sock is not None:
            with contextlib.suppress(Exception):
                sock._sock.close()
            with contextlib.suppress(Exception):
                sock.close()

    # --- engine calls (threads of ``_ops``; ``_read`` in ``_streams``) ------------------------------

    def _connect(self) -> str:
        from . import dockertask

        client = dockertask.connect(max_pool_size=self.ops_threads + self.stream_threads + 4)
        self._client = client
        self._reap(client)
        self.image = dockertask.ensure_image(client)
        return self.image

    def _reap(self, client: Any) -> None:
        """Remove containers left by an executor of this host whose process is gone."""
        import psutil

        from .dockertask import OWNER_LABEL

        host = socket.gethostname()
        for info in client.api.containers(all=True, filters={"label": OWNER_LABEL}):
            owner_host, _, rest = (info.get("Labels") or {}).get(OWNER_LABEL, "").partition(":")
            pid, _, started = rest.partition(":")
            if owner_host != host:
                continue
            try:
                if repr(psutil.Process(int(pid)).create_time()) == started:
                    continue  # its owner is alive
            except (psutil.Error, ValueError):
                pass
            with contextlib.suppress(Exception):
                client.api.remove_container(info["Id"], force=True)
                self.counters["orphans_removed"] += 1

    def _create(self, box: _Box, task_id: TaskId, origin_us: int) -> Any:
        """Create the container and attach to its stdin and output (before it starts, so that nothing
        it prints is missed); return the attached socket."""
        from .dockertask import OWNER_LABEL, TASK_LABEL

        api = self._client.api
        command = [
            str(round(box.duration * 1e6)),
            str(origin_us),
            str(round(self.tick * 1e6)),
            str(round(self.slack * 1e6)),
            "1",
        ]
        labels = {TASK_LABEL: f"{task_id[0]}.{task_id[1]}", OWNER_LABEL: self._owner}
        box.cid = api.create_container(
            self.image,
            command,
            labels=labels,
            stdin_open=True,  # detach=False: StdinOnce too
            host_config=api.create_host_config(network_mode="none"),
        )["Id"]
        sock = api.attach_socket(box.cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        sock._sock.settimeout(None)
        return sock

    def _start(self, box: _Box) -> None:
        self._client.api.start(box.cid)

    @staticmethod
    def _read(sock: socket.socket) -> tuple[bool, bytes]:
        """``(finished, output)`` as soon as the task prints ``done``, or once its output ends.

        The stream is docker's multiplexed one: frames of an 8-byte header (stream, 0, 0, 0, length as
        a 32-bit big-endian integer) and the payload."""
        pending = output = b""
        while True:
            try:
                data = sock.recv(65536)
            except OSError:  # closed under us: a kill or a close
                data = b""
            if not data:
                return False, output
            pending += data
            while len(pending) >= 8:
                size = int.from_bytes(pending[4:8], "big")
                if len(pending) < 8 + size:
                    break
                output = (output + pending[8 : 8 + size])[-4096:]
                pending = pending[8 + size :]
            if output.startswith(b"done") or b"\ndone" in output:
                return True, output

    def _freeze(self, box: _Box, pause: bool) -> None:
        try:
            if pause:
                self._client.api.pause(box.cid)
            else:
                self._client.api.unpause(box.cid)
        except Exception as exc:  # it has just ended (its output says how) or the engine failed
            kind = "pause_failed" if pause else "unpause_failed"
            self._note(kind, f"{kind.replace('_', ' ')} of container {(box.cid or '?')[:12]}: {exc}")

    def _throttle(self, box: _Box, slow: bool) -> None:
        """With ``suspended_share``: lower the container's CPU quota to the share of a core (``docker
        update --cpus``, as the Kairos testbed's ``--cpus 0.1``) instead of pausing it, or lift it."""
        period = 100_000  # us: the CFS period; the engine's smallest quota is 1,000 us
        quota = max(1_000, round(self.share * period)) if slow else -1
        try:
            self._client.api.update_container(box.cid, cpu_period=period, cpu_quota=quota)
        except Exception as exc:  # it has just ended, or the engine cannot set a quota
            kind = "throttle_failed" if slow else "unthrottle_failed"
            self._note(kind, f"{kind.replace('_', ' ')} of container {(box.cid or '?')[:12]}: {exc}")

    def _remove(self, box: _Box) -> None:
        """Remove the container, killing it first if it runs or is paused (blocks)."""
        if box.cid is None or box.removed:
            return
        try:
            self._client.api.remove_container(box.cid, force=True)
        except Exception as exc:
            if getattr(getattr(exc, "response", None), "status_code", None) != 404:  # 404: gone already
                self._note("remove_failed", f"could not remove container {box.cid[:12]}: {exc}")
                return
        box.removed = True


# --- factory ---------------------------------------------------------------------------------------

EXECUTORS: dict[str, Callable[[asyncio.AbstractEventLoop, OnExit], Executor]] = {
    "timer": TimerExecutor,
    "process": ProcessExecutor,
    "docker": DockerExecutor,
}


def make_executor(
    kind: str, loop: asyncio.AbstractEventLoop, on_exit: OnExit, suspended_share: float = 0.0
) -> Executor:
    """The executor named ``kind`` (``timer``, ``process`` or ``docker``), driving tasks on ``loop``.

    ``suspended_share`` > 0 (a Kairos node's ``--suspended-share``): suspended tasks keep that share of a
    core: the ``timer`` executor counts it, ``docker`` lowers the container's CPU quota instead of pausing
    it (and its sleep task counts that share as progress); ``process`` refuses it (SIGSTOP stops a task
    whole)."""
    try:
        factory = EXECUTORS[kind]
    except KeyError:
        choices = ", ".join(sorted(EXECUTORS))
        raise ValueError(f"unknown executor {kind!r}; choose one of: {choices}") from None
    if suspended_share > 0.0:
        if kind == "process":
            raise ValueError(
                "the process executor cannot run a suspended task at a share of a core "
                "(--suspended-share; SIGSTOP stops it whole): use --executor timer or docker"
            )
        return (DockerExecutor if kind == "docker" else TimerExecutor)(loop, on_exit, suspended_share)
    return factory(loop, on_exit)
