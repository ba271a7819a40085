"""Task executors (DESIGN §6): timer and process tasks, suspension that delays the finish, kill, close.

These run on the real clock: tolerances are a few tens of ms for the timer executor and the issue's
bounds (3.0..3.2 s for a 2 s task suspended 1 s) for the process executor.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from collections import Counter

import psutil
import pytest
import uvloop

from aviary.worker import alarm as alarm_module
from aviary.worker import sleeptask
from aviary.worker.executors import (
    SLEEPTASK,
    ProcessExecutor,
    TimerExecutor,
    make_executor,
)


class Exits:
    """Records on_exit calls with their time, and lets a test await one."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[int, int], bool, float]] = []
        self._waiters: dict[tuple[int, int], asyncio.Future[tuple[bool, float]]] = {}

    def __call__(self, task_id: tuple[int, int], ok: bool) -> None:
        now = time.monotonic()
        self.calls.append((task_id, ok, now))
        fut = self._waiters.get(task_id)
        if fut is not None and not fut.done():
            fut.set_result((ok, now))

    async def wait(self, task_id: tuple[int, int], timeout: float = 5.0) -> tuple[bool, float]:
        for tid, ok, at in self.calls:
            if tid == task_id:
                return ok, at
        fut = self._waiters.setdefault(task_id, asyncio.get_running_loop().create_future())
        return await asyncio.wait_for(fut, timeout)

    def of(self, task_id: tuple[int, int]) -> list[bool]:
        return [ok for tid, ok, _ in self.calls if tid == task_id]


async def spawned(ex: ProcessExecutor, task_id: tuple[int, int]) -> psutil.Process:
    """The task's child once it has finished its set-up (it then leads its own process group)."""
    for _ in range(1000):
        pid = ex.pid(task_id)
        if pid is not None and os.getpgid(pid) == pid:
            return psutil.Process(pid)
        await asyncio.sleep(0.002)
    raise AssertionError(f"task {task_id} was never spawned")


async def status_becomes(proc: psutil.Process, status: str, timeout: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout
    while proc.status() != status and time.monotonic() < deadline:
        await asyncio.sleep(0.002)
    return proc.status() == status


def gone(proc: psutil.Process) -> bool:
    """True when the process no longer exists (a zombie still exists: it has not been reaped)."""
    try:
        return not proc.is_running()
    except psutil.NoSuchProcess:
        return True


def our_tasks() -> list[psutil.Process]:
    """Children of this process that run the sleep task, zombies included."""
    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            if SLEEPTASK in child.cmdline() or child.status() == psutil.STATUS_ZOMBIE:
                out.append(child)
        except psutil.NoSuchProcess:
            pass
    return out


# --- factory ---------------------------------------------------------------------------------------


async def test_make_executor_kinds_and_a_clear_error():
    loop = asyncio.get_running_loop()
    assert isinstance(make_executor("timer", loop, Exits()), TimerExecutor)
    assert isinstance(make_executor("process", loop, Exits()), ProcessExecutor)
    with pytest.raises(ValueError, match=r"unknown executor 'dockr'; choose one of: docker, process, timer"):
        make_executor("dockr", loop, Exits())


# --- timer -----------------------------------------------------------------------------------------


async def test_timer_task_completes_after_its_duration():
    exits = Exits()
    ex = TimerExecutor(asyncio.get_running_loop(), exits)
    t0 = time.monotonic()
    ex.launch((1, 0), 0.2)
    assert ex.running == 1
    ok, at = await exits.wait((1, 0))
    assert ok and 0.19 <= at - t0 <= 0.25
    assert ex.running == 0 and exits.of((1, 0)) == [True]


@pytest.fixture(params=["timerfd", "call_later"])
def alarm(request, monkeypatch):
    """Each way the timer executor is woken: a timerfd (Linux), and the loop's timers where none is."""
    if request.param == "call_later":
        monkeypatch.setattr(alarm_module, "_LIBC", None)
    return request.param


def test_timer_tasks_never_end_early_on_uvloop(alarm):
    """uvloop's millisecond timers fire up to ~1 ms early; a task must still run its whole duration, and
    the executor's alarm is what it says (a timerfd on Linux, else the loop's timer)."""

    async def main() -> list[float]:
        exits = Exits()
        ex = TimerExecutor(asyncio.get_running_loop(), exits)
        assert (ex._alarm.fd >= 0) == (alarm == "timerfd")
        spans = []
        for i in range(60):
            duration = 0.0031 + 0.00037 * (i % 9)
            spin = time.monotonic() + 0.0004 * (i % 3)  # busy work between the loop's clock update and launch
            while time.monotonic() < spin:
                pass
            t0 = time.monotonic()
            ex.launch((i, 0), duration)
            _, at = await exits.wait((i, 0))
            spans.append(at - t0 - duration)
        return spans

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        spans = runner.run(main())
    assert min(spans) >= 0.0, f"a task ended {-min(spans) * 1000:.3f} ms early"


async def test_timer_suspended_task_finishes_later_by_the_suspension(alarm):
    exits = Exits()
    ex = TimerExecutor(asyncio.get_running_loop(), exits)
    t0 = time.monotonic()
    ex.launch((1, 0), 0.2)
    await asyncio.sleep(0.05)
    ex.suspend((1, 0))
    await asyncio.sleep(0.1)
    ex.resume((1, 0))
    ok, at = await exits.wait((1, 0))
    assert ok and 0.29 <= at - t0 <= 0.34
    assert exits.of((1, 0)) == [True]


async def test_timer_kill_reports_not_ok_once_and_never_from_inside_kill():
    exits = Exits()
    ex = TimerExecutor(asyncio.get_running_loop(), exits)
    ex.launch((1, 0), 0.05)
    ex.launch((1, 1), 0.05)
    ex.suspend((1, 1))
    ex.kill((1, 0))
    ex.kill((1, 1))  # a suspended task can be killed too
    assert exits.calls == [] and ex.running == 0
    await asyncio.sleep(0.1)
    assert exits.of((1, 0)) == [False] and exits.of((1, 1)) == [False]
    assert ex.counters["killed"] == 2


async def test_timer_zero_duration_completes_asynchronously():
    exits = Exits()
    ex = TimerExecutor(asyncio.get_running_loop(), exits)
    ex.launch((1, 0), 0.0)
    ex.launch((1, 1), -1.0)  # a negative duration is a zero one
    assert exits.calls == []
    await asyncio.sleep(0)
    assert exits.of((1, 0)) == [True] and exits.of((1, 1)) == [True]


async def test_timer_unknown_and_redundant_requests_are_ignored_and_counted():
    exits = Exits()
    ex = TimerExecutor(asyncio.get_running_loop(), exits)
    ex.suspend((9, 9))
    ex.resume((9, 9))
    ex.kill((9, 9))
    ex.launch((1, 0), 0.05)
    ex.launch((1, 0), 0.05)  # still alive: ignored
    ex.resume((1, 0))  # running: ignored
    ex.suspend((1, 0))
    ex.suspend((1, 0))  # suspended already: ignored
    ex.resume((1, 0))
    await exits.wait((1, 0))
    ex.kill((1, 0))  # finished: unknown now
    expected = Counter(
        {
            "unknown_suspend": 1,
            "unknown_resume": 1,
            "unknown_kill": 2,
            "duplicate_launch": 1,
            "redundant_resume": 1,
            "redundant_suspend": 1,
        }
    )
    assert {k: ex.counters[k] for k in expected} == expected  # exact: no over-counting
    assert exits.of((1, 0)) == [True]


async def test_timer_exactly_one_exit_per_task_under_churn(alarm):
    exits = Exits()
    ex = TimerExecutor(asyncio.get_running_loop(), exits)
    rng = random.Random(7)
    ids = [(j, i) for j in range(40) for i in range(50)]
    for tid in ids:
        ex.launch(tid, rng.choice([0.0, rng.uniform(0.0, 0.05)]))
    for _ in range(6):
        for tid in rng.sample(ids, 300):
            rng.choice([ex.suspend, ex.resume, ex.resume, ex.kill])(tid)
        await asyncio.sleep(0.01)
    for tid in ids:
        ex.resume(tid)
    for _ in range(100):
        if ex.running == 0:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.01)
    assert ex.running == 0
    seen = [tid for tid, _, _ in exits.calls]
    assert sorted(seen) == sorted(ids)  # every task exactly once
    assert sum(not ok for _, ok, _ in exits.calls) == ex.counters["killed"]


async def test_timer_close_drops_everything_without_callbacks():
    exits = Exits()
    ex = TimerExecutor(asyncio.get_running_loop(), exits)
    ex.launch((1, 0), 0.01)
    ex.launch((1, 1), 0.01)
    ex.suspend((1, 1))
    await ex.close()
    ex.launch((1, 2), 0.0)
    await asyncio.sleep(0.03)
    assert ex.running == 0 and exits.calls == []
    assert ex.counters["launch_after_close"] == 1


# --- process ---------------------------------------------------------------------------------------


async def test_process_task_finishes_after_its_duration():
    exits = Exits()
    ex = ProcessExecutor(asyncio.get_running_loop(), exits)
    t0 = time.monotonic()
    ex.launch((1, 0), 0.3)
    ok, at = await exits.wait((1, 0))
    assert ok and 0.3 <= at - t0 <= 0.5
    assert ex.running == 0 and exits.of((1, 0)) == [True]
    await ex.close()


async def test_process_suspension_delays_the_finish_by_its_length():
    """The issue's proof: a 2 s task suspended for 1 s at ~0.5 s finishes 3.0..3.2 s after launch."""
    exits = Exits()
    ex = ProcessExecutor(asyncio.get_running_loop(), exits)
    t0 = time.monotonic()
    ex.launch((1, 0), 2.0)
    child = await spawned(ex, (1, 0))
    await asyncio.sleep(0.5 - (time.monotonic() - t0))
    suspended_at = time.monotonic()
    ex.suspend((1, 0))
    assert await status_becomes(child, psutil.STATUS_STOPPED, 0.1)
    await asyncio.sleep(1.0 - (time.monotonic() - suspended_at))
    ex.resume((1, 0))
    ok, at = await exits.wait((1, 0))
    assert ok, "the task did not complete"
    # To within the sleep task's documented +-TICK/2 per suspension (sleeptask's docstring).
    assert 3.0 - sleeptask.TICK / 2 <= at - t0 <= 3.2, f"finished {at - t0:.4f} s after launch"
    assert gone(child)
    await ex.close()


async def test_process_is_really_stopped_while_suspended():
    exits = Exits()
    ex = ProcessExecutor(asyncio.get_running_loop(), exits)
    ex.launch((1, 0), 5.0)
    child = await spawned(ex, (1, 0))
    ex.suspend((1, 0))
    assert await status_becomes(child, psutil.STATUS_STOPPED)
    cpu = child.cpu_times()
    await asyncio.sleep(0.1)
    assert child.status() == psutil.STATUS_STOPPED and child.cpu_times() == cpu
    ex.resume((1, 0))
    assert await status_becomes(child, psutil.STATUS_SLEEPING)
    ex.kill((1, 0))
    assert (await exits.wait((1, 0)))[0] is False
    await ex.close()


async def test_process_kill_reports_not_ok_and_leaves_no_child():
    exits = Exits()
    ex = ProcessExecutor(asyncio.get_running_loop(), exits)
    ex.launch((1, 0), 10.0)
    ex.launch((1, 1), 10.0)
    running = await spawned(ex, (1, 0))
    stopped = await spawned(ex, (1, 1))
    ex.suspend((1, 1))
    t0 = time.monotonic()
    ex.kill((1, 0))
    ex.kill((1, 1))
    assert exits.calls == []  # never from inside kill
    assert (await exits.wait((1, 0)))[0] is False
    assert (await exits.wait((1, 1)))[0] is False
    assert time.monotonic() - t0 < 0.5
    assert gone(running) and gone(stopped)
    assert exits.of((1, 0)) == [False] and exits.of((1, 1)) == [False] and ex.running == 0
    await ex.close()


async def test_process_kill_or_suspend_before_the_child_exists():
    exits = Exits()
    ex = ProcessExecutor(asyncio.get_running_loop(), exits)
    ex.launch((1, 0), 10.0)
    ex.kill((1, 0))  # in the same loop turn as the launch: nothing is ever spawned
    assert (await exits.wait((1, 0)))[0] is False
    t0 = time.monotonic()
    ex.launch((1, 1), 0.1)
    ex.suspend((1, 1))  # not spawned yet: it starts when resumed
    await asyncio.sleep(0.2)
    assert ex.pid((1, 1)) is None
    ex.resume((1, 1))
    ok, at = await exits.wait((1, 1))
    assert ok and 0.3 <= at - t0 <= 0.45
    assert our_tasks() == []
    await ex.close()


async def test_process_task_that_dies_otherwise_reports_not_ok():
    exits = Exits()
    ex = ProcessExecutor(asyncio.get_running_loop(), exits)
    ex.launch((1, 0), 10.0)
    child = await spawned(ex, (1, 0))
    child.terminate()  # not asked for by the owner: a failed task
    assert (await exits.wait((1, 0)))[0] is False
    assert ex.counters["task_failed"] == 1 and ex.counters["killed"] == 0
    await ex.close()


async def test_process_unknown_ids_are_ignored_and_counted():
    exits = Exits()
    ex = ProcessExecutor(asyncio.get_running_loop(), exits)
    ex.suspend((9, 9))
    ex.resume((9, 9))
    ex.kill((9, 9))
    ex.launch((1, 0), 0.05)
    ex.launch((1, 0), 0.05)
    assert (await exits.wait((1, 0)))[0] is True
    ex.kill((1, 0))
    expected = Counter({"unknown_suspend": 1, "unknown_resume": 1, "unknown_kill": 2, "duplicate_launch": 1})
    assert {k: ex.counters[k] for k in expected} == expected  # exact: no over-counting
    assert exits.of((1, 0)) == [True]
    await ex.close()


async def test_process_close_kills_and_reaps_every_child():
    exits = Exits()
    ex = ProcessExecutor(asyncio.get_running_loop(), exits)
    for i in range(3):
        ex.launch((1, i), 10.0)
    children = [await spawned(ex, (1, i)) for i in range(3)]
    ex.suspend((1, 1))
    ex.kill((1, 2))  # dying: close reaps it too
    ex.launch((1, 3), 10.0)  # not spawned yet
    await ex.close()
    assert ex.running == 0
    assert all(gone(c) for c in children)
    assert our_tasks() == []
    assert exits.calls == []  # nothing reported once closed


def test_process_executor_on_uvloop():
    """The production loop: a task runs, a suspension delays it, a kill reaps the child."""

    async def main() -> None:
        exits = Exits()
        ex = make_executor("process", asyncio.get_running_loop(), exits)
        t0 = time.monotonic()
        ex.launch((1, 0), 0.3)
        ex.launch((1, 1), 10.0)
        child = await spawned(ex, (1, 1))
        await asyncio.sleep(0.1 - (time.monotonic() - t0))
        suspended_at = time.monotonic()
        ex.suspend((1, 0))
        await asyncio.sleep(0.2)  # uvloop's millisecond timers may fire up to ~1 ms early
        ex.resume((1, 0))
        suspended = time.monotonic() - suspended_at
        ex.kill((1, 1))
        assert (await exits.wait((1, 1)))[0] is False and gone(child)
        ok, at = await exits.wait((1, 0))
        # 0.3 s of running time plus the suspension, to within the sleep task's documented +-TICK/2
        # per suspension (a stop lands at an unknown moment of a tick; sleeptask's docstring).
        earliest = 0.3 + suspended - sleeptask.TICK / 2
        assert ok and earliest <= at - t0 <= 0.7, f"finished {at - t0:.4f} s after launch (>= {earliest:.4f})"
        await ex.close()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())
    assert our_tasks() == []


HELPER = """
import asyncio
from aviary.worker.executors import ProcessExecutor

async def main():
    ex = ProcessExecutor(asyncio.get_running_loop(), lambda task_id, ok: None)
    ex.launch((0, 0), 30.0)
    ex.launch((0, 1), 30.0)
    while ex.pid((0, 0)) is None or ex.pid((0, 1)) is None:
        await asyncio.sleep(0.001)
    ex.suspend((0, 1))  # most likely during its start-up: the stop waits for its set-up
    print(ex.pid((0, 0)), ex.pid((0, 1)), flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


def test_tasks_die_with_a_crashed_node_monitor():
    """A node monitor killed with SIGKILL leaves neither its running nor its stopped tasks behind."""
    helper = subprocess.Popen([sys.executable, "-c", HELPER], stdout=subprocess.PIPE, text=True)
    try:
        assert helper.stdout is not None
        tasks = [psutil.Process(int(pid)) for pid in helper.stdout.readline().split()]
        assert len(tasks) == 2
        deadline = time.monotonic() + 2.0
        while tasks[1].status() != psutil.STATUS_STOPPED and time.monotonic() < deadline:
            time.sleep(0.005)
        assert tasks[1].status() == psutil.STATUS_STOPPED
    finally:
        helper.kill()
        helper.wait()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and not all(dead(t) for t in tasks):
        time.sleep(0.01)
    survivors = [describe(t) for t in tasks if not dead(t)]
    for t in tasks:
        if not dead(t):
            t.kill()
    assert survivors == []


def dead(proc: psutil.Process) -> bool:
    try:
        return gone(proc) or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def describe(proc: psutil.Process) -> str:
    try:
        return f"pid {proc.pid} {proc.status()} ppid {proc.ppid()} {proc.cmdline()}"
    except psutil.NoSuchProcess:
        return f"pid {proc.pid} gone"


def test_sleeptask_counts_only_running_time_and_rejects_bad_arguments():
    bad = subprocess.run([sys.executable, "-I", "-S", SLEEPTASK, "soon"], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr
    t0 = time.monotonic()
    assert subprocess.run([sys.executable, "-I", "-S", SLEEPTASK, "0.05"]).returncode == 0
    assert 0.05 <= time.monotonic() - t0 < 0.5
    assert ProcessExecutor.tick == sleeptask.TICK
