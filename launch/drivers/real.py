"""Drives a replay on real processes: the frontend core on the real runtime, in this process.

A :class:`FrontendSession` waits until every process of the cluster has registered, lets the
frontend submit the jobs at their arrival times, shows progress, and judges liveness from the
processes: the frontend core's ``Hello`` every :data:`LIVENESS_PERIOD` s (a process silent for
:data:`LIVENESS_MISSES` of them is declared dead, its work re-run or resubmitted) and, on a local
testbed, a child's exit (declared at once). It stops with one line when a process no other can replace
died (:attr:`FrontendCore.failed`), and, as a last resort, when no job has finished for
``stall_timeout`` seconds, reporting which jobs did not finish. ``failures`` kill processes on purpose
at replay times (``--fail``). ``stop()`` (polled every tick) ends the wait early: a replay interrupted by
SIGINT or SIGTERM keeps what finished. A ``journal`` gets every job as it finishes (noted every tick,
written on its own clock: :mod:`aviary.common.journal`), so that a replay killed outright keeps it too. At
the end it collects every process's counters and message counts.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...common.addresses import AddressInUse
from ...common.cluster import Cluster, ProcessSpec
from ...common.failures import LIVENESS_MISSES, LIVENESS_PERIOD, Failure
from ...common.frontend import FrontendCore, Router, round_robin
from ...common.hoplog import make_runtime
from ...common.journal import Journal
from ...common.messages import Counters
from ...common.model import JobSpec
from ...common.wire import open_transport

Progress = Callable[[FrontendCore, float | None], None]
"""Called every tick with the frontend and the replay clock (seconds since the first submission; None
while the processes register)."""
Stop = Callable[[], str | None]
"""Polled every tick: a reason to stop now (``"SIGINT"``), or None."""


def _never() -> str | None:
    return None


class ReplayError(RuntimeError):
    pass


@dataclass
class RealOutcome:
    frontend: FrontendCore
    wall_seconds: float
    messages: Counter[str]
    counters: Counter[str]
    problems: list[str] = field(default_factory=list)
    task_log: list[list[Any]] = field(default_factory=list)
    """The central scheduler's finished tasks during this replay (:meth:`Core.task_log`)."""
    cycles: list[list[Any]] = field(default_factory=list)
    """A periodic planner's cycles during this replay (:meth:`Core.cycle_log`)."""
    interrupted: str | None = None
    """Why the replay stopped before every job finished (``"SIGINT"``, ``"SIGTERM"``), or None."""
    error: str | None = None
    """A core's exception that stopped the replay (:attr:`FrontendSession.error`), or None."""
    registered_at: float | None = None
    """When (``time.monotonic()``) every process had registered."""


class FrontendSession:
    """The frontend of one run against a running testbed (use ``async with``); it waits for every
    process of ``cluster`` but the frontend, or for ``members``."""

    def __init__(
        self,
        cluster: Cluster,
        jobs: list[JobSpec],
        route: Router | None = None,
        *,
        frontend: ProcessSpec | None = None,
        members: list[str] | None = None,
        dead: Callable[[], dict[str, int]] = dict,
        fail: Callable[[Failure], None] | None = None,
        liveness: tuple[float, int] = (LIVENESS_PERIOD, LIVENESS_MISSES),
        restart: Callable[[str], bool] | None = None,
        journal: Journal | None = None,
        link_faults: list[str] | None = None,
    ) -> None:
        spec = frontend or cluster.frontend
        self.link_faults = link_faults or []
        """``--fail``'s link items: every process injects them from the replay's start
        (:meth:`Runtime.start_links`), with the cluster's seed, as the simulator does."""
        self.cluster = cluster
        self.journal = journal
        self.members = members or [p.name for p in cluster.processes if p.role != "frontend"]
        roles = {p.name: p.role for p in cluster.processes if p.name in self.members}
        self.core = FrontendCore(
            spec.name,
            jobs,
            route or round_robin(self.members),
            wait_for=self.members,
            hold=True,
            roles=roles,
            liveness=liveness,
            epoch=random.getrandbits(62) | 1,  # this replay's: the processes drop an earlier one's work
            restarts=restart is not None,
            task_records=journal is not None and journal.tasks is not None,
        )
        try:
            self.transport = open_transport(spec.name, spec.bind_address, spec.address, cluster.addresses())
        except AddressInUse as exc:
            raise ReplayError(f"{spec.name}: {exc} (is another replay using this testbed?)") from None
        self.runtime = make_runtime(self.core, self.transport)
        self.core.link_heard = self.runtime.links.heard
        self.dead = dead
        self.fail = fail
        self.restart = restart
        self.restarted: dict[str, Counters | None] = {}
        """Processes restarted during the replay: the last report of their dead incarnation."""
        self.problems: list[str] = []
        self.error: str | None = None
        """Why the replay stopped on a core's exception (:meth:`_core_raised`), or None."""
        self.lost: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> FrontendSession:
        self._task = asyncio.create_task(self.runtime.run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.runtime.stop()
        if self._task is not None:
            await self._task
        self.transport.close()

    def _core_raised(self) -> str | None:
        """The first process whose core raised (its counters say so: a bug of its policy, which makes
        the rest of the run meaningless), named with its role and policy, else None."""
        for name, report in sorted(self.core.reported.items()):
            raised = sorted(k for k, n in report.counters.items() if k.startswith("error.core.") and n)
            if raised:
                role = self.core.roles.get(name, "process")
                return (
                    f"the {role} core of {name} raised an exception in "
                    f"{raised[0].removeprefix('error.core.')} (its log says which, and the input it was "
                    "handling)"
                )
        return None

    def _check(self) -> None:
        assert self._task is not None
        if self._task.done():
            self._task.result()
        for name, code in sorted(self.dead().items()):
            replaying = self.core.t0 is not None
            if name not in self.lost and replaying and self.restart is not None and self.restart(name):
                self.problems.append(
                    f"process {name} exited with code {code}: restarted, it rebuilds its state"
                )
                self.restarted.setdefault(name, self.core.reported.get(name))
                self.runtime.inject(self.core.declare_dead, name, f"exited with code {code}", True)
            elif name not in self.lost:
                self.lost.add(name)
                self.problems.append(f"process {name} exited with code {code}")
                if self.core.t0 is not None:  # replaying: its work goes elsewhere now
                    self.runtime.inject(self.core.declare_dead, name, f"exited with code {code}", True)

    async def registered(
        self, timeout: float = 60.0, progress: Progress | None = None, stop: Stop = _never
    ) -> None:
        """Wait until every process answered Hello (or ``stop()`` gives a reason); fail fast if one died
        first."""
        core = self.core
        deadline = time.monotonic() + timeout
        while not core.ready and stop() is None:
            self._check()
            if progress is not None:
                progress(core, None)
            if self.lost & core.waiting:
                raise ReplayError("a process died before it registered: " + "; ".join(self.problems))
            if time.monotonic() > deadline:
                missing = ", ".join(sorted(core.waiting)[:10])
                raise ReplayError(
                    f"{len(core.waiting)} processes did not register within {timeout:.0f} s: {missing} "
                    "(are they running, and reachable at their addresses?)"
                )
            await asyncio.sleep(0.01)

    async def replay(
        self,
        *,
        stall_timeout: float = 60.0,
        progress: Progress | None = None,
        tick: float = 0.1,
        stop: Stop = _never,
        failures: list[Failure] | None = None,
    ) -> float:
        """Wait until every job finished, the replay stalled or failed, or ``stop()`` gave a reason (then
        the jobs left are named in :attr:`problems`); returns the wall time it took. ``failures``: kill
        these processes (SIGKILL, or SIGSTOP for a while: the session's ``fail``) at their replay times."""
        core, runtime = self.core, self.runtime
        start = time.monotonic()
        runtime.inject(core.begin)
        if self.link_faults:
            runtime.start_links(self.members, self.link_faults, self.cluster.seed, 0.0)
        pending = sorted(failures or [], key=lambda f: f.at)
        while not core.done:
            await asyncio.sleep(tick)
            while pending and time.monotonic() - start >= pending[0].at and self.fail is not None:
                self.fail(pending.pop(0))
            self._check()
            if self.journal is not None:
                self.journal.note(core)
            if progress is not None:
                progress(core, time.monotonic() - start)
            reason = stop()
            if reason is not None:
                left = core.unfinished()
                self.problems.append(
                    f"interrupted by {reason} after {time.monotonic() - start:.1f} s: "
                    f"{len(left)} of {len(core.jobs)} jobs did not finish"
                )
                break
            if (raised := self._core_raised()) is not None:
                self.error = raised
                break
            if core.failed is not None:
                left = core.unfinished()
                self.problems.append(
                    f"gave up: {core.failed}; {len(left)} of {len(core.jobs)} jobs did not finish"
                )
                break
            if core.submitted == len(core.jobs) and runtime.now() - core.last_progress > stall_timeout:
                left = core.unfinished()
                shown = ", ".join(map(str, left[:20])) + (" ..." if len(left) > 20 else "")
                self.problems.append(
                    f"gave up: no job finished for {stall_timeout:g} s; "
                    f"{len(left)} jobs did not finish: {shown}"
                )
                break
        core.closed = not core.done or core.failed is not None  # the results are what was done by now
        if self.journal is not None:
            self.journal.note(core)
        if progress is not None:
            progress(core, time.monotonic() - start)
        return time.monotonic() - start

    async def collect(self, *, shutdown: bool, timeout: float = 10.0) -> tuple[Counter[str], Counter[str]]:
        """Every live process's sent messages by kind and counters (and stop them, with ``shutdown``)."""
        core = self.core
        alive = [m for m in self.members if m not in self.lost and m not in core.dead]
        core.stats.clear()
        self.runtime.inject(lambda now: core.collect(alive, shutdown=shutdown))
        deadline = time.monotonic() + timeout
        while len(core.stats) < len(alive) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        missing = sorted(set(alive) - set(core.stats))
        if missing:
            self.problems.append(f"no counters from {len(missing)} processes: {', '.join(missing[:10])}")
        messages, counters = core.message_totals()
        messages.update(self.runtime.sent)
        return messages, counters

    def task_log(self) -> list[list[Any]]:
        """The task logs in the Stats last collected, concatenated (one central scheduler keeps one)."""
        return [entry for stats in self.core.stats.values() for entry in stats.log]

    def cycle_log(self) -> list[list[Any]]:
        """The cycle logs in the Stats last collected, concatenated."""
        return [entry for stats in self.core.stats.values() for entry in stats.cycles]


async def run_real(
    cluster: Cluster,
    jobs: list[JobSpec],
    route: Router,
    *,
    stall_timeout: float = 60.0,
    register_timeout: float = 60.0,
    shutdown: bool = True,
    dead: Callable[[], dict[str, int]] = dict,
    progress: Progress | None = None,
    stop: Stop = _never,
    failures: list[Failure] | None = None,
    fail: Callable[[Failure], None] | None = None,
    liveness: tuple[float, int] = (LIVENESS_PERIOD, LIVENESS_MISSES),
    restart: Callable[[str], bool] | None = None,
    watch: Callable[[FrontendSession], Any] | None = None,
    journal: Journal | None = None,
    link_faults: list[str] | None = None,
) -> RealOutcome:
    """One whole replay: register, replay, collect. When ``stop()`` gives a reason (a signal), the
    replay ends early: the processes are still asked for their counters (and stopped, with
    ``shutdown``), and the outcome is marked ``interrupted`` with what finished so far. ``failures``
    are carried out with ``fail`` (a local testbed's); ``liveness``: the heartbeat period (s) and the
    periods missed before a process is declared dead; ``restart``: start a dead central scheduler again
    (a local testbed's), which then rebuilds its state; ``watch(session)``: called once the session is
    up, returns what watches it (the dashboard), stopped at the end; ``journal``, ``link_faults``: see
    :class:`FrontendSession`."""
    async with FrontendSession(
        cluster,
        jobs,
        route,
        dead=dead,
        fail=fail,
        liveness=liveness,
        restart=restart,
        journal=journal,
        link_faults=link_faults,
    ) as session:
        watcher = None if watch is None else watch(session)
        try:
            return await _replay(session, register_timeout, progress, stop, shutdown, stall_timeout, failures)
        finally:
            if watcher is not None:
                watcher.stop()


async def _replay(
    session: FrontendSession,
    register_timeout: float,
    progress: Progress | None,
    stop: Stop,
    shutdown: bool,
    stall_timeout: float,
    failures: list[Failure] | None,
) -> RealOutcome:
    """:func:`run_real`'s phases, in its session."""
    await session.registered(register_timeout, progress, stop)
    registered_at = time.monotonic()
    if stop() is not None:  # before the first submission: nothing ran
        session.problems.append(f"interrupted by {stop()} before the replay started")
        await session.collect(shutdown=shutdown, timeout=2.0)
        return RealOutcome(session.core, 0.0, Counter(), Counter(), session.problems, interrupted=stop())
    # Processes of a running testbed count from their start: report this replay's share only.
    await session.collect(shutdown=False)
    base, base_sent = dict(session.core.stats), Counter(session.runtime.sent)
    base_log, base_cycles = session.task_log(), session.cycle_log()
    wall = await session.replay(stall_timeout=stall_timeout, progress=progress, stop=stop, failures=failures)
    messages, counters = await session.collect(shutdown=shutdown)
    messages.subtract(base_sent)
    for name in session.core.stats:  # those that answered: this replay's share
        if name in base and name not in session.restarted:
            messages.subtract(base[name].messages)
            counters.subtract(base[name].counters)
    # The dead, and a restarted one's dead incarnation: the share of their last report.
    lasts = [(n, r) for n, r in session.core.reported.items() if n not in session.core.stats]
    lasts += [(n, r) for n, r in session.restarted.items() if r is not None]
    for name, last in lasts:
        if name in base:
            messages.update(Counter(last.messages) - Counter(base[name].messages))
            counters.update(Counter(last.counters) - Counter(base[name].counters))
            counters["processes_counted_from_last_report"] += 1
    counters.update(session.core.counters)  # the frontend's own: deaths, resubmissions
    counters.update({f"dropped.{k}": v for k, v in session.runtime.transport.counts().items()})
    counters.update({f"links.{k}": v for k, v in session.runtime.links.link_counters().items()})
    log = session.task_log()[len(base_log) :]
    cycles = session.cycle_log()[len(base_cycles) :]
    outcome = RealOutcome(
        session.core, wall, +messages, counters, session.problems, log, cycles
    )  # zero counters kept
    outcome.interrupted, outcome.registered_at, outcome.error = stop(), registered_at, session.error
    return outcome
