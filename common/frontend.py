"""The frontend core: submits a replay's jobs at their arrival times and times their completion.

Completion time is measured here, on the frontend's own clock (DESIGN §3): submit and finish are
both read from it, so no two hosts' clocks need to agree. A job's first task start is the submit
time plus the delay its scheduler measured on its own clock.

On the real runtime the frontend first says ``Hello`` to every process it must wait for (again every
``hello_interval`` until each has answered ``Register``); the replay starts when all have answered,
or, with ``hold``, when the driver calls :meth:`FrontendCore.begin`.
At the end (:meth:`collect`) it asks every process for its ``Stats`` with ``GetStats`` or ``Shutdown``.

A job that waits for others (``JobSpec.after``: a trace's ``after=``) is submitted when it is due and
every one of them has finished, at the finish of the last; its ``submit`` is then (the scheduler sees
it only from then on), so its completion time is the scheduler's, not the wait for its parents.

A ``JobDone`` counts only from the scheduler the job was submitted to: one for a job this frontend did
not submit (``unknown_job_done``) or from another sender (``job_done_from_stranger``) is counted, logged
once, and dropped.

Failures (issue 14). The frontend is the testbed's failure detector: with ``liveness`` (the real runtime)
it says ``Hello`` to every process every period once the replay began and declares one dead that has not
answered for ``misses`` periods, nor sent any segment of a link (:attr:`link_heard`); a driver may also
declare a process dead at once (:meth:`declare_dead`: its child exited, or the simulator's injected
failure after the same detection delay). A death goes to every live process as ``PeerDown`` (they stop
sending it work and re-run what it held); the jobs of a dead scheduler are submitted again to a live one
of the same role, under a new id on the wire (:data:`RESUBMIT_STRIDE`; a later ``JobDone`` from the dead
one, or of an earlier attempt, is a late result, counted and ignored). Where no process of that role is
left the replay has :attr:`failed`, with one line naming the process. A dead process that answers again
rejoins (``PeerUp``).

A stream of jobs (issue 49). Given a list, the frontend holds every job and its times from the start to
the end, which the results are made of. Given an iterator (in submit order, as the list would be sorted:
by submit time, then id) and its ``total``, it takes each job from it when the job is due, reading one
ahead for its timer, so a replay of a whole month's trace never holds it whole; the driver calls
:meth:`release` once it has written finished jobs elsewhere (the journal and the streamed results,
:mod:`aviary.common.journal`), and their records are dropped. The submissions, their times and their
order are the same either way, so the replay is too. The frontend does no I/O: whatever reads the
iterator's source is the driver's.

A central scheduler comes back (issue 26, :mod:`aviary.central.recovery`). With ``restarts`` (the
launcher restarts a central scheduler that dies; the simulator too) its death is not news: nobody hears
``PeerDown``, the nodes keep its work, the jobs routed to it stay there (their ``SubmitJob``s queue for
it). When it registers again as a restarted process (``Register.recovering``), the frontend sends it
``Recover`` (its unfinished jobs, from this frontend's record, and the live nodes) and each of those
jobs' ``SubmitJob`` again (:meth:`central_back`); a stalled one that answers again simply carries on.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .core import Core
from .effects import Effect, Send, SetTimer
from .messages import (
    Counters,
    GetCounters,
    GetStats,
    Hello,
    JobDone,
    PeerDown,
    PeerUp,
    Recover,
    Register,
    Shutdown,
    Stats,
    SubmitJob,
    TaskRecords,
)
from .model import JobSpec

SUBMIT = "submit"
HELLO = "hello"
PING = "ping"

log = logging.getLogger("aviary.frontend")


@dataclass(slots=True)
class JobTimes:
    submit: float | None = None
    first_start: float | None = None
    finish: float | None = None


def submit_message(job: JobSpec, job_id: int | None = None) -> SubmitJob:
    """The ``SubmitJob`` of a job (under ``job_id``, its id on the wire, when not its own); the DAG and
    multi-resource fields only when the job has them, so a flat job's frame is what it always was."""
    wire = job.job_id if job_id is None else job_id
    if not (job.stages or job.deadline is not None or job.slo or job.gang or job.preference):
        return SubmitJob(wire, job.durations, job.estimate)
    stages = [[s.tasks, s.estimate, list(s.demand), list(s.parents)] for s in job.stages]
    return SubmitJob(
        wire,
        job.durations,
        job.estimate,
        stages,
        job.deadline,
        job.slo or "",
        job.gang,
        job.preference or "",
        job.slowdown,
    )


RESUBMIT_STRIDE = 1 << 40
"""A job submitted again after its scheduler's death goes under a new id on the wire, its own plus this
times its attempt (trace ids stay far below it): a scheduler that was declared dead, rejoined and still
holds the first attempt (stalled: the nodes dropped its probes at ``PeerDown``) takes the new attempt as
a new job instead of refusing it as a duplicate."""

FAILURE_COUNTERS = (
    "processes_declared_dead",
    "processes_rejoined",
    "jobs_resubmitted",
    "late_results_ignored",
)
"""The frontend's failure counters, written even when 0."""

COUNTERS_EVERY = 10
"""Every this many liveness pings the frontend also asks for every live process's ``Counters``."""

Router = Callable[[JobSpec, int], str]
"""Chooses the scheduler for the n-th submitted job."""


def round_robin(schedulers: list[str]) -> Router:
    def route(job: JobSpec, n: int) -> str:
        return schedulers[n % len(schedulers)]

    return route


class FrontendCore(Core):
    role = "frontend"

    def __init__(
        self,
        name: str,
        jobs: Iterable[JobSpec],
        route: Router,
        *,
        wait_for: list[str] = (),  # type: ignore[assignment]
        hello_interval: float = 0.5,
        hold: bool = False,
        roles: dict[str, str] | None = None,
        liveness: tuple[float, int] | None = None,
        epoch: int = 0,
        restarts: bool = False,
        task_records: bool = False,
        total: int | None = None,
    ) -> None:
        super().__init__(name)
        self.task_records = task_records
        """Its ``Hello`` asks the nodes for their tasks' records (``TaskRecords``), kept in
        :attr:`task_batches` for the driver's task table (:mod:`aviary.common.tasktable`)."""
        self.task_batches: list[tuple[str, float, float, str, list[Any]]] = []
        """``(node, its clock as it sent, this clock as it came, its boot id, rows)`` not taken by the
        driver yet."""
        self.stream: Iterator[JobSpec] | None = None
        """The jobs still to come, when they were given as an iterator (module docstring, "A stream of
        jobs"); None when given as a list (:attr:`jobs`)."""
        self.ahead: JobSpec | None = None
        """A stream's next job, taken from it but not submitted yet."""
        self.released = 0
        self.left: list[JobSpec] = []
        """A stream's jobs never submitted, once :meth:`pending` took them from it."""
        """Entries of :attr:`finish_order` dropped so far by :meth:`release` (a stream's)."""
        if isinstance(jobs, list):
            self.jobs = sorted(jobs, key=lambda j: (j.submit, j.job_id))
            self.by_id = {j.job_id: j for j in self.jobs}
            self.times = {j.job_id: JobTimes() for j in self.jobs}
            self.total = len(self.jobs)
        else:
            if total is None:
                raise ValueError("a stream of jobs needs its total (how many jobs it yields)")
            self.jobs = []
            self.by_id = {}
            self.times = {}
            self.total = total
            self.stream = iter(jobs)
            self.ahead = next(self.stream, None)
        """:attr:`total`: how many jobs the replay has (a stream's, as its source said)."""
        self.routed: dict[int, str] = {}
        """The scheduler each submitted job went to: the only one whose ``JobDone`` counts."""
        self.route = route
        self.waiting = set(wait_for)
        self.registered: dict[str, Register] = {}
        self.hello_interval = hello_interval
        self.hold = hold  # once ready, wait for begin() instead of starting the replay at once
        self.t0: float | None = None
        self.next = 0
        self.finished = 0
        self.held: dict[int, tuple[set[int], int]] = {}
        """Jobs due but waiting for jobs of theirs to finish (``JobSpec.after``): the ones still
        running, and the job's place in the order of submission (its route)."""
        self.dependents: dict[int, list[int]] = {}
        """job -> the held jobs that wait for it."""
        self.finish_order: list[int] = []
        """The finished jobs' ids in the order they finished: what a driver's journal has not written yet is
        what came after the last one it wrote (:mod:`aviary.common.journal`)."""
        self.last_progress = 0.0
        self.stats: dict[str, Stats] = {}
        self.asked: set[str] = set()  # asked for Stats, not answered yet: only their Stats count
        self.roles = dict(roles or {})
        """Every other process by name, with its role (``node``, ``scheduler``, ``central``): who hears of a
        death, and who can take a dead scheduler's jobs."""
        self.liveness = liveness  # (Hello period in seconds, periods missed before a process is dead)
        self.epoch = epoch  # this replay's, in every Hello: its processes drop an earlier replay's work
        self.last_heard: dict[str, float] = {}
        self.link_heard: dict[str, float] = {}
        """When the driver's links last took a segment from each process (any: a message, an
        acknowledgement, a copy); the real driver shares its link layer's. Under message loss a
        process's answer may wait, at this end, behind a segment of its link that was lost: it still
        shows that the process lives, so silence is judged from the later of the two."""
        self.dead: dict[str, float] = {}  # name -> replay clock when it was declared dead
        self.exited: set[str] = set()  # dead for sure (its process exited): no answer brings it back
        self.rejoined: set[str] = set()  # declared dead, then answered again (and alive since)
        self.reported: dict[str, Counters] = {}  # each process's last Counters (kept when it dies)
        self.pings = 0
        self.counters_every = COUNTERS_EVERY  # liveness pings per request of every process's Counters
        self.resubmitted: dict[int, float] = {}  # job -> replay clock of its last resubmission
        self.attempts: Counter[int] = Counter()  # job -> times resubmitted (its wire id: RESUBMIT_STRIDE)
        self.failed: str | None = None
        """Why the replay cannot go on (a process no other can replace died), or None."""
        self.stopping = False
        """``Shutdown`` went out: processes exit as they answer, so silence no longer means death."""
        self.closed = False
        """The replay ended early (failed, interrupted, stalled): later completions are only counted, so
        the results are what was done when it ended."""
        self.restarts = restarts
        """A central scheduler that dies is restarted (by the launcher, or the simulator): wait for it."""
        self.down_since: dict[str, float] = {}  # a central scheduler away -> replay clock of its death
        self.told: set[str] = set()  # restarted central schedulers sent Recover, not rebuilt yet
        self.counters.update(dict.fromkeys(FAILURE_COUNTERS, 0))

    # --- phases ------------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return not self.waiting

    @property
    def done(self) -> bool:
        """Every job finished, or the replay :attr:`failed`."""
        return self.finished == self.total or self.failed is not None

    @property
    def submitted(self) -> int:
        return self.next

    def start(self, now: float) -> list[Effect]:
        if self.waiting:
            return self._hello()
        return [] if self.hold else self.begin(now)

    def _hello(self) -> list[Effect]:
        hello = Hello(self.epoch, self.task_records)
        return [*(Send(p, hello) for p in sorted(self.waiting)), SetTimer(HELLO, self.hello_interval)]

    def begin(self, now: float) -> list[Effect]:
        """Start the replay clock and the submissions."""
        self.t0 = now
        self.last_progress = now
        effects: list[Effect] = []
        if self.liveness is not None:
            self.last_heard = dict.fromkeys(self.roles, now)
            effects.append(SetTimer(PING, self.liveness[0]))
        if self.stream is not None:
            if self.ahead is not None:
                effects.append(SetTimer(SUBMIT, self.ahead.submit))
        elif self.jobs:
            effects.append(SetTimer(SUBMIT, self.jobs[0].submit))
        return effects

    def on_timer(self, now: float, key: Any) -> list[Effect]:
        if key == HELLO:
            return self._hello() if self.waiting else []
        if key == SUBMIT:
            return self._submit_due(now)
        if key == PING:
            return self._ping(now)
        return []

    def _submit_due(self, now: float) -> list[Effect]:
        assert self.t0 is not None
        if self.failed is not None:  # no process of a role the jobs need is left
            return []
        clock = now - self.t0
        if self.stream is not None:
            return self._submit_streamed(clock)
        effects: list[Effect] = []
        jobs = self.jobs
        while self.next < len(jobs) and jobs[self.next].submit <= clock + 1e-9:
            job = jobs[self.next]
            waits = {p for p in job.after if p in self.times and self.times[p].finish is None}
            if waits:  # due, but a job it waits for has not finished: submitted when the last has
                self.held[job.job_id] = (waits, self.next)
                for p in waits:
                    self.dependents.setdefault(p, []).append(job.job_id)
            else:
                effects.append(self._submit(job, clock, self.next))
            self.next += 1
        if self.next < len(jobs):
            effects.append(SetTimer(SUBMIT, jobs[self.next].submit - clock))
        return effects

    def _submit(self, job: JobSpec, clock: float, n: int) -> Send:
        """Submit ``job`` (the ``n``-th due) now, to the scheduler its route names (or a stand-in)."""
        self.times[job.job_id].submit = clock
        to = self.route(job, n)
        if to in self.dead and to not in self.down_since:  # goes on while one of its role lives
            to = self._stand_in(to, n)
        self.routed[job.job_id] = to
        return Send(to, submit_message(job))

    def _release(self, job_id: int, clock: float) -> list[Effect]:
        """The jobs that waited for ``job_id``, now finished, and for nothing else: submitted now."""
        effects: list[Effect] = []
        for d in self.dependents.pop(job_id, ()):
            waits, n = self.held[d]
            waits.discard(job_id)
            if not waits:
                del self.held[d]
                effects.append(self._submit(self.by_id[d], clock, n))
        return effects

    def _submit_streamed(self, clock: float) -> list[Effect]:
        """:meth:`_submit_due` of a stream: the same submissions, each job taken from the stream when
        due (its record made then), the next one read ahead for its timer."""
        effects: list[Effect] = []
        stream = self.stream
        assert stream is not None
        job = self.ahead
        while job is not None and job.submit <= clock + 1e-9:
            if job.job_id in self.times:
                raise ValueError(f"the stream of jobs yielded job {job.job_id} twice")
            if job.after:
                raise ValueError(f"job {job.job_id} waits for others: a stream of jobs has no dependencies")
            self.times[job.job_id] = JobTimes()
            self.by_id[job.job_id] = job
            effects.append(self._submit(job, clock, self.next))
            self.next += 1
            after = next(stream, None)
            if after is not None and (after.submit, after.job_id) < (job.submit, job.job_id):
                raise ValueError(
                    f"the stream of jobs is not in submit order: job {after.job_id} at {after.submit} s "
                    f"after job {job.job_id} at {job.submit} s"
                )
            job = self.ahead = after
        if job is not None:
            effects.append(SetTimer(SUBMIT, job.submit - clock))
        return effects

    def release(self, upto: int) -> None:
        """A stream's driver wrote the first ``upto`` finished jobs (of :attr:`finish_order`, counted from
        the run's start) where they are kept: their records are dropped here, so that what the frontend
        holds is the jobs submitted and not yet written, not every job of the replay. No effect on a
        replay of a list of jobs (whose records :meth:`unfinished` and the results read at the end).
        A ``JobDone`` that comes for a released job later (a duplicate, a late result after a failure)
        is then counted as ``unknown_job_done``, where a list's frontend counts it as
        ``duplicate_job_done`` or ``late_results_ignored``."""
        if self.stream is None or upto <= self.released:
            return
        gone = self.finish_order[: upto - self.released]
        del self.finish_order[: upto - self.released]
        self.released = upto
        for job_id in gone:
            del self.by_id[job_id], self.times[job_id]
            self.routed.pop(job_id, None)

    def on_message(self, now: float, sender: str, msg: Any) -> list[Effect]:
        kind = type(msg)
        if kind is JobDone:
            return self._job_done(now, sender, msg)
        if kind is Register:
            self.registered[sender] = msg
            self.last_heard[sender] = now
            if not msg.recovering:
                self.told.discard(sender)
            elif sender not in self.told and self.t0 is not None and self.roles.get(sender) == "central":
                self.told.add(sender)  # once per restart: it answers every Hello until it is rebuilt
                return self.central_back(now, sender)
            if sender in self.dead:
                if sender in self.exited:  # an answer it sent before it died, still on its way
                    self.counters["late_answers_of_the_dead"] += 1
                    return []
                return self._rejoin(sender)
            if sender in self.waiting:
                self.waiting.discard(sender)
                if not self.waiting and not self.hold:
                    return self.begin(now)
            return []
        if kind is Stats:
            if sender not in self.asked:
                return self._refuse("stats_not_asked_for", f"Stats from {sender!r}, not asked for")
            self.asked.discard(sender)
            self.stats[sender] = msg
            return []
        if kind is Counters:
            self.reported[sender] = msg
            self.last_heard[sender] = now
            return []
        if kind is TaskRecords:
            if self.task_records:
                self.task_batches.append((sender, msg.clock, now, msg.boot, msg.rows))
            return []
        return self.unexpected(msg)

    def _job_done(self, now: float, sender: str, msg: JobDone) -> list[Effect]:
        if self.closed:
            self.counters["job_done_after_the_end"] += 1
            return []
        attempt, job_id = divmod(msg.job_id, RESUBMIT_STRIDE)
        times = self.times.get(job_id)
        if times is None or times.submit is None or self.t0 is None or attempt > self.attempts[job_id]:
            return self._refuse(
                "unknown_job_done", f"a JobDone from {sender!r} for job {msg.job_id}, not submitted"
            )
        if (to := self.routed.get(job_id)) != sender or attempt < self.attempts[job_id]:
            if sender in self.dead or job_id in self.resubmitted:
                self.counters["late_results_ignored"] += 1
                return []
            text = f"a JobDone from {sender!r} for job {msg.job_id}, submitted to {to!r}"
            return self._refuse("job_done_from_stranger", text)
        if times.finish is not None:
            self.counters["duplicate_job_done"] += 1
            return []
        times.finish = now - self.t0
        # The delay is measured from the job's arrival at the scheduler that finished it.
        times.first_start = self.resubmitted.get(job_id, times.submit) + msg.first_start_delay
        self.finished += 1
        self.finish_order.append(job_id)
        self.last_progress = now
        return self._release(job_id, times.finish) if job_id in self.dependents else []

    def _refuse(self, counter: str, text: str) -> list[Effect]:
        self.counters[counter] += 1
        if self.counters[counter] == 1:
            log.warning("%s: dropped %s (further ones are only counted)", self.name, text)
        return []

    # --- failures -----------------------------------------------------------------------------------
    def _ping(self, now: float) -> list[Effect]:
        """Say Hello to every process (the dead too: one that answers rejoins); declare dead the live
        ones silent for ``misses`` periods."""
        assert self.liveness is not None
        if self.stopping:  # the processes that answered Shutdown have exited; no more rounds
            return []
        period, misses = self.liveness
        self.pings += 1
        hello = Hello(self.epoch, self.task_records)
        effects: list[Effect] = [Send(p, hello) for p in self.roles]
        if self.pings % self.counters_every == 0:  # what is kept of a process that dies later
            effects += self.ask_counters(now)
        for name in sorted(self.roles):
            heard = self.last_heard.get(name, now)
            heard = max(heard, self.link_heard.get(name, heard))
            if name not in self.dead and now - heard > period * misses:
                effects += self.declare_dead(now, name, f"nothing heard for {now - heard:.1f} s")
        if not self.failed:
            effects.append(SetTimer(PING, period))
        return effects

    def ask_counters(self, now: float) -> list[Effect]:
        """Ask every live process for its ``Counters`` (``aviary up``'s dashboard, whose session sends no
        ``Hello`` rounds: a ``Hello`` carries an epoch, and would start a new one under a connected
        replay)."""
        ask = GetCounters()
        return [Send(p, ask) for p in self.roles if p not in self.dead]

    def declare_dead(self, now: float, name: str, why: str = "", exited: bool = False) -> list[Effect]:
        """``name`` is dead: every live process hears ``PeerDown``; a scheduler's unfinished jobs go to a
        live one of its role (or the replay :attr:`failed`). ``exited``: its process is known to have
        exited (not just silent), so it never rejoins: a ``Register`` from it afterwards answered a
        ``Hello`` before it died."""
        role = self.roles.get(name)
        central = role == "central" and self.restarts
        if exited and role is not None and not central:
            self.exited.add(name)
        if role is None or name in self.dead or self.t0 is None:
            return []
        clock = now - self.t0
        self.dead[name] = clock
        self.rejoined.discard(name)
        self.counters["processes_declared_dead"] += 1
        log.warning("%s: %s declared dead at %.1f s%s", self.name, name, clock, f" ({why})" if why else "")
        if central:  # it comes back: its work stays where it is (module docstring)
            self.down_since[name] = clock
            self.told.discard(name)  # its next incarnation is told again
            return []
        down = PeerDown(name)
        effects: list[Effect] = [Send(p, down) for p in self.roles if p not in self.dead]
        if not any(r == role and p not in self.dead for p, r in self.roles.items()):
            self.failed = f"{role} {name} died and no other {role} is left to take its work"
            return effects
        for job_id, to in list(self.routed.items()):
            if to == name and self.times[job_id].finish is None:
                stand_in = self._stand_in(name, job_id)
                self.routed[job_id] = stand_in
                self.resubmitted[job_id] = clock
                self.counters["jobs_resubmitted"] += 1
                self.attempts[job_id] += 1
                wire = job_id + self.attempts[job_id] * RESUBMIT_STRIDE
                effects.append(Send(stand_in, submit_message(self.by_id[job_id], wire)))
        return effects

    def central_back(self, now: float, name: str) -> list[Effect]:
        """A restarted central scheduler registered: ``Recover`` with its unfinished jobs and the live
        nodes, then those jobs' ``SubmitJob``s again."""
        assert self.t0 is not None
        self.dead.pop(name, None)
        down = self.down_since.pop(name, None)
        self.counters["central_restarts"] += 1
        if down is not None:
            self.counters["central_away_ms"] += round((now - self.t0 - down) * 1000)
        log.warning("%s: %s is back after a restart: it rebuilds its state", self.name, name)
        jobs = [j for j, to in self.routed.items() if to == name and self.times[j].finish is None]
        clock = now - self.t0
        ages = [clock - (self.times[j].submit or clock) for j in jobs]
        nodes = sorted(p for p, r in self.roles.items() if r == "node" and p not in self.dead)
        effects: list[Effect] = [Send(name, Recover(jobs, ages, nodes))]
        effects += [Send(name, submit_message(self.by_id[j])) for j in jobs]
        # Its fresh core knows every node of the cluster: the dead ones too, until told (handled after
        # the rebuild, in order).
        gone = sorted(p for p in self.dead if self.roles.get(p) == "node")
        effects += [Send(name, PeerDown(p)) for p in gone]
        return effects

    def _stand_in(self, dead: str, n: int) -> str:
        """A live process of ``dead``'s role for the n-th job (round robin); the caller checked there is
        one."""
        role = self.roles.get(dead, "")
        live = sorted(p for p, r in self.roles.items() if r == role and p not in self.dead)
        return live[n % len(live)]

    def _rejoin(self, name: str) -> list[Effect]:
        del self.dead[name]
        self.rejoined.add(name)
        self.down_since.pop(name, None)  # a stalled central scheduler, back with its state
        self.counters["processes_rejoined"] += 1
        log.warning("%s: %s answers again: it rejoins", self.name, name)
        up = PeerUp(name)
        return [Send(p, up) for p in self.roles if p not in self.dead and p != name]

    # --- the end -----------------------------------------------------------------------------------
    def collect(self, processes: list[str], *, shutdown: bool) -> list[Effect]:
        """Ask every process for its Stats (and to exit, with ``shutdown``)."""
        msg = Shutdown() if shutdown else GetStats()
        self.stopping = self.stopping or shutdown
        self.asked.update(processes)
        return [Send(p, msg) for p in processes]

    def unfinished(self) -> list[int]:
        """The jobs that did not finish, by submit order (a stream's: those submitted, then those it
        still holds, which this takes from it)."""
        if self.stream is None:
            return [j.job_id for j in self.jobs if self.times[j.job_id].finish is None]
        out = [j for j, t in self.times.items() if t.finish is None]
        out += [j.job_id for j in self.pending()]
        return out

    def pending(self) -> list[JobSpec]:
        """A stream's jobs never submitted (taken from it now: call at the end), in submit order."""
        if self.stream is None:
            return self.jobs[self.next :]
        if self.ahead is not None:
            self.left += [self.ahead, *self.stream]
            self.ahead = None
        return self.left

    def message_totals(self) -> tuple[Counter[str], Counter[str]]:
        """Sent messages by kind and counters, summed over the processes that sent Stats."""
        messages: Counter[str] = Counter()
        counters: Counter[str] = Counter()
        for stats in self.stats.values():
            messages.update(stats.messages)
            counters.update(stats.counters)
        return messages, counters
