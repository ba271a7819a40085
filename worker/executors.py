"""Task executors: what carries out a node monitor's Launch / Suspend / Resume / Kill (DESIGN §2, §6).

A task is a sleep of its duration that makes progress only while it runs: a task suspended for X
seconds finishes X seconds later. The real runtime builds one executor per node monitor with
:func:`make_executor` and calls it from its event loop (uvloop in production):

- :class:`TimerExecutor` (``timer``): no process, one ``call_later`` handle per task; suspend cancels the
  handle and keeps the remaining running time, resume re-arms it. Cheap enough for many thousands of
  tasks per second.
- :class:`ProcessExecutor` (``process``): one child process per task running :mod:`sleeptask` (a sleep
  that counts only its running time, in 5 ms ticks); suspend/resume are SIGSTOP/SIGCONT sent through
  psutil, kill is SIGKILL, and the exit is seen by the process's ``wait()``.
- ``docker``: a container per task, paused/unpaused through the docker SDK; it lands with its own
  issue and registers itself in :data:`EXECUTORS`.

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
import logging
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import psutil

from ..common.effects import TaskId

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
    __slots__ = ("handle", "remaining", "started")

    def __init__(self, handle: asyncio.Handle | None, remaining: float, started: float) -> None:
        self.handle = handle  # None while suspended
        self.remaining = remaining  # running time left as of ``started``
        self.started = started  # loop time when the handle was (re)armed


class TimerExecutor(_Base):
    """Virtual tasks: one loop timer per running task, no process (DESIGN §6 ``timer``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_exit: OnExit) -> None:
        super().__init__(loop, on_exit)
        self._tasks: dict[TaskId, _Timer] = {}

    @property
    def running(self) -> int:
        return len(self._tasks)

    def _arm(self, task_id: TaskId, delay: float) -> asyncio.Handle:
        if delay > 0.0:
            return self.loop.call_later(delay, self._done, task_id)
        return self.loop.call_soon(self._done, task_id)

    def launch(self, task_id: TaskId, duration: float) -> None:
        if self.closed:
            self._ignore("launch_after_close", task_id)
            return
        if task_id in self._tasks:
            self._ignore("duplicate_launch", task_id)
            return
        duration = max(0.0, float(duration))
        self._tasks[task_id] = _Timer(self._arm(task_id, duration), duration, self.loop.time())

    def _done(self, task_id: TaskId) -> None:
        if self._tasks.pop(task_id, None) is not None:
            self._report(task_id, True)

    def suspend(self, task_id: TaskId) -> None:
        entry = self._tasks.get(task_id)
        if entry is None:
            self._ignore("unknown_suspend", task_id)
        elif entry.handle is None:
            self._ignore("redundant_suspend", task_id)
        else:
            entry.handle.cancel()
            entry.handle = None
            entry.remaining = max(0.0, entry.remaining - (self.loop.time() - entry.started))

    def resume(self, task_id: TaskId) -> None:
        entry = self._tasks.get(task_id)
        if entry is None:
            self._ignore("unknown_resume", task_id)
        elif entry.handle is not None:
            self._ignore("redundant_resume", task_id)
        else:
            entry.started = self.loop.time()
            entry.handle = self._arm(task_id, entry.remaining)

    def kill(self, task_id: TaskId) -> None:
        entry = self._tasks.pop(task_id, None)
        if entry is None:
            self._ignore("unknown_kill", task_id)
            return
        if entry.handle is not None:
            entry.handle.cancel()
        self.counters["killed"] += 1
        self.loop.call_soon(self._report, task_id, False)

    async def close(self) -> None:
        self.closed = True
        for entry in self._tasks.values():
            if entry.handle is not None:
                entry.handle.cancel()
        self._tasks.clear()


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
            self._run(task_id, entry, max(0.0, float(duration)), time.monotonic()))

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
            argv = (sys.executable, *INTERPRETER_FLAGS, SLEEPTASK, repr(duration), repr(launched),
                    self._pid, repr(self.tick))
            try:
                proc = entry.proc = await asyncio.create_subprocess_exec(
                    *argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
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


# --- factory ---------------------------------------------------------------------------------------

EXECUTORS: dict[str, Callable[[asyncio.AbstractEventLoop, OnExit], Executor]] = {
    "timer": TimerExecutor,
    "process": ProcessExecutor,
    # "docker": DockerExecutor,  # a container per task, docker pause/unpause (DESIGN §6): own issue
}


def make_executor(kind: str, loop: asyncio.AbstractEventLoop, on_exit: OnExit) -> Executor:
    """The executor named ``kind`` (``timer`` or ``process``), driving tasks on ``loop``."""
    try:
        factory = EXECUTORS[kind]
    except KeyError:
        choices = ", ".join(sorted(EXECUTORS))
        raise ValueError(f"unknown executor {kind!r}; choose one of: {choices}") from None
    return factory(loop, on_exit)
